"""What an evaluation has learned so far (`EvalState`), and the `EvalResult` made from it at the end."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

from skills.evaluator.config import TORCH_RULE_FLAGS, EvalConfig
from skills.evaluator.footprint import CandidateFootprint
from skills.evaluator.harness import protocol as P
from skills.evaluator.paired import round_speedup
from skills.evaluator.results import (
    BuildSummary,
    CpuSamples,
    EvalResult,
    Flag,
    KernelAudit,
    MemoryUse,
    Mode,
    Precision,
    SetResult,
    Speedup,
    Stage,
    StageTimes,
    TimingResult,
)
from skills.evaluator.reward import get_reward_fn, memory_limit
from skills.evaluator.stats import coefficient_of_variation, median_interval

if TYPE_CHECKING:
    from skills.evaluator.sharing import SharingWatch


class EvalState:
    """What an evaluation has learned so far (turned into an EvalResult at the end)."""

    def __init__(self, problem_path: str, config: EvalConfig, mode: Mode) -> None:
        self.problem = Path(problem_path).stem
        self.problem_id = ""
        self.mode = mode
        self.stage: Stage = "load"
        self.error: str | None = None
        self.compiled = True
        self.build: BuildSummary | None = None
        self.sets: list[SetResult] = []
        self.flags: list[Flag] = []
        self.candidate: TimingResult | None = None
        self.eager: TimingResult | None = None
        self.compiled_baseline: TimingResult | None = None
        self.precision: Precision = "fp32"
        self.gpu: str | None = None
        self.torch_version = ""
        self.input_shapes: list[list[int]] = []
        self.times = StageTimes()
        self.log = ""
        self.sandbox: str | None = None
        self.paired: list[Speedup] | None = None
        """Final mode: the speedups from paired rounds (skills/evaluator/paired.py), which the reward uses."""
        self.compile_error: str | None = None
        self.environment_fault: str | None = None
        """Set when the environment, not the candidate, stopped the evaluation (reward None)."""
        self.config = config
        self.quiet: Callable[[], AbstractAsyncContextManager[None]] = contextlib.nullcontext
        """Held around timed loops: the warm pool starts no worker's CUDA meanwhile."""
        self.began = time.perf_counter()
        self.memory: MemoryUse | None = None
        """cuda: the workers' NVML peaks (set once both are closed)."""
        self.footprint: CandidateFootprint | None = None
        """ModelNew's footprint, measured around its calls (None: not measured)."""
        self.baseline_bytes: dict[str, int] = {}
        """Each baseline's footprint (the largest of its rounds'; from the cache where its time is)."""
        self.audit: KernelAudit | None = None
        """cuda final mode: the kernel audit (skills/evaluator/kernel_audit.py)."""
        self.audit_note: str | None = None
        """Why the kernel audit was skipped or how its run failed."""
        self.agent_paths: list[str] = []
        """Where the agent's code is mapped from in the candidate's process (the scratch folder, the
        sandbox's extensions mount): the cpu sampler's `agent` (skills/evaluator/cpu_samples.py)."""
        self.cpu_samples: CpuSamples | None = None
        """cpu: the samples of every timed round so far (skills/evaluator/cpu_samples.py)."""
        self.cpu_samples_note: str | None = None
        """cpu: why the timed calls could not be sampled."""
        self.sharing: SharingWatch | None = None
        """cuda: who else ran kernels on the GPU during the timed calls (skills/evaluator/sharing.py)."""
        self.flags_at_timing = 0
        """len(flags) when the timed calls began: the flags a shared GPU makes void are the later ones."""

    def add_flags(self, flags: list[Flag]) -> None:
        """New flags (one per name), less the torch-op rule's where the config allows torch."""
        seen = {g.name for g in self.flags}
        self.flags += [f for f in flags if f.name not in seen
                       and not (self.config.torch_allowed and f.name in TORCH_RULE_FLAGS)]


def timing_result(samples: P.Samples) -> TimingResult:
    return TimingResult(per_call_us=median_interval(samples.per_call_us), kernel_us=samples.kernel_us,
                        calls=len(samples.per_call_us), cv=coefficient_of_variation(samples.per_call_us),
                        caller_us=median_interval(samples.caller_us) if samples.caller_us else None,
                        lead_us=statistics.median(samples.lead_us) if samples.lead_us else None)


def speedup(baseline: str, base: TimingResult, cand: TimingResult, margin: float) -> Speedup:
    """One candidate loop against one baseline loop (profile mode: the baseline maybe cached)."""
    value, low, high = round_speedup(base, cand)
    return Speedup(baseline=baseline, value=value, low=low, high=high, faster=low > 1.0 + margin)


