"""The evaluator (trusted parent): build, then judge + candidate workers, then statistics and reward.

    build kernels/ (content-hash cache)
    start judge and candidate workers at once (each a fresh process, own process group), joined
    by a socket pair (the link) the parent made
      judge: input sets from seeds derived from a secret seed, reference outputs; weights -> exchange dir
      candidate: bind kernels, import model_new.py, build ModelNew from the weights
    judge drives the candidate over the link: each call's inputs written into shared memory (the
      arena) just before the call, the outputs read back from it and compared whole
      correctness: every set once; [profile/final] a timed loop with canaries at secret places and
      a secret subset of calls checked (skills/evaluator/harness/driver.py)
    [profile/final] baselines from the cache, else timed by the judge
    parent: the clock checks on the kernel-stamped marks, intervals, speedups, flags, reward

Input sets, reference outputs, tolerances, check positions and statistics never exist in the
candidate's process. Any crash, hang or timeout of a worker ends this one evaluation with a
structured failure.
"""

from __future__ import annotations

import secrets
import shutil
import time
from pathlib import Path

import anyio

from skills.evaluator import ext_cache
from skills.evaluator.baseline_timing import judge_baselines
from skills.evaluator.baselines import BaselineCache
from skills.evaluator.build import BuildConfig, BuildResult, build
from skills.evaluator.config import EvalConfig
from skills.evaluator.kernel_audit import run_audit
from skills.evaluator.launch import (
    Scratch,
    copy_problem,
    describe_sandbox,
    fill_scratch,
    make_scratch,
    start_slot,
    worker_env,
)
from skills.evaluator.pool import WarmPool
from skills.evaluator.results import BuildSummary, EvalResult, Mode
from skills.evaluator.sandbox import EXTENSIONS_MOUNT, SandboxUnavailable
from skills.evaluator.stages import run_workers
from skills.evaluator.state import EvalState, environment_fault, finish, is_correct
from skills.evaluator.static_check import check_workspace
from skills.evaluator.workers import Worker, WorkerFailed


def build_workspace(workspace: Path, config: EvalConfig) -> BuildResult | None:
    """Build kernels/ when it holds sources; None when model_new.py builds its own (load_inline)."""
    kdir = workspace / "kernels"
    if not kdir.is_dir() or not any(p.suffix in (".cu", ".cpp", ".cc") for p in kdir.iterdir()):
        return None
    return build(kdir, config.build or BuildConfig(backend=config.backend))

async def evaluate(problem_path: str | Path, workspace: str | Path, *, mode: Mode = "test",
                   config: EvalConfig | None = None, baseline_cache: BaselineCache | None = None,
                   pool: WarmPool | None = None) -> EvalResult:
    """Grade the workspace's model_new.py (+ kernels/) against the problem. Never raises for bad candidates.

    With a `pool` (same config), the workers were started before the call; each is still used once.
    """
    cfg = config or EvalConfig()
    state = EvalState(str(problem_path), cfg, mode)
    ws = Path(await anyio.Path(workspace).resolve())
    problem = Path(await anyio.Path(problem_path).resolve())
    if not await anyio.Path(ws / "model_new.py").is_file():
        state.error = "model_new.py does not exist: write it with write_file"
        return finish(state)
    flags = await anyio.to_thread.run_sync(check_workspace, ws) if cfg.static_checks and not cfg.torch_allowed else []
    if flags:
        state.flags += flags
        state.error = "static checks of model_new.py and kernels/ failed (see the flags)"
        return finish(state)
    state.stage = "build"
    t = time.perf_counter()
    built = await anyio.to_thread.run_sync(build_workspace, ws, cfg)
    state.times.build = time.perf_counter() - t
    if built is not None:
        state.build = BuildSummary(ok=built.ok, cached=built.cached, seconds=built.seconds,
                                   errors=built.errors, flavour=built.flavour,
                                   libraries=[lib.name for lib in built.libraries if lib.lib_dir])
        if not built.ok:
            state.compiled = False
            state.error = "the kernels did not compile:\n" + built.errors
            return finish(state)
    try:
        slot = await pool.take() if pool is not None else await start_slot(cfg)
    except (SandboxUnavailable, OSError) as exc:  # no sandbox, no process, no scratch space: not the agent's doing
        state.error = environment_fault(state, f"the evaluation's workers could not be started: {exc}")
        return finish(state)
    state.sandbox = describe_sandbox(cfg.sandbox, slot.scratch)
    state.agent_paths = [str(slot.scratch.root), str(EXTENSIONS_MOUNT)]
    if pool is not None:
        state.quiet = pool.quiet
    try:
        try:
            await anyio.to_thread.run_sync(fill_scratch, slot.scratch, ws, built)
            await anyio.to_thread.run_sync(copy_problem, problem, slot.scratch)
            reuse = await anyio.to_thread.run_sync(ext_cache.seed, cfg.extension_cache_dir, slot.scratch.workspace,
                                                   slot.scratch.root / "torch_extensions", cfg.backend, slot.scratch.run_as)
        except OSError as exc:  # e.g. the disk or /dev/shm is full
            state.error = environment_fault(state, f"the evaluation's scratch folder could not be filled: {exc}")
            await slot.cand.close()
            await slot.judge.close()
            return finish(state)
        await run_workers(problem, built, slot, state, baseline_cache)
        await _audit(built, slot.scratch, state)
        passed = is_correct(state) and not state.flags
        state.times.parts |= await anyio.to_thread.run_sync(ext_cache.keep, reuse, passed)
    finally:
        await anyio.to_thread.run_sync(shutil.rmtree, slot.scratch.root, True)
    return finish(state)

