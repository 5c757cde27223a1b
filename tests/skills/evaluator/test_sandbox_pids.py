"""skills/evaluator/pids.py: the evaluation's pids cgroup (EXPLOITS row 20: fork bombs), with real processes.
Where this machine offers no writable pids hierarchy the probe says so and the tests that need one
skip; the evaluation path is tests/skills/evaluator/test_exploits_cpu.py::test_fork_bomb_*."""

from __future__ import annotations

import errno
import os
import secrets
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from skills.evaluator.launch import Scratch, describe_sandbox
from skills.evaluator.pids import PREFIX, PidsGroup, hierarchy
from skills.evaluator.sandbox import SandboxConfig, active

needs_pids = pytest.mark.skipif(hierarchy() is None, reason="no writable cgroup hierarchy with the pids controller")

# Forks up to FORKS children that sleep SLEEP seconds and exit; `made` counts them, `err` is the
# errno that stopped it (0: none did). Needs os and time.
FORK_LOOP = """\
made, err = 0, 0
for _ in range(FORKS):
    try:
        pid = os.fork()
    except OSError as exc:
        err = exc.errno
        break
    if pid == 0:
        time.sleep(SLEEP)
        os._exit(0)
    made += 1
"""
# Waits for a line on stdin, then forks up to argv[1] sleeping children; prints how many it made
# and the errno that stopped it.
FORKER = ("import os, sys, time\nsys.stdin.readline()\n" + FORK_LOOP.replace("FORKS", "int(sys.argv[1])")
          .replace("SLEEP", "60") + "print(made, err, flush=True)\ntime.sleep(60)\n")


def start_forker(forks: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", FORKER, str(forks)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)


@needs_pids
def test_group_caps_forks_and_release_kills_and_removes() -> None:
    proc = start_forker(200)
    group = PidsGroup.make(f"{PREFIX}test-{secrets.token_hex(4)}")
    try:
        limit = group.adopt(proc.pid, 30)
        assert proc.pid in group.procs()
        assert 30 < limit < 40  # the forker (one task), plus headroom
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        made, err = map(int, proc.stdout.readline().split())
        assert made <= 30 and err == errno.EAGAIN, (made, err)
        assert len(group.procs()) == made + 1  # its children were born in the group
    finally:
        anyio.run(group.release)
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
    assert not group.path.exists()
    assert proc.returncode == -9


@needs_pids
def test_adopt_moves_existing_descendants() -> None:
    """Processes the worker started before it was moved (bwrap's own children) go in with it."""
    proc = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True)
    group = PidsGroup.make(f"{PREFIX}test-{secrets.token_hex(4)}")
    try:
        for _ in range(200):  # until sh has started both
            children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            if len(children) == 2:
                break
            anyio.run(anyio.sleep, 0.01)
        group.adopt(proc.pid, 10)
        assert group.procs() == {proc.pid, *map(int, children)}
    finally:
        anyio.run(group.release)
        proc.wait(timeout=10)
    assert not group.path.exists()


def test_describe_sandbox_says_what_caps_tasks(tmp_path: Path) -> None:
    """EvalResult.sandbox names the pids cgroup, or says that nothing caps a root candidate's tasks."""
    text = describe_sandbox(SandboxConfig(), Scratch(root=tmp_path, workspace=tmp_path, lib=None, run_as=None))
    if hierarchy() is not None:
        assert text.endswith("; tasks capped by a pids cgroup"), text
    elif active(SandboxConfig()) and os.geteuid() == 0:
        assert "tasks not capped" in text, text


@needs_pids
def test_make_sweeps_stale_empty_groups_only() -> None:
    """A group left by a killed evaluator (empty, old) goes when the next one is made; a fresh empty
    one (made by another evaluator a moment ago, about to be filled) stays."""
    base = hierarchy()
    assert base is not None
    stale, fresh = base / f"{PREFIX}test-stale-{secrets.token_hex(4)}", base / f"{PREFIX}test-fresh-{secrets.token_hex(4)}"
    stale.mkdir()
    fresh.mkdir()
    old = stale.stat().st_mtime - 3600
    os.utime(stale, (old, old))
    group = PidsGroup.make(f"{PREFIX}test-{secrets.token_hex(4)}")
    try:
        assert not stale.exists() and fresh.exists()
    finally:
        for path in (stale, fresh, group.path):
            if path.exists():
                path.rmdir()
