"""The candidate's process seen from outside it, in the kernel's own counts: which process runs
the candidate (worker_pid), and how much CPU every thread of its tree used and how long its main
thread waited on a run queue (TreeClock, from /proc/PID/task/TID/schedstat). On a busy host an
honest candidate is descheduled around its calls; that wait is the host's, unless its own threads
kept the cores busy (skills/evaluator/timing_checks.py, excused_waits). The process cannot lower these counts:
the kernel writes them."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

TREE_LIMIT = 256
"""Processes a tree walk visits at most (a fork bomb's tree is not walked whole)."""


def _children(pid: int, tid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
            return f.read()
    except OSError:
        return None


def tree_tasks(root: int, children: Callable[[int, int], bytes | None] = _children) -> Iterator[tuple[int, int]]:
    """Every task (pid, tid) of `root` and of the live processes below it, found through
    /proc/PID/task/TID/children (`children` reads that file: TreeClock keeps its fds open)."""
    todo, seen = [root], set[int]()
    while todo:
        pid = todo.pop()
        if pid in seen or len(seen) > TREE_LIMIT:
            continue
        seen.add(pid)
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except (OSError, ValueError):
            continue
        for tid in tids:
            yield pid, tid
            kids = children(pid, tid)
            todo += [int(k) for k in kids.split()] if kids else []


def parent_pid(pid: int) -> int:
    """The parent of `pid` (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return 0
    return int(stat[stat.rindex(")") + 2:].split()[1])


def worker_pid(root: int, module: str = "skills.evaluator.harness.candidate") -> int | None:
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


class TreeSample(NamedTuple):
    """CPU time of a process tree at one moment, read from outside it."""

    t_ns: int
    """When it was read (time.time_ns: the marks' clock)."""
    main_wait_ns: int
    """The main thread's run-queue delay so far."""
    tasks: dict[tuple[int, int], int]
    """(pid, tid) -> ns that task has run, for every live task below the root (the main process,
    the processes it forked, and orphans the sandbox's init took over)."""
    process_ns: int | None
    """The main process's utime + stime (ns, in clock ticks): its exited threads included."""


class TreeClock:
    """Reads how much CPU every thread of a process tree used, cheaply enough to do around each
    timed call (~20 us for a few threads): the schedstat files stay open and are re-read with
    pread; /proc/PID/task/TID/children finds the processes it forked. Tasks that exit between two
    reads leave the per-task sums; the main process's utime + stime (which keeps them) bounds what
    they used. The tree is read from `root` (default: the main process itself): under the sandbox
    its outermost process, so a helper the candidate double-forks, which the sandbox's init inherits,
    is still below it.
    """

    def __init__(self, pid: int, root: int | None = None) -> None:
        self.pid = pid
        self.root = root or pid
        self._fds: dict[tuple[int, int, str], int] = {}
        self._stat = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        self._tick_ns = 1_000_000_000 // (os.sysconf("SC_CLK_TCK") or 100)

    @classmethod
    def open(cls, pid: int | None, root: int | None = None) -> TreeClock | None:
        """A clock on main process `pid` and the tree below `root`, or None where its /proc files
        cannot be read here."""
        if pid is None:
            return None
        try:
            clock = cls(pid, root)
        except OSError:
            return None
        if clock.sample() is None:
            clock.close()
            return None
        return clock

    def _read(self, pid: int, tid: int, name: str) -> bytes | None:
        key = (pid, tid, name)
        try:
            fd = self._fds.get(key)
            if fd is None:
                fd = self._fds[key] = os.open(f"/proc/{pid}/task/{tid}/{name}", os.O_RDONLY)
            return os.pread(fd, 4096, 0)
        except OSError:  # the task is gone
            fd = self._fds.pop(key, None)
            if fd is not None:
                os.close(fd)
            return None

    def sample(self) -> TreeSample | None:
        """The tree's CPU now (None when the main thread cannot be read)."""
        t = time.time_ns()
        tasks: dict[tuple[int, int], int] = {}
        main_wait: int | None = None
        for pid, tid in tree_tasks(self.root, lambda p, t: self._read(p, t, "children")):
            raw = self._read(pid, tid, "schedstat")
            if raw is None:
                continue
            fields = raw.split()
            tasks[(pid, tid)] = int(fields[0])
            if pid == tid == self.pid:
                main_wait = int(fields[1])
        if main_wait is None:
            return None
        try:
            stat = os.pread(self._stat, 4096, 0).decode()
            utime, stime = stat[stat.rindex(")") + 2:].split()[11:13]
            process: int | None = (int(utime) + int(stime)) * self._tick_ns
        except (OSError, ValueError):
            process = None
        return TreeSample(t, main_wait, tasks, process)

    def close(self) -> None:
        for fd in [self._stat, *self._fds.values()]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


def cpu_between(a: TreeSample, b: TreeSample, *, main: int | None = None, only: int | None = None) -> int:
    """CPU ns the tree's tasks used from `a` to `b` (a task new in `b` counts from zero): all of
    them, or without the thread `main` (a tid of the root), or only those of process `only`."""
    total = 0
    for key, ns in b.tasks.items():
        if key[1] == main or (only is not None and key[0] != only):
            continue
        total += max(0, ns - a.tasks.get(key, 0))
    return total


class OwnWait:
    """The calling thread's own run-queue wait so far (ns), from /proc/thread-self/schedstat, kept
    open and re-read with pread (a few microseconds). The judge reads it around each timed call: on
    a busy host its wake-up by the candidate's answer can wait for a core, and its stamp of the
    answer comes that much later (timing_checks.judge_waits). Open it on the thread that reads it."""

    def __init__(self) -> None:
        try:
            self._fd: int | None = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:
            self._fd = None

    def read(self) -> int | None:
        """The wait so far, or None where the file cannot be read."""
        if self._fd is None:
            return None
        try:
            return int(os.pread(self._fd, 256, 0).split()[1])
        except (OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
