"""How long a process waited for a CPU, from outside it: the run-queue delay the kernel keeps per
task in /proc/PID/task/TID/schedstat (its second field, ns). On a busy host an honest candidate is
descheduled around its calls; that time is the host's, and the clock check does not count it as
work moved out of the timed calls (skills/evaluate.py, clock_check). The process cannot lower it:
the kernel writes it."""

from __future__ import annotations

import os


def parent_pid(pid: int) -> int:
    """The parent of `pid` (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return 0
    return int(stat[stat.rindex(")") + 2:].split()[1])


def worker_pid(root: int, module: str = "skills.harness.candidate") -> int | None:
    """The worker process in `root`'s tree that runs `module`: root itself, or under bubblewrap the
    sandbox's child. Of the matches (bwrap's own command line names the module too, and a process
    the candidate forks inherits its command line) the shallowest whose executable is not bwrap:
    a child the candidate starts can never stand in for it."""
    best: tuple[int, int] | None = None  # (depth, pid)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
        except OSError:
            continue
        if module.encode() not in argv or exe.startswith("bwrap"):
            continue
        p, depth = pid, 0
        while p > 1 and p != root and depth < 16:
            p, depth = parent_pid(p), depth + 1
        if p == root and (best is None or depth < best[0]):
            best = (depth, pid)
    return best[1] if best else None


def run_delay_ns(pid: int) -> int | None:
    """Nanoseconds the process's main thread has waited on a run queue (None: not readable here)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