def is_correct(state: EvalState) -> bool:
    """Every set was compared and passed, and nothing stopped the evaluation."""
    return bool(state.sets) and all(s.ok for s in state.sets) and state.error is None


def finish(state: EvalState) -> EvalResult:
    cfg = state.config
    speedups = list(state.paired or [])
    if state.candidate is not None and state.paired is None:
        for name, base in (("eager", state.eager), ("compile", state.compiled_baseline)):
            if base is not None:
                speedups.append(speedup(name, base, state.candidate, cfg.margin))
    correct = is_correct(state)
    state.times.total = time.perf_counter() - state.began
    result = EvalResult(
        problem=state.problem, problem_id=state.problem_id, backend=cfg.backend, mode=state.mode,
        compiled=state.compiled, correct=correct, stage=state.stage if state.error else "done",
        error=state.error, build=state.build, sets=state.sets, flags=state.flags,
        candidate=state.candidate, eager=state.eager, compiled_baseline=state.compiled_baseline,
        speedups=speedups, reward=None, reward_fn=None, precision=state.precision, gpu=state.gpu,
        torch_version=state.torch_version, stages=state.times, log=state.log, sandbox=state.sandbox,
        environment_fault=state.environment_fault, input_shapes=state.input_shapes,
        torch_allowed=cfg.torch_allowed, memory=memory_use(state), audit=state.audit, audit_note=state.audit_note,
        cpu_samples=state.cpu_samples, cpu_samples_note=state.cpu_samples_note,
    )
    if result.memory is not None:
        limit = memory_limit(result, cfg.composite)
        result.memory.limit_bytes = int(limit) if limit is not None else None
    if state.mode == "final" and state.environment_fault is None and not (state.error and state.stage == "problem"):
        grade(result, cfg)
    return result


def grade(result: EvalResult, cfg: EvalConfig) -> None:
    """Set the final evaluation's reward under the config's reward function: every reward is set here."""
    result.reward = get_reward_fn(cfg.reward_fn, cfg.composite)(result)
    result.reward_fn = cfg.reward_fn


_PRECISIONS: dict[str, Precision] = {"fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16"}


def untouched_result(cfg: EvalConfig, *, problem: str, problem_id: str, precision: str | None) -> EvalResult:
    """The final evaluation of a workspace the agent never touched (`Workspace.untouched`), decided
    without starting workers: nothing was written, so it fails at the load stage."""
    result = EvalResult(
        problem=problem, problem_id=problem_id, backend=cfg.backend, mode="final", compiled=True,
        correct=False, stage="load", error="model_new.py is still the template: nothing was written",
        build=None, sets=[], flags=[], candidate=None, eager=None, compiled_baseline=None, speedups=[],
        reward=None, reward_fn=None, precision=_PRECISIONS.get(precision or "", "fp32"), gpu=None,
        torch_version=torch_version(), stages=StageTimes(total=0.0), log="")
    grade(result, cfg)
    return result


def torch_version() -> str:
    """This process's torch version, read from its installed metadata (torch itself is not imported here)."""
    try:
        return version("torch")
    except PackageNotFoundError:
        return ""


def memory_use(state: EvalState) -> MemoryUse | None:
    """The workers' GPU peaks and each callable's footprint (None: nothing was measured)."""
    got = state.memory or MemoryUse(judge_bytes=None, candidate_bytes=None)
    fp = state.footprint
    got.candidate_call_bytes = fp.bytes if fp is not None else None
    got.candidate_method = fp.method if fp is not None else None
    got.eager_bytes = state.baseline_bytes.get("eager") if state.eager is not None else None
    got.compile_bytes = state.baseline_bytes.get("compile") if state.compiled_baseline is not None else None
    if got.eager_bytes is not None or got.compile_bytes is not None:
        got.baseline_method = "allocator" if state.config.backend == "cuda" else "peak_rss"
    measured = (got.judge_bytes, got.candidate_bytes, got.candidate_call_bytes, got.eager_bytes, got.compile_bytes)
    return got if any(b is not None for b in measured) else None

def environment_fault(state: EvalState, cause: str) -> str:
    """Record that the environment could not finish this evaluation (reward None: the judge is
    trusted code, so its crash, OOM or timeout, a baseline that fails and a worker or sandbox that
    cannot start say nothing about the candidate). Returns the message for the agent."""
    state.environment_fault = cause
    return f"{cause}\n(an environment fault, not your kernel's: this evaluation has no reward)"
