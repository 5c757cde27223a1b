"""runtime.store on real SQLite files: schema, round trips, the writer's batching and errors,
the daemon lock, crash safety under kill -9, disk full, a locked database, baselines through the
sync BaselineCache adapter (one real cpu evaluation), export to JSONL and Parquet, throughput."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import msgspec
import numpy as np
import pytest

from runtime.store import (
    CurriculumRow,
    Message,
    ProblemRow,
    Store,
    StoreBaselineCache,
    StoreBusy,
    StoreError,
    StoreInUse,
    StoreSchemaError,
    ToolCallRow,
    ToolCallSpec,
    TrainStepRow,
    TurnRow,
)
from runtime.store.sql import migrations
from skills.evaluator.baselines import BaselineCache, BaselineEntry, BaselineKey
from skills.evaluator.results import EvalResult, Flag, Interval, Speedup, StageTimes, TimingResult

ROOT = Path(__file__).resolve().parents[3]
T = TypeVar("T")
TABLES = {"problems", "policies", "episodes", "turns", "tool_calls", "evaluations", "baselines",
          "curriculum", "train_steps"}
PROBLEM = ProblemRow(id="3652134141a00426", name="level1/01_relu", source="kagent", level=1,
                     path="level1/01_relu.py", precision="fp32", tier=1)


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn)


def timing(median: float) -> TimingResult:
    return TimingResult(per_call_us=Interval(median=median, low=median * 0.95, high=median * 1.05, n=30),
                        kernel_us=None, calls=30, cv=0.02)


def eval_result(*, mode: str = "final", reward: float | None = 2.0) -> EvalResult:
    return msgspec.convert(dict(
        problem=PROBLEM.name, problem_id=PROBLEM.id, backend="cpu", mode=mode, compiled=True,
        correct=True, stage="done", error=None, build=None, sets=[],
        flags=[Flag(name="torch_fallback", detail="aten::relu in forward")], candidate=timing(100.0),
        eager=timing(150.0), compiled_baseline=None,
        speedups=[Speedup(baseline="eager", value=1.5, low=1.4, high=1.6, faster=True)],
        reward=reward, reward_fn="milestone", precision="fp32", gpu=None, torch_version="2.11.0",
        stages=StageTimes(total=3.5), log=""), EvalResult, from_attributes=True)


def turn(episode_id: int, index: int, n: int = 1000, **kw: Any) -> TurnRow:
    rng = np.random.default_rng(index)
    return TurnRow(episode_id=episode_id, index=index, text=f"turn {index}", policy_version=0,
                   prompt_ids=rng.integers(0, 151_000, 64).tolist(),
                   completion_ids=rng.integers(0, 151_000, n).tolist(),
                   logprobs=(-rng.random(n) * 5).astype(np.float32).tolist(),
                   sampling={"temperature": 1.0, "max_tokens": 4096}, finish_reason="tool_calls", **kw)


async def seed(store: Store) -> int:
    """A problem, policy 0 and one running episode; returns the episode id."""
    await store.upsert_problem(PROBLEM)
    await store.add_policy(0, "Qwen/Qwen3-8B")
    return await store.start_episode(PROBLEM.id, policy_version=0)


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def subprocess_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


# ------------------------------------------------------------------------------------ schema


def test_schema_created_and_migrations_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "kagent.db"

    async def go() -> None:
        async with Store.open(db):
            pass
        async with Store.open(db):  # the second open has nothing to apply
            pass

    run(go)
    conn = sqlite3.connect(db)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    assert TABLES | {"turn_arrays", "episode_summary"} <= names
    assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations()[-1][0]
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    assert integrity(db) == "ok"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "kagent.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 999")
    conn.close()

    async def go() -> None:
        async with Store.open(db):
            pass

    with pytest.raises(StoreSchemaError, match="newer than this kagent knows"):
        run(go)


def test_constraints_hold(tmp_path: Path) -> None:
    """Status is an enum with a CHECK; foreign keys are on; logprobs must match the completion."""
    db = tmp_path / "kagent.db"
    run(lambda: _seed_only(db))
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA foreign_keys = ON")
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        conn.execute("UPDATE episodes SET status = 'finished'")
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
        conn.execute("INSERT INTO episodes (problem_id, started) VALUES ('nope', 0)")
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        conn.execute("INSERT INTO turns (episode_id, idx, completion_ids, logprobs, text, created)"
                     " VALUES (1, 0, x'0100000002000000', x'00000000', '', 0)")
    conn.close()


async def _seed_only(db: Path) -> int:
    async with Store.open(db) as store:
        return await seed(store)


# ------------------------------------------------------------------------------ round trips


def test_episode_round_trip(tmp_path: Path) -> None:
    db = tmp_path / "kagent.db"
    sent = [turn(0, i, messages=[Message(role="tool", content=f"result {i}", tool_call_id=f"c{i}")],
                 tool_calls=[ToolCallSpec(id=f"c{i + 1}", name="compile", arguments="{}")],
                 duration=0.25) for i in range(3)]

    async def go() -> None:
        async with Store.open(db) as store:
            eid = await seed(store)
            for t in sent:
                t.episode_id = eid
                tid = await store.add_turn(t)
                await store.add_tool_call(ToolCallRow(
                    turn_id=tid, episode_id=eid, index=0, call_id=f"c{t.index + 1}", skill="compile",
                    args="{}", ok=True, result="built", record={"ok": True, "seconds": 1.5}, duration=1.0))
            await store.add_evaluation(eval_result(), episode_id=eid)
            await store.finish_episode(eid, "submitted", reward=2.0)
            with pytest.raises(StoreError, match="already ended"):
                await store.finish_episode(eid, "error", reward=None)

            d = await store.get_episode(eid)
            assert d is not None
            assert d.episode.status == "submitted" and d.episode.reward == 2.0 and d.episode.trainable
            assert d.episode.policy_seconds == pytest.approx(0.75)
            assert d.episode.tool_seconds == pytest.approx(3.0)
            assert d.problem.name == PROBLEM.name
            for got, want in zip(d.turns, sent, strict=True):
                assert got.prompt_ids == want.prompt_ids and got.completion_ids == want.completion_ids
                assert got.logprobs == want.logprobs  # float32 values survive exactly
                assert got.messages == want.messages and got.tool_calls == want.tool_calls
                assert got.sampling == want.sampling and got.policy_version == 0
            assert [c.record for c in d.tool_calls] == [{"ok": True, "seconds": 1.5}] * 3
            assert d.evaluations[0].result == eval_result()

            assert [e.id for e in await store.list_episodes(status="submitted", trainable=True)] == [eid]
            assert await store.list_episodes(finished=False) == []
            assert await store.list_episodes(after_id=eid) == []
            assert await store.get_episode(eid + 1) is None

    run(go)
    conn = sqlite3.connect(db)
    row = conn.execute("SELECT mode, correct, reward, speedup_eager, speedup_compile, candidate_us,"
                       " flags, seconds FROM evaluations").fetchone()
    assert row == ("final", 1, 2.0, 1.5, None, 100.0, '["torch_fallback"]', 3.5)
    summary = conn.execute("SELECT problem, status, turns, tool_calls, completion_tokens, speedup_eager"
                           " FROM episode_summary").fetchone()
    assert summary == (PROBLEM.name, "submitted", 3, 3, 3000, 1.5)
    conn.close()


def test_token_arrays_are_documented_blobs_and_sql_inspectable(tmp_path: Path) -> None:
    """BLOBs are little-endian int32 / float32; the turn_arrays view shows them as JSON."""
    db = tmp_path / "kagent.db"
    t = turn(0, 0, n=300)

    async def go() -> None:
        async with Store.open(db) as store:
            t.episode_id = await seed(store)
            await store.add_turn(t)

    run(go)
    conn = sqlite3.connect(db)
    blob, n = conn.execute("SELECT completion_ids, n_completion_ids FROM turns").fetchone()
    assert np.frombuffer(blob, "<i4").tolist() == t.completion_ids and n == 300
    ids, lps = conn.execute("SELECT completion_ids, logprobs FROM turn_arrays WHERE episode_id = 1").fetchone()
    assert json.loads(ids) == t.completion_ids
    assert json.loads(lps) == pytest.approx(t.logprobs, rel=1e-12)
    conn.close()


def test_record_policy_reuses_the_version_of_a_known_checkpoint(tmp_path: Path) -> None:
    """The trainer and the daemon's hot-loader both record each step_N/; they must agree."""
    async def go() -> None:
        db = tmp_path / "kagent.db"
        async with Store.open(db) as daemon, Store.open(db, lock=False) as trainer:
            assert await trainer.record_policy("/ckpt/step_1") == 1  # empty table: versions start at 1
            assert await daemon.record_policy("/ckpt/step_1") == 1  # recorded first by the trainer
            await daemon.add_policy(7, "/ckpt/elsewhere")
            assert await daemon.record_policy("/ckpt/step_2") == 8  # next after the newest
            assert await trainer.record_policy("/ckpt/step_1") == 1
            assert [(p.version, p.path) for p in await daemon.list_policies()] == [
                (1, "/ckpt/step_1"), (7, "/ckpt/elsewhere"), (8, "/ckpt/step_2")]

    run(go)


