"""The store's SQL as plain functions (DESIGN §7): connections and migrations, SQLite error
translation, writes, reads, and the token-array packing. Each runs on the connection it is given;
transactions are the caller's (runtime/store/store.py). The schema is in
runtime/store/migrations/NNNN_*.sql, and PRAGMA user_version is the number of the last one applied.

Writes (and the migrations) are `async fn(db)` on the writer's aiosqlite connection (`AsyncConn`);
reads are sync `fn(conn)` on a plain sqlite3 connection (`Conn`), because every reader runs them:
the store's read connection on a worker thread, `Store.read(fn)` callers (the trainer's reads in
runtime/store/training.py, the HTTP server's and the CLI's in runtime/store/queries.py) and the
sync StoreBaselineCache.

Token arrays are BLOBs of little-endian int32 (ids) / float32 (logprobs); the view
`turn_arrays` shows them as JSON.
"""

from __future__ import annotations

import importlib.resources
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import msgspec
import numpy as np

from runtime.store.rows import (
    CurriculumRow,
    EpisodeDetail,
    EpisodeRow,
    EpisodeStatus,
    EvaluationRow,
    Message,
    Origin,
    PolicyRow,
    ProblemRow,
    StoreBusy,
    StoreError,
    StoreSchemaError,
    StoreWriteFailed,
    ToolCallRow,
    ToolCallSpec,
    TrainStepRow,
    TurnRow,
)
from skills.evaluator.baselines import BaselineEntry, BaselineKey
from skills.evaluator.results import EvalResult

T = TypeVar("T")
Conn = sqlite3.Connection
"""A sync connection: readers."""
AsyncConn = aiosqlite.Connection
"""The writer's connection (aiosqlite: one thread of its own runs its statements in order)."""


# ------------------------------------------------------------------------------ token arrays


def pack_ids(ids: Sequence[int] | None) -> bytes | None:
    """Token ids as a little-endian int32 BLOB."""
    return None if ids is None else np.asarray(ids, dtype="<i4").tobytes()


def pack_logprobs(values: Sequence[float] | None) -> bytes | None:
    """Logprobs as a little-endian float32 BLOB."""
    return None if values is None else np.asarray(values, dtype="<f4").tobytes()


def unpack_ids(blob: bytes | None) -> list[int] | None:
    return None if blob is None else np.frombuffer(blob, dtype="<i4").tolist()


def unpack_logprobs(blob: bytes | None) -> list[float] | None:
    return None if blob is None else np.frombuffer(blob, dtype="<f4").tolist()


# ------------------------------------------------------------------- connections, migrations


def _pragmas(busy_timeout_s: float) -> list[str]:
    return [f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}", "PRAGMA foreign_keys = ON",
            # WAL: a crash loses nothing committed; power loss at most the last commits
            "PRAGMA synchronous = NORMAL"]


def _uri(path: Path, mode: str) -> str:
    return f"{path.resolve().as_uri()}?mode={mode}"


def connect(path: Path, *, readonly: bool = False, create: bool = True, busy_timeout_s: float = 5.0) -> Conn:
    """A sync connection with the store's pragmas; autocommit (transactions are explicit)."""
    conn = sqlite3.connect(_uri(path, "ro" if readonly else "rwc" if create else "rw"), uri=True,
                           isolation_level=None, check_same_thread=False)
    for pragma in _pragmas(busy_timeout_s):
        conn.execute(pragma)
    return conn


async def connect_writer(path: Path, *, busy_timeout_s: float = 5.0) -> AsyncConn:
    """The writer's aiosqlite connection (creating the file), same pragmas; autocommit."""
    db = await aiosqlite.connect(_uri(path, "rwc"), uri=True, isolation_level=None)
    try:
        for pragma in _pragmas(busy_timeout_s):
            await db.execute(pragma)
    except BaseException:
        await db.close()
        raise
    return db


def migrations() -> list[tuple[int, str]]:
    """(number, sql) of runtime/store/migrations/NNNN_name.sql, in order; numbers run 1..N."""
    found: list[tuple[int, str]] = []
    for entry in (importlib.resources.files("runtime.store") / "migrations").iterdir():
        m = re.fullmatch(r"(\d{4})_\w+\.sql", entry.name)
        if m:
            found.append((int(m[1]), entry.read_text(encoding="utf-8")))
    found.sort()
    if [n for n, _ in found] != list(range(1, len(found) + 1)):
        raise StoreSchemaError(f"migrations must be numbered 0001.. without gaps, found {[n for n, _ in found]}")
    return found


