"""runtime.store's writer on aiosqlite (runtime/store/writer.py), on real SQLite files: a request
that fails after writing part of itself leaves nothing and fails alone while the rest of its
batch commits once; the connection's thread ends with the store; and a disk still full at close
(a real ENOSPC on a small tmpfs): the reserve lets the final status in, and without one the close
says which episodes' final statuses were not stored."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from runtime.store import AsyncConn, ProblemRow, Store, StoreError

ROOT = Path(__file__).resolve().parents[3]


def subprocess_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_a_request_failing_midway_leaves_nothing_and_the_batch_commits_once(tmp_path: Path) -> None:
    """One batch of 21 writes, the 11th of which inserts a row and then fails: the transaction is
    rolled back and run again without it. Its row is gone, it ran once and failed alone; the 10
    before it ran twice (the first run was rolled back), the 10 after once, and all 20 are stored."""
    db = tmp_path / "kagent.db"
    runs: dict[int, int] = {}

    def policy(version: int, fail: bool = False) -> Callable[[AsyncConn], Awaitable[int]]:
        async def fn(conn: AsyncConn) -> int:
            runs[version] = runs.get(version, 0) + 1
            await conn.execute("INSERT INTO policies (version, path, created) VALUES (?, 'p', 0)", (version,))
            if fail:
                raise StoreError("refused after a first statement")
            return version
        return fn

    async def go() -> list[object]:
        outcomes: list[object] = [None] * 21
        async with Store.open(db, busy_timeout_s=60) as store:
            await store.upsert_problem(ProblemRow(id="p", name="p", source="test"))
            other = sqlite3.connect(db, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")  # holds the writer in its next BEGIN while the rest queues

            async def send(i: int) -> None:
                try:
                    outcomes[i] = await store.write(policy(100 + i, fail=i == 10), f"policy {i}")
                except StoreError as exc:
                    outcomes[i] = exc

            async with anyio.create_task_group() as tg:
                tg.start_soon(store.add_policy, 1, "first")  # this batch waits for the lock
                await anyio.wait_all_tasks_blocked()
                for i in range(21):
                    tg.start_soon(send, i)
                await anyio.wait_all_tasks_blocked()  # all 21 queued behind the first: one batch
                other.execute("ROLLBACK")
            other.close()
        return outcomes

    outcomes = anyio.run(go)
    assert isinstance(outcomes[10], StoreError) and "refused after a first statement" in str(outcomes[10])
    assert [o for i, o in enumerate(outcomes) if i != 10] == [100 + i for i in range(21) if i != 10]
    assert runs == {**{100 + i: 2 for i in range(10)}, 110: 1, **{100 + i: 1 for i in range(11, 21)}}
    conn = sqlite3.connect(db)
    try:
        stored = [v for (v,) in conn.execute("SELECT version FROM policies ORDER BY version")]
    finally:
        conn.close()
    assert stored == [1] + [100 + i for i in range(21) if i != 10]


def test_the_writer_thread_ends_with_the_store(tmp_path: Path) -> None:
    """aiosqlite runs the writer's connection on a thread of its own (not a daemon thread): it is
    there while the store is open and gone after close, so nothing holds the interpreter at exit."""
    def held() -> set[threading.Thread]:  # threads the interpreter waits for at exit (anyio's
        # worker threads end with the event loop). A thread that has finished can still be listed for
        # a moment before it deregisters (seen once on a loaded box, "stopped"): it holds nothing.
        return {t for t in threading.enumerate()
                if t.is_alive() and not t.daemon and t.name != "AnyIO worker thread"}

    before = held()

    async def go() -> int:
        async with Store.open(tmp_path / "kagent.db") as store:
            await store.upsert_problem(ProblemRow(id="p", name="p", source="test"))
            return len(held() - before)

    async def closed() -> set[threading.Thread]:
        await go()
        return held() - before

    assert anyio.run(go) == 1
    assert anyio.run(closed) == set()  # gone at close, while the event loop still runs


STILL_FULL = """
import sys, anyio
from runtime.store import ProblemRow, Store, StoreWriteFailed, TurnRow
async def main():
    db, ballast, reserve = sys.argv[1], sys.argv[2], int(sys.argv[3])
    try:
        async with Store.open(db, reserve_bytes=reserve) as store:
            await store.upsert_problem(ProblemRow(id="p", name="p", source="test"))
            eid = await store.start_episode("p", policy_version=None, origin="request")
            with open(ballast, "wb", buffering=0) as f:  # fill the disk, and leave it full
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
            except StoreWriteFailed:
                print("FINISH FAILED", flush=True)
            print("UNWRITTEN", store.unwritten_finishes, flush=True)
    except StoreWriteFailed as exc:
        print("CLOSE FAILED", exc, flush=True)
        return
    print("CLOSED", flush=True)
anyio.run(main)
"""


@pytest.mark.parametrize("reserve", [1 << 20, 0])
def test_a_disk_still_full_at_close(tmp_path: Path, reserve: int) -> None:
    """The disk fills while an episode ends and stays full through the close. With the reserve
    (the default, 1 MiB) the close releases it and the final status is stored; without one the
    close raises StoreWriteFailed naming the episode, the status it did not store and what the
    next start does, and the file is intact with the episode still `running`."""
    mnt, keep = tmp_path / "mnt", tmp_path / "copy"
    mnt.mkdir()
    keep.mkdir()
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.decode().strip()}")
    script = (f'mount -t tmpfs -o size=2m none {mnt} && "{sys.executable}" -c "$SCRIPT" {mnt}/kagent.db'
              f' {mnt}/ballast {reserve} && cp {mnt}/kagent.db {keep}/ && (cp {mnt}/kagent.db-wal {keep}/ || true)'
              f' && ls {mnt}')
    out = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
                         capture_output=True, env={**subprocess_env(), "SCRIPT": STILL_FULL}, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert {"TURN FAILED", "FINISH FAILED", "UNWRITTEN [1]"} <= set(lines), out.stdout
    conn = sqlite3.connect(keep / "kagent.db")
    try:
        stored = conn.execute("SELECT status, error FROM episodes").fetchall()
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    if reserve:
        assert "CLOSED" in lines, out.stdout
        assert "released the reserve" in out.stderr, out.stderr
        assert "kagent.db-reserve" not in lines  # spent; the next open sets it aside again
        assert stored == [("error", "the store failed: disk full")]
        return
    failed = [ln for ln in lines if ln.startswith("CLOSE FAILED")]
    assert failed, out.stdout
    assert "could not be written at close (" in failed[0] and "disk full" in failed[0]
    assert "episode 1 ended error (reward None, error 'the store failed: disk full')" in failed[0]
    assert "the next start marks them interrupted and re-runs them" in failed[0]
    assert stored == [("running", None)]