def test_problems_policies_curriculum_train_steps(tmp_path: Path) -> None:
    async def go() -> None:
        async with Store.open(tmp_path / "kagent.db") as store:
            await store.upsert_problems([PROBLEM, ProblemRow(id="b", name="level2/x", source="synth", tier=2)])
            await store.upsert_problem(ProblemRow(id="b", name="level2/x", source="synth", tier=3))
            assert [(p.id, p.tier) for p in await store.list_problems()] == [(PROBLEM.id, 1), ("b", 3)]
            await store.add_policy(0, "base")
            await store.add_policy(1, "/ckpt/step_10")
            with pytest.raises(StoreError, match="add_policy"):
                await store.add_policy(1, "/ckpt/again")
            assert [p.version for p in await store.list_policies()] == [0, 1]

            await store.put_curriculum([CurriculumRow(problem_id=PROBLEM.id, tier=1),
                                        CurriculumRow(problem_id="b", tier=3, attempts=4, successes=2,
                                                      mean_reward=0.5, recent_success=0.5, weight=2.5)])
            await store.put_curriculum([CurriculumRow(problem_id=PROBLEM.id, tier=1, weight=0.25)])
            assert await store.curriculum_weights() == {PROBLEM.id: 0.25, "b": 2.5}

            eid = await store.start_episode("b", policy_version=1, origin="request")
            step = TrainStepRow(run="runs/a", stage="ppo", step=0, episodes=[eid], policy_version=1,
                                metrics={"reward": 1.0, "kl": 0.01})
            await store.add_train_step(step)
            with pytest.raises(StoreError, match="UNIQUE"):
                await store.add_train_step(step)
            got = await store.list_train_steps("runs/a")
            assert [(s.step, s.episodes, s.metrics) for s in got] == [(0, [eid], {"reward": 1.0, "kl": 0.01})]
            with pytest.raises(StoreError, match="unknown problem"):
                await store.start_episode("missing", policy_version=None)

    run(go)