def statements(sql: str) -> Iterator[str]:
    """The statements of a migration file, one at a time (SQLite's own idea of a complete one)."""
    buf = ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            yield buf
            buf = ""
    if any(ln.strip() and not ln.strip().startswith("--") for ln in buf.splitlines()):
        raise StoreSchemaError(f"migration ends inside a statement: {buf.strip()[:80]!r}")


async def migrate(db: AsyncConn, path: Path) -> int:
    """Bring the file to the latest schema (WAL on); each migration is one transaction. Run it
    shielded from cancellation: a started migration always commits or rolls back."""
    if (await _first(db, "PRAGMA journal_mode = WAL"))[0] != "wal":
        raise StoreSchemaError(f"{path}: could not switch the database to WAL mode")
    todo = migrations()
    latest = todo[-1][0]
    current: int = (await _first(db, "PRAGMA user_version"))[0]
    if current > latest:
        raise StoreSchemaError(f"{path} has schema {current}, newer than this kagent knows ({latest}); upgrade kagent")
    for number, sql in todo[current:]:
        await db.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated between our read and our lock.
            if (await _first(db, "PRAGMA user_version"))[0] < number:
                for stmt in statements(sql):
                    await db.execute(stmt)
                await db.execute(f"PRAGMA user_version = {number}")
            await db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                await db.execute("ROLLBACK")
            raise
    return latest


def schema_version(conn: Conn) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def translate(exc: BaseException, path: Path, busy_timeout_s: float) -> BaseException:
    """A clear StoreError for SQLite's operational failures; other exceptions pass unchanged."""
    if not isinstance(exc, sqlite3.Error):
        return exc
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    name = getattr(exc, "sqlite_errorname", "")
    err: StoreError
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        err = StoreBusy(f"{path}: the database stayed locked by another connection for more than "
                        f"{busy_timeout_s:g} s ({name}: {exc}); nothing was written")
    elif code == sqlite3.SQLITE_FULL:
        err = StoreWriteFailed(f"{path}: disk full ({name}: {exc}); the transaction was rolled back, "
                               "nothing of it was written. Free space and retry.")
    elif code == sqlite3.SQLITE_CANTOPEN:
        err = StoreError(f"{path}: cannot open the database ({name}: {exc}); does it exist, and may"
                         " this user read it?")
    elif code == sqlite3.SQLITE_IOERR:
        err = StoreWriteFailed(f"{path}: I/O error ({name}: {exc}); the transaction was rolled back "
                               "(disk full or failing?)")
    else:
        err = StoreError(f"{path}: {name or 'sqlite error'}: {exc}")
    err.__cause__ = exc
    return err


# ------------------------------------------------------------------------------------ writes
# Async: each runs on the writer's aiosqlite connection, inside the writer's transaction. A
# statement is a round trip to aiosqlite's thread, so each keeps to as few as it can (checks
# folded into the statement where SQLite can make them); SELECTs fetch all (no statement is
# left open in a transaction).


def json_text(value: Any) -> str:
    """A value as compact JSON text (what the TEXT columns hold)."""
    return msgspec.json.encode(value).decode()


async def _first(db: AsyncConn, sql: str, args: Sequence[Any] = ()) -> Any:
    """The first row of a query, or None."""
    rows = list(await db.execute_fetchall(sql, args))
    return rows[0] if rows else None


async def upsert_problems(db: AsyncConn, rows: Sequence[ProblemRow]) -> None:
    now = time.time()
    await db.executemany(
        "INSERT INTO problems (id, name, level, source, path, precision, tier, code, manifest, added, updated)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
        " name = excluded.name, level = excluded.level, source = excluded.source,"
        " path = coalesce(excluded.path, path), precision = excluded.precision, tier = excluded.tier,"
        " code = coalesce(excluded.code, code), manifest = coalesce(excluded.manifest, manifest),"
        " updated = excluded.updated",
        [(r.id, r.name, r.level, r.source, r.path, r.precision, r.tier, r.code, r.manifest, now, now)
         for r in rows])


