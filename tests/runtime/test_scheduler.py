"""The scheduler: concurrent rollouts under the per-version caps, requests ahead of rollouts,
interrupted episodes re-queued after a kill -9, the policy server failing and coming back, a
graceful drain, and the curriculum source. Real HTTP (scripted policy), real SQLite; the scripted agent never writes
a kernel, so grading takes the untouched-workspace path and no evaluation workers start.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from runtime.curriculum_source import StoreCurriculum, scan_problems
from runtime.fakes.scripted import scripted_server
from runtime.policy import Policy, make_policy
from runtime.scheduler import Draining, Scheduler, SchedulerStatus
from runtime.settings import EpisodeLimits, PolicyConfig, SchedulerConfig
from runtime.store import CurriculumRow, EpisodeRow, Store
from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.problem import ProblemError
from skills.evaluator.sandbox import SandboxConfig

ROOT = Path(__file__).resolve().parents[2]
LIST = {"content": "", "tool_calls": [{"name": "list_files"}]}
NAMES = ["01_relu", "02_swish", "07_gelu"]


def problems_dir(tmp_path: Path) -> Path:
    root = tmp_path / "problems"
    (root / "level1").mkdir(parents=True)
    for name in NAMES:
        shutil.copyfile(ROOT / "problems" / "level1" / f"{name}.py", root / "level1" / f"{name}.py")
    return root


def sched_config(tmp_path: Path, *, backend: str = "cpu", **kw: Any) -> SchedulerConfig:
    fields: dict[str, Any] = {
        "warm_workers": False, "problems_dir": str(problems_dir(tmp_path)),
        "workspace_root": str(tmp_path / "ws"), "limits": EpisodeLimits(max_turns=3),
        "eval": EvalConfig(backend=backend, baselines=["eager"], build=BuildConfig(backend="cpu", cache_dir=str(tmp_path / "build")),
                           sandbox=SandboxConfig(allow_unsafe=True)),
        "policy_backoff_s": 0.2, "policy_backoff_max_s": 2.0, "seed": 1}
    fields.update(kw)
    return SchedulerConfig(**fields)


@asynccontextmanager
async def running(cfg: SchedulerConfig, store: Store, url: str, **policy: Any) -> AsyncIterator[tuple[Scheduler, Policy]]:
    """A started scheduler (cancelled when the block ends) with a policy on `url`."""
    pol = make_policy(PolicyConfig(base_url=url, max_tokens=512, backoff_s=0.01, retries=1, **policy))
    try:
        async with anyio.create_task_group() as tg:
            sched = Scheduler(config=cfg, store=store, policy=pol)
            await tg.start(sched.run)
            yield sched, pol
            tg.cancel_scope.cancel()
    finally:
        await pol.aclose()


async def until(cond: Callable[[], Awaitable[bool] | bool], seconds: float = 30.0) -> None:
    with anyio.fail_after(seconds):
        while True:
            value = cond()
            if not isinstance(value, bool):
                value = await value
            if value:
                return
            await anyio.sleep(0.02)


def sample(seen: list[Any], value: Any) -> Any:
    """Record `value` in `seen` and return it (for polling conditions)."""
    seen.append(value)
    return value


def max_overlap(rows: list[EpisodeRow]) -> int:
    """Most episodes running at the same moment, from their start and finish times."""
    points = sorted([(r.started, 1) for r in rows] + [(r.finished or float("inf"), -1) for r in rows],
                    key=lambda p: (p[0], p[1]))
    best = cur = 0
    for _, d in points:
        cur += d
        best = max(best, cur)
    return best


def test_concurrent_rollouts_respect_the_per_version_caps(tmp_path: Path) -> None:
    cfg = sched_config(tmp_path, rollouts=True, max_in_flight=6, max_in_flight_per_version=2, max_rollouts_per_version=4)
    seen: list[SchedulerStatus] = []

    async def main() -> None:
        async with scripted_server([LIST], loop=True, delay_s=0.1) as url, Store.open(tmp_path / "k.db") as store:
            await store.add_policy(0, "base")
            await store.add_policy(1, "step_1")
            async with running(cfg, store, url) as (sched, _):
                sched.set_policy(0)
                await until(lambda: sample(seen, sched.status()).finished >= 4)
                await anyio.sleep(0.8)  # the v0 quota is used up: nothing new may start
                assert sched.status().running == 0 and sched.status().finished == 4
                sched.set_policy(1)
                await until(lambda: sample(seen, sched.status()).finished >= 8)
                await anyio.sleep(0.3)
                assert sched.status().running == 0 and sched.status().finished == 8
                rows = await store.list_episodes()
        v0 = [r for r in rows if r.policy_version == 0]
        v1 = [r for r in rows if r.policy_version == 1]
        assert len(v0) == 4 and len(v1) == 4 and len(rows) == 8
        assert all(r.status == "turn_limit" and r.reward == -1.0 and r.origin == "rollout" for r in rows)
        assert max_overlap(v0) == 2 and max_overlap(v1) == 2  # concurrent, and never more than the cap
        assert max(s.running for s in seen) == 2
        assert {r.problem_id for r in rows} <= {p.id for p in scan_problems(Path(cfg.problems_dir))}
        last = seen[-1]
        assert last.turns_per_s is not None and last.turns_per_s > 0 and last.by_status == {"turn_limit": 8}
        assert last.policy_error is None and last.problems == 3 and last.gpu_slots_total == 1

    anyio.run(main)


def test_requests_go_ahead_of_rollouts(tmp_path: Path) -> None:
    cfg = sched_config(tmp_path, rollouts=True, max_in_flight=1)
    source = (ROOT / "problems" / "level1" / "01_relu.py").read_text()

    async def main() -> None:
        async with scripted_server([LIST], loop=True, delay_s=0.1) as url, Store.open(tmp_path / "k.db") as store:
            async with running(cfg, store, url) as (sched, _):
                await until(lambda: sched.status().running == 1)
                queued: list[int] = []
                events: list[str] = []

                async def on_event(e: Any) -> None:
                    events.append(e.kind)

                async with anyio.create_task_group() as tg:
                    async def request() -> None:
                        out = await sched.solve(source, name="level1/01_relu", on_event=on_event)
                        assert out.status == "turn_limit" and out.reward == -1.0 and out.files == {}

                    tg.start_soon(request)
                    # Queued behind the running rollout; or, where that rollout ended just as the
                    # request came, admitted at once (then no rollout could go first either).
                    await until(lambda: sample(queued, sched.status().queued) == 1 or "started" in events)
                    waiting_since = time.time()
                with pytest.raises(ProblemError, match="no `Model` class"):
                    await sched.solve("x = 1\n", name="broken")

                async def resumed() -> bool:  # rollouts start again after the request
                    rows = await store.list_episodes()
                    last_request = max(r.id for r in rows if r.origin == "request")
                    return any(r.origin == "rollout" and r.id > last_request for r in rows)

                await until(resumed)
                rows = await store.list_episodes()
        request_rows = [r for r in rows if r.origin == "request"]
        assert len(request_rows) == 1
        # While the request waited for room, no rollout started: it went next.
        assert not [r for r in rows if r.origin == "rollout" and waiting_since <= r.started <= request_rows[0].started]
        assert rows[0].origin == "rollout" and events[0] == "started" and events[-1] == "finished"

    anyio.run(main)


CRASH = """
import os, sys, anyio
from pathlib import Path
from runtime.curriculum_source import scan_problems
from runtime.store import Store, TurnRow

