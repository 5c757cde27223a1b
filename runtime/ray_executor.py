"""The Ray executor (`scheduler.executor = "ray"`): each evaluation slot is a Ray actor.

    head (kagentd)                                  any node of the Ray cluster
    RayEvaluator.evaluate(workspace, mode)
      SlotRequest: problem + workspace as bytes     SlotActor.run(request)
      with their sha256, the EvalConfig    ───────►   check the hashes, write the files
      lease an idle actor, await its answer           slot_evaluate / slot_baselines / slot_ncu
      EvalResult (executor "ray:<node>:<actor>") ◄──   (runtime/slots.py: what a local slot runs)

`SlotActor` is a thin shell around the local slot code: it owns its device (Ray sets
CUDA_VISIBLE_DEVICES; `num_gpus = 1 / ray.slots_per_gpu` on cuda, one CPU on cpu), its warm worker
pool, and its node's build and baseline caches ($XDG_CACHE_HOME/kagent, as `kagent eval`). Ray
cannot run on the GPU machine this project is tested on, so the GPU tests exercise that slot code
through the local executor; tests/runtime/test_ray_executor.py runs this module on CPU actors.

Faults: an actor (or its node) that dies, or says nothing for `ray.eval_timeout_s`, leaves the
rotation; the attempt it was running is stored as an environment fault (reward None, its executor
named) and the evaluation is re-run on another actor, up to `ray.attempts` actors. The daemon goes
on with the actors left; with none left, an evaluation is an environment fault at once. Idle
actors are pinged every `ray.probe_s` so a dead one is dropped before work is sent to it.

Ray is imported inside functions only: `import runtime.ray_executor` works without it (an actor
class is pickled by reference, so the nodes import this module too).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, get_args

import anyio
import msgspec

from runtime.executor import (
    ActorState,
    ActorStatus,
    Blob,
    ExecutorStatus,
    OnFault,
    SlotKind,
    SlotRequest,
)
from runtime.settings import RayConfig, SchedulerConfig
from runtime.slots import slot_baselines, slot_evaluate, slot_ncu
from skills.evaluator.api import Evaluator
from skills.evaluator.baselines import JsonBaselineCache
from skills.evaluator.build import BuildResult
from skills.evaluator.config import EvalConfig
from skills.evaluator.ncu import NcuReport
from skills.evaluator.pool import WarmPool
from skills.evaluator.problem import source_id
from skills.evaluator.results import EvalResult, Mode, Precision, StageTimes
from skills.evaluator.state import torch_version
from skills.local_evaluator import LocalEvaluator
from skills.workspace import Workspace

log = logging.getLogger("kagent.ray")


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError("scheduler.executor = 'ray' needs Ray: pip install 'kagent[ray]'") from None
    return ray


def lost_errors() -> tuple[type[BaseException], ...]:
    """What Ray raises when an actor, its node or the object holding its answer is gone."""
    from ray import exceptions as e

    return (e.RayActorError, e.ObjectLostError, e.NodeDiedError, e.WorkerCrashedError)


class ActorInfo(msgspec.Struct, kw_only=True, frozen=True):
    """What an actor says about itself once it is up."""

    node: str
    """IP address of its node."""
    device: str | None
    """CUDA_VISIBLE_DEVICES Ray gave it (None on cpu)."""
    torch_version: str
    """torch installed on its node."""
    pid: int
    """Its process id on that node."""


# ------------------------------------------------------------------------------ actor side


class SlotActor:
    """One evaluation slot on a Ray node (made a Ray actor class by `RayExecutor`)."""

    def __init__(self, name: str, config: bytes, warm: bool) -> None:
        import ray

        cfg = msgspec.msgpack.decode(config, type=EvalConfig)
        self.gpu = os.environ.get("CUDA_VISIBLE_DEVICES") if cfg.backend == "cuda" else None
        self.config = msgspec.structs.replace(cfg, gpu=self.gpu)
        node: str = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
        self.info = ActorInfo(node=node, device=self.gpu, torch_version=torch_version(),
                              pid=os.getpid())
        self.executor = f"ray:{self.info.node}:{name}"
        self.root = Path(tempfile.mkdtemp(prefix=f"kagent-{name}-"))
        self.cache = JsonBaselineCache()  # this node's baselines, as `kagent eval` keeps them
        self.warm = warm
        self.pool: WarmPool | None = None
        self._pool_task: asyncio.Task[None] | None = None

    async def start(self) -> bytes:
        """Bring the warm pool up (when asked); returns ActorInfo."""
        if self.warm and self._pool_task is None:
            ready = anyio.Event()
            # The pool's task group must be entered and left by one task that lives as long as the actor.
            self._pool_task = asyncio.get_running_loop().create_task(self._own_pool(ready))
            await ready.wait()
            if self._pool_task.done():
                self._pool_task.result()  # the pool failed to start: raise why
        return msgspec.msgpack.encode(self.info)

    async def _own_pool(self, ready: anyio.Event) -> None:
        try:
            async with WarmPool(self.config) as pool:
                self.pool = pool
                ready.set()
                await anyio.sleep_forever()
        finally:
            self.pool = None
            ready.set()

    async def ping(self) -> int:
        return self.info.pid

    async def run(self, request: bytes) -> bytes:
        """One SlotRequest through the local slot code; the answer msgpack-encoded (EvalResult or NcuReport)."""
        req = msgspec.msgpack.decode(request, type=SlotRequest)
        work = Path(await anyio.to_thread.run_sync(lambda: tempfile.mkdtemp(dir=self.root)))
        try:
            problem = await anyio.to_thread.run_sync(write_problem, req.problem, self.root / "problems")
            ws = await anyio.to_thread.run_sync(write_workspace, req.workspace, work / "ws")
            cfg = msgspec.structs.replace(req.config, gpu=self.gpu)
            pool = self.pool if cfg == self.config else None
            if req.kind == "ncu":
                return msgspec.msgpack.encode(await slot_ncu(problem, ws, cfg, cache=self.cache))
            if req.kind == "baselines":
                result = await slot_baselines(problem, cfg, cache=self.cache)
            else:
                result = await slot_evaluate(problem, ws, req.mode, cfg, cache=self.cache, pool=pool)
            return msgspec.msgpack.encode(msgspec.structs.replace(result, executor=self.executor))
        finally:
            await anyio.to_thread.run_sync(shutil.rmtree, work, True)


def write_problem(blob: Blob, root: Path) -> Path:
    """The problem file, kept by content (`root/<sha256>/<name>`): written once per node and actor."""
    path = root / blob.sha256 / Path(blob.path).name
    if not path.is_file():
        data = blob.verified()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return path


def write_workspace(blobs: list[Blob], dest: Path) -> Path:
    """The workspace's files under `dest`, each checked against its hash; paths stay inside."""
    dest.mkdir(parents=True)
    (dest / "kernels").mkdir()
    for blob in blobs:
        target = (dest / blob.path).resolve()
        if not target.is_relative_to(dest.resolve()):
            raise ValueError(f"workspace file {blob.path!r} lies outside the workspace")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob.verified())
    return dest


