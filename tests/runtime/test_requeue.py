"""No work is lost across a drain and a restart: an episode a crash cut short is re-run exactly
once, even when the daemon is drained (stopped) again before its re-run starts.

The store keeps the promise (episodes.rerun_pending, set when an episode is marked `interrupted`,
cleared in the transaction that inserts the episode that re-runs it, episodes.rerun_of); every
start re-queues what is still pending. Real HTTP (scripted policy), real SQLite, cpu backend; the
scripted agent never writes a kernel, so grading takes the untouched-workspace path.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from runtime.fakes.scripted import scripted_server
from runtime.policy import make_policy
from runtime.scheduler import Scheduler
from runtime.settings import PolicyConfig, SchedulerConfig
from runtime.store import ProblemRow, Store, StoreError
from runtime.store.sql import migrations, statements
from tests.runtime.test_scheduler import LIST, ROOT, sched_config, until

# Two episodes (on two problems) running when the process dies with kill -9.
CRASH = """
import os, sys, anyio
from pathlib import Path
from runtime.curriculum_source import scan_problems
from runtime.store import Store, TurnRow

async def main():
    async with Store.open(sys.argv[1]) as store:
        rows = scan_problems(Path(sys.argv[2]))
        await store.upsert_problems(rows)
        for row in rows[:int(sys.argv[4])]:
            eid = await store.start_episode(row.id, policy_version=None, origin=sys.argv[3])
            await store.add_turn(TurnRow(episode_id=eid, index=0, text="half way", completion_ids=[5, 6]))
        os.kill(os.getpid(), 9)

anyio.run(main)
"""


def crash(db: Path, cfg: SchedulerConfig, *, origin: str = "rollout", episodes: int = 2) -> None:
    proc = subprocess.run([sys.executable, "-c", CRASH, str(db), cfg.problems_dir, origin, str(episodes)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr


@asynccontextmanager
async def started(cfg: SchedulerConfig, store: Store, url: str, *, drained: bool = False) -> AsyncIterator[Scheduler]:
    """A daemon start: a new scheduler on the store (cancelled when the block ends, as the daemon
    does after its drain). `drained`: drain() comes before anything can start (a stop signal
    during start-up), so every re-queued job is still waiting when the drain begins."""
    pol = make_policy(PolicyConfig(base_url=url, max_tokens=512, backoff_s=0.01, retries=1))
    try:
        async with anyio.create_task_group() as tg:
            sched = Scheduler(config=cfg, store=store, policy=pol)
            if drained:
                sched.drain()
            await tg.start(sched.run)
            yield sched
            tg.cancel_scope.cancel()
    finally:
        await pol.aclose()


def episodes(db: Path) -> list[tuple[Any, ...]]:
    """(id, problem_id, origin, status, rerun_pending, rerun_of) of every episode, in order."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, problem_id, origin, status, rerun_pending, rerun_of FROM episodes"
                            " ORDER BY id").fetchall()
    finally:
        conn.close()


def test_requeued_job_not_started_at_drain_is_requeued_at_next_start(tmp_path: Path) -> None:
    """The bug: jobs re-queued at start that had not started when a drain began were dropped,
    and the next start did not re-queue them (their episodes stayed `interrupted`)."""
    cfg = sched_config(tmp_path, max_in_flight=1)
    db = tmp_path / "k.db"
    crash(db, cfg)  # episodes 1 (problem A) and 2 (problem B) left `running`

    async def main() -> None:
        async with scripted_server([LIST], loop=True, delay_s=0.2) as url, Store.open(db) as store:
            # Start 1: both re-queued; one runs (max_in_flight=1), the other is still queued
            # when the drain begins.
            async with started(cfg, store, url) as sched:
                await until(lambda: (sched.status().running, sched.status().queued) == (1, 1))
                sched.drain()
                with anyio.fail_after(30):
                    await sched.wait_idle()
                assert sched.status().queued == 1 and sched.status().finished == 1
            # Start 2, drained at once: the job dropped by start 1 is re-queued again (the old
            # code re-queued nothing here), with the re-run the drain interrupted (its LLM call
            # is not waited for); again nothing starts.
            async with started(cfg, store, url, drained=True) as sched:
                assert (sched.status().queued, sched.status().running) == (2, 0)
                await anyio.sleep(0.3)
                assert len(await store.list_episodes()) == 3
            # Start 3: they run, once each.
            async with started(cfg, store, url) as sched:
                await until(lambda: sched.status().finished == 2, seconds=60.0)
                assert sched.status().queued == 0
            # Start 4: nothing is pending any more; nothing is re-queued, nothing runs.
            async with started(cfg, store, url) as sched:
                assert sched.status().queued == 0
                await anyio.sleep(0.5)
                assert sched.status().running == 0 and sched.status().finished == 0
                assert await store.pending_reruns() == []

    anyio.run(main)
    rows = episodes(db)
    a, b = rows[0][1], rows[1][1]
    assert a != b
    assert rows == [
        (1, a, "rollout", "interrupted", 0, None),
        (2, b, "rollout", "interrupted", 0, None),
        (3, a, "rollout", "interrupted", 0, 1),  # start 1 re-ran episode 1; the drain interrupted it
        (4, b, "rollout", "turn_limit", 0, 2),  # start 3 re-ran episode 2: exactly once
        (5, a, "rollout", "turn_limit", 0, 3),  # and episode 3
    ]


