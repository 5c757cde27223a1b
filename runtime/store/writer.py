"""The store's writer task (DESIGN §7): the one aiosqlite connection that writes, and the
transactions it runs for runtime/store/store.py.

Requests queue on a memory object stream; the writer takes what is queued (up to `max_batch`) and
runs it as one `BEGIN IMMEDIATE ... COMMIT`, acknowledging each request after the commit. A
request that fails for a reason of its own (a constraint, bad arguments) fails alone: the
transaction is rolled back and run again without it. (Not a SAVEPOINT per request: each
statement is a round trip to aiosqlite's thread, and such failures are rare.) A failed commit
(disk full, I/O error, a lock held too long) fails the whole batch, and nothing of it is stored.

An episode's final status that failed so (Store.finish_episode) is kept in `retry` and tried
again with each later batch and at close. At close, when the disk is still full, the writer
releases the reserve (a file of `reserve_bytes` set aside next to the database when the daemon's
store opened) and tries once more; what still cannot be written stays in `retry`, and
Store.open raises StoreWriteFailed naming each episode (`unwritten`).

aiosqlite runs on asyncio only: the store works under anyio's asyncio backend (the one
kagentd's uvicorn, the CLI's and the trainer's `anyio.run` use), not under trio.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

import anyio
from anyio import to_thread
from anyio.streams.memory import MemoryObjectReceiveStream

from runtime.store.rows import StoreBusy, StoreError, StoreWriteFailed
from runtime.store.sql import AsyncConn, translate

T = TypeVar("T")
WriteFn = Callable[[AsyncConn], Awaitable[T]]
"""A write: `async fn(db)` of runtime/store/sql.py (called again when its batch is re-run)."""
log = logging.getLogger("kagent.store")

OWN_FAULT = (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError, sqlite3.DataError)
"""SQLite errors that are the request's own (a constraint, bad input): it fails alone."""


class Request(Generic[T]):
    """A write waiting for the writer. Its outcome is published only after the commit; until
    then `error` says it was not written (what a sender sees if the writer never runs it)."""

    __slots__ = ("fn", "what", "done", "result", "error")

    def __init__(self, fn: WriteFn[T], what: str) -> None:
        self.fn = fn
        self.what = what
        self.done = anyio.Event()
        self.result: T | None = None
        self.error: BaseException | None = StoreError(f"{what}: not written, the store closed first")


class Retry(NamedTuple):
    """A final status that failed to commit (disk full, I/O error) and is tried again."""

    fn: WriteFn[Any]
    what: str
    detail: str
    """What it would write, for the message when it never could."""
    error: str = ""
    """Why its last try failed."""


async def run_batch(db: AsyncConn, batch: list[Request[Any]], path: Path, busy_timeout_s: float) -> None:
    """One transaction for the whole batch; run it shielded (a started transaction always ends)."""
    todo = list(batch)
    while todo:
        outcomes: list[Any] = []
        failed: tuple[Request[Any], BaseException] | None = None
        try:
            await db.execute("BEGIN IMMEDIATE")
            for req in todo:
                try:
                    outcomes.append(await req.fn(db))
                except OWN_FAULT as exc:
                    err = StoreError(f"{req.what}: {exc}")
                    err.__cause__ = exc
                    failed = (req, err)
                    break
                except sqlite3.Error:
                    raise  # busy, disk full, I/O, corruption: the whole transaction is lost
                except Exception as exc:  # e.g. a StoreError the fn raised about its arguments
                    failed = (req, exc)
                    break
            if failed is None:
                await db.execute("COMMIT")
            elif db.in_transaction:
                await db.execute("ROLLBACK")  # then again without the request that failed
        except sqlite3.Error as exc:  # the transaction failed as a whole: nothing of it is stored
            await _rollback(db, exc)
            for req in todo:
                req.error = translate(exc, path, busy_timeout_s)
            return
        except BaseException:
            await _rollback(db, None)
            raise
        if failed is None:
            for req, result in zip(todo, outcomes, strict=True):
                req.result, req.error = result, None
            return
        failed[0].error = failed[1]
        todo.remove(failed[0])


async def _rollback(db: AsyncConn, exc: BaseException | None) -> None:
    if not db.in_transaction:  # SQLite may have rolled it back itself (disk full, I/O error)
        return
    try:
        await db.execute("ROLLBACK")
    except sqlite3.Error as rollback_exc:
        if exc is None:
            raise
        exc.add_note(f"and the rollback failed too: {rollback_exc}")


