"""The `kagent bench` run from the command line: config, the plan of jobs, resume, progress, output
(arguments: runtime/bench_args.py; the run itself: runtime/bench.py)."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import msgspec

from runtime.bench import (
    Grade,
    Grader,
    Job,
    Results,
    eval_devices,
    reference_model_jobs,
    run_jobs,
    warm_pools,
)
from runtime.bench_args import UsageError
from runtime.bench_rows import (
    BenchFile,
    BenchInvocation,
    BenchRun,
    SourceKind,
    read_results,
    run_header,
    same_run,
)
from runtime.bench_sources import BenchProblem, collect_problems, find_solutions, reference_solution
from runtime.config import Config, ConfigError, default_config_path, load_config
from runtime.settings import SchedulerConfig
from runtime.slots import EvalSlots
from skills.evaluator.baselines import BaselineCache
from skills.evaluator.config import EvalConfig
from skills.evaluator.sandbox import SandboxConfig


def _err(text: str) -> None:
    sys.stderr.write(f"kagent bench: {text}\n")


def visible_gpus() -> list[str]:
    """CUDA_VISIBLE_DEVICES when set, else one id per `nvidia-smi -L` line, else just "0"."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None and env.strip():
        return [g.strip() for g in env.split(",") if g.strip()]
    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ["0"]
    n = sum(1 for line in done.stdout.splitlines() if line.startswith("GPU "))
    return [str(i) for i in range(n)] or ["0"]