def test_bad_request_fails_alone_in_its_batch(tmp_path: Path) -> None:
    """Concurrent writes share transactions; a duplicate turn index fails only its own request."""
    outcomes: dict[int, object] = {}

    async def add(store: Store, eid: int, i: int) -> None:
        try:
            outcomes[i] = await store.add_turn(turn(eid, 0 if i == 7 else i, n=16))
        except StoreError as exc:
            outcomes[i] = exc

    async def go() -> None:
        async with Store.open(tmp_path / "kagent.db") as store:
            eid = await seed(store)
            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon(add, store, eid, i)
            d = await store.get_episode(eid)
            assert d is not None
            assert sorted(t.index for t in d.turns) == list(range(7)) + list(range(8, 20))

    run(go)
    assert isinstance(outcomes[7], StoreError) and "index 0" in str(outcomes[7])
    assert all(isinstance(v, int) for k, v in outcomes.items() if k != 7)


def test_close_commits_everything_queued(tmp_path: Path) -> None:
    db = tmp_path / "kagent.db"

    async def go() -> None:
        async with Store.open(db) as store:
            eid = await seed(store)
            async with anyio.create_task_group() as tg:
                for i in range(300):
                    tg.start_soon(store.add_turn, turn(eid, i, n=8))
        async with Store.open(db) as store:
            assert len((await store.get_episode(eid) or pytest.fail()).turns) == 300

    run(go)


@pytest.mark.timeout(30)  # a hang on close is the failure this guards against
def test_cancelled_writers_leave_whole_rows(tmp_path: Path) -> None:
    """Cancelling the tasks that write (Ctrl-C, shutdown) mid-batch: the store closes without
    hanging, every acknowledged turn is stored, and no row is half-written."""
    db = tmp_path / "kagent.db"
    acked: set[int] = set()

    async def writer(store: Store, eid: int, k: int) -> None:
        for i in range(k, 100_000, 8):
            await store.add_turn(turn(eid, i, n=512))
            acked.add(i)

    async def go() -> None:
        with anyio.move_on_after(1.0):
            async with Store.open(db) as store:
                eid = await seed(store)
                async with anyio.create_task_group() as tg:
                    for k in range(8):
                        tg.start_soon(writer, store, eid, k)
        async with Store.open(db) as store:
            d = await store.get_episode(1)
            assert d is not None and acked and acked <= {t.index for t in d.turns}
            assert all(len(t.completion_ids or []) == len(t.logprobs or []) == 512 for t in d.turns)

    run(go)
    assert integrity(db) == "ok"


