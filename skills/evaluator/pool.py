"""Judge + candidate slots started ahead of the evaluations that take them (`WarmPool`)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from skills.evaluator.config import EvalConfig
from skills.evaluator.harness import protocol as P
from skills.evaluator.launch import Slot, start_slot
from skills.evaluator.sandbox import SandboxUnavailable

log = logging.getLogger(__name__)

RETRY_S = 5.0
"""After a slot failed to start, the refill waits this long before the next (an evaluation that
takes a slot meanwhile starts its own, and reports why that one failed)."""


class WarmPool:
    """Keeps `size` slots started ahead, so an evaluation skips process start, imports and CUDA init.

    Use as `async with WarmPool(config) as pool: await evaluate(..., pool=pool)`. Every slot serves
    one evaluation and is then discarded: workers are still fresh per evaluation.

    A refill starts the next slot's processes (interpreter, torch import) at once, but brings their
    CUDA up only while no evaluation of this pool is in a timed loop (`quiet`), and a timed loop
    waits for a CUDA start in progress: context creation on the same GPU would disturb the timing.
    """

    def __init__(self, config: EvalConfig, size: int = 1) -> None:
        self.config = config
        self.size = size
        self.ready: list[Slot] = []
        self._tg: anyio.abc.TaskGroup | None = None
        self._wake = anyio.Event()
        self._full = anyio.Event()
        self._added = anyio.Event()
        self._warming = False
        self._gate = anyio.Condition()
        self._timing = 0
        self._starting_cuda = 0

    @asynccontextmanager
    async def quiet(self) -> AsyncIterator[None]:
        """Held around a timed loop: no slot of this pool brings CUDA up meanwhile."""
        async with self._gate:
            while self._starting_cuda:
                await self._gate.wait()
            self._timing += 1
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._gate:
                    self._timing -= 1
                    self._gate.notify_all()

    async def _start_cuda(self, slot: Slot) -> None:
        """Once both workers have imported torch and no timed loop runs: Preinit them; until both
        are warm. Only that CUDA start holds the gate (~0.5 s), not the imports (seconds)."""
        await slot.judge.wait_for(P.Started, self.config.timeout_import_s)
        await slot.cand.wait_for(P.Started, self.config.timeout_import_s)
        async with self._gate:
            while self._timing:
                await self._gate.wait()
            self._starting_cuda += 1
        try:
            await slot.preinit()
            await slot.judge.wait_for(P.Warm, self.config.timeout_import_s)
            await slot.cand.wait_for(P.Warm, self.config.timeout_import_s)
        finally:
            async with self._gate:
                self._starting_cuda -= 1
                self._gate.notify_all()

    async def __aenter__(self) -> WarmPool:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._keep_full)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        for slot in self.ready:
            await slot.discard()
        self.ready.clear()

    async def _keep_full(self) -> None:
        while True:
            while len(self.ready) < self.size:
                # Shielded: a slot half-started when the pool closes would leak its processes.
                with anyio.CancelScope(shield=True):
                    slot = await self._new_slot()
                if slot is None:
                    await anyio.sleep(RETRY_S)
                    continue
                self.ready.append(slot)
                self._warming = False
                self._added.set()
                self._added = anyio.Event()
            self._full.set()
            await self._wake.wait()
            self._wake = anyio.Event()

    async def _new_slot(self) -> Slot | None:
        """A slot whose workers imported torch and brought CUDA up (or died trying: the evaluation
        that takes it reports that); None where it could not be started at all, in which case
        start_slot left nothing of it behind (processes, scratch folder)."""
        try:
            slot = await start_slot(self.config, preinit=False)
        except (SandboxUnavailable, OSError) as exc:
            log.warning("a pool slot could not be started (%s); trying again in %.0f s", exc, RETRY_S)
            return None
        self._warming = True
        await self._start_cuda(slot)
        return slot

    async def take(self) -> Slot:
        """A started slot (or one started now when none is ready); the pool refills behind it."""
        while not self.ready and self._warming:
            await self._added.wait()  # a slot half-way warm beats a cold start
        slot = self.ready.pop(0) if self.ready else await start_slot(self.config)
        self._full = anyio.Event()
        self._wake.set()
        return slot

    async def wait_full(self) -> None:
        """Until every slot is started and warm (e.g. before a latency measurement)."""
        await self._full.wait()