def driver_version() -> str | None:
    """The NVIDIA driver's version, from nvidia-smi (None without it)."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None


def _source(args: argparse.Namespace) -> SourceKind:
    if args.solutions is not None:
        return "solutions"
    if args.reference:
        return "reference"
    if args.reference_model:
        return "reference_model"
    if args.policy_url or args.daemon:
        return "policy"
    raise UsageError("name one source of solutions: --solutions DIR, --reference, --reference-model or --policy-url URL")


def _config(args: argparse.Namespace) -> Config:
    path = args.config or default_config_path(os.environ)
    config = load_config(path, overrides=args.set)
    sched = config.scheduler
    cfg = msgspec.structs.replace(sched.eval, backend=args.backend) if args.backend else sched.eval
    if cfg.extension_cache_dir is None:
        from skills.evaluator.ext_cache import default_dir

        cfg = msgspec.structs.replace(cfg, extension_cache_dir=str(default_dir()))
    if args.unsafe_no_sandbox:
        cfg = msgspec.structs.replace(cfg, sandbox=SandboxConfig(allow_unsafe=True))
    if args.reference_model:  # the reference runs torch compute in forward by design
        cfg = msgspec.structs.replace(cfg, torch_allowed=True)
    policy = config.policy
    if args.policy_url:
        policy = msgspec.structs.replace(policy, base_url=args.policy_url, model=args.model or policy.model)
    return msgspec.structs.replace(config, scheduler=msgspec.structs.replace(sched, eval=cfg), policy=policy)


def plan(args: argparse.Namespace, source: SourceKind, problems: list[BenchProblem], backend: str) -> list[Job]:
    """A job per problem and attempt; --reference keeps only the problems with a bundled solution."""
    jobs = []
    for p in problems:
        if source == "solutions":
            jobs += [Job(problem=p, attempt=i, solution=str(s) if s else None)
                     for i, s in enumerate(find_solutions(args.solutions, p, args.attempts))]
        elif source == "reference":
            ref = reference_solution(p, backend)
            jobs += [Job(problem=p, attempt=i, solution=str(ref)) for i in range(args.attempts) if ref]
        else:
            jobs += [Job(problem=p, attempt=i) for i in range(args.attempts)]
    return jobs


def run(args: argparse.Namespace) -> int:
    try:
        if args.problems[0] == "compare":
            from runtime.bench_compare import run_compare

            return run_compare(args)
        return _run(args)
    except UsageError as exc:
        _err(str(exc))
        return 2
    except (ConfigError, ValueError) as exc:
        _err(str(exc))
        return 1


def _run(args: argparse.Namespace) -> int:
    source = _source(args)
    if args.out is None:
        raise UsageError("--out DIR is required (where results.json, table.md and speedup.png go)")
    if args.attempts < 1:
        raise UsageError("--attempts must be at least 1")
    if args.solutions is not None and not args.solutions.is_dir():
        raise UsageError(f"--solutions {args.solutions} is not a folder")
    config = _config(args)
    sched = config.scheduler
    problems = collect_problems([Path(p) for p in args.problems])
    jobs = plan(args, source, problems, sched.eval.backend)
    if not jobs:
        raise UsageError(f"nothing to grade: no {sched.eval.backend} reference solution for these problems"
                         if source == "reference" else "nothing to grade")
    header = _header(args, config, source)
    old = read_results(args.out)
    if old is not None and (why := same_run(old.run, header)):
        raise UsageError(f"{args.out} holds results of another run ({why}); use another --out")
    bench = old or BenchFile(run=header, rows=[])
    bench.run.attempts = max(bench.run.attempts, args.attempts)
    results = Results(args.out, bench, problems)
    todo = [j for j in jobs if not results.done(j, retry_faults=args.retry_faults)]
    skipped = len(problems) - len({j.problem.id for j in jobs})
    if skipped:
        _err(f"{skipped} problem(s) have no bundled {sched.eval.backend} reference solution: not graded")
    if len(todo) < len(jobs):
        _err(f"resuming {args.out}: {len(jobs) - len(todo)} of {len(jobs)} rows already there")
    try:
        anyio.run(_execute, args, config, source, todo, results)
    except KeyboardInterrupt:  # the rows graded so far stay; the table shows them; the same command resumes
        table, _ = results.finish(interrupted=True)
        _err(f"interrupted: {len(results.rows)} row(s) in {args.out / 'results.json'} (table: {table}); "
             "the evaluations in flight were stopped and are not recorded; run the same command again to resume")
        return 130
    table, png = results.finish()
    sys.stdout.write(table.read_text(encoding="utf-8"))
    _err(f"wrote {args.out / 'results.json'}, {table}" + (f", {png}" if png else " (no plot: nothing passed and was timed)"))
    return 0


async def _execute(args: argparse.Namespace, config: Config, source: SourceKind, jobs: list[Job],
                   results: Results) -> None:
    from runtime.bench_progress import progress

    sched: SchedulerConfig = config.scheduler
    cfg: EvalConfig = sched.eval
    gpus = ([g.strip() for g in args.gpus.split(",") if g.strip()] if args.gpus else sched.gpus or visible_gpus()) \
        if sched.eval.backend == "cuda" else []
    slots = EvalSlots(eval_devices(sched, gpus))
    invocation = BenchInvocation(started=time.time(), slots=[d or "cpu" for d in slots.devices], jobs=len(jobs),
                           driver=driver_version() if sched.eval.backend == "cuda" else None)
    if jobs:
        results.start(invocation)
    compile_limiter = anyio.CapacityLimiter(sched.compile_workers or os.cpu_count() or 1)
    with progress(len(jobs), disable=args.no_progress) as bar:
        async with AsyncExitStack() as stack:
            grader: Grader | None = None
            if source == "policy" and args.daemon:
                grade, limit = await _daemon(stack, args, config), sched.max_in_flight
            elif source == "policy":
                grade = await _episodes(stack, args, config, slots, compile_limiter)
                limit = sched.max_in_flight
            else:
                grader = Grader(config=cfg, slots=slots, cache=_baseline_cache(), compile_limiter=compile_limiter,
                                compile_jobs=args.compile_jobs or max(1, (os.cpu_count() or 2) // 2))
                if source == "reference_model":
                    jobs = reference_model_jobs(jobs, Path(stack.enter_context(_tmpdir())))
                bar.builds(len(grader.expect_builds(jobs)))
                grade, limit = grader.grade, len(jobs)
            await warm_pools(stack, slots, cfg, sched.warm_workers and bool(jobs) and not args.daemon)
            async with anyio.create_task_group() as tg:
                if grader is not None:  # load_inline builds on the cores while the slots grade what is built
                    tg.start_soon(_prebuild, grader, jobs, bar.built, invocation)
                await run_jobs(jobs, grade=grade, results=results, on_row=bar.row, limit=limit)


async def _prebuild(grader: Grader, jobs: list[Job], on_build: Callable[[Job], Awaitable[None]],
                    invocation: BenchInvocation) -> None:
    invocation.prebuild_seconds = await grader.prebuild(jobs, on_build)


def _tmpdir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="kagent-bench-ref-")


def _baseline_cache() -> BaselineCache:
    from skills.evaluator.baselines import JsonBaselineCache

    return JsonBaselineCache()


async def _episodes(stack: AsyncExitStack, args: argparse.Namespace, config: Config, slots: EvalSlots,
                    compile_limiter: anyio.CapacityLimiter) -> Grade:
    from runtime.bench_policy import EpisodeRunner
    from runtime.policy import make_policy
    from runtime.store import Store
    from skills import load_skills

    load_skills()
    db = args.db or args.out / "episodes.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    store = await stack.enter_async_context(Store.open(db))
    policy = make_policy(config.policy)
    stack.push_async_callback(policy.aclose)
    runner = EpisodeRunner(store=store, policy=policy, sched=config.scheduler, config=config.scheduler.eval,
                           slots=slots, compile_limiter=compile_limiter)
    return runner.grade


async def _daemon(stack: AsyncExitStack, args: argparse.Namespace, config: Config) -> Grade:
    from runtime.bench_daemon import DaemonRunner

    key = args.api_key or os.environ.get("KAGENT_API_KEY") or config.http.api_key
    runner = DaemonRunner(args.daemon, api_key=key)
    stack.push_async_callback(runner.aclose)
    return runner.grade


def _header(args: argparse.Namespace, config: Config, source: SourceKind) -> BenchRun:
    policy = source == "policy"
    model = (args.model or "kagent") if args.daemon else config.policy.model
    return run_header(source=source, backend=config.scheduler.eval.backend,
                      solutions=str(args.solutions.resolve()) if args.solutions else None,
                      policy_url=_policy_label(args, config) if policy else None, model=model if policy else None,
                      attempts=args.attempts, command=_command(args))


def _policy_label(args: argparse.Namespace, config: Config) -> str:
    if args.daemon:
        return f"kagentd at {args.daemon}" + (f" ({args.policy_url})" if args.policy_url else "")
    return config.policy.base_url


def _command(args: argparse.Namespace) -> str:
    """The command line as typed (as far as it can be told when called from Python)."""
    if sys.argv[1:2] == ["bench"]:
        return shlex.join(["kagent", *sys.argv[1:]])
    return shlex.join(["kagent", "bench", *args.problems, "..."])