def test_write_after_close_is_a_clear_error(tmp_path: Path) -> None:
    async def go() -> None:
        async with Store.open(tmp_path / "kagent.db") as store:
            eid = await seed(store)
        with pytest.raises(StoreError, match="closed"):
            await store.add_turn(turn(eid, 0))

    run(go)


# --------------------------------------------------------------------------- lock, readonly


LOCK_HOLDER = """
import sys, anyio
from runtime.store import Store
async def main():
    async with Store.open(sys.argv[1]):
        print("open", flush=True)
        sys.stdin.readline()
anyio.run(main)
"""


def test_second_daemon_on_the_same_store_refuses(tmp_path: Path) -> None:
    db = tmp_path / "kagent.db"
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env=subprocess_env(), text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"

        async def go() -> None:
            with pytest.raises(StoreInUse, match=rf"already open for writing \(by pid {holder.pid}"):
                async with Store.open(db):
                    pass
            async with Store.open(db, lock=False) as trainer:  # the trainer shares the file
                await trainer.add_policy(1, "/ckpt/step_1")
            async with Store.open(db, readonly=True) as reader:
                assert [p.version for p in await reader.list_policies()] == [1]
                with pytest.raises(StoreError, match="read-only"):
                    await reader.add_policy(2, "x")

        run(go)
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()

    async def again() -> None:  # released when the holder exits
        async with Store.open(db):
            with pytest.raises(StoreInUse):
                async with Store.open(db):  # a second open in the same process is refused too
                    pass

    run(again)


def test_a_hard_link_or_other_path_to_the_store_is_refused_too(tmp_path: Path) -> None:
    """The lock is on the file's identity: a second path to the same file (a hard link in another
    folder, a symlink) would open a second WAL on it."""
    db = tmp_path / "a" / "kagent.db"
    db.parent.mkdir()
    (tmp_path / "b").mkdir()
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env=subprocess_env(), text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        link = tmp_path / "b" / "linked.db"
        os.link(db, link)
        symlink = tmp_path / "b" / "sym.db"
        symlink.symlink_to(db)

        async def go() -> None:
            for other in (link, symlink):
                with pytest.raises(StoreInUse, match=rf"already open for writing \(by pid {holder.pid}, the same file"):
                    async with Store.open(other):
                        pass
        run(go)
        assert not (tmp_path / "b" / "linked.db-wal").exists()  # refused before SQLite opened it
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()


# ------------------------------------------------------------------------ faults and crashes


WRITER = """
import sys, anyio
from runtime.store import Store, TurnRow, ProblemRow
async def write(store, eid, worker):
    for i in range(worker, 100000, 4):
        await store.add_turn(TurnRow(episode_id=eid, index=i, text="t", completion_ids=list(range(1000)),
                                     logprobs=[-0.5] * 1000))
        print(i, flush=True)
async def main():
    async with Store.open(sys.argv[1]) as store:
        await store.upsert_problem(ProblemRow(id="p", name="p", source="test"))
        eid = await store.start_episode("p", policy_version=None)
        print("episode", eid, flush=True)
        async with anyio.create_task_group() as tg:
            for w in range(4):
                tg.start_soon(write, store, eid, w)
anyio.run(main)
"""


def test_kill_9_loses_no_acknowledged_turn(tmp_path: Path) -> None:
    db = tmp_path / "kagent.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE,
                            env=subprocess_env(), text=True)
    assert proc.stdout is not None
    eid = int(proc.stdout.readline().split()[1])
    acked = []
    while len(acked) < 400:
        acked.append(int(proc.stdout.readline()))
    os.kill(proc.pid, signal.SIGKILL)
    acked += [int(line) for line in proc.stdout.read().split()]  # acknowledged before the kill
    proc.stdout.close()
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL

    assert integrity(db) == "ok"

    async def go() -> None:
        async with Store.open(db) as store:
            d = await store.get_episode(eid)
            assert d is not None
            stored = {t.index for t in d.turns}
            assert set(acked) <= stored
            assert all(t.completion_ids == list(range(1000)) for t in d.turns)
            assert await store.mark_interrupted_episodes() == [eid]
            assert (await store.list_episodes(status="interrupted"))[0].id == eid
            assert await store.mark_interrupted_episodes() == []

    run(go)


