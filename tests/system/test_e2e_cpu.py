"""Issue 4 "Done when", on the CPU: `kagentd start` -> the official `openai` client calls
/v1/chat/completions -> the scripted policy writes a CPU kernel through the skills -> compile,
tests, profile, submit -> a verified answer with its speedup -> the whole trajectory with token
ids is in SQLite and `kagent episodes show` prints it; then `kill -9` in the middle of a second
(slow-policy) episode, restart, and nothing stored is lost; the interrupted episode is marked and
re-queued. Everything is a real process; the only fake is the LLM (runtime/fakes/scripted.py)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import openai
import pytest

from tests.kagentd_harness import CPU_RELU_SCRIPT, READ, RELU, Kagentd, Scripted, chat_body

SKILLS = ["read_file", "write_file", "write_file", "compile", "run_tests", "profile", "submit"]


def _solve_and_check(d: Kagentd) -> int:
    client = openai.OpenAI(base_url=f"{d.url}/v1", api_key="unused", max_retries=0, timeout=300)
    r = client.chat.completions.create(
        model="kagent", extra_body={"problem_name": "level1/01_relu"},
        messages=[{"role": "user", "content": f"Write a fast kernel for:\n```python\n{RELU.read_text()}```"}])
    answer = r.choices[0].message.content or ""
    ext = (r.model_extra or {})["kagent"]
    assert ext["status"] == "submitted" and ext["reward"] >= 1, answer
    assert "**Verified `ModelNew`** for `level1/01_relu`" in answer
    assert "class ModelNew" in answer and "ops.relu(" in answer and "#pragma omp" in answer
    assert ext["speedup_eager"] > 0 and f"**{ext['speedup_eager']:.2f}x** vs eager [95% " in answer
    assert set(ext["files"]) == {"model_new.py", "kernels/relu.cpp"}
    return int(ext["episode_id"])


def _check_trajectory(d: Kagentd, eid: int) -> None:
    (status, reward, trainable, origin), = d.sql("SELECT status, reward, trainable, origin FROM episodes WHERE id = ?",
                                                 (eid,))
    assert (status, trainable, origin) == ("submitted", 1, "request") and reward >= 1
    turns = d.sql("SELECT idx, prompt_prefix, prompt_ids, completion_ids, logprobs, completion_tokens FROM turns"
                  " WHERE episode_id = ? ORDER BY idx", (eid,))
    assert [t[0] for t in turns] == list(range(6))
    for idx, prefix, prompt, completion, logprobs, n in turns:
        ids = np.frombuffer(completion, dtype="<i4")
        assert len(ids) == n > 0 and len(np.frombuffer(logprobs, dtype="<f4")) == n
        assert len(np.frombuffer(prompt, dtype="<i4")) > 0
        assert (prefix > 0) == (idx > 0)  # token-in after turn 0: the previous context is carried
    calls = d.sql("SELECT skill, ok FROM tool_calls WHERE episode_id = ? ORDER BY id", (eid,))
    assert [c[0] for c in calls] == SKILLS and all(ok for _, ok in calls)
    modes = d.sql("SELECT mode, correct FROM evaluations WHERE episode_id = ? ORDER BY id", (eid,))
    assert modes == [("test", 1), ("profile", 1), ("final", 1)]


def _check_cli(d: Kagentd, eid: int) -> None:
    show = d.kagent("episodes", "show", str(eid))
    assert show.returncode == 0, show.stderr
    out = show.stdout
    assert f"episode {eid} · level1/01_relu" in out and "status submitted" in out
    for needle in ("── turn 5", "→ compile({})  ok", "compiled OK", "→ run_tests({})  ok", "[cpu, test]: correct",
                   "speedup vs eager:", "→ submit(", "final evaluation:", "reward (milestone): "):
        assert needle in out, needle
    listed = d.kagent("episodes", "list", "--json")
    assert listed.returncode == 0 and f'"id":{eid},' in listed.stdout


def _turns(d: Kagentd, eid: int) -> list[tuple[Any, ...]]:
    return d.sql("SELECT id, idx, prompt_prefix, prompt_ids, completion_ids, logprobs, text, tool_calls FROM turns"
                 " WHERE episode_id = ? ORDER BY idx", (eid,))


def _dead(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _kill_mid_episode(d: Kagentd) -> tuple[int, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Start a slow episode, let it store a few turns, SIGKILL the daemon; returns what was stored."""
    def solve() -> None:
        try:
            httpx.post(f"{d.url}/v1/chat/completions", json=chat_body(RELU.read_text(), problem_name="level1/01_relu"),
                       timeout=120)
        except httpx.HTTPError:
            pass  # the daemon dies under it
    threading.Thread(target=solve, daemon=True).start()
    eid = d.wait_for(lambda: (r := d.sql("SELECT id FROM episodes WHERE status = 'running'")) and r[0][0],
                     what="the slow episode")
    d.wait_for(lambda: len(_turns(d, eid)) >= 3, what="three turns")
    pid = d.pid
    before = _turns(d, eid)
    calls = d.sql("SELECT * FROM tool_calls WHERE episode_id = ? ORDER BY id", (eid,))
    os.kill(pid, signal.SIGKILL)
    d.wait_for(lambda: _dead(pid), what="the daemon to die")
    return eid, before, calls