def read_workspace(path: Path) -> list[Blob]:
    """model.py, model_new.py and kernels/* of a workspace, as blobs (regular files only)."""
    ws = Workspace.open(path)
    return [Blob.of(rel, (path / rel).read_bytes()) for rel, _ in ws.list()]


# ------------------------------------------------------------------------------- head side


class ActorLost(Exception):
    """The actor running an attempt died or stopped answering; it left the rotation."""

    def __init__(self, executor: str, cause: str, torch: str) -> None:
        super().__init__(cause)
        self.executor, self.cause, self.torch = executor, cause, torch


class NoActors(Exception):
    """Every evaluation actor is dead."""


class _Actor:
    def __init__(self, name: str, handle: Any) -> None:
        self.name, self.handle = name, handle
        self.info: ActorInfo | None = None
        self.state: ActorStatus = "idle"
        self.evaluations = 0
        self.error: str | None = None
        self.leased_at: float | None = None

    @property
    def executor(self) -> str:
        return f"ray:{self.info.node if self.info else '?'}:{self.name}"

    def public(self) -> ActorState:
        return ActorState(name=self.name, executor=self.executor, node=self.info.node if self.info else "?",
                          device=self.info.device if self.info else None, state=self.state,
                          evaluations=self.evaluations, error=self.error)