DISK_FILLER = """
import resource, signal, sys, anyio
from runtime.store import ProblemRow, Store, StoreWriteFailed, TurnRow
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past RLIMIT_FSIZE fails with EFBIG instead
async def fill(store, eid, worker):
    for i in range(worker, 100000, 4):
        try:
            await store.add_turn(TurnRow(episode_id=eid, index=i, text="t", completion_ids=list(range(2000))))
        except StoreWriteFailed as exc:
            print("FAILED", exc, flush=True)
            return
        print("ACK", i, flush=True)
async def main():
    async with Store.open(sys.argv[1]) as store:
        await store.upsert_problem(ProblemRow(id="p", name="p", source="test"))
        eid = await store.start_episode("p", policy_version=None)
        print("EPISODE", eid, flush=True)
        if sys.argv[2] != "0":
            resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]),) * 2)
        async with anyio.create_task_group() as tg:
            for w in range(4):
                tg.start_soon(fill, store, eid, w)
anyio.run(main)
"""


def _check_filled(out: subprocess.CompletedProcess[str], db: Path, message: str) -> None:
    """The filler failed with a clear message; the file is intact and holds exactly what was acked."""
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    acked = {int(ln.split()[1]) for ln in lines if ln.startswith("ACK")}
    failed = [ln for ln in lines if ln.startswith("FAILED")]
    assert failed and len(acked) > 5, out.stdout[-2000:]
    assert message in failed[0] and "rolled back" in failed[0], failed[0]
    assert integrity(db) == "ok"
    eid = int(lines[0].split()[1])

    async def go() -> None:
        async with Store.open(db) as store:
            d = await store.get_episode(eid)
            assert d is not None and {t.index for t in d.turns} == acked  # nothing half-written
            assert all(t.completion_ids == list(range(2000)) for t in d.turns)
            await store.add_turn(TurnRow(episode_id=eid, index=100_000, text="space again: writes work"))

    run(go)


def test_file_size_limit_is_a_clear_error_and_corrupts_nothing(tmp_path: Path) -> None:
    """RLIMIT_FSIZE: the write fails with EFBIG (SQLITE_IOERR_WRITE) while batches are in flight."""
    db = tmp_path / "kagent.db"
    run(lambda: _seed_only(db))  # the schema exists before the limit
    limit = db.stat().st_size + 256 * 1024
    out = subprocess.run([sys.executable, "-c", DISK_FILLER, str(db), str(limit)], capture_output=True,
                         env=subprocess_env(), text=True, timeout=60)
    _check_filled(out, db, "I/O error")


def test_full_disk_is_a_clear_error_and_corrupts_nothing(tmp_path: Path) -> None:
    """A real ENOSPC: a 512 KiB tmpfs in a private mount namespace (skipped where unshare can't)."""
    mnt, keep = tmp_path / "mnt", tmp_path / "copy"
    mnt.mkdir()
    keep.mkdir()
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.decode().strip()}")
    script = (f'mount -t tmpfs -o size=512k none {mnt} && "{sys.executable}" -c "$FILLER" {mnt}/kagent.db 0'
              f' && cp {mnt}/kagent.db {mnt}/kagent.db-wal {keep}/')  # the tmpfs vanishes with the namespace
    out = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
                         capture_output=True, env={**subprocess_env(), "FILLER": DISK_FILLER}, text=True,
                         timeout=60)
    _check_filled(out, keep / "kagent.db", "disk full")


FINISH_ON_FULL = """
import os, sys, anyio
from runtime.store import ProblemRow, Store, StoreWriteFailed, TurnRow
async def main():
    db, ballast, later = sys.argv[1], sys.argv[2], sys.argv[3]
    async with Store.open(db) as store:
        await store.upsert_problem(ProblemRow(id="p", name="p", source="test"))
        eid = await store.start_episode("p", policy_version=None, origin="request")
        with open(ballast, "wb", buffering=0) as f:  # fill the disk
            try:
                while True:
                    f.write(b"x" * 4096)
            except OSError:
                pass
        try:
            await store.add_turn(TurnRow(episode_id=eid, index=0, text="t", completion_ids=list(range(50000))))
        except StoreWriteFailed:
            print("TURN FAILED", flush=True)
        try:
            await store.finish_episode(eid, "error", reward=None, error="the store failed: disk full")
        except StoreWriteFailed as exc:
            print("FINISH FAILED", exc, flush=True)
        print("UNWRITTEN", store.unwritten_finishes, flush=True)
        os.remove(ballast)  # space again
        if later == "write":
            await store.add_policy(1, "/ckpt/step_1")  # the next transaction carries the final status
            print("UNWRITTEN", store.unwritten_finishes, flush=True)
anyio.run(main)
"""