async def add_problem(db: AsyncConn, row: ProblemRow) -> ProblemRow:
    """The stored row for `row.id`: `row` inserted when the id is new; else the row already
    there, untouched but for a missing source (an evaluation's placeholder) filled in."""
    now = time.time()
    await db.execute(
        "INSERT INTO problems (id, name, level, source, path, precision, tier, code, manifest, added, updated)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
        " code = coalesce(code, excluded.code)",
        (row.id, row.name, row.level, row.source, row.path, row.precision, row.tier, row.code, row.manifest,
         now, now))
    stored = await db.execute_fetchall(f"SELECT {_PROBLEM_COLS} FROM problems WHERE id = ?", (row.id,))
    return _typed(_PROBLEM_NAMES, stored, ProblemRow)[0]


async def insert_policy(db: AsyncConn, version: int, path: str, created: float) -> None:
    await db.execute("INSERT INTO policies (version, path, created) VALUES (?, ?, ?)", (version, path, created))


async def record_policy_path(db: AsyncConn, path: str, created: float) -> int:
    """The version already recorded for checkpoint `path`, else the next version, inserted. Run
    inside one write transaction, so the trainer and the daemon's hot-loader, which may both
    record the same checkpoint, agree on its number and never take the same one twice."""
    row = await _first(db, "SELECT version FROM policies WHERE path = ? ORDER BY version DESC LIMIT 1", (path,))
    if row is not None:
        return int(row[0])
    row = await _first(db, "SELECT max(version) FROM policies")
    version = 1 if row is None or row[0] is None else int(row[0]) + 1
    await insert_policy(db, version, path, created)
    return version


async def insert_episode(db: AsyncConn, problem_id: str, policy_version: int | None, origin: Origin,
                         trainable: bool, started: float, rerun_of: int | None = None) -> int:
    """A new `running` episode. `rerun_of`: the episode it re-runs, whose `rerun_pending` mark is
    cleared in this same transaction (refused when it has none: no episode is re-run twice)."""
    if rerun_of is not None and (await db.execute(
            "UPDATE episodes SET rerun_pending = 0 WHERE id = ? AND rerun_pending = 1", (rerun_of,))).rowcount == 0:
        raise StoreError(f"episode {rerun_of} is not waiting for a re-run (already re-run, or never marked)")
    cur = await db.execute(
        "INSERT INTO episodes (problem_id, policy_version, origin, trainable, started, rerun_of)"
        " SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM problems WHERE id = ?)",
        (problem_id, policy_version, origin, trainable, started, rerun_of, problem_id))
    if cur.rowcount == 0:
        raise StoreError(f"unknown problem {problem_id!r}: add it with upsert_problem first")
    return int(cur.lastrowid or 0)


async def insert_turn(db: AsyncConn, t: TurnRow, blobs: tuple[bytes | None, bytes | None, bytes | None]) -> int:
    cur = await db.execute(
        "INSERT INTO turns (episode_id, idx, policy_version, messages, prompt_prefix, prompt_ids,"
        " completion_ids, logprobs, sampling, finish_reason, text, tool_calls, prompt_tokens,"
        " completion_tokens, duration, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (t.episode_id, t.index, t.policy_version, json_text(t.messages), t.prompt_prefix, *blobs,
         json_text(t.sampling), t.finish_reason, t.text, json_text(t.tool_calls), t.prompt_tokens,
         t.completion_tokens, t.duration, t.created))
    return int(cur.lastrowid or 0)


async def insert_tool_call(db: AsyncConn, c: ToolCallRow, record: str | None) -> int:
    cur = await db.execute(
        "INSERT INTO tool_calls (turn_id, episode_id, idx, call_id, skill, args, ok, result, record,"
        " duration, malformed, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (c.turn_id, c.episode_id, c.index, c.call_id, c.skill, c.args, c.ok, c.result, record,
         c.duration, c.malformed, c.created))
    return int(cur.lastrowid or 0)


async def _status(db: AsyncConn, episode_id: int) -> str | None:
    row = await _first(db, "SELECT status FROM episodes WHERE id = ?", (episode_id,))
    return None if row is None else str(row[0])


