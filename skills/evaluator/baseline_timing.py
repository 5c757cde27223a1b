"""The baselines (eager, torch.compile) timed by the judge within an evaluation, through the
baseline cache (skills/evaluator/baselines.py)."""

from __future__ import annotations

import os
import platform
import secrets
import time
from pathlib import Path

from skills.evaluator.baselines import BaselineCache, BaselineEntry, BaselineKey
from skills.evaluator.harness import protocol as P
from skills.evaluator.launch import Scratch
from skills.evaluator.state import EvalState, timing_result
from skills.evaluator.workers import Worker, WorkerFailed


async def judge_baselines(judge: Worker, problem: Path, scratch: Scratch, state: EvalState,
                           cache: BaselineCache | None, nonce: str) -> None:
    cfg = state.config
    sizes = cfg.sizes or ("small" if cfg.backend == "cpu" else "default")
    await judge.send(P.Preinit())
    await judge.send(P.JudgeStart(nonce=nonce, problem_path=str(problem), sizes=sizes, device=cfg.backend,
                                  seed=secrets.randbits(62), n_sets=cfg.n_sets, held_sets=cfg.held_sets,
                                  exchange_dir=str(scratch.root / "exchange"), shape_check=False))
    ready = await judge.expect(P.JudgeReady, cfg.timeout_import_s, "computing the reference")
    state.problem, state.problem_id, state.precision = ready.name, ready.problem_id, ready.precision
    state.gpu, state.torch_version, state.input_shapes = ready.gpu, ready.torch_version, ready.input_shapes
    state.stage = "baseline"
    t = time.perf_counter()
    await time_baselines(judge, state, cache, nonce, sizes)
    state.times.baselines = time.perf_counter() - t
    state.stage = "load"
    state.error = "ModelNew was not run: only the baselines were timed"


async def baselines_for_agent(judge: Worker, cand: Worker, state: EvalState, cache: BaselineCache | None,
                               nonce: str, sizes: str) -> None:
    """profile mode: even when the candidate failed, report the times to beat (the workflow's first step)."""
    if state.mode != "profile" or not state.problem_id or judge.closed:
        return
    await cand.close()
    try:
        await time_baselines(judge, state, cache, nonce, sizes)
    except WorkerFailed as exc:
        state.error = f"{state.error}\n(baselines: {exc.message})"


def baseline_key(state: EvalState, sizes: str) -> BaselineKey:
    dev_name = state.gpu or f"cpu:{platform.processor() or platform.machine()}:{os.cpu_count()}"
    return BaselineKey(problem_id=state.problem_id, device=dev_name, torch_version=state.torch_version,
                       precision=state.precision, sizes=sizes, timing=state.config.timing.method())


async def time_baselines(judge: Worker, state: EvalState, cache: BaselineCache | None, nonce: str,
                     sizes: str) -> None:
    cfg = state.config
    key = baseline_key(state, sizes)
    entry = cache.get(key) if cache is not None else None
    want = [b for b in cfg.baselines if entry is None or (b == "eager" and entry.eager is None)
            or (b == "compile" and entry.compile is None and entry.compile_error is None)]
    if want:
        async with state.quiet():
            await judge.send(P.BaselineRequest(nonce=nonce, which=want, timing=cfg.timing))
            rep = await judge.expect(P.BaselineReport, cfg.timeout_baseline_s, "timing the baselines")
        old = entry
        entry = BaselineEntry(
            eager=timing_result(rep.eager) if rep.eager else (old.eager if old else None),
            compile=timing_result(rep.compile) if rep.compile else (old.compile if old else None),
            compile_error=rep.compile_error, measured_at=time.time(),
            eager_bytes=rep.eager_bytes if rep.eager else (old.eager_bytes if old else None),
            compile_bytes=rep.compile_bytes if rep.compile else (old.compile_bytes if old else None))
        if cache is not None:
            cache.put(key, entry)
    if entry is not None:
        state.eager = entry.eager if "eager" in cfg.baselines else None
        state.compiled_baseline = entry.compile if "compile" in cfg.baselines else None
        for name, took in (("eager", entry.eager_bytes), ("compile", entry.compile_bytes)):
            if took is not None:
                state.baseline_bytes[name] = took
