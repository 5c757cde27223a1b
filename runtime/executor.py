"""Where evaluation slots run (`scheduler.executor`): the seam (`Executor`, the requests and statuses
that cross it) and the local executor; runtime/scheduler.py picks one by name from its `EXECUTORS`.

    local  the slots of this machine (runtime/slots.py): one GPU each on cuda, cpu_slots on cpu
    ray    one Ray actor per slot on any node of a Ray cluster (runtime/ray_executor.py)

Both run the same slot code (runtime/slots.py: slot_evaluate, slot_baselines, slot_ncu), so what
the GPU tests exercise through the local executor is what a Ray actor runs. An executor gives the
scheduler an `Evaluator` per episode and says how busy its slots are. Ray itself is imported only
by runtime/ray_executor.py, and only when that executor is chosen.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Literal, Protocol

import anyio
import msgspec

from runtime.settings import SchedulerConfig
from runtime.slots import EvalSlots, LeasedEvaluator
from skills.evaluator.api import Evaluator
from skills.evaluator.baselines import BaselineCache
from skills.evaluator.config import EvalConfig
from skills.evaluator.pool import WarmPool
from skills.evaluator.results import EvalResult, Mode

OnFault = Callable[[EvalResult], Awaitable[None]]
"""Stores an attempt an executor lost (its actor died): the evaluation is then re-run elsewhere."""

ActorStatus = Literal["idle", "busy", "dead"]


class ActorState(msgspec.Struct, kw_only=True):
    """One evaluation actor, as `kagentd status` lists it."""

    name: str
    """Actor name in the Ray namespace (ray.settings: namespace)."""
    executor: str
    """The `executor` its evaluations are stored with: `ray:<node>:<actor>`."""
    node: str
    """IP address of the node it runs on."""
    device: str | None
    """CUDA_VISIBLE_DEVICES Ray gave it (None on cpu)."""
    state: ActorStatus
    """idle, busy (an evaluation runs on it) or dead (lost; no longer used)."""
    evaluations: int
    """Evaluations it finished."""
    error: str | None = None
    """Why it is dead (None while alive)."""


class ExecutorStatus(msgspec.Struct, kw_only=True):
    """How busy an executor's slots are."""

    executor: str
    """`local` or `ray`."""
    busy: int
    """Slots running an evaluation now."""
    total: int
    """Slots alive (dead actors do not count)."""
    busy_fraction: float | None
    """Share of slot time leased since start (None in the first second)."""
    actors: list[ActorState] = msgspec.field(default_factory=list)
    """Ray: every actor the daemon started, dead ones included (empty for local)."""


class Executor(Protocol):
    """Evaluation slots: started by `open()`, one Evaluator per episode."""

    name: str

    def open(self) -> AbstractAsyncContextManager[None]:
        """Start the slots (warm pools, actors) for the daemon's run; stop them on exit."""
        ...

    def evaluator(self, problem_path: Path, *, cache: BaselineCache | None, precision: str | None,
                  on_fault: OnFault) -> Evaluator:
        """The Evaluator of one episode on the problem in `problem_path` (`cache`: the store's
        baselines, for slots on this machine)."""
        ...

    def status(self) -> ExecutorStatus:
        ...


class LocalExecutor:
    """The slots of this machine: `EvalSlots` with a warm pool per slot."""

    name = "local"

    def __init__(self, *, config: SchedulerConfig, eval_config: EvalConfig, slots: EvalSlots,
                 compile_limiter: anyio.CapacityLimiter) -> None:
        self.config, self.eval_config, self.slots = config, eval_config, slots
        self.compile_limiter = compile_limiter

    @asynccontextmanager
    async def open(self) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if self.config.warm_workers:
                self.slots.pools = [await stack.enter_async_context(
                    WarmPool(msgspec.structs.replace(self.eval_config, gpu=d))) for d in self.slots.devices]
            yield

    def evaluator(self, problem_path: Path, *, cache: BaselineCache | None, precision: str | None,
                  on_fault: OnFault) -> Evaluator:
        # A local slot has no actor to lose: on_fault is never called.
        return LeasedEvaluator(problem_path, self.eval_config, cache=cache, slots=self.slots,
                               compile_limiter=self.compile_limiter)

    def status(self) -> ExecutorStatus:
        return ExecutorStatus(executor=self.name, busy=self.slots.busy, total=len(self.slots.devices),
                              busy_fraction=self.slots.busy_fraction())


class Blob(msgspec.Struct, frozen=True):
    """A file's bytes with their sha256, as they travel to an actor (checked on arrival)."""

    path: str
    """Path relative to the workspace (or the problem file's name)."""
    sha256: str
    """Hex sha256 of `data`."""
    data: bytes
    """The file's content."""

    @classmethod
    def of(cls, path: str, data: bytes) -> Blob:
        return cls(path=path, sha256=hashlib.sha256(data).hexdigest(), data=data)

    def verified(self) -> bytes:
        if hashlib.sha256(self.data).hexdigest() != self.sha256:
            raise ValueError(f"{self.path}: content does not match its sha256 {self.sha256[:12]}")
        return self.data


SlotKind = Literal["evaluate", "baselines", "ncu"]


class SlotRequest(msgspec.Struct, kw_only=True, frozen=True):
    """One piece of slot work sent to an actor: everything it needs travels with it."""

    kind: SlotKind
    """slot_evaluate, slot_baselines or slot_ncu (runtime/slots.py)."""
    problem: Blob
    """The problem file (its name is the problem's name: results carry the file's stem)."""
    workspace: list[Blob]
    """model.py, model_new.py and kernels/* (empty for baselines)."""
    mode: Mode = "test"
    """Evaluation mode (kind evaluate)."""
    config: EvalConfig
    """The daemon's evaluation settings; the actor sets `gpu` to the device Ray gave it."""
