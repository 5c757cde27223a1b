"""The sandbox pool's local backend: exclusive evaluation slots and a compile pool.

An evaluation (run_tests, profile, ncu, the final grading) holds one slot for its whole run: on
cuda a slot is one GPU (its id goes to the workers as CUDA_VISIBLE_DEVICES), so timings never
share a device; on cpu a slot is a share of the machine (`cpu_slots`, default 1, because timed
OpenMP code wants every core). Builds run in the compile pool, outside any slot: an evaluation
first builds (content-hash cached) while it waits, so the slot is busy only with the workers.
With warm pools, each slot keeps its next judge + candidate workers started ahead of time.

`slot_evaluate`, `slot_baselines` and `slot_ncu` are what a slot runs once it holds its device;
the Ray executor's actors (runtime/ray_executor.py) run the same three functions on their node.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import msgspec

from skills.evaluator.baselines import BaselineCache
from skills.evaluator.build import BuildResult
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.ncu import NcuReport
from skills.evaluator.pool import WarmPool
from skills.evaluator.results import EvalResult, Mode
from skills.local_evaluator import LocalEvaluator, snapshot


class EvalSlots:
    """`len(devices)` exclusive slots; `devices[i]` is slot i's CUDA_VISIBLE_DEVICES (None on cpu)."""

    def __init__(self, devices: list[str | None]) -> None:
        if not devices:
            raise ValueError("at least one evaluation slot is needed")
        self.devices = devices
        self.pools: list[WarmPool] | None = None
        self._free = list(range(len(devices)))
        self._available = anyio.Semaphore(len(devices))
        self._leased: dict[int, float] = {}
        self._busy_s = 0.0
        self._began = time.monotonic()

    @property
    def busy(self) -> int:
        return len(self._leased)

    def busy_fraction(self) -> float | None:
        """Share of slot-time leased since start (None in the first second)."""
        now = time.monotonic()
        wall = (now - self._began) * len(self.devices)
        if wall < 1.0:
            return None
        return (self._busy_s + sum(now - t for t in self._leased.values())) / wall

    def reset_clock(self) -> None:
        """Start measuring busy_fraction from now (benchmarks)."""
        self._busy_s, self._began = 0.0, time.monotonic()
        self._leased = {i: self._began for i in self._leased}

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[int]:
        await self._available.acquire()
        index = self._free.pop(0)
        self._leased[index] = time.monotonic()
        try:
            yield index
        finally:
            self._busy_s += time.monotonic() - self._leased.pop(index)
            self._free.append(index)
            self._available.release()


class LeasedEvaluator:
    """An Evaluator (skills/evaluator/api.py) whose builds go through the compile pool and whose runs
    hold a slot; the baselines alone run outside any slot, as LocalEvaluator's do."""

    def __init__(self, problem_path: str | Path, config: EvalConfig, *, cache: BaselineCache | None,
                 slots: EvalSlots, compile_limiter: anyio.CapacityLimiter) -> None:
        self.local = LocalEvaluator(problem_path, config, cache=cache)
        self.problem_path = self.local.problem_path
        self.config = config
        self.cache = cache
        self.slots = slots
        self.compile_limiter = compile_limiter
        self.slot_wait_s = 0.0
        """How long the last evaluate() waited for a free slot (kagent bench keeps it out of a row's time)."""

    async def compile(self, workspace: Path) -> BuildResult | None:
        async with self.compile_limiter:
            return await self.local.compile(workspace)

    async def baselines(self) -> EvalResult:
        return await self.local.baselines()

    async def evaluate(self, workspace: Path, mode: Mode) -> EvalResult:
        built = await self.compile(workspace)  # outside the slot; evaluate() then hits the build cache
        if built is not None and not built.ok:
            return await self._run(workspace, mode, self.config, None)  # stops at the build: no workers
        asked = time.monotonic()
        async with self.slots.lease() as index:
            self.slot_wait_s = time.monotonic() - asked
            cfg = msgspec.structs.replace(self.config, gpu=self.slots.devices[index])
            pool = self.slots.pools[index] if self.slots.pools is not None else None
            return await self._run(workspace, mode, cfg, pool)

    async def ncu(self, workspace: Path) -> NcuReport:
        await self.compile(workspace)
        async with self.slots.lease() as index:
            cfg = msgspec.structs.replace(self.config, gpu=self.slots.devices[index])
            return await slot_ncu(self.problem_path, workspace, cfg, cache=self.cache)

    async def _run(self, workspace: Path, mode: Mode, cfg: EvalConfig, pool: WarmPool | None) -> EvalResult:
        return await slot_evaluate(self.problem_path, workspace, mode, cfg, cache=self.cache, pool=pool)


async def slot_evaluate(problem_path: Path, workspace: Path, mode: Mode, cfg: EvalConfig, *,
                        cache: BaselineCache | None, pool: WarmPool | None) -> EvalResult:
    """One evaluation on the slot's device (`cfg.gpu`): a frozen snapshot of the workspace, graded."""
    with tempfile.TemporaryDirectory(prefix="kagent-snap-") as tmp:
        snap = await anyio.to_thread.run_sync(snapshot, workspace, Path(tmp) / "ws")
        return await evaluate(problem_path, snap, mode=mode, config=cfg, baseline_cache=cache, pool=pool)


async def slot_baselines(problem_path: Path, cfg: EvalConfig, *, cache: BaselineCache | None) -> EvalResult:
    """The problem's baselines alone, timed by the judge on the slot's device."""
    return await LocalEvaluator(problem_path, cfg, cache=cache).baselines()


async def slot_ncu(problem_path: Path, workspace: Path, cfg: EvalConfig, *, cache: BaselineCache | None) -> NcuReport:
    """Nsight Compute on one call of the workspace's ModelNew on the slot's device."""
    return await LocalEvaluator(problem_path, cfg, cache=cache).ncu(workspace)
