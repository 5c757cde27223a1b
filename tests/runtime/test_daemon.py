"""kagentd as a process (runtime/kagentd_cli.py, runtime/daemon.py, runtime/hotload.py): start/status/
stop, XDG files, a second daemon refused, graceful stop, cancellation, config and problem watching,
and checkpoint hot-loading into the scripted policy server."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from runtime.config import HotloadConfig
from runtime.hotload import STABLE, CommandLoader, Hotloader, LoraLoader
from runtime.store import Store
from skills.evaluator import launch
from tests.kagentd_harness import (
    READ,
    RELU,
    ROOT,
    SUBMIT,
    Kagentd,
    Scripted,
    chat_body,
    write_relu_turn,
)


def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    p = subprocess.Popen(["true"])  # noqa: S607
    p.wait()
    return p.pid


@pytest.mark.slow
def test_lifecycle_xdg_files_and_second_daemon(tmp_path: Path) -> None:
    # No policy server: none is needed until an episode runs, and then the daemon says why it failed.
    d = Kagentd(tmp_path, "http://127.0.0.1:9/v1", extra={"scheduler": {"request_attempts": 1}})
    # an evaluation's scratch folder whose maker was killed (its pid no longer runs): swept at start
    left = Path(tempfile.mkdtemp(prefix=launch.SCRATCH_PREFIX, dir=launch._scratch_base()))
    (left / launch.OWNER_FILE).write_text(f"{_dead_pid()} 0\n")
    started = d.cli("start")
    assert started.returncode == 0, started.stderr
    try:
        # gone once kagentd has started (the log names it, unless another test's kagentd, starting
        # at the same moment under pytest-xdist, swept /dev/shm first)
        assert not left.exists()
        assert f"kagentd started: pid {d.pid}, {d.url}" in started.stdout
        # XDG: pid and info in $XDG_RUNTIME_DIR/kagent, store and log in $XDG_STATE_HOME/kagent.
        assert d.run_dir == tmp_path / "xdg-run" / "kagent" and (d.run_dir / "kagentd.pid").is_file()
        assert d.db.is_file() and (d.state / "kagentd.log").is_file()
        status = d.cli("status")
        assert status.returncode == 0, status.stderr
        assert f"kagentd ok: pid {d.pid}, {d.url}" in status.stdout
        assert "episodes   0 running, 0 queued" in status.stdout and "slots      0/1 busy" in status.stdout
        assert "policy server: ok" in status.stdout
        r = httpx.post(f"{d.url}/v1/chat/completions", json=chat_body(RELU.read_text()), timeout=120)
        assert r.status_code == 502, r.text
        assert "the policy server failed: " in r.json()["error"]["message"]
        status = d.cli("status")
        assert status.returncode == 0 and "policy server: PROBLEM: " in status.stdout  # and it stays up
        again = d.cli("start")
        assert again.returncode == 1 and f"kagentd is already running (pid {d.pid}" in again.stderr
        # A second daemon on the same store (its own pid files, so only the store lock stops it).
        second = subprocess.run(
            [sys.executable, "-m", "runtime.kagentd_cli", "run", "--config", str(d.config),
             "--set", f"daemon.run_dir={tmp_path / 'other-run'}"],
            cwd=ROOT, env=d.env, capture_output=True, text=True, timeout=120, check=False)
        assert second.returncode == 1
        assert f"{d.db} is already open for writing (by pid {d.pid}" in second.stderr
        assert "a second daemon on the same store is refused" in second.stderr and "Traceback" not in second.stderr
        pid = d.pid
    finally:
        stopped = d.stop()
    assert stopped.returncode == 0 and f"kagentd (pid {pid}) stopped in" in stopped.stdout
    assert not (d.run_dir / "kagentd.pid").exists() and not (d.run_dir / "kagentd.json").exists()
    assert "kagentd stopped" in (d.state / "kagentd.log").read_text()
    not_running = d.cli("status")
    assert not_running.returncode == 3 and "kagentd is not running" in not_running.stdout
    again = d.stop()
    assert again.returncode == 0 and "kagentd is not running" in again.stdout


def test_startup_failure_is_reported(tmp_path: Path) -> None:
    with socket_in_use() as port:
        d = Kagentd(tmp_path, "http://127.0.0.1:9/v1", extra={"http": {"port": port}})
        proc = d.cli("start")
    assert proc.returncode == 1
    assert "kagentd exited during start-up (status 1)" in proc.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr


class socket_in_use:  # noqa: N801 (a context manager used like a function)
    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        return int(self.sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


def _solve_in_thread(d: Kagentd, result: dict[str, Any], **extra: Any) -> threading.Thread:
    def go() -> None:
        try:
            r = httpx.post(f"{d.url}/v1/chat/completions", json=chat_body(RELU.read_text(), **extra), timeout=300)
            result["status"], result["body"] = r.status_code, r.json()
        except httpx.HTTPError as exc:
            result["error"] = exc
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def test_stop_cancels_a_slow_llm_call_at_once_and_keeps_the_turns(tmp_path: Path) -> None:
    """`kagentd stop` while an episode waits on a slow policy call (here 120 s, within a 120 s grace
    period) does not wait for it: the call is cancelled, the client is told (503), the episode is
    stored `cancelled` with the turns it had."""
    scripted = Scripted(tmp_path, [READ, READ], delay=120.0)
    d = Kagentd(tmp_path, scripted.base_url, grace=120)
    d.start()
    try:
        result: dict[str, Any] = {}
        worker = _solve_in_thread(d, result)
        d.wait_for(lambda: d.health()["scheduler"]["running"] == 1, timeout=120, what="the episode to start")
        url = d.url
        began = time.monotonic()
        stopper = subprocess.Popen([sys.executable, "-m", "runtime.kagentd_cli", "stop", "--config", str(d.config)],
                                   cwd=ROOT, env=d.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = stopper.communicate(timeout=240)
        took = time.monotonic() - began
        assert stopper.returncode == 0, err
        assert "stopped in" in out and took < 90, (out, took)  # the LLM call alone would take 120 s
        worker.join(timeout=60)
        assert result.get("status") == 503, result
        assert result["body"]["error"]["code"] == "cancelled"
        assert "kagentd stopped before the episode" in result["body"]["error"]["message"]
        assert d.sql("SELECT status, rerun_pending FROM episodes") == [("cancelled", 0)]
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"{url}/health", timeout=5)
    finally:
        d.kill()
        scripted.proc.kill()  # it would finish its 120 s sleep before exiting on SIGTERM
        scripted.stop()


def test_a_policy_server_killed_mid_episode_is_a_502_with_the_cause(tmp_path: Path) -> None:
    """The request's retries are bounded (scheduler.request_retry_budget_s): the client gets the
    cause instead of waiting while the daemon probes a server that does not come back."""
    scripted = Scripted(tmp_path, [READ], delay=0.3, loop=True)
    d = Kagentd(tmp_path, scripted.base_url, extra={"scheduler": {"request_retry_budget_s": 3}})
    d.start()
    try:
        result: dict[str, Any] = {}
        worker = _solve_in_thread(d, result)
        d.wait_for(lambda: d.sql("SELECT count(*) FROM turns")[0][0] >= 1, timeout=120, what="a turn")
        scripted.stop()
        worker.join(timeout=240)
        assert result.get("status") == 502, result
        message = result["body"]["error"]["message"]
        assert "the policy server failed: " in message and "cannot connect" in message, message
        assert "gave up after 3 s of retries: scheduler.request_retry_budget_s" in message, message
        assert d.health()["status"] == "ok"
    finally:
        d.kill()
        scripted.stop()


def test_disconnect_and_grace_period_cancel_episodes(tmp_path: Path) -> None:
    scripted = Scripted(tmp_path, [READ], delay=0.3, loop=True)  # an episode that never submits
    d = Kagentd(tmp_path, scripted.base_url, grace=1)
    d.start()
    try:
        # The client goes away: its episode is cancelled (http.cancel_on_disconnect).
        with httpx.stream("POST", f"{d.url}/v1/chat/completions", json=chat_body(RELU.read_text(), stream=True),
                          timeout=60) as r:
            for line in r.iter_lines():
                if "turn 1:" in line:
                    break
        first = d.wait_for(lambda: d.sql("SELECT id, status FROM episodes WHERE status = 'cancelled'"),
                           what="the abandoned episode to be cancelled")
        assert len(first) == 1
        # Stop with a 1 s grace period while an episode runs: it is cancelled, and its turns stay.
        result: dict[str, Any] = {}
        _solve_in_thread(d, result)
        d.wait_for(lambda: d.sql("SELECT count(*) FROM turns t JOIN episodes e ON e.id = t.episode_id"
                                 " WHERE e.status = 'running'")[0][0] >= 2, what="two turns")
        began = time.monotonic()
        stopped = d.stop()
        assert stopped.returncode == 0 and time.monotonic() - began < 30
        rows = d.sql("SELECT id, status, error FROM episodes ORDER BY id")
        assert [r[1] for r in rows] == ["cancelled", "cancelled"], rows
        assert d.sql("SELECT count(*) FROM turns WHERE episode_id = ?", (rows[1][0],))[0][0] >= 2
        assert rows[1][2].startswith("kagentd stopped while the episode ran"), rows  # its LLM call: not waited for
    finally:
        d.kill()
        scripted.stop()


def test_config_and_problem_folder_watchers(tmp_path: Path) -> None:
    problems = tmp_path / "problems"
    (problems / "level1").mkdir(parents=True)
    shutil.copyfile(RELU, problems / "level1" / "01_relu.py")
    d = Kagentd(tmp_path, "http://127.0.0.1:9/v1", api_key="old-key",
                extra={"scheduler": {"problems_dir": str(problems)}, "watch": {"debounce_ms": 100}})
    d.start()
    try:
        assert d.health()["scheduler"]["problems"] == 1
        shutil.copyfile(ROOT / "problems" / "level1" / "02_swish.py", problems / "level1" / "02_swish.py")
        d.wait_for(lambda: d.health()["scheduler"]["problems"] == 2, what="the new problem")
        url = d.url
        sections = d.sections
        sections["http"] = {**sections["http"], "api_key": "new-key", "port": 1}
        d.write_config(sections)
        d.api_key = "new-key"
        d.wait_for(lambda: httpx.get(f"{url}/health", headers=d.headers, timeout=5).status_code == 200,
                   what="the new key")
        assert httpx.get(f"{url}/health", headers={"Authorization": "Bearer old-key"}, timeout=5).status_code == 401
        cfg = d.health()["config"]
        assert cfg["applied"] == ["http.api_key"] and cfg["restart_needed"] == ["http.port"]
        assert "changed settings need a restart: http.port" in d.cli("status").stdout
        d.config.write_text(d.config.read_text() + "[http\n")  # broken: the old settings stay
        d.wait_for(lambda: d.health()["config"]["error"], what="the reload error")
        assert "is not valid TOML" in d.health()["config"]["error"]
    finally:
        d.kill()


def _checkpoint(folder: Path, step: int, *, stable: bool) -> Path:
    path = folder / f"step_{step}"
    path.mkdir(parents=True, exist_ok=True)
    (path / "adapter_config.json").write_text("{}")
    if stable:
        (path / STABLE).write_text("")
    return path


def test_hot_loading_checkpoints_into_the_policy_server(tmp_path: Path) -> None:
    scripted = Scripted(tmp_path, [write_relu_turn(), SUBMIT])
    ckpt = tmp_path / "ckpt"
    d = Kagentd(tmp_path, scripted.base_url,
                extra={"hotload": {"checkpoints_dir": str(ckpt), "keep_adapters": 2}, "watch": {"debounce_ms": 100}})
    _checkpoint(ckpt, 1, stable=True)  # already there at start: loaded at start-up
    d.start()
    try:
        d.wait_for(lambda: d.health()["hotload"]["step"] == 1, what="step_1")
        assert "kagent-step-1" in scripted.models()
        _checkpoint(ckpt, 2, stable=False)  # half written: never loaded
        time.sleep(1.5)
        assert d.health()["hotload"]["step"] == 1 and "kagent-step-2" not in scripted.models()
        (ckpt / "step_2" / STABLE).write_text("")
        d.wait_for(lambda: d.health()["hotload"]["step"] == 2, what="step_2")
        _checkpoint(ckpt, 3, stable=True)
        h = d.wait_for(lambda: (h := d.health())["hotload"]["step"] == 3 and h, what="step_3")
        assert h["hotload"]["version"] == 3 and h["hotload"]["loaded"] == ["kagent-step-2", "kagent-step-3"]
        assert h["scheduler"]["policy_version"] == 3 and h["scheduler"]["policy_model"] == "kagent-step-3"
        models = scripted.models()
        assert "kagent-step-3" in models and "kagent-step-2" in models and "kagent-step-1" not in models
        assert d.sql("SELECT version, path FROM policies ORDER BY version") == [
            (v, str((ckpt / f"step_{v}").resolve())) for v in (1, 2, 3)]
        # New episodes run on the new version and ask for the adapter by name.
        r = httpx.post(f"{d.url}/v1/chat/completions", json=chat_body(RELU.read_text()), timeout=240)
        eid = r.json()["kagent"]["episode_id"]
        assert d.sql("SELECT policy_version FROM episodes WHERE id = ?", (eid,)) == [(3,)]
        assert {row[0] for row in d.sql("SELECT policy_version FROM turns WHERE episode_id = ?", (eid,))} == {3}
        seen = httpx.get(f"{scripted.base_url.removesuffix('/v1')}/_scripted/log", timeout=10).json()
        assert any(req.get("model") == "kagent-step-3" for req in seen["requests"]), seen
    finally:
        d.kill()
        scripted.stop()


def test_hotloader_command_mode_and_failures(tmp_path: Path) -> None:
    """In-process: the command loader runs its argv per checkpoint; a server that is down is
    retried, reported, and given up on."""
    ckpt = tmp_path / "ckpt"
    _checkpoint(ckpt, 7, stable=True)
    marker = tmp_path / "loaded.txt"
    versions: list[tuple[int, str | None]] = []

    async def go() -> tuple[Any, Any]:
        async with Store.open(tmp_path / "k.db") as store:
            cmd = [sys.executable, "-c", "import sys; open(sys.argv[1], 'a').write(' '.join(sys.argv[2:]))",
                   str(marker), "{name}", "{step}", "{path}"]
            cfg = HotloadConfig(checkpoints_dir=str(ckpt), mode="command", command=cmd)
            hot = Hotloader(cfg, loader=CommandLoader(cmd, 30), store=store,
                            set_policy=lambda v, m: versions.append((v, m)))
            await hot.check()
            down = HotloadConfig(checkpoints_dir=str(ckpt), retries=2, timeout_seconds=2)
            failing = Hotloader(down, loader=LoraLoader("http://127.0.0.1:9", api_key=None, timeout_s=2),
                                store=store, set_policy=lambda v, m: versions.append((v, m)))
            await failing.check()
            return hot.status, failing.status
    ok, failed = anyio.run(go)
    assert marker.read_text() == f"kagent-step-7 7 {(ckpt / 'step_7').resolve()}"
    assert ok.step == 7 and ok.version == 1 and ok.adapter is None and versions[0] == (1, None)
    assert failed.step is None and failed.failed_steps == [7] and len(versions) == 1
    assert "step_7 (attempt 2/2): POST http://127.0.0.1:9/v1/load_lora_adapter: ConnectError" in (failed.error or "")


CRASH_TWO = """
import os, sys, anyio
from pathlib import Path
from runtime.store import ProblemRow, Store, TurnRow
from skills.evaluator.problem import source_id