@pytest.mark.slow
def test_end_to_end_cpu_then_kill_9_and_restart(tmp_path: Path) -> None:
    fast = Scripted(tmp_path, CPU_RELU_SCRIPT, name="fast")
    d = Kagentd(tmp_path, fast.base_url, grace=5)
    d.start()
    try:
        eid = _solve_and_check(d)
        _check_trajectory(d, eid)
        _check_cli(d, eid)
        if shutil.which("curl"):  # and curl, for the record
            curl = subprocess.run(["curl", "-sS", f"{d.url}/v1/models"], capture_output=True, text=True, timeout=30,
                                  check=False)
            assert '"id":"kagent"' in curl.stdout
        stopped = d.stop()
        assert stopped.returncode == 0 and "stopped in" in stopped.stdout
    finally:
        d.kill()
        fast.stop()

    # Same store, a slow policy that never submits: kill -9 in the middle of its episode.
    slow = Scripted(tmp_path, [READ], delay=0.4, loop=True, name="slow")
    sections = d.sections
    sections["policy"]["base_url"] = slow.base_url
    d.write_config(sections)
    d.start()
    try:
        killed, before, calls_before = _kill_mid_episode(d)
        conn = sqlite3.connect(f"file:{d.db}?mode=ro", uri=True)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        conn.close()
        after = _turns(d, killed)
        assert after[:len(before)] == before  # every turn stored before the kill, byte for byte
        assert d.sql("SELECT status FROM episodes WHERE id = ?", (killed,)) == [("running",)]  # nobody marked it yet
        restarted = d.cli("start")  # the pid file is stale and the store lock died with the process
        assert restarted.returncode == 0, restarted.stderr
        rows = d.wait_for(lambda: (r := d.sql("SELECT id, status, error, origin FROM episodes WHERE id >= ?"
                                              " ORDER BY id", (killed,))) and len(r) >= 2 and r, what="the re-queue")
        assert rows[0][:3] == (killed, "interrupted", "the daemon stopped while the episode ran")
        requeued = rows[1]
        assert requeued[3] == "request" and requeued[1] in ("running", "cancelled")
        assert d.sql("SELECT problem_id FROM episodes WHERE id = ?", (requeued[0],)) == \
            d.sql("SELECT problem_id FROM episodes WHERE id = ?", (killed,))
        assert _turns(d, killed) == after  # the restart touched none of them
        assert d.sql("SELECT * FROM tool_calls WHERE episode_id = ? ORDER BY id", (killed,))[:len(calls_before)] == \
            calls_before
        assert d.sql("SELECT status FROM episodes WHERE id = ?", (eid,)) == [("submitted",)]  # the first run's
        stopped = d.stop()  # grace 5 s: the re-queued (endless) episode is cancelled, not left running
        assert stopped.returncode == 0, stopped.stderr
        assert d.sql("SELECT count(*) FROM episodes WHERE status = 'running'") == [(0,)]
    finally:
        d.kill()
        slow.stop()
