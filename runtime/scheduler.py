"""The scheduler: many episodes in flight over a few evaluation slots and a compile pool.

    run()    scan the problems folder into the store; mark episodes a crash left `running` as
             `interrupted` and re-queue every episode the store says waits for a re-run; then
             start jobs until cancelled: re-queued jobs first, then (with `rollouts`) problems
             drawn from the curriculum
    solve()  an HTTP request: its own episode, ahead of every rollout (rollouts wait while a
             request waits for room)
    drain()  a graceful stop: nothing new starts (no rollouts, no re-queued jobs; requests get
             `Draining`), episodes already running go on; `wait_idle()` returns when none is left

Re-runs are durable: an episode waiting for one carries the store's `rerun_pending` mark, and
the mark is cleared only in the transaction that inserts the episode re-running it
(`start_episode(rerun_of=...)`). A re-queued job that a drain (or a crash) leaves unstarted
keeps its mark and is re-queued at the next start; one that started is not: none is lost, none
runs twice.

Limits: `max_in_flight` episodes at once; `max_in_flight_per_version` rollouts running under the
current policy version (and optionally `max_rollouts_per_version` started under it), so samples
do not go stale while the trainer catches up. Evaluations hold an exclusive slot (runtime/slots.py)
of the executor `scheduler.executor` names (runtime/executor.py: this machine's slots, or Ray actors).

Policy server down: an episode that ends in `policy_error` (after the client's own retries)
closes the gate: nothing new starts for a backoff that doubles per consecutive failure, then
the server is probed (GET /v1/models). `status().policy_error` says why until an episode gets
through; requests are retried `request_attempts` times for at most `request_retry_budget_s`
after the first failure (then answered with the cause), failed rollouts are simply drawn again.

Stopping: `drain()` also cancels every LLM call in flight (a slow policy server does not hold
up `kagentd stop`); a tool call in flight finishes first. A request's episode then ends
`cancelled` (its client is told), a rollout's `interrupted` and waits for a re-run.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc
import msgspec

from runtime.curriculum_source import CurriculumSource, NoProblems, StoreCurriculum, scan_problems
from runtime.episode import EpisodeEvent, EpisodeOutcome, run_episode
from runtime.executor import ActorState, Executor, LocalExecutor
from runtime.policy import Policy, PolicyError
from runtime.problem_check import ProblemRejected, check_problem
from runtime.ray_executor import RayExecutor
from runtime.settings import RayConfig, SchedulerConfig
from runtime.slots import EvalSlots
from runtime.store import Origin, ProblemRow, Store
from skills import load_skills
from skills.evaluator.api import Evaluator
from skills.evaluator.config import EvalConfig
from skills.evaluator.problem import ProblemError, source_id
from skills.evaluator.results import EvalResult
from skills.workspace import WorkspaceConfig

log = logging.getLogger("kagent.scheduler")


def _local(*, config: SchedulerConfig, ray: RayConfig, eval_config: EvalConfig, slots: EvalSlots,
           compile_limiter: anyio.CapacityLimiter) -> Executor:
    return LocalExecutor(config=config, eval_config=eval_config, slots=slots, compile_limiter=compile_limiter)


def _ray(*, config: SchedulerConfig, ray: RayConfig, eval_config: EvalConfig, slots: EvalSlots,
         compile_limiter: anyio.CapacityLimiter) -> Executor:
    return RayExecutor(config=config, ray=ray, eval_config=eval_config, compile_limiter=compile_limiter)


EXECUTORS: dict[str, Callable[..., Executor]] = {"local": _local, "ray": _ray}


def make_executor(name: str, *, config: SchedulerConfig, ray: RayConfig, eval_config: EvalConfig,
                  slots: EvalSlots, compile_limiter: anyio.CapacityLimiter) -> Executor:
    """The executor called `name`; an unknown name is an error listing the valid ones (runtime/ray_executor.py
    imports Ray only when its executor starts)."""
    if name not in EXECUTORS:
        raise ValueError(f"unknown executor {name!r}; valid: {', '.join(EXECUTORS)}")
    return EXECUTORS[name](config=config, ray=ray, eval_config=eval_config, slots=slots,
                           compile_limiter=compile_limiter)


OnEvent = Callable[[EpisodeEvent], Awaitable[None]]


class Draining(Exception):
    """The scheduler is draining (the daemon is stopping): it starts no new episode."""

    def __init__(self) -> None:
        super().__init__("kagent is shutting down and starts no new episodes; try again later")


class _GaveUp(Exception):
    """A request's retry budget ran out while the policy server was still failing."""