async def _audit(built: BuildResult | None, scratch: Scratch, state: EvalState) -> None:
    """Final mode on cuda, once everything else passed: the kernels one call runs, listed by Nsight
    Compute outside the candidate's process (skills/evaluator/kernel_audit.py). Its flags join the
    rest; a skipped audit is noted; a failed audited run makes the evaluation an environment fault."""
    cfg = state.config
    if not (state.mode == "final" and cfg.backend == "cuda" and cfg.kernel_audit and not cfg.torch_allowed):
        return
    if state.error or state.flags or state.environment_fault or not is_correct(state):
        return
    # ncu_target calls at the problem's own sizes: compare with the judged time only when those were timed
    judged = state.candidate.per_call_us.median if state.candidate is not None and (cfg.sizes or "default") == "default" else None
    t = time.perf_counter()
    audit, note = await run_audit(scratch.root / "exchange" / "problem.py", scratch, built, cfg, judged)
    state.times.parts["kernel audit"] = time.perf_counter() - t
    state.audit, state.audit_note = audit, note
    if audit is not None:
        state.flags += audit.flags
    elif note is not None and note.startswith("failed:"):
        state.error = environment_fault(state, (
            f"the kernel audit {note.removeprefix('failed: ')}; the timed calls passed, so this is not scored"
            f" (a workspace that fails only when watched is not paid either)"))


async def evaluate_baselines(problem_path: str | Path, *, config: EvalConfig | None = None,
                             baseline_cache: BaselineCache | None = None) -> EvalResult:
    """profile mode with nothing to run (model_new.py still the template): the judge alone draws the
    sets and times the baselines, as it does for a failed candidate (`baselines_for_agent`), so the
    workflow's first profile() shows the times to beat without a candidate failing at init. The
    times go to the cache under the same key, so the next profile() reuses them."""
    cfg = config or EvalConfig()
    state = EvalState(str(problem_path), cfg, "profile")
    problem = Path(await anyio.Path(problem_path).resolve())
    nonce = secrets.token_hex(16)
    try:
        scratch = await anyio.to_thread.run_sync(make_scratch, cfg.sandbox)
    except OSError as exc:
        state.error = environment_fault(state, f"the judge's scratch folder could not be made: {exc}")
        return finish(state)
    try:
        try:
            judge = await Worker.start("judge", [cfg.python, "-m", "skills.evaluator.harness.judge"],
                                       worker_env(cfg, scratch.root), nonce)
        except OSError as exc:
            state.error = environment_fault(state, f"the judge could not be started: {exc}")
            return finish(state)
        async with anyio.create_task_group() as tg:
            tg.start_soon(judge.drain_stderr)
            try:
                await judge_baselines(judge, problem, scratch, state, baseline_cache, nonce)
            except WorkerFailed as exc:
                state.error = environment_fault(state, exc.message)
            finally:
                with anyio.CancelScope(shield=True):
                    await judge.close()
    finally:
        await anyio.to_thread.run_sync(shutil.rmtree, scratch.root, True)
    return finish(state)