class RayExecutor:
    """Evaluation actors on a Ray cluster, leased one evaluation at a time."""

    name = "ray"

    def __init__(self, *, config: SchedulerConfig, ray: RayConfig, eval_config: EvalConfig,
                 compile_limiter: anyio.CapacityLimiter) -> None:
        self.config, self.ray, self.eval_config = config, ray, eval_config
        self.compile_limiter = compile_limiter
        self.actors: list[_Actor] = []
        self._changed: anyio.Event | None = None
        self._busy_s = 0.0
        self._began = time.monotonic()

    # -- start and stop

    @asynccontextmanager
    async def open(self) -> AsyncIterator[None]:
        ray = import_ray()
        await anyio.to_thread.run_sync(self._connect, ray)
        self._changed = anyio.Event()
        try:
            await self._start_actors(ray)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._probe_idle)
                yield
                tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._disconnect, ray)

    def _connect(self, ray: Any) -> None:
        cfg = self.ray
        if cfg.address == "local":
            ray.init(namespace=cfg.namespace, include_dashboard=False)
        else:
            ray.init(address=cfg.address, namespace=cfg.namespace)
        log.info("ray: connected to %s (namespace %s)", cfg.address, cfg.namespace)

    def _disconnect(self, ray: Any) -> None:
        for actor in self.actors:
            if actor.state != "dead":
                ray.kill(actor.handle)
        ray.shutdown()  # with address "local" this stops the instance; else the actors die with our job

    def _shape(self, ray: Any) -> tuple[int, dict[str, float]]:
        """How many actors, and what each asks Ray for."""
        if self.eval_config.backend == "cpu":
            return self.config.cpu_slots, {"num_cpus": 1}
        gpus = self.ray.gpus if self.ray.gpus is not None else int(ray.cluster_resources().get("GPU", 0))
        if gpus < 1:
            raise RuntimeError("scheduler.eval.backend = 'cuda' with the ray executor: the Ray cluster has no GPU")
        return gpus * self.ray.slots_per_gpu, {"num_cpus": 1, "num_gpus": 1.0 / self.ray.slots_per_gpu}

    async def _start_actors(self, ray: Any) -> None:
        count, resources = await anyio.to_thread.run_sync(self._shape, ray)
        remote = ray.remote(SlotActor)
        config = msgspec.msgpack.encode(self.eval_config)
        stem = f"{socket.gethostname()}-{os.getpid()}"
        for i in range(count):
            name = f"slot{i}-{stem}"
            handle = remote.options(name=name, namespace=self.ray.namespace, max_restarts=0, max_task_retries=0,
                                    **resources).remote(name, config, self.config.warm_workers)
            self.actors.append(_Actor(name, handle))
        async with anyio.create_task_group() as tg:
            for actor in self.actors:
                tg.start_soon(self._await_start, actor)
        alive = [a for a in self.actors if a.state != "dead"]
        if not alive:
            raise RuntimeError("no evaluation actor started: " + "; ".join(f"{a.name}: {a.error}" for a in self.actors))
        log.info("ray: %d of %d evaluation actors ready: %s", len(alive), count,
                 ", ".join(a.executor for a in alive))

    async def _await_start(self, actor: _Actor) -> None:
        try:
            with anyio.fail_after(self.ray.start_timeout_s):
                actor.info = msgspec.msgpack.decode(await actor.handle.start.remote(), type=ActorInfo)
        except TimeoutError:
            await self._retire(actor, f"not placed and ready within ray.start_timeout_s = {self.ray.start_timeout_s:g} s")
        except Exception as exc:  # the actor's constructor or pool failed: that actor is out, the rest go on
            await self._retire(actor, f"did not start: {type(exc).__name__}: {exc}")

    async def _probe_idle(self) -> None:
        while True:
            await anyio.sleep(self.ray.probe_s)
            for actor in [a for a in self.actors if a.state == "idle"]:
                try:
                    with anyio.fail_after(max(30.0, self.ray.probe_s)):
                        await actor.handle.ping.remote()
                except TimeoutError:
                    await self._retire(actor, "did not answer a ping")
                except Exception as exc:  # lost (RayActorError, node died) or broken: out either way
                    await self._retire(actor, f"lost while idle: {first_line(exc)}")

    async def _retire(self, actor: _Actor, why: str) -> None:
        if actor.state == "dead":
            return
        if actor.leased_at is not None:
            self._busy_s += time.monotonic() - actor.leased_at
            actor.leased_at = None
        actor.state, actor.error = "dead", why
        log.warning("ray: evaluation actor %s is out: %s (%d left)", actor.executor, why,
                    sum(a.state != "dead" for a in self.actors))
        ray = import_ray()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(ray.kill, actor.handle)
        self._notify()

    # -- leases and calls

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[_Actor]:
        """An idle actor, held for one evaluation (NoActors when none is alive)."""
        while True:
            assert self._changed is not None, "RayExecutor.open() first"
            changed = self._changed
            free = [a for a in self.actors if a.state == "idle"]
            if free:
                actor = free[0]
                break
            if all(a.state == "dead" for a in self.actors):
                raise NoActors("every evaluation actor is dead (kagentd status lists why)")
            await changed.wait()
        actor.state, actor.leased_at = "busy", time.monotonic()
        try:
            yield actor
        finally:
            if actor.state == "busy":
                self._busy_s += time.monotonic() - (actor.leased_at or time.monotonic())
                actor.state, actor.leased_at = "idle", None
                self._notify()

    async def run(self, request: SlotRequest) -> bytes:
        """`request` on an idle actor; ActorLost when that actor died meanwhile (it is retired)."""
        payload = msgspec.msgpack.encode(request)
        async with self.lease() as actor:
            ref = actor.handle.run.remote(payload)
            try:
                with anyio.fail_after(self.ray.eval_timeout_s):
                    answer: bytes = await ref
            except lost_errors() as exc:
                await self._retire(actor, f"lost mid-evaluation: {first_line(exc)}")
                raise ActorLost(actor.executor, f"evaluation actor {actor.executor} was lost mid-evaluation:"
                                f" {first_line(exc)}", actor.info.torch_version if actor.info else "") from None
            except TimeoutError:
                await self._retire(actor, f"no answer in ray.eval_timeout_s = {self.ray.eval_timeout_s:g} s")
                raise ActorLost(actor.executor, f"evaluation actor {actor.executor} gave no answer in"
                                f" {self.ray.eval_timeout_s:g} s", actor.info.torch_version if actor.info else "") from None
            except anyio.get_cancelled_exc_class():
                import_ray().cancel(ref)  # the actor stops the evaluation and its workers
                raise
            actor.evaluations += 1
            return answer

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = anyio.Event()

    # -- the Executor protocol

    def evaluator(self, problem_path: Path, *, cache: object, precision: str | None, on_fault: OnFault) -> Evaluator:
        # `cache` (the store's baselines) stays on the head: actors keep their node's own.
        return RayEvaluator(problem_path, self.eval_config, executor=self, precision=precision, on_fault=on_fault)

    def status(self) -> ExecutorStatus:
        now = time.monotonic()
        alive = [a for a in self.actors if a.state != "dead"]
        wall = (now - self._began) * max(1, len(alive))
        held = self._busy_s + sum(now - a.leased_at for a in self.actors if a.leased_at is not None)
        return ExecutorStatus(executor=self.name, busy=sum(a.state == "busy" for a in self.actors), total=len(alive),
                              busy_fraction=held / wall if now - self._began >= 1.0 else None,
                              actors=[a.public() for a in self.actors])


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class RayEvaluator:
    """An episode's Evaluator (skills/evaluator/api.py) whose evaluations run on the executor's actors
    (builds for the `compile` skill run on the head, through the compile pool, as with the local
    executor, by a LocalEvaluator without a baseline cache)."""

    def __init__(self, problem_path: str | Path, config: EvalConfig, *, executor: RayExecutor,
                 precision: str | None, on_fault: OnFault) -> None:
        self.local = LocalEvaluator(problem_path, config, cache=None)
        self.problem_path = self.local.problem_path
        self.config = config
        self.executor = executor
        self.precision: Precision = next((p for p in get_args(Precision) if p == precision), "fp32")
        self.on_fault = on_fault

    async def compile(self, workspace: Path) -> BuildResult | None:
        async with self.executor.compile_limiter:
            return await self.local.compile(workspace)

    async def evaluate(self, workspace: Path, mode: Mode) -> EvalResult:
        return await self._graded(await self._request("evaluate", workspace, mode))

    async def baselines(self) -> EvalResult:
        return await self._graded(await self._request("baselines", None, "profile"))

    async def ncu(self, workspace: Path) -> NcuReport:
        if self.config.backend != "cuda":
            return await self.local.ncu(workspace)  # says why without running anything
        request = await self._request("ncu", workspace, "test")
        why = ""
        for _ in range(self.executor.ray.attempts):
            try:
                return msgspec.msgpack.decode(await self.executor.run(request), type=NcuReport)
            except (ActorLost, NoActors) as exc:
                why = str(exc)
        return NcuReport(ok=False, kernels=[], error=f"{why} (an environment fault, not your kernel's)", seconds=0.0)

    async def _request(self, kind: SlotKind, workspace: Path | None, mode: Mode) -> SlotRequest:
        def read() -> SlotRequest:
            problem = Blob.of(self.problem_path.name, self.problem_path.read_bytes())
            files = read_workspace(workspace) if workspace is not None else []
            return SlotRequest(kind=kind, problem=problem, workspace=files, mode=mode, config=self.config)
        return await anyio.to_thread.run_sync(read)

    async def _graded(self, request: SlotRequest) -> EvalResult:
        """The result of the first actor that finishes; each lost attempt is stored as an environment fault."""
        attempts = self.executor.ray.attempts
        for attempt in range(1, attempts + 1):
            began = time.monotonic()
            try:
                return msgspec.msgpack.decode(await self.executor.run(request), type=EvalResult)
            except NoActors as exc:
                return self._fault(request, str(exc), "ray", "", time.monotonic() - began)
            except ActorLost as lost:
                more = attempt < attempts
                cause = lost.cause + (f"; re-run on another actor (attempt {attempt + 1} of {attempts})" if more
                                      else f"; {attempts} attempts, the limit (ray.attempts)")
                fault = self._fault(request, cause, lost.executor, lost.torch, time.monotonic() - began)
                if not more:
                    return fault
                await self.on_fault(fault)
        raise AssertionError("unreachable: the last attempt returns")

    def _fault(self, request: SlotRequest, cause: str, executor: str, torch: str, seconds: float) -> EvalResult:
        """What is known of an attempt whose actor never answered: reward None, the environment's fault."""
        source = request.problem.data.decode("utf-8", errors="replace")
        return EvalResult(
            problem=Path(request.problem.path).stem, problem_id=source_id(source), backend=self.config.backend,
            mode=request.mode, compiled=False, correct=False, stage="load",
            error=f"{cause}\n(an environment fault, not your kernel's: this evaluation has no reward)",
            build=None, sets=[], flags=[], candidate=None, eager=None, compiled_baseline=None, speedups=[],
            reward=None, reward_fn=None, precision=self.precision, gpu=None, torch_version=torch,
            stages=StageTimes(total=seconds), log="", environment_fault=cause, executor=executor)
