"""Persistent worker processes that run the filters, with a per-candidate timeout.

Importing torch costs 1-2 s, so workers are started once (``spawn``: no state inherited from the
parent) and serve many candidates each. A worker that is still busy when its candidate's time
is up is killed (SIGKILL) and replaced by a fresh one; the candidate gets the verdict
``timeout``. A worker that dies (segfault, OOM kill) gives ``worker_crash`` with its exit code.
Jobs and verdicts cross the pipe as msgspec JSON.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import warnings
from collections.abc import Mapping
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Literal

import msgspec

from synth.builder import OpDef
from synth.filters import FilterConfig, Verdict
from synth.spec import Composition


class Job(msgspec.Struct, frozen=True):
    """One candidate for a worker."""

    index: int
    """Candidate number (echoed in the verdict)."""
    kind: Literal["composition", "source"]
    """Check a composition (the generator) or a finished problem file (``python -m synth check``)."""
    composition: Composition | None = None
    """The composition, for kind ``composition``."""
    source: str | None = None
    """The file text, for kind ``source``."""
    name: str = ""
    """Problem name, for kind ``source``."""


def _serve(conn: Connection, ops: Mapping[str, OpDef], cfg_json: bytes) -> None:
    """Worker main loop: import torch once, then check jobs until the pipe closes."""
    import torch

    from synth.filters import check, check_source

    torch.set_num_threads(1)  # one core per worker: the parallelism is across workers
    cfg = msgspec.json.decode(cfg_json, type=FilterConfig)
    decoder = msgspec.json.Decoder(Job)
    conn.send_bytes(b"ready")
    while True:
        try:
            job = decoder.decode(conn.recv_bytes())
        except EOFError:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the filters turn warnings into errors where it matters
            if job.kind == "composition" and job.composition is not None:
                verdict = check(job.composition, ops, cfg)
            else:
                verdict = check_source(job.source or "", job.name, cfg, job.index)
        conn.send_bytes(msgspec.json.encode(verdict))


class _Slot:
    """One worker process and the job it is running."""

    def __init__(self, ctx: mp.context.SpawnContext, ops: Mapping[str, OpDef], cfg_json: bytes) -> None:
        self.conn, child = ctx.Pipe()
        self.proc: BaseProcess = ctx.Process(target=_serve, args=(child, dict(ops), cfg_json), daemon=True)
        self.proc.start()
        child.close()
        self.ready = False
        self.job: Job | None = None
        self.since = 0.0

    def kill(self) -> None:
        """Stop the worker: an idle one exits when its pipe closes, a busy one is killed."""
        if self.job is None:
            self.conn.close()
            self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=10)
        self.conn.close()


class WorkerPool:
    """``n`` persistent filter workers; ``submit`` to an idle one, ``poll`` for verdicts."""

    def __init__(self, n: int, ops: Mapping[str, OpDef], cfg: FilterConfig, *, timeout_s: float = 60.0) -> None:
        if n < 1:
            raise ValueError(f"need at least one worker; got {n}")
        self._ctx = mp.get_context("spawn")
        self._ops = ops
        self._cfg_json = msgspec.json.encode(cfg)
        self.timeout_s = timeout_s
        self.slots = [_Slot(self._ctx, ops, self._cfg_json) for _ in range(n)]
        self.replaced = 0

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, grace_s: float = 10.0) -> None:
        """Stop every worker; jobs in flight get ``grace_s`` to finish (their verdicts are dropped),
        because a worker killed inside torch can leave a semaphore for the resource tracker to report."""
        deadline = time.monotonic() + grace_s
        while self.busy() and time.monotonic() < deadline:
            self.poll(0.1)
        for s in self.slots:
            s.kill()

    def idle(self) -> int:
        """Workers without a job (including ones still starting)."""
        return sum(s.job is None for s in self.slots)

    def busy(self) -> int:
        """Jobs in flight."""
        return sum(s.job is not None for s in self.slots)

    def submit(self, job: Job) -> None:
        """Hand ``job`` to an idle worker (its clock starts now, or when the worker is ready)."""
        slot = next(s for s in self.slots if s.job is None)
        slot.job = job
        slot.since = time.monotonic()
        if slot.ready:
            slot.conn.send_bytes(msgspec.json.encode(job))

    def _replace(self, k: int) -> None:
        self.slots[k].kill()
        self.slots[k] = _Slot(self._ctx, self._ops, self._cfg_json)
        self.replaced += 1

    def poll(self, timeout: float = 0.5) -> list[Verdict]:
        """Verdicts that arrived within ``timeout`` seconds, plus timeouts and crashes."""
        out: list[Verdict] = []
        ready = wait([s.conn for s in self.slots], timeout=timeout)
        for k, s in enumerate(self.slots):
            if s.conn not in ready:
                continue
            try:
                data = s.conn.recv_bytes()
            except (EOFError, OSError):
                job = s.job
                code = s.proc.exitcode
                self._replace(k)
                if job is not None:
                    out.append(Verdict(index=job.index, ok=False, reason="worker_crash",
                                       detail=f"worker exited with code {code}"))
                continue
            if data == b"ready":
                s.ready = True
                if s.job is not None:  # submitted while starting: its clock starts now
                    s.since = time.monotonic()
                    s.conn.send_bytes(msgspec.json.encode(s.job))
                continue
            s.job = None
            out.append(msgspec.json.decode(data, type=Verdict))
        now = time.monotonic()
        for k, s in enumerate(self.slots):
            if s.job is not None and s.ready and now - s.since > self.timeout_s:
                job = s.job
                self._replace(k)
                out.append(Verdict(index=job.index, ok=False, reason="timeout",
                                   detail=f"killed after {self.timeout_s:g} s"))
        return out
