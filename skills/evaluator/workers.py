"""One evaluation worker process, seen from the parent: framed messages, deadlines, clean kills.

Each worker runs in its own process group, so a timeout kills whatever it spawned (nvcc from a
load_inline, OpenMP threads, a fork bomb) along with it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Awaitable
from typing import TypeVar

import anyio
import msgspec
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from skills.evaluator.harness import protocol as P
from skills.evaluator.harness.protocol import LINK_ENV
from skills.evaluator.marks import ENV as MARK_ENV
from skills.evaluator.marks import Mark, MarkSocket
from skills.evaluator.results import Flag
from skills.evaluator.sandbox import process_ids

T = TypeVar("T")


class WorkerFailed(Exception):
    """A worker crashed, timed out, or reported an error; `message` is for the agent."""

    def __init__(self, message: str, flag: Flag | None = None, stage: str | None = None,
                 worker: str = "candidate", gone: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.flag = flag
        self.stage = stage
        self.worker = worker
        """Which worker failed: the judge (trusted: its failure is the environment's) or the candidate."""
        self.gone = gone
        """The judge lost its link to the candidate: the candidate's exit says what happened."""


def _signal_name(code: int | None) -> str:
    """-11 (direct child) and 139 (bubblewrap passes on 128 + signal) both read "signal SIGSEGV"."""
    if code is None:
        return "no exit code"
    sig = -code if code < 0 else code - 128 if code > 128 else 0
    try:
        name = signal.Signals(sig).name if sig else None
    except ValueError:
        name = None
    if name is None:
        return f"exit code {code}"
    return f"signal {name}" + (f" (exit code {code})" if code > 0 else "")


class Worker:
    def __init__(self, name: str, proc: Process, nonce: str, log_chars: int) -> None:
        self.name = name
        self.proc = proc
        self.nonce = nonce
        self.log_chars = log_chars
        assert proc.stdout is not None
        self.reader = BufferedByteReceiveStream(proc.stdout)
        self.stderr = bytearray()
        self.stderr_done = anyio.Event()
        self.draining = False
        """drain_stderr runs (a warm pool's idle worker has none: its close waits for nothing)."""
        self.closed = False
        self.marks: MarkSocket | None = None
        self.seen: set[type] = set()
        """Kinds of frame wait_for() has seen (Started, Warm)."""

    @classmethod
    async def start(cls, name: str, cmd: list[str], env: dict[str, str], nonce: str, *,
                    cwd: str | None = None, log_chars: int = 4000, run_as: int | None = None,
                    marks: bool = False, link: socket.socket | None = None) -> Worker:
        """marks: give the worker a timing-marks socket (skills/evaluator/marks.py; the candidate). link: its
        end of the judge <-> candidate socket pair (the caller closes its copy once both started)."""
        sock = MarkSocket() if marks else None
        fds: list[int] = []
        if sock is not None:
            env = env | {MARK_ENV: str(sock.child_fd)}
            fds.append(sock.child_fd)
        if link is not None:
            link.set_inheritable(True)
            env = env | {LINK_ENV: str(link.fileno())}
            fds.append(link.fileno())
        try:
            proc = await anyio.open_process(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            env=env, cwd=cwd, start_new_session=True, pass_fds=tuple(fds),
                                            **process_ids(run_as))  # type: ignore[arg-type]
        except BaseException:
            if sock is not None:
                sock.close()
            raise
        worker = cls(name, proc, nonce, log_chars)
        if sock is not None:
            sock.started()
            worker.marks = sock
        return worker

    async def drain_stderr(self) -> None:
        """Run for the worker's life: keep the tail of stderr so a chatty candidate never blocks."""
        assert self.proc.stderr is not None
        self.draining = True
        try:
            async for chunk in self.proc.stderr:
                self.stderr += chunk
                if len(self.stderr) > 4 * self.log_chars:
                    del self.stderr[: len(self.stderr) - 4 * self.log_chars]
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.stderr_done.set()

    def log_tail(self) -> str:
        text = self.stderr.decode("utf-8", "replace")
        return text[-self.log_chars:]

    async def send(self, msg: P.Message) -> None:
        assert self.proc.stdin is not None
        try:
            await self.proc.stdin.send(P.encode(msg))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            raise await self.died("while receiving instructions") from None

    async def _recv(self) -> P.Message:
        header = await self.reader.receive_exactly(4)
        return P.decode(await self.reader.receive_exactly(P.frame_length(header)))

    async def expect(self, kind: type[T], limit_s: float, what: str) -> T:
        """The next message of this worker with our nonce; a WorkerError or anything else fails."""
        try:
            with anyio.fail_after(limit_s):
                msg = await self._recv_own()
        except TimeoutError:
            await self.kill()
            raise WorkerFailed(f"the {self.name} timed out after {limit_s:.0f} s while {what}"
                               " (an endless loop or kernel?); its process group was killed",
                               worker=self.name) from None
        except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError):
            raise await self.died(f"while {what}") from None
        if isinstance(msg, P.WorkerError):
            if msg.candidate:  # the judge reports a failure of the candidate's calls it drove
                raise WorkerFailed(msg.message, msg.flag, msg.stage, worker="candidate", gone=msg.gone)
            prefix = "" if self.name == "candidate" else f"{self.name} ({msg.stage}): "
            raise WorkerFailed(prefix + msg.message, msg.flag, msg.stage, worker=self.name)
        if not isinstance(msg, kind):
            raise WorkerFailed(f"the {self.name} sent {type(msg).__name__} while {what}", worker=self.name)
        return msg

    async def marked(self, waiting: Awaitable[T]) -> tuple[T, list[Mark] | None]:
        """Await `waiting` (another worker's report, e.g. the judge's on the loop it drove), collecting
        the timing marks this worker sends meanwhile (None: it has no socket)."""
        marks = self.marks
        if marks is None:
            return await waiting, None
        marks.begin()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(marks.collect)
                try:
                    msg = await waiting
                finally:
                    tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # collect() never raises: the one error is expect()'s
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise
        return msg, marks.end()

    async def wait_for(self, kind: type[P.Message], limit_s: float) -> bool:
        """Until the worker sends a frame of this kind (Started, Warm: before any job, no nonce);
        False if it did not in time or died (the evaluation that takes the slot then reports what
        happened)."""
        if kind in self.seen:
            return True
        with anyio.move_on_after(limit_s):
            try:
                while True:
                    msg = await self._recv()
                    self.seen.add(type(msg))
                    if isinstance(msg, kind):
                        return True
            except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError, ValueError, msgspec.DecodeError):
                return False
        return False

    async def _recv_own(self) -> P.Message:
        while True:
            msg = await self._recv()
            if getattr(msg, "nonce", None) == self.nonce:
                return msg
            # A frame without our nonce was forged by candidate code: ignore it.

    async def died(self, when: str) -> WorkerFailed:
        """The failure to report for a worker that died (or is being killed now): exit status and log tail."""
        with anyio.move_on_after(5):
            await self.proc.wait()
            if self.draining:
                await self.stderr_done.wait()
        code = self.proc.returncode
        await self.kill()
        tail = self.log_tail().strip()[-1500:]
        detail = f"\n{tail}" if tail else ""
        return WorkerFailed(f"the {self.name} process died ({_signal_name(code)}) {when}{detail}", worker=self.name)

    async def kill(self) -> None:
        if self.marks is not None:
            self.marks.close()
        if self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        with anyio.move_on_after(5):
            await self.proc.wait()

    async def close(self) -> None:
        """Kill its process group: every answer is in, and a torch interpreter's orderly exit costs
        ~1 s of the caller's time for nothing (the stderr already written is still drained)."""
        if self.closed:
            return
        self.closed = True
        if self.proc.stdin is not None:
            await self.proc.stdin.aclose()
        await self.kill()
        with anyio.move_on_after(2):
            if self.draining:
                await self.stderr_done.wait()
            else:  # read stderr to its end (every process of the group gone), then close and reap
                await self.drain_stderr()
                await self.proc.aclose()