class SchedulerStatus(msgspec.Struct, kw_only=True):
    """What the scheduler is doing now."""

    running: int
    """Episodes in flight."""
    queued: int
    """Jobs waiting: re-queued episodes and requests waiting for room."""
    gpu_slots_busy: int
    """Evaluation slots leased now."""
    gpu_slots_total: int
    """Evaluation slots (GPUs on cuda, cpu_slots on cpu)."""
    slot_busy_fraction: float | None
    """Share of slot time leased since start (None in the first second)."""
    policy_version: int | None
    """Policy version new episodes start with."""
    policy_model: str
    """Model name requested from the policy server."""
    finished: int
    """Episodes finished since start."""
    by_status: dict[str, int]
    """Finished episodes since start, by status."""
    turns_per_s: float | None
    """LLM turns per second over the last minute (None before the first turn)."""
    policy_error: str | None
    """Last policy-server problem, None when healthy."""
    problems: int
    """Problems rollouts can be drawn from."""
    rollouts: bool
    """Drawing rollouts from the curriculum."""
    draining: bool = False
    """Stopping: nothing new starts; running episodes finish."""
    executor: str = "local"
    """Where evaluation slots run (scheduler.executor)."""
    actors: list[ActorState] = msgspec.field(default_factory=list)
    """The ray executor's evaluation actors and their state (empty for local)."""


class _Job(msgspec.Struct, kw_only=True):
    problem: ProblemRow
    source: str
    origin: Origin
    attempts: int = 0
    rerun_of: int | None = None
    """The episode this job re-runs (its `rerun_pending` mark clears when this one starts)."""