def test_retry_of_a_requeued_request_survives_a_drain(tmp_path: Path) -> None:
    """A re-queued request whose re-run ends in policy_error is retried (request_attempts); a
    retry still waiting (policy backoff) when the drain begins is re-queued at the next start."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    cfg = sched_config(tmp_path, request_attempts=3, policy_backoff_s=30.0, policy_backoff_max_s=30.0)
    db = tmp_path / "k.db"
    crash(db, cfg, origin="request", episodes=1)

    async def main() -> None:
        async with Store.open(db) as store:
            # Start 1 with the policy server down: the re-run fails, its retry waits out the backoff.
            async with started(cfg, store, f"http://127.0.0.1:{dead}/v1") as sched:
                await until(lambda: sched.status().by_status.get("policy_error") == 1)
                await until(lambda: sched.status().running == 0)
                assert sched.status().queued == 1
                sched.drain()
                await sched.wait_idle()
            assert [r.id for r in await store.pending_reruns()] == [2]
        # Start 2 with the server back: the retry runs.
        async with scripted_server([LIST], loop=True) as url, Store.open(db) as store:
            async with started(cfg, store, url) as sched:
                await until(lambda: sched.status().finished == 1)
            assert await store.pending_reruns() == []

    anyio.run(main)
    rows = episodes(db)
    p = rows[0][1]
    assert rows == [
        (1, p, "request", "interrupted", 0, None),
        (2, p, "request", "policy_error", 0, 1),
        (3, p, "request", "turn_limit", 0, 2),
    ]


def test_rerun_mark_clears_only_with_the_episode_that_reruns_it(tmp_path: Path) -> None:
    """Store level: marking sets the mark (not on replays); inserting the re-run clears it in the
    same transaction; a second re-run of the same episode is refused, so none runs twice."""
    problem = ProblemRow(id="p", name="level1/p", source="test", code="x = 1\n")

    async def main() -> None:
        async with Store.open(tmp_path / "k.db") as store:
            await store.upsert_problem(problem)
            e1 = await store.start_episode("p", policy_version=None)
            e2 = await store.start_episode("p", policy_version=None, origin="replay")
            e3 = await store.start_episode("p", policy_version=None, origin="request")
            await store.finish_episode(e3, "submitted", reward=1.0)
            assert await store.pending_reruns() == []
            assert await store.mark_interrupted_episodes() == [e1, e2]
            pending = await store.pending_reruns()
            assert [(r.id, r.status) for r in pending] == [(e1, "interrupted")]  # not the replay
            assert await store.mark_interrupted_episodes() == []  # a second start marks nothing new
            assert [r.id for r in await store.pending_reruns()] == [e1]
            with pytest.raises(StoreError, match="unknown problem"):  # fails alone: the mark stays
                await store.start_episode("missing", policy_version=None, rerun_of=e1)
            assert [r.id for r in await store.pending_reruns()] == [e1]
            e4 = await store.start_episode("p", policy_version=None, rerun_of=e1)
            assert await store.pending_reruns() == []
            with pytest.raises(StoreError, match=f"episode {e1} is not waiting for a re-run"):
                await store.start_episode("p", policy_version=None, rerun_of=e1)
            with pytest.raises(StoreError, match=f"episode {e3} is not waiting for a re-run"):
                await store.start_episode("p", policy_version=None, rerun_of=e3)
            assert len(await store.list_episodes()) == 4
            with pytest.raises(StoreError, match="still running"):
                await store.mark_rerun_pending(e4)
            await store.finish_episode(e4, "policy_error", reward=None)
            await store.mark_rerun_pending(e4)
            assert [r.id for r in await store.pending_reruns()] == [e4]

    anyio.run(main)
    rows = episodes(tmp_path / "k.db")
    assert [(r[0], r[3], r[4], r[5]) for r in rows] == [
        (1, "interrupted", 0, None), (2, "interrupted", 0, None), (3, "submitted", 0, None),
        (4, "policy_error", 1, 1)]


def test_interrupted_episodes_of_a_schema_1_store_are_not_rerun(tmp_path: Path) -> None:
    """Upgrading: `interrupted` episodes from before the mark existed may already have been re-run
    (the old code re-queued them in memory only), so they are not re-run again; episodes a crash
    left `running` are marked and re-run as usual."""
    db = tmp_path / "k.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for stmt in statements(migrations()[0][1]):
        conn.execute(stmt)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO problems (id, name, source, code, added, updated) VALUES ('p', 'p', 't', 'x', 0, 0)")
    conn.execute("INSERT INTO episodes (problem_id, status, started, finished) VALUES ('p', 'interrupted', 0, 1)")
    conn.execute("INSERT INTO episodes (problem_id, status, started) VALUES ('p', 'running', 2)")
    conn.close()

    async def main() -> None:
        async with Store.open(db) as store:
            assert await store.pending_reruns() == []
            assert await store.mark_interrupted_episodes() == [2]
            assert [r.id for r in await store.pending_reruns()] == [2]

    anyio.run(main)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations()[-1][0] >= 2
    conn.close()