async def write_loop(db: AsyncConn, receive: MemoryObjectReceiveStream[Request[Any]], *, path: Path,
                     busy_timeout_s: float, max_batch: int, retry: dict[int, Retry],
                     reserve: Reserve | None) -> None:
    """The writer task: batches until the send side closes, then the last try for `retry`."""
    batch: list[Request[Any]] = []
    try:
        async for first in receive:
            batch = [first]
            while len(batch) < max_batch:
                try:
                    batch.append(receive.receive_nowait())
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
            await _with_retries(db, batch, retry, path, busy_timeout_s)
            for req in batch:
                req.done.set()
            batch = []
        if retry:
            await _at_close(db, retry, path, busy_timeout_s, reserve)
    finally:
        # Cancelled or failed: answer everything not run, so no sender waits forever.
        while True:
            try:
                batch.append(receive.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream):
                break
        receive.close()  # later sends fail at once (BrokenResourceError -> StoreError)
        for req in batch:
            req.done.set()


async def _with_retries(db: AsyncConn, batch: list[Request[Any]], retry: dict[int, Retry], path: Path,
                        busy_timeout_s: float) -> BaseException | None:
    """Run the batch with the waiting final statuses first; the error that kept one unwritten."""
    retried = {key: Request(r.fn, r.what) for key, r in retry.items()}
    with anyio.CancelScope(shield=True):  # not abandoned on cancel: a started transaction ends
        await run_batch(db, [*retried.values(), *batch], path, busy_timeout_s)
    error = None
    for key, req in retried.items():  # drop those done: committed, or failed for a reason of their own
        if isinstance(req.error, StoreWriteFailed | StoreBusy):
            error = error or req.error
            retry[key] = retry[key]._replace(error=str(req.error))
            continue
        if req.error is not None:
            log.error("%s failed when retried: %s", req.what, req.error)
        retry.pop(key, None)
    return error


async def _at_close(db: AsyncConn, retry: dict[int, Retry], path: Path, busy_timeout_s: float,
                    reserve: Reserve | None) -> None:
    """Closing: one more try for the final statuses still unwritten; on a disk still full, the
    reserve is released first. What stays unwritten is logged (and raised by Store.open)."""
    error = await _with_retries(db, [], retry, path, busy_timeout_s)
    if retry and isinstance(error, StoreWriteFailed) and reserve is not None:
        freed = await to_thread.run_sync(reserve.release)
        if freed:
            log.warning("%s: the disk is still full at close: released the reserve (%s, %d KiB) to write"
                        " the final status of episode(s) %s", path, reserve.path, freed // 1024,
                        ", ".join(map(str, sorted(retry))))
            error = await _with_retries(db, [], retry, path, busy_timeout_s)
    if retry:
        log.error("%s", unwritten(path, retry))


def unwritten(path: Path, retry: dict[int, Retry]) -> str:
    """What could not be written at close, episode by episode, and what follows from it."""
    lines = "; ".join(f"episode {key} {retry[key].detail}" for key in sorted(retry))
    why = next((r.error for r in retry.values() if r.error), "unknown")
    return (f"{path}: the final status of {len(retry)} episode(s) could not be written at close ({why})."
            f" Not stored: {lines}. They stay `running` in the store: the next start marks them"
            " interrupted and re-runs them (replays excepted); free space before it.")


class Reserve:
    """Disk space set aside next to the database (`<db>-reserve`) while the daemon's store is
    open, so that the final statuses can still be written at close on a full disk. The file
    holds random bytes, not zeros: a compressing file system stores zeros in no space at all."""

    def __init__(self, db: Path, size: int) -> None:
        self.path = db.with_name(db.name + "-reserve")
        self.size = size

    def make(self) -> bool:
        """Create (or keep) the file; False, and a warning, when there is no room for it."""
        try:
            if self.path.stat().st_size >= self.size:
                return True
        except FileNotFoundError:
            pass
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(os.urandom(self.size))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            log.warning("%s: no room to set aside %d KiB for the final writes at close (%s); on a full"
                        " disk at close, final statuses may not be written", self.path, self.size // 1024,
                        exc.strerror or exc)
            return False
        return True

    def release(self) -> int:
        """Delete the file; the bytes freed (0 when it was not there)."""
        try:
            size = self.path.stat().st_size
            self.path.unlink()
        except FileNotFoundError:
            return 0
        return size