class Scheduler:
    """Runs episodes: re-queued ones, HTTP requests first, then rollouts."""

    def __init__(self, *, config: SchedulerConfig, store: Store, policy: Policy,
                 curriculum: CurriculumSource | None = None, ray: RayConfig | None = None) -> None:
        load_skills()
        self.config, self.store, self.policy = config, store, policy
        cfg = config
        devices: list[str | None] = (list(cfg.gpus or [str(i) for i in range(cfg.gpu_slots)]) if cfg.eval.backend == "cuda"
                                     else [None] * cfg.cpu_slots)
        self.slots = EvalSlots(devices)
        self.compile_limiter = anyio.CapacityLimiter(cfg.compile_workers or os.cpu_count() or 1)
        self.eval_config = cfg.eval
        self.executor = make_executor(cfg.executor, config=cfg, ray=ray or RayConfig(), eval_config=self.eval_config,
                                      slots=self.slots, compile_limiter=self.compile_limiter)
        self.workspace = WorkspaceConfig(root=cfg.workspace_root) if cfg.workspace_root else WorkspaceConfig()
        self.problems: list[ProblemRow] = []
        self.curriculum: CurriculumSource = curriculum or StoreCurriculum(
            store, [], refresh_s=cfg.curriculum_refresh_s, seed=cfg.seed)
        self._requeued: deque[_Job] = deque()
        self._requests_waiting = 0
        self._in_flight = 0
        self._draining = False
        self._stopping = anyio.Event()  # set by drain(): LLM calls in flight are cancelled
        self._idle = anyio.Event()  # set while no episode runs; replaced when one starts
        self._idle.set()
        self._rollouts_by_version: Counter[int | None] = Counter()
        self._started_by_version: Counter[int | None] = Counter()
        self._by_status: Counter[str] = Counter()
        self._turns: deque[float] = deque()
        self._began = time.monotonic()
        self._policy_error: str | None = None
        self._failures = 0
        self._probe_ok = False
        self._gate_open_at = 0.0
        self._changed = anyio.Event()
        self._ready = anyio.Event()

    # -- public API

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Until cancelled: re-queue interrupted episodes, then run jobs."""
        await self.reload_problems()
        await self._requeue_interrupted()
        async with self.executor.open():
            async with anyio.create_task_group() as tg:
                self._ready.set()
                task_status.started()
                while True:
                    job = await self._next_job()
                    # Counted before the task starts, so the next _pick already sees it.
                    version = self.policy.version
                    self._enter()
                    if job.origin == "rollout":
                        self._rollouts_by_version[version] += 1
                        self._started_by_version[version] += 1
                    tg.start_soon(self._run_job, job, version)

    async def solve(self, source: str, *, name: str = "request", on_event: OnEvent | None = None) -> EpisodeOutcome:
        """One episode on a problem given as KernelBench source (ProblemError when it is not one,
        Draining once `drain()` was called and this request has not started)."""
        if self._draining:
            raise Draining
        cfg = self.config
        # In a child process: a problem's code may exit, hang or exhaust memory at import.
        try:
            checked = await check_problem(source, name, timeout_s=cfg.problem_check_timeout_s,
                                          memory_mb=cfg.problem_check_memory_mb)
        except ProblemRejected as exc:
            raise ProblemError(str(exc)) from None
        # A request never rewrites another problem's row (a bundled problem's source keeps its
        # name, level and origin): the stored row wins when the content id is known.
        problem = await self.store.add_problem(ProblemRow(
            id=source_id(source), name=name, source="request", level=checked.level,
            precision=checked.precision, code=source))
        await self._ready.wait()
        outcome: EpisodeOutcome | None = None
        give_up_at: float | None = None  # set by the first policy error
        for _ in range(max(1, cfg.request_attempts)):
            try:
                await self._admit_request(give_up_at)
            except _GaveUp:
                assert outcome is not None
                return msgspec.structs.replace(outcome, error=(
                    f"{outcome.error} (the request gave up after {cfg.request_retry_budget_s:g} s of"
                    " retries: scheduler.request_retry_budget_s)"))
            try:
                outcome = await self._episode(problem, source, "request", on_event, on_stop="cancelled")
            finally:
                self._leave()
            if outcome.status != "policy_error" or self._draining:
                break
            if give_up_at is None:
                give_up_at = time.monotonic() + cfg.request_retry_budget_s
        assert outcome is not None
        return outcome

    def status(self) -> SchedulerStatus:
        now = time.monotonic()
        while self._turns and self._turns[0] < now - 60.0:
            self._turns.popleft()
        window = min(60.0, now - self._began)
        slots = self.executor.status()
        return SchedulerStatus(
            running=self._in_flight, queued=len(self._requeued) + self._requests_waiting,
            gpu_slots_busy=slots.busy, gpu_slots_total=slots.total,
            slot_busy_fraction=slots.busy_fraction, policy_version=self.policy.version,
            policy_model=self.policy.model, finished=sum(self._by_status.values()), by_status=dict(self._by_status),
            turns_per_s=len(self._turns) / window if self._turns and window > 0 else None,
            policy_error=self._gate_note(now), problems=len(self.problems),
            rollouts=self.config.rollouts and not self._draining, draining=self._draining,
            executor=slots.executor, actors=slots.actors)

    def drain(self) -> None:
        """Start nothing new from now on: no rollouts, no re-queued jobs (they keep their mark in
        the store and are re-queued at the next start), no requests (those waiting for room and
        later ones raise `Draining`). Episodes already running go on; `wait_idle()` says when
        they are done. There is no way back: a drained scheduler is stopped by cancelling `run()`."""
        if not self._draining:
            self._draining = True
            self._stopping.set()
            log.info("draining: %d episode(s) running; %d re-queued job(s) not started, left for the next"
                     " start; %d waiting request(s) refused", self._in_flight, len(self._requeued),
                     self._requests_waiting)
            self._notify()

    @property
    def draining(self) -> bool:
        return self._draining

    async def wait_idle(self) -> None:
        """Until no episode is running (at once when none is). Without `drain()` first, rollouts
        may start again right after."""
        while self._in_flight:
            await self._idle.wait()

    def set_policy(self, version: int, model: str | None = None) -> None:
        """A hot-load advanced the policy version (`model`: the adapter name to request, if changed)."""
        self.policy.set_version(version, model)
        self._notify()

    async def reload_problems(self) -> int:
        """Re-scan the problems folder into the store and the curriculum; returns how many there are."""
        try:
            rows = await anyio.to_thread.run_sync(scan_problems, Path(self.config.problems_dir))
        except NoProblems as exc:
            log.warning("%s", exc)
            rows = []
        if rows:
            await self.store.upsert_problems(rows)
        self.problems = rows
        if isinstance(self.curriculum, StoreCurriculum):
            self.curriculum.set_problems(rows)
        self._notify()
        return len(rows)

    # -- jobs

    async def _next_job(self) -> _Job:
        while True:
            changed = self._changed
            await self._maybe_probe()
            job = await self._pick()
            if job is not None:
                return job
            await self._wait(changed)

    async def _pick(self) -> _Job | None:
        cfg = self.config
        if self._draining or not self._gate_open() or self._in_flight >= cfg.max_in_flight or self._requests_waiting:
            return None
        if self._requeued:
            return self._requeued.popleft()
        version = self.policy.version
        if not cfg.rollouts or not self.problems or self._rollouts_by_version[version] >= cfg.max_in_flight_per_version:
            return None
        if cfg.max_rollouts_per_version is not None and self._started_by_version[version] >= cfg.max_rollouts_per_version:
            return None
        try:
            problem = await self.curriculum.next_problem()
        except NoProblems as exc:
            log.warning("%s", exc)
            return None
        if self._draining:  # drain() came while the curriculum was read
            return None
        return _Job(problem=problem, source=problem.code or "", origin="rollout")

    async def _admit_request(self, give_up_at: float | None = None) -> None:
        """Until the request may start; _GaveUp once `give_up_at` passes with the gate shut."""
        self._requests_waiting += 1
        try:
            while True:
                changed = self._changed
                if self._draining:
                    raise Draining
                await self._maybe_probe()
                if self._gate_open() and self._in_flight < self.config.max_in_flight:
                    break
                if give_up_at is not None and time.monotonic() >= give_up_at:
                    raise _GaveUp
                await self._wait(changed, give_up_at)
        finally:
            self._requests_waiting -= 1
        self._enter()

    async def _run_job(self, job: _Job, version: int | None) -> None:
        rollout = job.origin == "rollout"
        try:
            outcome = await self._episode(job.problem, job.source, job.origin, None, rerun_of=job.rerun_of)
            if outcome.status == "policy_error" and not rollout and job.attempts + 1 < self.config.request_attempts:
                # Marked in the store first, so a drain or crash before the retry starts loses nothing.
                await self.store.mark_rerun_pending(outcome.episode_id)
                self._requeued.append(msgspec.structs.replace(job, attempts=job.attempts + 1,
                                                              rerun_of=outcome.episode_id))
        except Exception:  # the store failed (episode bugs end as status error inside run_episode)
            log.exception("episode on %s failed outside its loop", job.problem.name)
        finally:
            if rollout:
                self._rollouts_by_version[version] -= 1
            self._leave()

    async def _episode(self, problem: ProblemRow, source: str, origin: Origin,
                       on_event: OnEvent | None, *, rerun_of: int | None = None,
                       on_stop: Literal["interrupted", "cancelled"] = "interrupted") -> EpisodeOutcome:
        episode: list[int] = []  # its row id, from the "started" event (sent before any evaluation)

        async def events(event: EpisodeEvent) -> None:
            if event.kind == "started":
                episode.append(event.episode_id)
            if event.kind == "turn":
                self._turns.append(time.monotonic())
            if on_event is not None:
                await on_event(event)

        async def on_fault(result: EvalResult) -> None:
            # An attempt whose actor was lost, kept with the episode; the evaluation is re-run.
            await self.store.add_evaluation(result, episode_id=episode[0] if episode else None)

        def evaluator(problem_path: Path) -> Evaluator:
            return self.executor.evaluator(problem_path, cache=self.store.baseline_cache(),
                                           precision=problem.precision, on_fault=on_fault)

        outcome = await run_episode(
            store=self.store, policy=self.policy, problem=problem, source=source,
            make_evaluator=evaluator, limits=self.config.limits, workspace=self.workspace,
            origin=origin, on_event=events, tools=self.config.tools, rerun_of=rerun_of,
            stopping=self._stopping, on_stop=on_stop)
        self._by_status[outcome.status] += 1
        if outcome.status == "policy_error":
            self._policy_failed(outcome.error or "policy error")
        else:
            self._policy_error, self._failures = None, 0
        return outcome

    async def _requeue_interrupted(self) -> None:
        """Mark what a crash left `running` as `interrupted` (each then waits for a re-run), and
        queue every episode waiting for one: also those a previous run re-queued but never
        started (it was drained or died first)."""
        marked = await self.store.mark_interrupted_episodes()
        for row in await self.store.pending_reruns():
            problem = await self.store.get_problem(row.problem_id)
            source = problem.code if problem is not None else None
            if problem is None or source is None:
                log.warning("episode %d (%s): problem %s has no stored source; not re-queued", row.id, row.status,
                            row.problem_id)
                continue
            self._requeued.append(_Job(problem=problem, source=source, origin=row.origin, rerun_of=row.id))
        if marked or self._requeued:
            log.info("marked %d interrupted episode(s); re-queued %d episode(s) waiting for a re-run", len(marked),
                     len(self._requeued))

    # -- policy health

    def _policy_failed(self, reason: str) -> None:
        self._failures += 1
        self._probe_ok = False
        delay = min(self.config.policy_backoff_max_s, self.config.policy_backoff_s * 2 ** (self._failures - 1))
        self._policy_error = reason
        self._gate_open_at = time.monotonic() + delay
        log.warning("policy server problem (%d in a row): %s; new episodes wait %.0f s", self._failures, reason, delay)
        self._notify()

    def _gate_open(self) -> bool:
        return self._policy_error is None or self._probe_ok

    def _gate_note(self, now: float) -> str | None:
        if self._policy_error is None:
            return None
        wait = self._gate_open_at - now
        return self._policy_error + (f" (new episodes wait {wait:.0f} s)" if wait > 0 and not self._probe_ok else "")

    async def _maybe_probe(self) -> None:
        """After the backoff, ask the server whether it is back; the gate opens when it is."""
        if self._policy_error is None or self._probe_ok or time.monotonic() < self._gate_open_at:
            return
        try:
            await self.policy.check()
        except PolicyError as exc:
            self._policy_failed(exc.reason)
            return
        self._probe_ok = True
        self._notify()

    async def _wait(self, changed: anyio.Event, until: float | None = None) -> None:
        """Until something changes, the backoff ends (time to probe again) or `until` passes."""
        timeout = None
        if self._policy_error is not None and not self._probe_ok:
            timeout = max(0.0, self._gate_open_at - time.monotonic())
        if until is not None:
            left = max(0.0, until - time.monotonic())
            timeout = left if timeout is None else min(timeout, left)
        with anyio.move_on_after(timeout):
            await changed.wait()

    def _enter(self) -> None:
        """An episode is about to start (counted before its task starts, so the next pick sees it)."""
        self._in_flight += 1
        if self._idle.is_set():
            self._idle = anyio.Event()

    def _leave(self) -> None:
        self._in_flight -= 1
        if not self._in_flight:
            self._idle.set()
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()
