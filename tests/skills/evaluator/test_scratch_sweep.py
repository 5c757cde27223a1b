"""Scratch folders left by a killed evaluator are swept (skills/evaluator/launch.py: sweep_scratch).

An evaluation removes its /dev/shm folder when it ends, on error and on cancellation too; a process
killed outright cannot. Each folder names its maker (pid and start time), and kagentd's start
removes the folders whose maker no longer runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from skills.evaluator import launch
from skills.evaluator.sandbox import SandboxConfig

ROOT = Path(__file__).resolve().parents[3]

MAKER = """
import sys, time
from pathlib import Path
import skills.evaluator.launch as L
from skills.evaluator.sandbox import SandboxConfig
L._scratch_base = lambda: Path(sys.argv[1])
print(L.make_scratch(SandboxConfig()).root, flush=True)
time.sleep(120)
"""


def test_only_folders_whose_maker_is_gone_are_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch, "_scratch_base", lambda: tmp_path)
    # made by a process then killed with SIGKILL: it could not clean up
    child = subprocess.Popen([sys.executable, "-c", MAKER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    killed = Path(child.stdout.readline().strip())
    assert killed.is_dir() and (killed / launch.OWNER_FILE).read_text().split()[0] == str(child.pid)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    (killed / "out" / "partial.bin").write_bytes(b"x")  # what the evaluation had written
    # made by this (live) process: kept
    mine = launch.make_scratch(SandboxConfig()).root
    # this pid, another start time: the pid was reused by a process that did not make it
    reused = tmp_path / (launch.SCRATCH_PREFIX + "reused")
    reused.mkdir()
    (reused / launch.OWNER_FILE).write_text(f"{os.getpid()} 1\n")
    # no owner file (being made, or made before the file existed), and another program's folder
    unowned = tmp_path / (launch.SCRATCH_PREFIX + "unowned")
    unowned.mkdir()
    other = tmp_path / "kagent-snapshots-x"
    other.mkdir()
    (other / launch.OWNER_FILE).write_text("999999999 1\n")

    removed = launch.sweep_scratch()

    assert sorted(removed) == sorted([killed, reused])
    assert not killed.exists() and not reused.exists()
    assert mine.is_dir() and unowned.is_dir() and other.is_dir()
    assert launch.sweep_scratch() == []  # nothing left to remove