async def main():
    async with Store.open(sys.argv[1]) as store:
        rows = scan_problems(Path(sys.argv[2]))
        await store.upsert_problems(rows)
        eid = await store.start_episode(rows[0].id, policy_version=None)
        await store.add_turn(TurnRow(episode_id=eid, index=0, text="half way", prompt_ids=[1, 2],
                                     completion_ids=[5, 6, 7], logprobs=[-0.5, -0.25, -1.0]))
        os.kill(os.getpid(), 9)  # kill -9 in the middle of the episode

anyio.run(main)
"""


def test_interrupted_episodes_are_marked_and_requeued(tmp_path: Path) -> None:
    cfg = sched_config(tmp_path)
    db = tmp_path / "k.db"
    crash = subprocess.run([sys.executable, "-c", CRASH, str(db), cfg.problems_dir], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert crash.returncode == -9, crash.stderr

    async def main() -> None:
        async with scripted_server([LIST], loop=True) as url, Store.open(db) as store:
            async with running(cfg, store, url) as (sched, _):
                await until(lambda: sched.status().finished == 1)
            first, second = await store.get_episode(1), await store.get_episode(2)
        assert first is not None and second is not None
        assert first.episode.status == "interrupted" and first.episode.finished is not None
        assert [(t.text, t.completion_ids, t.logprobs) for t in first.turns] == [("half way", [5, 6, 7], [-0.5, -0.25, -1.0])]
        assert second.episode.problem_id == first.episode.problem_id
        assert (second.episode.status, second.episode.origin, len(second.turns)) == ("turn_limit", "rollout", 3)

    anyio.run(main)


def test_policy_server_down_backs_off_says_why_and_recovers(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]

    async def main() -> None:
        cfg = sched_config(tmp_path / "a", rollouts=True, max_in_flight=2)
        async with Store.open(tmp_path / "a.db") as store:
            async with running(cfg, store, f"http://127.0.0.1:{dead}/v1") as (sched, _):
                await until(lambda: sched.status().policy_error is not None)
                await anyio.sleep(1.5)
                st = sched.status()
                assert st.policy_error is not None and "cannot connect" in st.policy_error
                assert "new episodes wait" in st.policy_error
                rows = await store.list_episodes()
            # The two that started together failed; then it backs off instead of hammering a dead server.
            assert [r.status for r in rows] == ["policy_error", "policy_error"]

        # The first four calls fail (two episodes' worth: one try + one retry each), then it recovers.
        cfg = sched_config(tmp_path / "b", rollouts=True, max_in_flight=1)
        async with scripted_server([LIST], loop=True, fail_first=4) as url, Store.open(tmp_path / "b.db") as store:
            async with running(cfg, store, url) as (sched, _):
                errors: list[SchedulerStatus] = []
                await until(lambda: sample(errors, sched.status()).by_status.get("turn_limit", 0) >= 1)
                assert sched.status().policy_error is None
                rows = await store.list_episodes()
        assert any(e.policy_error is not None and "HTTP 500" in e.policy_error for e in errors)
        assert [r.status for r in rows[:3]] == ["policy_error", "policy_error", "turn_limit"]
        assert rows[1].started - (rows[0].finished or 0.0) >= 0.2  # the backoff held new episodes back

    anyio.run(main)


def test_drain_interrupts_running_rollouts_at_their_llm_call_and_starts_none(tmp_path: Path) -> None:
    """drain() cancels LLM calls in flight (kagentd stop does not wait on a slow policy server):
    a running rollout ends `interrupted` and waits for a re-run at the next start."""
    cfg = sched_config(tmp_path, rollouts=True, max_in_flight=2)

    async def main() -> None:
        async with scripted_server([LIST], loop=True, delay_s=0.2) as url, Store.open(tmp_path / "k.db") as store:
            async with running(cfg, store, url) as (sched, _):
                with anyio.fail_after(0.5):
                    await sched.wait_idle()  # nothing ran yet: at once
                await until(lambda: sched.status().running == 2)
                sched.drain()
                sched.drain()  # idempotent
                st = sched.status()
                assert (st.draining, st.rollouts, st.running) == (True, False, 2)
                started = st.finished + st.running
                with anyio.fail_after(30):
                    await sched.wait_idle()
                idle_at = time.time()
                assert sched.status().running == 0
                rows = await store.list_episodes()
                await anyio.sleep(0.6)  # rollouts were on: none may start now
                assert len(await store.list_episodes()) == len(rows) == started
                assert sched.status().running == 0
                pending = [r.id for r in await store.pending_reruns()]
        stopped = [r for r in rows if r.status == "interrupted"]
        assert len(stopped) == 2 and all(r.finished is not None for r in stopped), rows
        assert all(r.status in ("interrupted", "turn_limit") for r in rows), rows
        assert pending == [r.id for r in stopped]  # each waits for its re-run
        assert all("kagentd stopped while the episode ran" in (r.error or "") for r in stopped)
        assert idle_at - max(r.finished or 0.0 for r in rows) < 0.5  # woken by the last one, not by polling late

    anyio.run(main)


def test_drain_refuses_waiting_and_new_requests_and_cancels_running_ones(tmp_path: Path) -> None:
    cfg = sched_config(tmp_path, max_in_flight=1)
    source = (ROOT / "problems" / "level1" / "01_relu.py").read_text()

    async def main() -> None:
        async with scripted_server([LIST], loop=True, delay_s=3.0) as url, Store.open(tmp_path / "k.db") as store:
            async with running(cfg, store, url) as (sched, _):
                results: dict[str, Any] = {}

                async def request(key: str) -> None:
                    try:
                        results[key] = await sched.solve(source, name="level1/01_relu")
                    except Draining as exc:
                        results[key] = exc

                async with anyio.create_task_group() as tg:
                    tg.start_soon(request, "first")
                    await until(lambda: sched.status().running == 1)
                    tg.start_soon(request, "second")  # its problem check (a child process) takes seconds
                    await until(lambda: sched.status().queued == 1)
                    sched.drain()
                    await until(lambda: "second" in results, seconds=2.0)  # refused at once
                    await until(lambda: "first" in results, seconds=10.0)  # its LLM call cancelled
                    with pytest.raises(Draining, match="shutting down"):
                        await sched.solve(source, name="later")
                    with anyio.fail_after(30):
                        await sched.wait_idle()
                    assert "first" in results
                rows = await store.list_episodes()
                pending = await store.pending_reruns()
        first, second = results["first"], results["second"]
        assert isinstance(second, Draining) and "starts no new episodes" in str(second)
        # Its LLM call was cancelled: the client is told (the server answers 503), nothing re-runs it.
        assert not isinstance(first, Draining) and first.status == "cancelled" and first.turns < 3
        assert [(r.origin, r.status) for r in rows] == [("request", "cancelled")]
        assert pending == []

    anyio.run(main)


def test_curriculum_is_uniform_until_the_store_has_weights(tmp_path: Path) -> None:
    async def main() -> None:
        async with Store.open(tmp_path / "k.db") as store:
            rows = scan_problems(problems_dir(tmp_path))
            await store.upsert_problems(rows)
            cur = StoreCurriculum(store, rows, refresh_s=0.0, seed=3)
            drawn = [(await cur.next_problem()).name for _ in range(60)]
            assert set(drawn) == {f"level1/{n}" for n in NAMES}
            await store.put_curriculum([CurriculumRow(problem_id=r.id, tier=1, weight=1.0 if r.name.endswith("gelu") else 0.0)
                                        for r in rows])
            drawn = [(await cur.next_problem()).name for _ in range(30)]
            assert set(drawn) == {"level1/07_gelu"}
        assert all(r.code and r.path and r.level == 1 for r in rows)

    anyio.run(main)


def test_status_before_anything_ran(tmp_path: Path) -> None:
    async def main() -> None:
        async with Store.open(tmp_path / "k.db") as store:
            pol = make_policy(PolicyConfig(base_url="http://127.0.0.1:9/v1"))
            sched = Scheduler(config=sched_config(tmp_path, backend="cuda", gpu_slots=2), store=store, policy=pol)
            st = sched.status()
            await pol.aclose()
        assert (st.running, st.queued, st.finished, st.gpu_slots_total, st.gpu_slots_busy) == (0, 0, 0, 2, 0)
        assert st.turns_per_s is None and st.policy_error is None and st.policy_version is None
        assert sched.slots.devices == ["0", "1"]

    anyio.run(main)


