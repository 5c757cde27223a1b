"""`kagent bench`: grade a solution set or a policy over a problem set, as the paper's results table.

    kagent bench problems/level1 problems/level2 --reference --out runs/ref-h200
    kagent bench KernelBench/level1 --solutions runs/my_run --out runs/my_run-bench
    kagent bench problems/ --policy-url http://127.0.0.1:8000/v1 --model policy --attempts 4 --out runs/p
    kagent bench compare runs/a runs/b

How a run goes:
1. the problems (files or folders) and, per problem and attempt, a job: a solution to grade
   (--solutions / --reference / --reference-model) or an agent episode (--policy-url);
2. rows already in OUT/results.json are kept (resume); every other job runs;
3. KernelBench-style load_inline solutions are built ahead, `--compile-jobs` at a time (at most
   the cores), build-only on the CPU (skills/evaluator/prebuild.py: no GPU, no evaluation), into the
   parent's extension cache (skills/evaluator/ext_cache.py); nothing is timed meanwhile. The build
   ahead grades nothing: a file that fails to build there fails its final evaluation as usual;
4. the final evaluations: builds of kernels/ in the compile pool, then one evaluation slot each
   (runtime/slots.py: one GPU per slot, so one timed loop per GPU at a time; on cpu
   scheduler.cpu_slots), warm workers per slot as kagentd keeps them;
5. after each row: results.json and results.csv rewritten, a progress line with the ETA; at the
   end table.md and speedup.png (runtime/bench_report.py, runtime/bench_plot.py).

Episodes (--policy-url) run through the same episode loop, skills and evaluator as kagentd, in
process, logged to OUT/episodes.db (`kagent episodes list --db OUT/episodes.db`).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import msgspec

from runtime.bench_plot import PLOT, plot
from runtime.bench_report import render
from runtime.bench_rows import (
    BenchFile,
    BenchInvocation,
    BenchRow,
    current_commit,
    fault_row,
    missing_row,
    resume_note,
    row_from_result,
    write_results,
)
from runtime.bench_sources import BenchProblem, builds_inline, reference_model_source
from runtime.settings import SchedulerConfig
from runtime.slots import EvalSlots, LeasedEvaluator
from skills.evaluator.baselines import BaselineCache
from skills.evaluator.config import EvalConfig
from skills.evaluator.pool import WarmPool
from skills.evaluator.prebuild import Prebuilt, prebuild
from skills.evaluator.results import EvalResult

TABLE = "table.md"
log = logging.getLogger("kagent.bench")


class Job(msgspec.Struct, frozen=True, kw_only=True):
    """One attempt at one problem."""

    problem: BenchProblem
    """The problem."""
    attempt: int
    """0 .. K-1."""
    solution: str | None = None
    """The solution to grade (None: none found, or an episode makes one)."""


OnRow = Callable[[BenchRow], Awaitable[None]]
Grade = Callable[[Job], Awaitable[BenchRow]]
"""Grades one job (a solution's evaluation, or an episode)."""


class Results:
    """The rows of a run: kept in OUT, rewritten after each new one."""

    def __init__(self, out: Path, bench: BenchFile, order: list[BenchProblem]) -> None:
        self.out, self.bench = out, bench
        self.rank = {p.id: i for i, p in enumerate(order)}
        self.rows = {r.key: r for r in bench.rows}
        self.lock = anyio.Lock()
        self.invocation: BenchInvocation | None = None

    def done(self, job: Job, *, retry_faults: bool) -> bool:
        row = self.rows.get((job.problem.id, job.attempt))
        return row is not None and not (retry_faults and row.fault is not None)

    async def add(self, row: BenchRow) -> None:
        async with self.lock:
            if self.invocation is not None:
                self.invocation.seconds = time.time() - self.invocation.started
                self.invocation.graded = (self.invocation.graded or 0) + 1
            self.rows[row.key] = row
            self.bench.rows = sorted(self.rows.values(), key=lambda r: (self.rank.get(r.problem_id, len(self.rank)),
                                                                        r.problem, r.attempt))
            await anyio.to_thread.run_sync(write_results, self.out, self.bench)

    def start(self, invocation: BenchInvocation) -> None:
        """This invocation grades rows into the folder; a note on stderr when rows there came from
        another kagent commit (they are kept: the table mixes both)."""
        invocation.kagent_commit = current_commit()
        invocation.graded = 0
        if self.bench.rows and (note := resume_note(self.bench.run, invocation.kagent_commit)):
            sys.stderr.write(f"kagent bench: {self.out}: {note}\n")
        self.invocation = invocation
        self.bench.run.invocations.append(invocation)

    def finish(self, *, interrupted: bool = False) -> tuple[Path, Path | None]:
        """results.json (the invocation's end), table.md and speedup.png (None when nothing passed and was timed)."""
        if self.invocation is not None:
            self.invocation.seconds = time.time() - self.invocation.started
            self.invocation.interrupted = interrupted
        write_results(self.out, self.bench)
        table = self.out / TABLE
        table.write_text(render(self.bench), encoding="utf-8")
        return table, plot(self.bench.rows, self.out / PLOT, title=render(self.bench).splitlines()[0][2:])


def eval_devices(sched: SchedulerConfig, gpus: list[str]) -> list[str | None]:
    """One slot per GPU on cuda (`gpus`), scheduler.cpu_slots slots on cpu."""
    return list(gpus) if sched.eval.backend == "cuda" else [None] * max(1, sched.cpu_slots)


class Grader:
    """Grades solutions over the slots: load_inline builds ahead (build-only), then final evaluations."""

    def __init__(self, *, config: EvalConfig, slots: EvalSlots, cache: BaselineCache | None,
                 compile_limiter: anyio.CapacityLimiter, compile_jobs: int) -> None:
        self.config, self.slots, self.cache = config, slots, cache
        self.compile_limiter = compile_limiter
        self.compile_jobs = max(1, min(compile_jobs, os.cpu_count() or 1))
        self.prebuild_seconds: dict[tuple[str, int], float] = {}
        self.built: dict[tuple[str, int], anyio.Event] = {}
        """Set when the job's build ahead has ended (built or not): its final evaluation waits for it."""

    def inline_jobs(self, jobs: list[Job]) -> list[Job]:
        """The jobs the build ahead is for (none without an extension cache to keep builds in)."""
        if self.config.extension_cache_dir is None:
            return []
        return [j for j in jobs if j.solution is not None and builds_inline(Path(j.solution))]

    def expect_builds(self, jobs: list[Job]) -> list[Job]:
        """The load_inline jobs to build ahead; each one's final evaluation waits for its build,
        which `prebuild` runs (call this before grading starts)."""
        inline = self.inline_jobs(jobs)
        self.built = {(j.problem.id, j.attempt): anyio.Event() for j in inline}
        return inline

    async def prebuild(self, jobs: list[Job], on_build: Callable[[Job], Awaitable[None]]) -> float | None:
        """Build-only prebuilds of the load_inline jobs (skills/evaluator/prebuild.py), `compile_jobs`
        at a time on the host's cores, no GPU, in job order: each build lands in the parent's
        extension cache, where the final evaluation of the same code finds it. Nothing is graded
        here; grading runs beside it (a job's final evaluation starts once its own build has ended,
        so the slots time what is built while the cores build the rest). Returns the seconds it
        took (None: nothing to build)."""
        inline = [j for j in jobs if (j.problem.id, j.attempt) in self.built]
        if not inline:
            return None
        began = time.monotonic()
        limiter = anyio.CapacityLimiter(self.compile_jobs)

        async def one(job: Job) -> None:
            key = (job.problem.id, job.attempt)
            try:
                built = await anyio.to_thread.run_sync(build_ahead, job, self.config, limiter=limiter)
                self.prebuild_seconds[key] = built.seconds
                if not built.ok:  # its final evaluation builds again and reports why
                    log.info("%s attempt %d not built ahead: %s", job.problem.name, job.attempt,
                             built.detail.strip().rsplit("\n", 1)[-1])
            finally:
                self.built[key].set()
            await on_build(job)

        async with anyio.create_task_group() as tg:
            for job in inline:
                tg.start_soon(one, job)
        return time.monotonic() - began

    async def grade(self, job: Job) -> BenchRow:
        p = job.problem
        if job.solution is None:
            return missing_row(problem=p.name, problem_id=p.id, level=p.level, attempt=job.attempt)
        if (event := self.built.get((p.id, job.attempt))) is not None:
            await event.wait()
        began = time.monotonic()
        result, queued = await self._evaluate(job)
        # every job is in flight at once: the time it waited for a GPU slot is not its own
        row = row_from_result(result, problem=p.name, problem_id=p.id, level=p.level, attempt=job.attempt,
                              solution=job.solution, seconds=time.monotonic() - began - queued)
        row.queued_seconds = queued
        row.prebuild_seconds = self.prebuild_seconds.get((p.id, job.attempt))
        return row

    async def _evaluate(self, job: Job) -> tuple[EvalResult, float]:
        """The final evaluation, on a slot (a load_inline build ahead is seeded from the cache), and
        the seconds it waited for the slot."""
        with tempfile.TemporaryDirectory(prefix="kagent-bench-") as tmp:
            ws = Path(tmp) / "ws"
            await anyio.to_thread.run_sync(make_workspace, job, ws)
            ev = LeasedEvaluator(job.problem.path, self.config, cache=self.cache, slots=self.slots,
                                 compile_limiter=self.compile_limiter)
            result = await ev.evaluate(ws, "final")
            return result, ev.slot_wait_s


def build_ahead(job: Job, config: EvalConfig) -> Prebuilt:
    """The job's workspace, built into the extension cache (blocking: run in a worker thread)."""
    with tempfile.TemporaryDirectory(prefix="kagent-bench-build-") as tmp:
        ws = Path(tmp) / "ws"
        try:
            make_workspace(job, ws)
        except OSError as exc:  # the final evaluation meets it again and makes it the row's fault
            return Prebuilt(ok=False, seconds=0.0, detail=f"the workspace could not be made: {exc}")
        return prebuild(ws, config)


def make_workspace(job: Job, ws: Path) -> None:
    """An episode-shaped workspace at `ws`: model.py (the problem), model_new.py and kernels/ of the
    solution (a single KernelBench-style file becomes model_new.py, without kernels/)."""
    assert job.solution is not None
    solution = Path(job.solution)
    if solution.is_dir():
        shutil.copytree(solution, ws, ignore=shutil.ignore_patterns("__pycache__", "model.py"))
    else:
        ws.mkdir(parents=True)
        shutil.copyfile(solution, ws / "model_new.py")
    shutil.copyfile(job.problem.path, ws / "model.py")


def reference_model_jobs(jobs: list[Job], folder: Path) -> list[Job]:
    """Each job's solution becomes a workspace under `folder` whose ModelNew is the problem's Model."""
    out = []
    for job in jobs:
        ws = folder / job.problem.id
        ws.mkdir(parents=True, exist_ok=True)
        source = Path(job.problem.path).read_text(encoding="utf-8")
        (ws / "model_new.py").write_text(reference_model_source(source), encoding="utf-8")
        out.append(msgspec.structs.replace(job, solution=str(ws)))
    return out


async def run_jobs(jobs: list[Job], *, grade: Grade, results: Results,
                   on_row: OnRow, limit: int) -> None:
    """Every job at once under `limit` (the slots and the compile pool queue them further)."""
    limiter = anyio.CapacityLimiter(max(1, limit))

    async def one(job: Job) -> None:
        began = time.monotonic()
        async with limiter:
            try:
                row = await grade(job)
            except Exception as exc:  # a bug or a broken solution folder costs this row, not the run
                log.exception("%s attempt %d", job.problem.name, job.attempt)
                row = fault_from(job, exc, began)
        await results.add(row)
        await on_row(row)

    async with anyio.create_task_group() as tg:
        for job in jobs:
            tg.start_soon(one, job)


async def warm_pools(stack: AsyncExitStack, slots: EvalSlots, config: EvalConfig, warm: bool) -> None:
    """Each slot's next workers started ahead, as the scheduler keeps them (scheduler.warm_workers)."""
    if warm:
        slots.pools = [await stack.enter_async_context(WarmPool(msgspec.structs.replace(config, gpu=d)))
                       for d in slots.devices]


def fault_from(job: Job, exc: BaseException, began: float) -> BenchRow:
    p = job.problem
    return fault_row(problem=p.name, problem_id=p.id, level=p.level, attempt=job.attempt,
                     fault=f"{type(exc).__name__}: {exc}", seconds=time.monotonic() - began, solution=job.solution)