async def update_finished(db: AsyncConn, episode_id: int, status: EpisodeStatus, reward: float | None,
                          trainable: bool | None, error: str | None, finished: float,
                          rerun_pending: bool = False) -> None:
    cur = await db.execute(
        "UPDATE episodes SET status = ?, reward = ?, trainable = coalesce(?, trainable), error = ?,"
        " finished = ?, rerun_pending = ?,"
        " policy_seconds = (SELECT coalesce(sum(duration), 0) FROM turns WHERE episode_id = episodes.id),"
        " tool_seconds = (SELECT coalesce(sum(duration), 0) FROM tool_calls WHERE episode_id = episodes.id)"
        " WHERE id = ? AND status = 'running'",
        (status, reward, trainable, error, finished, int(rerun_pending), episode_id))
    if cur.rowcount == 0:
        now = await _status(db, episode_id)
        raise StoreError(f"episode {episode_id} does not exist" if now is None
                         else f"episode {episode_id} already ended ({now})")


async def update_interrupted(db: AsyncConn, finished: float) -> list[int]:
    """Episodes still `running` become `interrupted` and, but for replays, wait for a re-run
    (`rerun_pending`); returns their ids."""
    ids = [r[0] for r in await db.execute_fetchall("SELECT id FROM episodes WHERE status = 'running' ORDER BY id")]
    await db.execute("UPDATE episodes SET status = 'interrupted', finished = ?, error = 'the daemon stopped"
                     " while the episode ran', rerun_pending = (origin != 'replay') WHERE status = 'running'",
                     (finished,))
    return ids


async def update_rerun_pending(db: AsyncConn, episode_id: int) -> None:
    """The episode (ended) waits for a re-run: the next start re-queues it unless one starts first."""
    if (await db.execute("UPDATE episodes SET rerun_pending = 1 WHERE id = ? AND status != 'running'",
                         (episode_id,))).rowcount == 0:
        status = await _status(db, episode_id)
        raise StoreError(f"episode {episode_id} does not exist" if status is None
                         else f"episode {episode_id} is still running")


async def insert_evaluation(db: AsyncConn, r: EvalResult, episode_id: int | None, tool_call_id: int | None,
                            created: float) -> int:
    # An evaluation outside the daemon may grade a problem it never listed.
    await db.execute("INSERT INTO problems (id, name, source, precision, added, updated)"
                     " VALUES (?, ?, 'evaluation', ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                     (r.problem_id, r.problem, r.precision, created, created))
    speed = {s.baseline: s.value for s in r.speedups}
    cur = await db.execute(
        "INSERT INTO evaluations (episode_id, tool_call_id, problem_id, mode, backend, compiled, correct,"
        " stage, flags, reward, reward_fn, candidate_us, speedup_eager, speedup_compile, device,"
        " torch_version, precision, seconds, result, created, executor)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (episode_id, tool_call_id, r.problem_id, r.mode, r.backend, r.compiled, r.correct, r.stage,
         json_text([f.name for f in r.flags]), r.reward, r.reward_fn,
         r.candidate.per_call_us.median if r.candidate else None, speed.get("eager"),
         speed.get("compile"), r.gpu, r.torch_version, r.precision, r.stages.total, json_text(r), created,
         r.executor))
    return int(cur.lastrowid or 0)


_UPSERT_BASELINE = (
    "INSERT INTO baselines (problem_id, device, torch_version, precision, sizes, timing, entry, measured_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET entry = excluded.entry,"
    " measured_at = excluded.measured_at")


def _baseline_args(key: BaselineKey, entry: BaselineEntry) -> tuple[Any, ...]:
    return (key.problem_id, key.device, key.torch_version, key.precision, key.sizes, key.timing, json_text(entry),
            entry.measured_at)


async def upsert_baseline(db: AsyncConn, key: BaselineKey, entry: BaselineEntry) -> None:
    await db.execute(_UPSERT_BASELINE, _baseline_args(key, entry))


def upsert_baseline_sync(conn: Conn, key: BaselineKey, entry: BaselineEntry) -> None:
    """upsert_baseline on a sync connection (StoreBaselineCache, which cannot await the writer)."""
    conn.execute(_UPSERT_BASELINE, _baseline_args(key, entry))


