"""Resident memory of a process tree, read from outside it in the kernel's own counts (the cpu
backend's memory figure; skills/evaluator/footprint.py).

Linux keeps each process's peak resident set (VmHWM in /proc/PID/status) and resets it to the
current size when "5" is written to /proc/PID/clear_refs: the peak of any stretch of time is read
with no sampling, so an allocation made and freed inside one call still counts. The write needs
the right to the file (the evaluator is root, or the candidate's own uid, in every sandbox mode);
where it is refused the peak stays the process's lifetime one, which can only read higher. The
process cannot lower these counts: the kernel keeps them.
"""

from __future__ import annotations

from skills.evaluator.schedstat import tree_tasks

KIB = 1024
ARENA_NAME = "memfd:kagent-arena"
"""How the judge's shared input/output memory shows in its /proc/PID/maps (skills/evaluator/harness/arena.py)."""


def tree_pids(root: int) -> list[int]:
    """`root` and every live process below it (skills/schedstat.tree_tasks)."""
    return list(dict.fromkeys(pid for pid, _ in tree_tasks(root)))


def status(pid: int) -> dict[str, int]:
    """The Vm*/Rss* lines of /proc/PID/status, in bytes (empty when the process is gone; a kernel
    thread or a zombie has none)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("Vm", "Rss")) and line.rstrip().endswith("kB"):
                    key, _, value = line.partition(":")
                    out[key] = int(value.split()[0]) * KIB
    except (OSError, ValueError):
        return {}
    return out


def reset_peak(pid: int) -> bool:
    """Set the process's VmHWM to its VmRSS now (False where the write is refused or it is gone)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def arena_bytes(judge_pid: int) -> int:
    """Bytes of the judge's arenas as it maps them now (each memfd once)."""
    sizes: dict[str, int] = {}
    try:
        with open(f"/proc/{judge_pid}/maps") as f:
            for line in f:
                if ARENA_NAME not in line:
                    continue
                fields = line.split()
                lo, _, hi = fields[0].partition("-")
                sizes[fields[4]] = sizes.get(fields[4], 0) + int(hi, 16) - int(lo, 16)
    except (OSError, ValueError, IndexError):
        return 0
    return sum(sizes.values())


class TreeRss:
    """The peak resident memory of a process tree over stretches of time, beyond what each process
    held at `base()`: reset each process's peak before a stretch (`begin`), read it after (`end`).
    The judge's arena, which the tree maps (each call's inputs and outputs: the judge's memory,
    not the candidate's), is taken off, at most as much as the tree holds in shared memory."""

    def __init__(self, root: int, judge_pid: int | None = None) -> None:
        self.root = root
        self.judge_pid = judge_pid
        self.base_bytes: dict[int, int] = {}
        self.reset_ok = True
        """Every reset was accepted (else some peak is its process's lifetime one)."""
        self.peak: int | None = None
        """The largest total seen at an `end()` (bytes beyond the base), None before any."""

    def base(self) -> None:
        self.base_bytes = {pid: status(pid).get("VmRSS", 0) for pid in tree_pids(self.root)}

    def begin(self) -> None:
        for pid in tree_pids(self.root):
            self.reset_ok = reset_peak(pid) and self.reset_ok

    def end(self) -> None:
        if not self.base_bytes:  # no reading before the calls: nothing to measure from
            return
        total = shared = 0
        for pid in tree_pids(self.root):
            st = status(pid)
            total += st.get("VmHWM", 0) - self.base_bytes.get(pid, 0)
            shared += st.get("RssShmem", 0)
        arena = arena_bytes(self.judge_pid) if self.judge_pid is not None else 0
        now = max(0, total - min(shared, arena))
        self.peak = now if self.peak is None else max(self.peak, now)