@pytest.mark.parametrize("later", ["write", "close"])
def test_a_final_status_that_hit_a_full_disk_is_written_once_there_is_room(tmp_path: Path, later: str) -> None:
    """Disk full while an episode ends: the caller gets the clear error, and the episode does not
    stay `running` (the next start would re-run a request already reported failed): its final
    status goes in with the next transaction that commits, or at close."""
    mnt, keep = tmp_path / "mnt", tmp_path / "copy"
    mnt.mkdir()
    keep.mkdir()
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.decode().strip()}")
    script = (f'mount -t tmpfs -o size=1m none {mnt} && "{sys.executable}" -c "$SCRIPT" {mnt}/kagent.db'
              f' {mnt}/ballast {later} && cp {mnt}/kagent.db {keep}/ && (cp {mnt}/kagent.db-wal {keep}/ || true)')
    out = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
                         capture_output=True, env={**subprocess_env(), "SCRIPT": FINISH_ON_FULL}, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert "TURN FAILED" in lines, out.stdout
    failed = [ln for ln in lines if ln.startswith("FINISH FAILED")]
    assert failed and "disk full" in failed[0], out.stdout
    unwritten = [ln for ln in lines if ln.startswith("UNWRITTEN")]
    assert unwritten[0] == "UNWRITTEN [1]" and unwritten[1:] in ([], ["UNWRITTEN []"]), out.stdout
    conn = sqlite3.connect(keep / "kagent.db")
    try:
        assert conn.execute("SELECT status, error FROM episodes").fetchall() == [
            ("error", "the store failed: disk full")]
    finally:
        conn.close()


def test_locked_database_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "kagent.db"
    run(lambda: _seed_only(db))
    other = sqlite3.connect(db, isolation_level=None)

    async def go() -> None:
        async with Store.open(db, busy_timeout_s=0.2) as store:
            other.execute("BEGIN IMMEDIATE")  # another process's long write transaction
            t0 = time.monotonic()
            with pytest.raises(StoreBusy, match=r"locked by another connection for more than 0.2 s"):
                await store.add_turn(turn(1, 0))
            assert time.monotonic() - t0 < 3
            with pytest.raises(StoreBusy):
                store.baseline_cache().put(KEY, ENTRY)
            other.execute("ROLLBACK")
            await store.add_turn(turn(1, 0))
            assert len((await store.get_episode(1) or pytest.fail()).turns) == 1

    run(go)
    other.close()
    assert integrity(db) == "ok"


# -------------------------------------------------------------------------------- baselines


KEY = BaselineKey(problem_id=PROBLEM.id, device="cpu:x86_64:2", torch_version="2.11.0",
                  precision="fp32", sizes="small")
ENTRY = BaselineEntry(eager=timing(150.0), compile=None, compile_error="no inductor here",
                      measured_at=1.7e9)


def test_baselines_async_and_through_the_sync_cache(tmp_path: Path) -> None:
    db = tmp_path / "kagent.db"

    async def go() -> None:
        async with Store.open(db) as store:
            assert await store.get_baseline(KEY) is None
            await store.put_baseline(KEY, ENTRY)
            assert await store.get_baseline(KEY) == ENTRY
            cache: BaselineCache = store.baseline_cache()
            # Sync calls on the event loop while the writer is busy with other work.
            eid = await seed(store)
            async with anyio.create_task_group() as tg:
                for i in range(50):
                    tg.start_soon(store.add_turn, turn(eid, i, n=64))
                await anyio.lowlevel.checkpoint()
                newer = BaselineEntry(eager=timing(140.0), compile=timing(90.0), compile_error=None,
                                      measured_at=1.8e9)
                cache.put(KEY, newer)
            assert cache.get(KEY) == newer == await store.get_baseline(KEY)
            other = msgspec.structs.replace(KEY, sizes="default")
            assert cache.get(other) is None

    run(go)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT eager_us, compile_us FROM baselines").fetchone() == (140.0, 90.0)
    conn.close()
    with pytest.raises(StoreError, match="cannot open the database"):
        StoreBaselineCache(tmp_path / "missing.db").put(KEY, ENTRY)
    assert not (tmp_path / "missing.db").exists()
    sqlite3.connect(tmp_path / "empty.db").close()
    with pytest.raises(StoreSchemaError, match="open it once for writing"):
        StoreBaselineCache(tmp_path / "empty.db").get(KEY)