async def upsert_curriculum(db: AsyncConn, rows: Sequence[CurriculumRow]) -> None:
    await db.executemany(
        "INSERT INTO curriculum (problem_id, tier, attempts, successes, mean_reward, recent_success,"
        " weight, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (problem_id) DO UPDATE SET"
        " tier = excluded.tier, attempts = excluded.attempts, successes = excluded.successes,"
        " mean_reward = excluded.mean_reward, recent_success = excluded.recent_success,"
        " weight = excluded.weight, updated = excluded.updated",
        [(r.problem_id, r.tier, r.attempts, r.successes, r.mean_reward, r.recent_success, r.weight,
          r.updated) for r in rows])


async def insert_train_step(db: AsyncConn, s: TrainStepRow) -> int:
    cur = await db.execute(
        "INSERT INTO train_steps (run, stage, step, policy_version, episodes, metrics, created)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (s.run, s.stage, s.step, s.policy_version, json_text(s.episodes), json_text(s.metrics), s.created))
    return int(cur.lastrowid or 0)


# ------------------------------------------------------------------------------------- reads

EPISODE_COLUMNS = ("id, problem_id, policy_version, origin, status, reward, trainable, started, finished,"
                   " policy_seconds, tool_seconds, error")
"""The columns of an EpisodeRow, in its order."""
_PROBLEM_COLS = "id, name, source, level, path, precision, tier, code, manifest"


_PROBLEM_NAMES = [c.strip() for c in _PROBLEM_COLS.split(",")]


def _row(cur: sqlite3.Cursor, values: tuple[Any, ...]) -> dict[str, Any]:
    return {d[0]: v for d, v in zip(cur.description, values, strict=True)}


def typed_rows(cur: sqlite3.Cursor, typ: type[T]) -> list[T]:
    """The cursor's rows as `typ`, each column by its name (`SELECT EPISODE_COLUMNS` -> EpisodeRow)."""
    return [msgspec.convert(_row(cur, v), typ, strict=False) for v in cur.fetchall()]


def _typed(names: list[str], rows: Iterable[Any], typ: type[T]) -> list[T]:
    return [msgspec.convert(dict(zip(names, v, strict=True)), typ, strict=False) for v in rows]


def select_episodes(conn: Conn, *, status: EpisodeStatus | None = None, finished: bool | None = None,
                    trainable: bool | None = None, problem_id: str | None = None,
                    min_policy_version: int | None = None, after_id: int | None = None,
                    limit: int | None = None) -> list[EpisodeRow]:
    where, args = [], []
    for cond, value in (("status = ?", status), ("trainable = ?", trainable),
                        ("problem_id = ?", problem_id), ("policy_version >= ?", min_policy_version),
                        ("id > ?", after_id)):
        if value is not None:
            where.append(cond)
            args.append(value)
    if finished is not None:
        where.append("status != 'running'" if finished else "status = 'running'")
    sql = f"SELECT {EPISODE_COLUMNS} FROM episodes"
    sql += f" WHERE {' AND '.join(where)}" if where else ""
    sql += " ORDER BY id" + (f" LIMIT {int(limit)}" if limit is not None else "")
    return typed_rows(conn.execute(sql, args), EpisodeRow)


def select_pending_reruns(conn: Conn) -> list[EpisodeRow]:
    """Episodes waiting for a re-run (`rerun_pending`), oldest first."""
    return typed_rows(conn.execute(f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE rerun_pending = 1 ORDER BY id"),
                 EpisodeRow)


def _turn(d: dict[str, Any]) -> TurnRow:
    return TurnRow(
        id=d["id"], episode_id=d["episode_id"], index=d["idx"], policy_version=d["policy_version"],
        messages=msgspec.json.decode(d["messages"], type=list[Message]), prompt_prefix=d["prompt_prefix"],
        prompt_ids=unpack_ids(d["prompt_ids"]), completion_ids=unpack_ids(d["completion_ids"]),
        logprobs=unpack_logprobs(d["logprobs"]), sampling=msgspec.json.decode(d["sampling"]),
        finish_reason=d["finish_reason"], text=d["text"],
        tool_calls=msgspec.json.decode(d["tool_calls"], type=list[ToolCallSpec]),
        prompt_tokens=d["prompt_tokens"], completion_tokens=d["completion_tokens"],
        duration=d["duration"], created=d["created"])


def _tool_call(d: dict[str, Any]) -> ToolCallRow:
    record = None if d["record"] is None else msgspec.json.decode(d["record"])
    malformed = None if d["malformed"] is None else bool(d["malformed"])
    return ToolCallRow(id=d["id"], turn_id=d["turn_id"], episode_id=d["episode_id"], index=d["idx"],
                       call_id=d["call_id"], skill=d["skill"], args=d["args"], ok=bool(d["ok"]),
                       result=d["result"], record=record, duration=d["duration"], malformed=malformed,
                       created=d["created"])


def select_evaluations(conn: Conn, episode_id: int) -> list[EvaluationRow]:
    cur = conn.execute("SELECT id, episode_id, tool_call_id, created, result FROM evaluations"
                       " WHERE episode_id = ? ORDER BY id", (episode_id,))
    return [EvaluationRow(id=i, episode_id=e, tool_call_id=t, created=c,
                          result=msgspec.json.decode(r, type=EvalResult)) for i, e, t, c, r in cur]


def select_episode(conn: Conn, episode_id: int) -> EpisodeDetail | None:
    """The episode with its turns, tool calls and evaluations (call inside one read transaction)."""
    cur = conn.execute(f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE id = ?", (episode_id,))
    episodes = typed_rows(cur, EpisodeRow)
    if not episodes:
        return None
    cur = conn.execute(f"SELECT {_PROBLEM_COLS} FROM problems WHERE id = ?", (episodes[0].problem_id,))
    problem = typed_rows(cur, ProblemRow)[0]
    cur = conn.execute("SELECT id, episode_id, idx, policy_version, messages, prompt_prefix, prompt_ids,"
                       " completion_ids, logprobs, sampling, finish_reason, text, tool_calls,"
                       " prompt_tokens, completion_tokens, duration, created FROM turns"
                       " WHERE episode_id = ? ORDER BY idx", (episode_id,))
    turns = [_turn(_row(cur, v)) for v in cur.fetchall()]
    cur = conn.execute("SELECT c.id, c.turn_id, c.episode_id, c.idx, c.call_id, c.skill, c.args, c.ok,"
                       " c.result, c.record, c.duration, c.malformed, c.created FROM tool_calls c"
                       " JOIN turns t ON t.id = c.turn_id WHERE c.episode_id = ? ORDER BY t.idx, c.idx",
                       (episode_id,))
    calls = [_tool_call(_row(cur, v)) for v in cur.fetchall()]
    return EpisodeDetail(episode=episodes[0], problem=problem, turns=turns, tool_calls=calls,
                         evaluations=select_evaluations(conn, episode_id))


def select_baseline(conn: Conn, key: BaselineKey) -> BaselineEntry | None:
    row = conn.execute("SELECT entry FROM baselines WHERE problem_id = ? AND device = ? AND"
                       " torch_version = ? AND precision = ? AND sizes = ? AND timing = ?",
                       (key.problem_id, key.device, key.torch_version, key.precision, key.sizes, key.timing)).fetchone()
    return None if row is None else msgspec.json.decode(row[0], type=BaselineEntry)


def select_problems(conn: Conn, problem_id: str | None = None) -> list[ProblemRow]:
    where = " WHERE id = ?" if problem_id is not None else ""
    return typed_rows(conn.execute(f"SELECT {_PROBLEM_COLS} FROM problems{where} ORDER BY name",
                              () if problem_id is None else (problem_id,)), ProblemRow)


def select_policies(conn: Conn) -> list[PolicyRow]:
    return typed_rows(conn.execute("SELECT version, path, created FROM policies ORDER BY version"), PolicyRow)


def select_curriculum(conn: Conn) -> list[CurriculumRow]:
    return typed_rows(conn.execute("SELECT problem_id, tier, attempts, successes, mean_reward, recent_success,"
                              " weight, updated FROM curriculum ORDER BY problem_id"), CurriculumRow)


def select_train_steps(conn: Conn, run: str | None = None) -> list[TrainStepRow]:
    cur = conn.execute("SELECT id, run, stage, step, policy_version, episodes, metrics, created"
                       " FROM train_steps WHERE ? IS NULL OR run = ? ORDER BY id", (run, run))
    return [TrainStepRow(id=i, run=r, stage=s, step=n, policy_version=p,
                         episodes=msgspec.json.decode(e, type=list[int]),
                         metrics=msgspec.json.decode(m, type=dict[str, float]), created=c)
            for i, r, s, n, p, e, m, c in cur]
