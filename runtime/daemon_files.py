"""The files a running kagentd leaves in daemon.run_dir: the pid file and the info file
(`DaemonInfo`: pid, URL, store), and whether the pid they name is a live kagentd. The daemon
writes them; `kagentd stop`/`status` and `kagent solve` read them."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from runtime.config import Paths
from skills.evaluator import atomic


class DaemonInfo(msgspec.Struct, kw_only=True):
    """The info file a running daemon writes (run_dir/kagentd.json)."""

    pid: int
    """Process id."""
    url: str
    """Where its HTTP server listens."""
    db: str
    """Its store."""
    config: str | None
    """Its config file."""
    log: str | None
    """Its log file when detached (None in the foreground)."""
    started: float
    """Unix time it started."""


def alive(pid: int) -> bool:
    """A live kagentd process (not a zombie, not a recycled pid of another program)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path(f"/proc/{pid}")
    if not proc.exists():
        return True  # no procfs: trust kill(0)
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, IndexError):
        return False
    # `kagentd ...` (the console script) or `python -m runtime.kagentd_cli ...` (`kagentd start`)
    return state != "Z" and "kagentd" in cmdline


def read_pid(paths: Paths) -> int | None:
    try:
        return int(paths.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def read_info(paths: Paths) -> DaemonInfo | None:
    try:
        return msgspec.json.decode(paths.info_file.read_bytes(), type=DaemonInfo)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def running(paths: Paths) -> int | None:
    """Pid of the daemon that owns these files, when it is alive."""
    pid = read_pid(paths)
    return pid if pid is not None and alive(pid) else None


def write_atomic(path: Path, data: bytes) -> None:
    """The pid and info files: readable by others, as a plain write would leave them."""
    atomic.write_atomic(path, data, mode=0o644)


def remove_own(paths: Paths) -> None:
    """Remove the pid and info files if they are still this process's."""
    if read_pid(paths) == os.getpid():
        paths.pid_file.unlink(missing_ok=True)
        info = read_info(paths)
        if info is None or info.pid == os.getpid():
            paths.info_file.unlink(missing_ok=True)