def test_baselines_are_keyed_by_timing_method(tmp_path: Path) -> None:
    """Schema 3: a baseline timed by another method is not served; rows of schema 2 survive the
    upgrade with timing '' (kept, never matched by a key that names its method)."""
    from skills.evaluator.harness.protocol import TimingConfig

    db = tmp_path / "k.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for number, sql in migrations():
        if number > 2:
            break
        conn.executescript(sql)
    conn.execute("PRAGMA user_version = 2")
    conn.execute("INSERT INTO baselines (problem_id, device, torch_version, precision, sizes, entry, measured_at)"
                 " VALUES (?, ?, ?, ?, ?, ?, ?)", (KEY.problem_id, KEY.device, KEY.torch_version, KEY.precision,
                                                   KEY.sizes, msgspec.json.encode(ENTRY).decode(), ENTRY.measured_at))
    conn.close()
    lead = msgspec.structs.replace(KEY, timing=TimingConfig().method())
    idle = msgspec.structs.replace(KEY, timing=TimingConfig(lead_us=0.0).method())
    assert lead.timing != idle.timing

    async def go() -> None:
        async with Store.open(db) as store:
            assert await store.get_baseline(KEY) == ENTRY  # the old row, under timing ''
            assert await store.get_baseline(lead) is None
            await store.put_baseline(lead, ENTRY)
            assert await store.get_baseline(lead) == ENTRY and await store.get_baseline(idle) is None

    run(go)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*), count(DISTINCT timing) FROM baselines").fetchone() == (2, 2)
    assert conn.execute("SELECT eager_us FROM baselines WHERE timing = ''").fetchone() == (150.0,)
    conn.close()


RELU_SOLUTION = ROOT / "problems" / "solutions" / "cpu" / "level1" / "01_relu"


def test_real_evaluation_caches_its_baselines_in_the_store(tmp_path: Path, build_cache_dir: Path) -> None:
    """skills.evaluator.evaluate (cpu backend, real workers) writes its eager baseline through the adapter
    while the store's writer runs; the result is then stored as an evaluation."""
    import shutil

    from skills.evaluator.build import BuildConfig
    from skills.evaluator.config import EvalConfig
    from skills.evaluator.evaluate import evaluate
    from skills.evaluator.harness.protocol import TimingConfig
    from skills.evaluator.sandbox import SandboxConfig

    ws = tmp_path / "ws"
    shutil.copytree(RELU_SOLUTION, ws)
    shutil.copyfile(ROOT / "problems" / "level1" / "01_relu.py", ws / "model.py")
    config = EvalConfig(backend="cpu", baselines=["eager"],
                        timing=TimingConfig(target_seconds=0.05, max_calls=30, min_calls=10),
                        build=BuildConfig(backend="cpu", cache_dir=str(build_cache_dir)),
                        sandbox=SandboxConfig(allow_unsafe=True))

    async def go() -> None:
        async with Store.open(tmp_path / "kagent.db") as store:
            result = await evaluate(ROOT / "problems" / "level1" / "01_relu.py", ws, mode="profile",
                                    config=config, baseline_cache=store.baseline_cache())
            assert result.correct and result.eager is not None, result.error
            await store.add_evaluation(result, episode_id=None)
            conn = sqlite3.connect(tmp_path / "kagent.db")
            (key, eager_us), = conn.execute("SELECT problem_id, eager_us FROM baselines").fetchall()
            conn.close()
            assert key == result.problem_id and eager_us == result.eager.per_call_us.median
            assert (await store.get_problem(result.problem_id) or pytest.fail()).source == "evaluation"

    run(go)


# ----------------------------------------------------------------------------------- export


async def _episodes_for_export(db: Path) -> list[int]:
    """Two finished episodes (one not trainable) and a running one."""
    async with Store.open(db) as store:
        ids = []
        for k in range(3):
            eid = await seed(store) if k == 0 else await store.start_episode(PROBLEM.id, policy_version=0)
            first = turn(eid, 0, n=50, messages=[Message(role="system", content="SKILL.md"),
                                                 Message(role="user", content="problem")],
                         tool_calls=[ToolCallSpec(id="a", name="compile", arguments='{"x": 1}')])
            tid = await store.add_turn(first)
            await store.add_tool_call(ToolCallRow(turn_id=tid, episode_id=eid, index=0, call_id="a",
                                                  skill="compile", args='{"x": 1}', ok=True, result="built"))
            second = turn(eid, 1, n=20, prompt_prefix=114,
                          messages=[Message(role="tool", content="built", tool_call_id="a")],
                          tool_calls=[ToolCallSpec(id="b", name="submit", arguments="{}")])
            tid = await store.add_turn(second)
            await store.add_tool_call(ToolCallRow(turn_id=tid, episode_id=eid, index=0, call_id="b",
                                                  skill="submit", args="{}", ok=True, result="submitted"))
            if k < 2:
                await store.add_evaluation(eval_result(), episode_id=eid)
                await store.finish_episode(eid, "submitted", reward=2.0, trainable=k == 0)
            ids.append(eid)
        return ids


