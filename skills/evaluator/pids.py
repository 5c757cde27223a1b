"""A cgroup `pids` limit on the candidate worker's tasks (EXPLOITS row 20: fork bombs).

RLIMIT_NPROC does not bind for a process that is uid 0 outside its user namespace (the kernel
exempts root), and the candidate stays uid 0 when the interpreter cannot be read by `nobody`
(a pyenv under /root). A pids cgroup binds whatever the uid: the parent makes one group per
evaluation in the cgroup v1 `pids` hierarchy (or, on cgroup v2, under its own group with the pids
controller), moves the candidate worker's processes into it before any candidate code runs, and
sets `pids.max` to the tasks already there plus `SandboxConfig.max_processes` (headroom above the
current count, threads included: what RLIMIT_NPROC does per user). Inside the sandbox the cgroup
files are on the read-only root, so the candidate cannot leave the group or raise its limit.

Where no hierarchy is writable (not root, no pids controller, a read-only /sys/fs/cgroup),
`hierarchy()` is None and `EvalResult.sandbox` says that tasks are not capped this way.
"""

from __future__ import annotations

import functools
import os
import signal
import time
from pathlib import Path

import anyio

PREFIX = "kagent-eval-"
STALE_S = 60.0
"""An empty group this old is left over (a group is filled right after it is made): removed."""


def _mounts() -> list[tuple[str, Path, str]]:
    """(fstype, mount point, options) of the cgroup mounts."""
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
            out.append((fields[2], Path(fields[1].replace("\\040", " ")), fields[3]))
    return out


def _own_group(version: str) -> str:
    """This process's group path in the v1 pids hierarchy or in the v2 one ("/" when unknown)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (version == "cgroup2" and controllers == "") or (version == "cgroup" and "pids" in controllers.split(",")):
            return path
    return "/"


def _candidates() -> list[Path]:
    """Folders where pids groups could be made: this process's own group in each pids hierarchy
    (its mount point when that path is not visible, as in a container's cgroup namespace)."""
    found = []
    for fstype, mount, options in _mounts():
        if fstype == "cgroup" and "pids" not in options.split(","):
            continue
        own = mount / _own_group(fstype).lstrip("/")
        base = own if own.is_dir() else mount
        if fstype == "cgroup2":
            try:
                if "pids" not in (base / "cgroup.controllers").read_text().split():
                    continue
                if "pids" not in (base / "cgroup.subtree_control").read_text().split():
                    # For our children only; refused (EBUSY) where our group holds processes itself.
                    (base / "cgroup.subtree_control").write_text("+pids")
            except OSError:
                continue
        found.append(base)
    return found


@functools.cache
def hierarchy() -> Path | None:
    """The folder this process makes pids groups in (probed once: a group made and removed there);
    None where there is none."""
    if not Path("/proc/self/cgroup").is_file():
        return None
    for base in _candidates():
        probe = base / f"{PREFIX}probe-{os.getpid()}"
        try:
            probe.mkdir()
        except OSError:
            continue
        try:
            if (probe / "pids.max").is_file():
                return base
        finally:
            probe.rmdir()
    return None


class PidsGroup:
    """One evaluation's group: `adopt` the candidate's processes, `release` at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.limit: int | None = None

    @classmethod
    def make(cls, name: str) -> PidsGroup:
        """A new group (raises OSError where it cannot be made); stale ones are swept first."""
        base = hierarchy()
        if base is None:
            raise OSError("no writable cgroup hierarchy with the pids controller")
        _sweep(base)
        path = base / name
        path.mkdir()
        return cls(path)

    def procs(self) -> set[int]:
        return {int(p) for p in (self.path / "cgroup.procs").read_text().split()}

    def adopt(self, pid: int, headroom: int) -> int:
        """Move `pid` and its descendants into the group, then cap it at the tasks there plus
        `headroom`; returns that cap. Repeats until no descendant is left outside (a process that
        forked while it was moved)."""
        for _ in range(10):
            inside = self.procs()
            outside = [p for p in descendants(pid) if p not in inside]
            if not outside:
                break
            for p in outside:
                try:
                    (self.path / "cgroup.procs").write_text(str(p))
                except ProcessLookupError:
                    continue  # exited meanwhile
        else:
            raise OSError(f"the processes of {pid} kept escaping {self.path}")
        self.limit = int((self.path / "pids.current").read_text()) + headroom
        (self.path / "pids.max").write_text(str(self.limit))
        return self.limit

    def kill(self) -> None:
        """SIGKILL every process in the group (what the PID namespace's end does, sooner)."""
        for p in self.procs():
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                continue

    async def release(self, wait_s: float = 2.0) -> None:
        """Kill what is left and remove the group; one whose tasks are slow to go is swept later."""
        deadline = time.monotonic() + wait_s
        while True:  # polls: a cgroup says nothing when its last task is gone
            if self._removed() or time.monotonic() > deadline:
                return
            await anyio.sleep(0.02)

    def release_blocking(self, wait_s: float = 2.0) -> None:
        """`release` for a caller outside the event loop (the build-only prebuild's threads)."""
        deadline = time.monotonic() + wait_s
        while not self._removed() and time.monotonic() <= deadline:
            time.sleep(0.02)

    def _removed(self) -> bool:
        """Kill what is left, then try to remove the group: False while killed tasks still exit."""
        try:
            self.kill()
            self.path.rmdir()
        except FileNotFoundError:
            return True
        except OSError:  # EBUSY: killed tasks still exiting
            return False
        return True


def _sweep(base: Path) -> None:
    """Remove groups of ours that are empty and stale (left by a killed evaluator or slow exits)."""
    now = time.time()
    for path in base.glob(PREFIX + "*"):
        try:
            if now - path.stat().st_mtime > STALE_S and not (path / "cgroup.procs").read_text().strip():
                path.rmdir()
        except OSError:
            continue  # busy again, or removed by another evaluator


def descendants(pid: int) -> list[int]:
    """`pid` and every live process below it (a /proc scan; zombies cannot be moved, so left out)."""
    children: dict[int, list[int]] = {}
    live = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            state, ppid = stat[stat.rindex(")") + 2:].split()[:2]
            if state != "Z":
                live.add(int(entry))
                children.setdefault(int(ppid), []).append(int(entry))
    out, todo = [], [pid] if pid in live else []
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out
