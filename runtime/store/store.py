"""The store (DESIGN §7): one SQLite file with problems, policies, episodes and every turn and tool
call, evaluations, baselines, curriculum and train steps.

    async with Store.open(path) as store:
        eid = await store.start_episode(problem_id, policy_version=3)
        await store.add_turn(TurnRow(episode_id=eid, index=0, text="...", completion_ids=[...]))

Writes: one writer task owns the only writing connection, an aiosqlite one (runtime/store/writer.py):
queued requests are batched into one `BEGIN IMMEDIATE ... COMMIT` each and acknowledged after
the commit; a bad request (a constraint violated) fails alone; a failed commit (disk full, I/O
error) fails the whole batch and nothing of it is stored. An episode's final status that failed
so is kept and tried again with each later batch and at close (`finish_episode`); at close on
a disk still full, the daemon's store releases its reserve (`<db>-reserve`, `reserve_bytes`) to
write it, and what still cannot be written is raised as StoreWriteFailed naming each episode.

Reads: a second, read-only connection, plain sqlite3 on a worker thread, runs sync `fn(conn)`
functions (`read(fn)`, one read transaction each). They stay sync because they are the contract
every reader shares: runtime/store/queries.py (the HTTP server, the CLI, the viewer),
runtime/store/training.py (the trainer) and the sync StoreBaselineCache; aiosqlite has no public way to run a sync function on its
connection, and a read needs no ordering with the writer (WAL: it sees the last commit).
aiosqlite runs on asyncio only: open the store under anyio's asyncio backend (the default of
`anyio.run`, and what kagentd's uvicorn runs on), not trio.

The SQL lives in plain functions in runtime/store/sql.py (writes `async fn(db)`, reads
`fn(conn)`), the row types and errors in runtime/store/rows.py (the package exports them with the
Store); the schema in runtime/store/migrations/NNNN_*.sql, and PRAGMA user_version is the number
of the last one applied.

A daemon holds a flock on the database file itself while the store is open, so a second
daemon on the same file (by any path or hard link) refuses. The trainer, which shares the file
with a running daemon, opens with `lock=False`: SQLite itself serialises the two processes'
write transactions (busy_timeout).

Token arrays are BLOBs of little-endian int32 (ids) / float32 (logprobs); the view
`turn_arrays` shows them as JSON.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio
from anyio import to_thread
from anyio.streams.memory import MemoryObjectSendStream

from runtime.store import export
from runtime.store.rows import (
    CurriculumRow,
    EpisodeDetail,
    EpisodeRow,
    EpisodeStatus,
    Origin,
    PolicyRow,
    ProblemRow,
    StoreError,
    StoreInUse,
    StoreSchemaError,
    StoreWriteFailed,
    ToolCallRow,
    TrainStepRow,
    TurnRow,
)
from runtime.store.sql import (
    AsyncConn,
    Conn,
    add_problem,
    connect,
    connect_writer,
    insert_episode,
    insert_evaluation,
    insert_policy,
    insert_tool_call,
    insert_train_step,
    insert_turn,
    json_text,
    migrate,
    migrations,
    pack_ids,
    pack_logprobs,
    record_policy_path,
    schema_version,
    select_baseline,
    select_curriculum,
    select_episode,
    select_episodes,
    select_pending_reruns,
    select_policies,
    select_problems,
    select_train_steps,
    translate,
    update_finished,
    update_interrupted,
    update_rerun_pending,
    upsert_baseline,
    upsert_baseline_sync,
    upsert_curriculum,
    upsert_problems,
)
from runtime.store.writer import Request, Reserve, Retry, WriteFn, unwritten, write_loop
from skills.evaluator.baselines import BaselineCache, BaselineEntry, BaselineKey
from skills.evaluator.results import EvalResult

T = TypeVar("T")


class TrajectoryStore(Protocol):
    """What the episode loop needs from a store (the seam; `Store` implements it)."""

    async def start_episode(self, problem_id: str, *, policy_version: int | None,
                            origin: Origin = "rollout", trainable: bool = True,
                            rerun_of: int | None = None) -> int: ...
    async def add_turn(self, turn: TurnRow) -> int: ...
    async def add_tool_call(self, call: ToolCallRow) -> int: ...
    async def add_evaluation(self, result: EvalResult, *, episode_id: int | None,
                             tool_call_id: int | None = None) -> int: ...
    async def finish_episode(self, episode_id: int, status: EpisodeStatus, *, reward: float | None,
                             trainable: bool | None = None, error: str | None = None,
                             rerun_pending: bool = False) -> None: ...


_HELD: set[tuple[int, int]] = set()
"""(device, inode) of the stores this process holds open for writing."""


class _Lock:
    """An exclusive flock on the database file itself: keyed on the file's identity, so a hard
    link or another path to the same file is refused too. flock and SQLite's own POSIX locks do
    not interact on Linux. Closing a descriptor drops every POSIX lock this process holds on
    the file, so the descriptor is closed only after the store's connections are, and a second
    open in this process is refused by `_HELD` before any descriptor is opened."""

    def __init__(self, db: Path) -> None:
        fd = os.open(db, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)  # SQLite takes an empty file as new
        st = os.fstat(fd)
        self.key = (st.st_dev, st.st_ino)
        if self.key in _HELD:
            os.close(fd)  # safe: this process's connections keep their own descriptors' locks
            raise StoreInUse(f"{db} is already open for writing (by pid {os.getpid()}, this process); "
                             "a second daemon on the same store is refused.")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)  # no connection of this process is open on the file yet
            raise StoreInUse(
                f"{db} is already open for writing (by pid {_flock_holder(st) or 'unknown'}, the same file"
                f" as inode {st.st_ino}); a second daemon on the same store is refused. Stop the other one"
                " first (kagentd stop).") from None
        _HELD.add(self.key)
        self.fd = fd

    def close(self) -> None:
        _HELD.discard(self.key)
        os.close(self.fd)


def _flock_holder(st: os.stat_result) -> int | None:
    """The pid holding a flock on this file, from /proc/locks (None when it cannot be told)."""
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        f = line.split()
        if len(f) > 5 and f[1] == "FLOCK" and f[5] == dev:
            return int(f[4])
    return None


def _snapshot(fn: Callable[[Conn], T]) -> Callable[[Conn], T]:
    """fn inside one read transaction, so its several SELECTs see one state of the file."""
    def run(conn: Conn) -> T:
        conn.execute("BEGIN")
        try:
            return fn(conn)
        finally:
            conn.execute("COMMIT")
    return run


class Store:
    """The SQLite store. Open with `async with Store.open(path) as store:`."""

    def __init__(self, path: Path, reader: Conn, send: MemoryObjectSendStream[Request[Any]] | None,
                 busy_timeout_s: float, retry: dict[int, Retry] | None = None) -> None:
        self.path = path
        self.busy_timeout_s = busy_timeout_s
        self._retry = {} if retry is None else retry
        self._reader = reader
        self._send = send
        self._read_limiter = anyio.CapacityLimiter(1)

    @classmethod
    @asynccontextmanager
    async def open(cls, path: str | Path, *, readonly: bool = False, lock: bool = True,
                   busy_timeout_s: float = 5.0, max_batch: int = 256, queue_size: int = 1024,
                   reserve_bytes: int = 1 << 20) -> AsyncIterator[Store]:
        """Open (creating and migrating as needed). `readonly`: reads only, no lock, no writer.
        `lock`: hold a flock on the file so a second daemon refuses (the trainer passes False).
        `reserve_bytes`: with `lock`, disk space set aside for the final writes at close (0: none).
        Raises StoreWriteFailed at close when final statuses could still not be written."""
        path = Path(path)
        lock_file = _Lock(path) if lock and not readonly else None
        writer: AsyncConn | None = None
        reader: Conn | None = None
        try:
            try:
                if not readonly:
                    writer = await connect_writer(path, busy_timeout_s=busy_timeout_s)
                    with anyio.CancelScope(shield=True):
                        await migrate(writer, path)
                reader = await to_thread.run_sync(lambda: connect(path, readonly=True, busy_timeout_s=busy_timeout_s))
                _check_schema(reader, path)
            except sqlite3.Error as exc:
                raise translate(exc, path, busy_timeout_s) from exc
            if writer is None:
                yield cls(path, reader, None, busy_timeout_s)
                return
            reserve = Reserve(path, reserve_bytes) if lock_file is not None and reserve_bytes > 0 else None
            if reserve is not None and not await to_thread.run_sync(reserve.make):
                reserve = None
            async with cls._writing(path, reader, writer, busy_timeout_s=busy_timeout_s, max_batch=max_batch,
                                    queue_size=queue_size, reserve=reserve) as store:
                yield store
        finally:
            with anyio.CancelScope(shield=True):  # closing checkpoints the WAL: off the event loop
                if reader is not None:
                    await to_thread.run_sync(reader.close)
                if writer is not None:
                    await writer.close()
                    # aiosqlite's close returns once its thread took the stop; wait for the thread to
                    # end too (on a loaded box it was still alive after close), so nothing outlives the store
                    thread = getattr(writer, "_thread", None)
                    if thread is not None and thread.is_alive():
                        await to_thread.run_sync(thread.join, 10.0)
            if lock_file is not None:
                lock_file.close()

    @classmethod
    @asynccontextmanager
    async def _writing(cls, path: Path, reader: Conn, writer: AsyncConn, *, busy_timeout_s: float,
                       max_batch: int, queue_size: int, reserve: Reserve | None) -> AsyncIterator[Store]:
        """The store with its writer task running; at exit, the writer commits what is queued."""
        send, receive = anyio.create_memory_object_stream[Request[Any]](queue_size)
        body_error: BaseException | None = None
        retry: dict[int, Retry] = {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: write_loop(writer, receive, path=path, busy_timeout_s=busy_timeout_s,
                                             max_batch=max_batch, retry=retry, reserve=reserve))
            with send:  # closing it lets the writer commit what is queued, then end
                try:
                    yield cls(path, reader, send, busy_timeout_s, retry)
                except BaseException as exc:  # re-raised below, not wrapped in an ExceptionGroup
                    body_error = exc
        if retry:  # the writer logged it too
            lost = unwritten(path, retry)
            if body_error is None:
                raise StoreWriteFailed(lost)
            body_error.add_note(lost)
        if body_error is not None:
            raise body_error

    # -- plumbing

    async def write(self, fn: WriteFn[T], what: str = "write") -> T:
        """Run `await fn(db)` in the writer's next transaction (fn may be called again when the
        batch is re-run without a failed request); returns after the commit."""
        if self._send is None:
            raise StoreError(f"{self.path} is open read-only: {what} needs Store.open(path)")
        req: Request[T] = Request(fn, what)
        try:
            await self._send.send(req)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise StoreError(f"{self.path}: the store is closed ({what})") from None
        await req.done.wait()
        if req.error is not None:
            raise req.error
        return req.result  # type: ignore[return-value]  # set when error is None

    async def read(self, fn: Callable[[Conn], T]) -> T:
        """Run fn(conn) on the read-only connection, inside one read transaction."""
        return await to_thread.run_sync(_snapshot(fn), self._reader, limiter=self._read_limiter)

    # -- problems and policies

    async def upsert_problems(self, rows: Sequence[ProblemRow]) -> None:
        rows = list(rows)
        await self.write(lambda db: upsert_problems(db, rows), f"upsert_problems({len(rows)})")

    async def upsert_problem(self, row: ProblemRow) -> None:
        await self.upsert_problems([row])

    async def add_problem(self, row: ProblemRow) -> ProblemRow:
        """The stored row for `row.id`: `row` when new, else the existing one (see sql.add_problem)."""
        return await self.write(lambda db: add_problem(db, row), f"add_problem({row.name})")

    async def get_problem(self, problem_id: str) -> ProblemRow | None:
        rows = await self.read(lambda c: select_problems(c, problem_id))
        return rows[0] if rows else None

    async def list_problems(self) -> list[ProblemRow]:
        return await self.read(select_problems)

    async def add_policy(self, version: int, path: str) -> PolicyRow:
        row = PolicyRow(version=version, path=path, created=time.time())
        await self.write(lambda db: insert_policy(db, version, path, row.created), f"add_policy({version})")
        return row

    async def record_policy(self, path: str) -> int:
        """The policy version of checkpoint `path`: the one recorded for it, else the next (one
        transaction; see sql.record_policy_path)."""
        return await self.write(lambda db: record_policy_path(db, path, time.time()), f"record_policy({path})")

    async def list_policies(self) -> list[PolicyRow]:
        return await self.read(select_policies)

    # -- episodes

    async def start_episode(self, problem_id: str, *, policy_version: int | None,
                            origin: Origin = "rollout", trainable: bool = True,
                            rerun_of: int | None = None) -> int:
        """A new `running` episode. `rerun_of`: the episode it re-runs; its `rerun_pending` mark is
        cleared in the same transaction (StoreError when it has none, so none is re-run twice)."""
        started = time.time()
        return await self.write(
            lambda db: insert_episode(db, problem_id, policy_version, origin, trainable, started, rerun_of),
            f"start_episode({problem_id})")

    async def add_turn(self, turn: TurnRow) -> int:
        blobs = (pack_ids(turn.prompt_ids), pack_ids(turn.completion_ids), pack_logprobs(turn.logprobs))
        return await self.write(lambda db: insert_turn(db, turn, blobs),
                                f"add_turn(episode {turn.episode_id}, index {turn.index})")

    async def add_tool_call(self, call: ToolCallRow) -> int:
        record = None if call.record is None else json_text(call.record)
        return await self.write(lambda db: insert_tool_call(db, call, record),
                                f"add_tool_call(turn {call.turn_id}, index {call.index})")

    async def finish_episode(self, episode_id: int, status: EpisodeStatus, *, reward: float | None,
                             trainable: bool | None = None, error: str | None = None,
                             rerun_pending: bool = False) -> None:
        """The episode's final status; `rerun_pending`: it waits for a re-run (set in the same
        transaction, so a crash cannot end it without the mark)."""
        if status == "running":
            raise ValueError("finish_episode needs a final status, not 'running'")
        finished = time.time()

        async def fn(db: AsyncConn) -> None:
            await update_finished(db, episode_id, status, reward, trainable, error, finished, rerun_pending)
        what = f"finish_episode({episode_id}, {status})"
        try:
            await self.write(fn, what)
        except StoreWriteFailed as exc:
            # Disk full or an I/O error: the caller hears of it now, and the final status is
            # written with the next transaction that commits (or at close), so the episode does
            # not stay `running` and get re-run at the next start.
            self._retry[episode_id] = Retry(fn, what, f"ended {status} (reward {reward}, error {error!r})",
                                            str(exc))
            raise

    @property
    def unwritten_finishes(self) -> list[int]:
        """Episodes whose final status failed to commit and waits for the next transaction."""
        return sorted(self._retry)

    async def mark_interrupted_episodes(self) -> list[int]:
        """At start-up: episodes still `running` were cut short by a crash; they become
        `interrupted` and (but for replays) wait for a re-run (`pending_reruns`). Returns their ids."""
        finished = time.time()
        return await self.write(lambda db: update_interrupted(db, finished), "mark_interrupted_episodes")

    async def pending_reruns(self) -> list[EpisodeRow]:
        """Episodes waiting for a re-run, oldest first: marked by `mark_interrupted_episodes` or
        `mark_rerun_pending`, until `start_episode(rerun_of=...)` starts their re-run."""
        return await self.read(select_pending_reruns)

    async def mark_rerun_pending(self, episode_id: int) -> None:
        """An ended episode waits for a re-run (the scheduler's retry of a re-queued request)."""
        await self.write(lambda db: update_rerun_pending(db, episode_id), f"mark_rerun_pending({episode_id})")

    async def list_episodes(self, *, status: EpisodeStatus | None = None, finished: bool | None = None,
                            trainable: bool | None = None, problem_id: str | None = None,
                            min_policy_version: int | None = None, after_id: int | None = None,
                            limit: int | None = None) -> list[EpisodeRow]:
        return await self.read(lambda c: select_episodes(
            c, status=status, finished=finished, trainable=trainable, problem_id=problem_id,
            min_policy_version=min_policy_version, after_id=after_id, limit=limit))

    async def get_episode(self, episode_id: int) -> EpisodeDetail | None:
        return await self.read(lambda c: select_episode(c, episode_id))

    # -- evaluations and baselines

    async def add_evaluation(self, result: EvalResult, *, episode_id: int | None,
                             tool_call_id: int | None = None) -> int:
        created = time.time()
        return await self.write(lambda db: insert_evaluation(db, result, episode_id, tool_call_id, created),
                                f"add_evaluation({result.problem}, {result.mode})")

    async def get_baseline(self, key: BaselineKey) -> BaselineEntry | None:
        return await self.read(lambda c: select_baseline(c, key))

    async def put_baseline(self, key: BaselineKey, entry: BaselineEntry) -> None:
        await self.write(lambda db: upsert_baseline(db, key, entry), f"put_baseline({key.text()})")

    def baseline_cache(self) -> BaselineCache:
        """A sync BaselineCache on this file, for skills.evaluator.evaluate (see StoreBaselineCache)."""
        return StoreBaselineCache(self.path, busy_timeout_s=self.busy_timeout_s)

    # -- curriculum and training

    async def put_curriculum(self, rows: Sequence[CurriculumRow]) -> None:
        rows = list(rows)
        await self.write(lambda db: upsert_curriculum(db, rows), f"put_curriculum({len(rows)})")

    async def get_curriculum(self) -> list[CurriculumRow]:
        return await self.read(select_curriculum)

    async def curriculum_weights(self) -> dict[str, float]:
        return {r.problem_id: r.weight for r in await self.get_curriculum()}

    async def add_train_step(self, step: TrainStepRow) -> int:
        return await self.write(lambda db: insert_train_step(db, step),
                                f"add_train_step({step.run}, {step.stage}, {step.step})")

    async def list_train_steps(self, run: str | None = None) -> list[TrainStepRow]:
        return await self.read(lambda c: select_train_steps(c, run))

    # -- export (runtime/store/export.py)

    async def export_jsonl(self, path: str | Path, *, finished: bool | None = True,
                           trainable: bool | None = None) -> int:
        return await export.export_jsonl(self, Path(path), finished=finished, trainable=trainable)

    async def export_parquet(self, path: str | Path, *, finished: bool | None = True,
                             trainable: bool | None = None) -> int:
        return await export.export_parquet(self, Path(path), finished=finished, trainable=trainable)


def _check_schema(conn: Conn, path: Path) -> None:
    have, want = schema_version(conn), migrations()[-1][0]
    if have != want:
        raise StoreSchemaError(f"{path} has schema {have}, this kagent needs {want}: open it once for"
                               " writing (Store.open / kagentd) to migrate it")


class StoreBaselineCache:
    """skills.baselines.BaselineCache on a store file, for sync callers.

    The protocol is sync and skills.evaluator.evaluate calls it on the event loop, so it cannot await the
    writer task. It uses its own short-lived connection per call instead: SQLite serialises it
    with the writer (WAL, busy_timeout), and because the writer runs each transaction whole on a
    worker thread, a put never waits on the event loop it blocks. A put is rare (once per
    problem and machine) and takes a millisecond."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 5.0) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s

    def get(self, key: BaselineKey) -> BaselineEntry | None:
        try:
            conn = connect(self.path, readonly=True, busy_timeout_s=self.busy_timeout_s)
            try:
                _check_schema(conn, self.path)
                return select_baseline(conn, key)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise translate(exc, self.path, self.busy_timeout_s) from exc

    def put(self, key: BaselineKey, entry: BaselineEntry) -> None:
        try:
            conn = connect(self.path, create=False, busy_timeout_s=self.busy_timeout_s)
            try:
                _check_schema(conn, self.path)
                conn.execute("BEGIN IMMEDIATE")
                try:
                    upsert_baseline_sync(conn, key, entry)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise translate(exc, self.path, self.busy_timeout_s) from exc
