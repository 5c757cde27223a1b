"""A trusted, parent-side quota on what the candidate writes into the host-visible folders of its
evaluation (EXPLOITS row 20).

`out/` (where the candidate writes its outputs for the judge) is a bind mount of a folder in
/dev/shm, i.e. RAM shared with every other evaluation; RLIMIT_FSIZE bounds each file but not how
many there are. No mount can bound it without root on the host, so the parent polls the folders'
size while the candidate runs and kills the candidate's process group once they pass the quota.
Writes between two polls (every `interval_s`) can overshoot the quota by what the candidate
writes in that time; a file unlinked while still open is not seen, but is freed when the worker
is killed at the end of the evaluation (and RLIMIT_FSIZE bounds it).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from skills.evaluator.results import Flag

ENTRY_BYTES = 4096
"""What each file or folder costs at least (a page): an inode flood counts, not only file data."""


class Unreadable(Exception):
    """A folder under a watched path could not be listed (made unreadable, or nested too deep)."""


def usage(paths: list[Path], stop_above: int | None = None) -> int:
    """Bytes the files and folders under `paths` take (allocated blocks; each entry at least one
    page), without following links; stops counting once past `stop_above`. Missing paths count 0;
    a folder that cannot be listed raises Unreadable (what cannot be measured must not pass)."""
    total = 0
    todo = [str(p) for p in paths]
    while todo:
        folder = todo.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue  # removed while we looked
                    total += max(st.st_blocks * 512, ENTRY_BYTES)
                    if stat.S_ISDIR(st.st_mode):
                        todo.append(entry.path)
                    if stop_above is not None and total > stop_above:
                        return total
        except (FileNotFoundError, NotADirectoryError):
            continue  # removed while we looked (or never made)
        except OSError as exc:
            raise Unreadable(f"{folder} ({exc.strerror})") from None
    return total


class DiskQuota:
    """Polls `paths` while the candidate runs; past `limit` bytes it calls `on_exceeded` once (which
    kills the candidate) and remembers what it saw. Run `watch` in a task group; `stop` ends it."""

    def __init__(self, paths: list[Path], limit: int, *, interval_s: float = 0.05) -> None:
        self.paths = paths
        self.limit = limit
        self.interval_s = interval_s
        self.seen: int | None = None
        """Bytes measured when the quota was exceeded (None: it was not)."""
        self.unreadable: str | None = None
        """A folder that could not be listed (counted as over the quota)."""
        self._scope: anyio.CancelScope | None = None
        self._stopped = False

    @property
    def exceeded(self) -> bool:
        return self.seen is not None

    async def watch(self, on_exceeded: Callable[[], Awaitable[None]]) -> None:
        with anyio.CancelScope() as self._scope:
            while not self._stopped:
                if await self.check():
                    await on_exceeded()
                    return
                await anyio.sleep(self.interval_s)

    def stop(self) -> None:
        self._stopped = True
        if self._scope is not None:
            self._scope.cancel()

    async def check(self) -> bool:
        """Measure once (in a worker thread); True when over the quota."""
        if self.exceeded:
            return True
        try:
            used = await anyio.to_thread.run_sync(usage, self.paths, self.limit)
        except Unreadable as exc:
            self.unreadable, used = str(exc), self.limit + 1
        if used > self.limit:
            self.seen = used
        return self.exceeded

    def message(self) -> str:
        where = ", ".join(f"{p.name}/" for p in self.paths)
        if self.unreadable is not None:
            seen = f"left a folder the evaluator could not list, so its size could not be checked: {self.unreadable}"
        else:
            seen = f"wrote at least {_mib(self.seen or 0)} into its evaluation folders ({where})"
        return (f"the candidate {seen}: over the {_mib(self.limit)} disk quota (SandboxConfig.max_out_bytes;"
                " the folders are in RAM), so it was killed. Write only the outputs the harness asks for;"
                " keep scratch data in memory")

    def flag(self) -> Flag:
        return Flag(name="disk_quota", detail=self.message())


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"