async def main():
    async with Store.open(sys.argv[1]) as store:
        for path in sys.argv[2:]:
            code = Path(path).read_text()
            row = ProblemRow(id=source_id(code), name="level1/" + Path(path).stem, source="kagent", code=code)
            await store.upsert_problem(row)
            eid = await store.start_episode(row.id, policy_version=None)
            await store.add_turn(TurnRow(episode_id=eid, index=0, text="half way", completion_ids=[5, 6]))
        os.kill(os.getpid(), 9)

anyio.run(main)
"""


def test_interrupted_episode_requeued_but_not_started_before_a_stop_runs_after_the_next_start(tmp_path: Path) -> None:
    """kagentd stop while a job re-queued at start still waits (max_in_flight = 1): the next start
    re-queues it again, with the re-run the stop interrupted (its LLM call is not waited for);
    each runs once, and a third start has nothing left to re-run.

    The first start talks to a slow policy (a re-run takes 15 s: the stop lands in it); the later
    starts to a fast one, so the two re-runs they wait for take no 30 s of sleeping."""
    scripted = Scripted(tmp_path, [READ], delay=5.0, loop=True, name="slow")
    fast: Scripted | None = None
    d = Kagentd(tmp_path, scripted.base_url, grace=60,
                extra={"scheduler": {"max_in_flight": 1}, "scheduler.limits": {"max_turns": 3}})
    d.state.mkdir(parents=True, exist_ok=True)
    swish = ROOT / "problems" / "level1" / "02_swish.py"
    crash = subprocess.run([sys.executable, "-c", CRASH_TWO, str(d.db), str(RELU), str(swish)],
                           cwd=ROOT, env=d.env, capture_output=True, text=True, timeout=120)
    assert crash.returncode == -9, crash.stderr
    problems = d.sql("SELECT id, problem_id FROM episodes ORDER BY id")
    try:
        d.start()
        d.wait_for(lambda: (s := d.health()["scheduler"])["running"] == 1 and s["queued"] == 1
                   and d.sql("SELECT count(*) FROM turns WHERE episode_id = 3") == [(1,)],
                   what="one re-run running (its first turn stored), one queued")
        assert d.stop().returncode == 0
        assert d.sql("SELECT id, status, rerun_pending FROM episodes ORDER BY id") == [
            (1, "interrupted", 0), (2, "interrupted", 1), (3, "interrupted", 1)]
        scripted.proc.kill()  # its cancelled call would sleep on before a SIGTERM could end it
        scripted.stop()
        fast = Scripted(tmp_path, [READ], loop=True, name="fast")
        d.sections["policy"]["base_url"] = fast.base_url
        d.write_config(d.sections)
        d.start()  # the old code re-queued nothing here: episode 2's work was lost
        d.wait_for(lambda: d.sql("SELECT count(*) FROM episodes WHERE status = 'turn_limit'") == [(2,)],
                   timeout=180, what="the re-runs of episodes 2 and 3")
        assert d.stop().returncode == 0
        d.start()
        assert d.health()["scheduler"]["queued"] == 0
        time.sleep(1.0)
        assert d.health()["scheduler"]["running"] == 0
        assert d.stop().returncode == 0
        assert d.sql("SELECT id, status, rerun_pending, rerun_of FROM episodes ORDER BY id") == [
            (1, "interrupted", 0, None), (2, "interrupted", 0, None), (3, "interrupted", 0, 1),
            (4, "turn_limit", 0, 2), (5, "turn_limit", 0, 3)]
        assert d.sql("SELECT problem_id FROM episodes WHERE id > 3 ORDER BY id") == [
            (problems[1][1],), (problems[0][1],)]
        assert "re-queued 2 episode(s) waiting for a re-run" in (d.state / "kagentd.log").read_text()
    finally:
        d.kill()
        scripted.proc.kill()
        scripted.stop()
        if fast is not None:
            fast.stop()