MESSAGES = [
    {"role": "system", "content": "SKILL.md"},
    {"role": "user", "content": "problem"},
    {"role": "assistant", "content": "turn 0",
     "tool_calls": [{"id": "a", "function": {"name": "compile", "arguments": '{"x": 1}'}, "type": "function"}]},
    {"role": "tool", "content": "built", "tool_call_id": "a"},
    {"role": "assistant", "content": "turn 1",
     "tool_calls": [{"id": "b", "function": {"name": "submit", "arguments": "{}"}, "type": "function"}]},
    {"role": "tool", "content": "submitted", "tool_call_id": "b"},
]


def test_export_jsonl(tmp_path: Path) -> None:
    db = tmp_path / "kagent.db"
    ids = run(lambda: _episodes_for_export(db))

    async def go() -> tuple[int, int]:
        async with Store.open(db, readonly=True) as store:
            return (await store.export_jsonl(tmp_path / "all.jsonl"),
                    await store.export_jsonl(tmp_path / "train.jsonl", trainable=True))

    assert run(go) == (2, 1)
    rows = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert [r["episode_id"] for r in rows] == ids[:2]
    r = rows[0]
    assert (r["problem"], r["reward"], r["status"], r["speedup_eager"]) == (PROBLEM.name, 2.0, "submitted", 1.5)
    assert r["messages"] == MESSAGES
    assert [t["completion_ids"] for t in r["turns"]] == [turn(0, 0, n=50).completion_ids,
                                                         turn(0, 1, n=20).completion_ids]
    assert r["turns"][1]["prompt_prefix"] == 114
    assert r["turns"][0]["logprobs"] == turn(0, 0, n=50).logprobs
    assert not list(tmp_path.glob(".*.tmp*"))


def test_export_parquet_reads_in_hf_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyarrow")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    datasets = pytest.importorskip("datasets")
    db = tmp_path / "kagent.db"
    ids = run(lambda: _episodes_for_export(db))

    async def go() -> int:
        async with Store.open(db) as store:
            return await store.export_parquet(tmp_path / "episodes.parquet")

    assert run(go) == 2
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "episodes.parquet"), split="train",
                               cache_dir=str(tmp_path / "hf-cache"))
    assert ds.num_rows == 2 and ds[0]["episode_id"] == ids[0] and ds[1]["trainable"] is False
    assert ds[0]["turns"][0]["completion_ids"] == turn(0, 0, n=50).completion_ids
    assert ds[0]["turns"][0]["logprobs"] == turn(0, 0, n=50).logprobs
    msgs = [{k: v for k, v in m.items() if v is not None} for m in ds[0]["messages"]]
    assert msgs == [{**m, "tool_calls": [dict(c, type="function") for c in m["tool_calls"]]}
                    if "tool_calls" in m else m for m in MESSAGES]


NO_PYARROW = """
import sys, anyio
sys.modules["pyarrow"] = None  # as if it were not installed
from runtime.store import Store, StoreError
async def main():
    async with Store.open(sys.argv[1]) as store:
        try:
            await store.export_parquet(sys.argv[2])
        except StoreError as exc:
            print(exc)
anyio.run(main)
"""


def test_export_parquet_without_pyarrow_says_so(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", NO_PYARROW, str(tmp_path / "k.db"), str(tmp_path / "e.parquet")],
                         capture_output=True, env=subprocess_env(), text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Parquet export needs pyarrow" in out.stdout
    assert not (tmp_path / "e.parquet").exists()


# ------------------------------------------------------------------------------- throughput


def test_add_turn_throughput(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Not asserted: writes/s of add_turn with 1k-token arrays, one writer and 32 concurrent ones."""
    turns = [turn(0, i, n=1000) for i in range(2000)]

    async def go() -> tuple[float, float]:
        async with Store.open(tmp_path / "kagent.db") as store:
            eid = await seed(store)
            for t in turns:
                t.episode_id = eid
            t0 = time.perf_counter()
            for t in turns[:1000]:
                await store.add_turn(t)
            sequential = 1000 / (time.perf_counter() - t0)

            async def worker(k: int) -> None:
                for t in turns[1000 + k::32]:
                    await store.add_turn(t)

            t0 = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for k in range(32):
                    tg.start_soon(worker, k)
            concurrent = 1000 / (time.perf_counter() - t0)
            return sequential, concurrent

    sequential, concurrent = run(go)
    with capsys.disabled():
        print(f"\n[store] add_turn, 1k-token ids+logprobs (+64 prompt ids), {os.cpu_count()} cores: "
              f"{sequential:,.0f} turns/s awaited one by one, {concurrent:,.0f} turns/s from 32 tasks")
