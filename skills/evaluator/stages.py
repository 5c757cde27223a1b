"""The stages an evaluation drives its two workers through (import, correctness, timing,
baselines), with the limits around the candidate: its pids cgroup, the disk quota, memory sampling."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Literal, cast, get_args

import anyio
import msgspec

from skills.evaluator.baseline_timing import baseline_key, baselines_for_agent, time_baselines
from skills.evaluator.baselines import BaselineCache, BaselineEntry
from skills.evaluator.build import BuildConfig, BuildResult
from skills.evaluator.config import EvalConfig
from skills.evaluator.footprint import CandidateFootprint
from skills.evaluator.harness import protocol as P
from skills.evaluator.launch import Scratch, Slot
from skills.evaluator.nvml import MemorySampler, Nvml, TreePeaks
from skills.evaluator.pids import PidsGroup, descendants
from skills.evaluator.pids import hierarchy as pids_hierarchy
from skills.evaluator.precision_code import declares_tf32, scan_build
from skills.evaluator.quota import DiskQuota
from skills.evaluator.results import MemoryUse, Stage
from skills.evaluator.rounds import calls_window, candidate_round, from_judge, paired_rounds
from skills.evaluator.schedstat import worker_pid
from skills.evaluator.sharing import SharingWatch, check_sharing, off_without_boundary
from skills.evaluator.state import EvalState, environment_fault
from skills.evaluator.workers import Worker, WorkerFailed

STAGES = set(get_args(Stage))


async def run_workers(problem: Path, built: BuildResult | None, slot: Slot,
                       state: EvalState, cache: BaselineCache | None) -> None:
    cfg = state.config
    judge, cand, scratch, nonce = slot.judge, slot.cand, slot.scratch, slot.nonce
    seed = secrets.randbits(62)
    sizes = cfg.sizes or ("small" if cfg.backend == "cpu" else "default")
    quota = DiskQuota(_quota_paths(cfg, scratch), cfg.sandbox.max_out_bytes)
    group: PidsGroup | None = None
    sampler = memory_sampler(cfg)
    if sampler is not None:
        tree = sampler.watch({"judge": judge.proc.pid, "candidate": cand.proc.pid})
        state.footprint = CandidateFootprint.cuda(sampler.nvml, tree)
    elif cfg.backend == "cpu" and cfg.measure_memory:
        state.footprint = CandidateFootprint.cpu(cand.proc.pid, judge.proc.pid)
    nvml = _nvml(cfg)
    if nvml is not None and cfg.shared_gpu_check:
        owners = tree if sampler is not None else TreePeaks({"judge": judge.proc.pid, "candidate": cand.proc.pid})
        state.sharing = SharingWatch(
            nvml, lambda pid: owners.owner(pid) is not None,
            candidate_pids=lambda: group.procs() if group is not None else set(),
            candidate_ns_roots=lambda: descendants(cand.proc.pid))
    async with anyio.create_task_group() as tg:
        tg.start_soon(judge.drain_stderr)
        tg.start_soon(cand.drain_stderr)
        try:
            group = await _limit_tasks(cand, scratch, state)  # before any candidate code runs
            off_without_boundary(state, pids_group=group)
            tg.start_soon(quota.watch, cand.kill)
            await _stages(judge, cand, problem, built, scratch, state, cache, nonce, seed, sizes)
        except WorkerFailed as exc:
            state.error = exc.message
            if exc.stage in STAGES:
                state.stage = cast(Stage, exc.stage)
            if exc.flag is not None:
                state.flags.append(exc.flag)
            if exc.worker == "judge":  # the problem refused, or the trusted side failed
                state.error = environment_fault(state, exc.message)
            await baselines_for_agent(judge, cand, state, cache, nonce, sizes)
        finally:
            quota.stop()
            with anyio.CancelScope(shield=True):
                await cand.close()
                await judge.close()
                state.log = cand.log_tail()
                await _after_candidate(group, quota, state)
                if sampler is not None:
                    sampler.trees.remove(tree)
                    state.memory = MemoryUse(judge_bytes=tree.peaks.get("judge"), candidate_bytes=tree.peaks.get("candidate"))


_SAMPLERS: dict[str, MemorySampler | None] = {}
_NVMLS: dict[str, Nvml | None] = {}


def _nvml(cfg: EvalConfig) -> Nvml | None:
    """NVML for the evaluation's GPU, opened once per GPU for the memory sampler and the shared-GPU
    check alike (None: cpu, or unreadable)."""
    if cfg.backend != "cuda":
        return None
    key = cfg.gpu or "0"
    if key not in _NVMLS:
        _NVMLS[key] = Nvml.open(int(key) if key.isdigit() else 0)
    return _NVMLS[key]


def memory_sampler(cfg: EvalConfig) -> MemorySampler | None:
    """The process's NVML sampler of the evaluation's GPU (started once, kept running: one thread
    serves every evaluation there), or None on the cpu backend and where NVML cannot be read."""
    if cfg.backend != "cuda" or not cfg.measure_memory:
        return None
    key = cfg.gpu or "0"
    if key not in _SAMPLERS:
        nvml = _nvml(cfg)
        _SAMPLERS[key] = MemorySampler(nvml).__enter__() if nvml is not None else None
    return _SAMPLERS[key]


def _quota_paths(cfg: EvalConfig, scratch: Scratch) -> list[Path]:
    """The host-visible folders the candidate can fill (RAM in /dev/shm): out/, tmp/ (its TMPDIR
    when unsandboxed) and its own torch extensions folder."""
    return [scratch.root / "out", scratch.root / "tmp", scratch.root / "torch_extensions"]


async def _limit_tasks(cand: Worker, scratch: Scratch, state: EvalState) -> PidsGroup | None:
    """Row 20: the candidate worker's processes into a pids cgroup of their own, capped at what
    they are now plus max_processes; None where no such cgroup can be made (state.sandbox says so)."""
    if pids_hierarchy() is None:
        return None
    try:
        group = await anyio.to_thread.run_sync(PidsGroup.make, scratch.root.name)
    except OSError as exc:
        state.sandbox = f"{state.sandbox} (but its pids cgroup could not be made: {exc}; tasks not capped)"
        return None
    try:
        await anyio.to_thread.run_sync(group.adopt, cand.proc.pid, state.config.sandbox.max_processes)
    except OSError as exc:
        state.sandbox = f"{state.sandbox} (but the candidate could not be moved into it: {exc}; tasks not capped)"
    return group


async def _after_candidate(group: PidsGroup | None, quota: DiskQuota, state: EvalState) -> None:
    """Once the candidate is killed: its pids cgroup goes, and one last look at its folders (a
    write between two polls) decides the disk quota, whose failure replaces any other error."""
    if group is not None:
        await group.release()
    if await quota.check():
        state.error = quota.message()
        state.flags.append(quota.flag())


async def _stages(judge: Worker, cand: Worker, problem: Path, built: BuildResult | None,
                  scratch: Scratch, state: EvalState, cache: BaselineCache | None, nonce: str, seed: int,
                  sizes: Literal["default", "small"]) -> None:
    cfg = state.config
    t = time.perf_counter()
    state.stage = "import"
    evidence = await anyio.to_thread.run_sync(scan_build, built, scratch.workspace / "kernels",
                                              cfg.build or BuildConfig(backend=cfg.backend))
    t_scan = time.perf_counter() - t
    if state.footprint is not None and cfg.backend == "cuda":
        # a CUDA context's memory, read on the warm judge before its job (skills/evaluator/footprint.py)
        await judge.wait_for(P.Warm, cfg.timeout_import_s)
        state.footprint.base()
    await judge.send(P.JudgeStart(nonce=nonce, problem_path=str(problem), sizes=sizes, device=cfg.backend, seed=seed,
                                  n_sets=cfg.n_sets, held_sets=cfg.held_sets, exchange_dir=str(scratch.root / "exchange"),
                                  shape_check=cfg.shape_check, evidence=evidence))
    if state.footprint is not None and cfg.backend == "cpu":
        # what the warm candidate holds before any candidate code runs (torch imported)
        await cand.wait_for(P.Warm, cfg.timeout_import_s)
        state.footprint.base()
    await cand.send(P.CandStart(
        nonce=nonce, workspace=str(scratch.workspace), lib_path=scratch.lib,
        gpu_memory_fraction=cfg.gpu_memory_fraction if cfg.backend == "cuda" else None,
        functions=[msgspec.to_builtins(f) for f in built.functions] if built else [],
        flavour=built.flavour if built else "none", device=cfg.backend,
        precision="tf32" if await anyio.to_thread.run_sync(declares_tf32, problem) else "fp32",
        kernel_names=[r.kernel for r in built.resources] if built else [],
        libraries=[lib.name for lib in built.libraries if lib.lib_dir] if built else []))
    ready = await judge.expect(P.JudgeReady, cfg.timeout_import_s, "computing the reference")
    judge_ready = time.perf_counter() - t
    state.problem, state.problem_id, state.precision = ready.name, ready.problem_id, ready.precision
    state.gpu, state.torch_version, state.input_shapes = ready.gpu, ready.torch_version, ready.input_shapes
    await cand.expect(P.CandImported, cfg.timeout_import_s, "importing model_new.py")
    state.times.workers_ready = time.perf_counter() - t
    state.times.parts.update({"build scan": t_scan, "judge ready": judge_ready,
                              **{f"judge start: {k}": v for k, v in ready.seconds.items()}})

    t = time.perf_counter()
    state.stage = "correctness"
    await cand.send(P.CandInit(nonce=nonce, exchange_dir=str(scratch.root / "exchange"), shape_init=ready.shape_init,
                               judge_reserve_bytes=ready.reserve_bytes if cfg.backend == "cuda" else None))
    init = await cand.expect(P.CandReady, cfg.timeout_run_s, "building ModelNew")
    with calls_window(state):
        pid = await anyio.to_thread.run_sync(worker_pid, cand.proc.pid)
        await judge.send(P.CheckRequest(nonce=nonce, timing=cfg.timing, limit_s=cfg.timeout_run_s,
                                        own_limit_s=cfg.timeout_judge_s, candidate_pid=pid,
                                        candidate_root_pid=cand.proc.pid))
        report = await from_judge(judge, cand, P.CheckReport, cfg.timeout_run_s + cfg.timeout_judge_s,
                                  "running the input sets")
    state.sets = report.sets
    state.add_flags(report.flags)
    state.times.parts.update({"candidate init": init.seconds, **{f"judge {k}": v for k, v in report.seconds.items()}})
    state.times.correctness = time.perf_counter() - t
    if state.mode == "test" or not all(s.ok for s in state.sets) or state.flags:
        await baselines_for_agent(judge, cand, state, cache, nonce, sizes)
        return

    t = time.perf_counter()
    state.stage = "timing"
    state.flags_at_timing = len(state.flags)
    if state.sharing is not None:
        state.sharing.begin()
    if state.mode != "final" or cfg.paired.min_rounds <= 0:
        state.candidate, _ = await candidate_round(judge, cand, state, ready, seed, nonce, 0)
        check_sharing(state)
        await cand.close()  # free its memory and the GPU before baselines run
        if state.environment_fault is not None:
            return
        state.times.timing = time.perf_counter() - t
        t = time.perf_counter()
        state.stage = "baseline"
        await time_baselines(judge, state, cache, nonce, sizes)
        state.times.baselines = time.perf_counter() - t
        state.stage = "done"
        return
    await paired_rounds(judge, cand, state, ready, seed, nonce)
    if cache is not None and (state.eager is not None or state.compiled_baseline is not None):
        # the paired rounds' baselines, fresher than any cached ones, serve the next profile()
        cache.put(baseline_key(state, sizes), BaselineEntry(
            eager=state.eager, compile=state.compiled_baseline, compile_error=state.compile_error,
            measured_at=time.time(), eager_bytes=state.baseline_bytes.get("eager"),
            compile_bytes=state.baseline_bytes.get("compile")))
    state.times.timing = time.perf_counter() - t - (state.times.baselines or 0.0)  # the candidate's rounds
    state.stage = "done"
