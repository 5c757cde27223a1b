"""Reward functions, chosen by name.

Default `milestone` (CUDA Agent): -1 when the build or correctness fails or a check flags a hack;
1 when correct; 2 when more than the margin faster than eager; 3 when more than the margin faster
than both eager and torch.compile. "Faster" is judged on the timing interval (`Speedup.faster`),
not on one noisy number. The continuous speedups are stored beside the reward in `EvalResult`.
`composite`: the seed system's normalised speedup (bounded, monotone, clipped so that outliers do
not dominate), less a penalty when ModelNew's memory footprint is far above the baselines'
(docs/reward.md).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import msgspec

from skills.evaluator.results import EvalResult, larger_baseline_bytes

RewardFn = Callable[[EvalResult], float]


def failed(result: EvalResult) -> bool:
    """Did not compile, is wrong, or a check fired (reward -1 under every reward function)."""
    return not (result.compiled and result.correct) or bool(result.flags)


def _faster(result: EvalResult, baseline: str) -> bool:
    return any(s.baseline == baseline and s.faster for s in result.speedups)


def speedup(result: EvalResult, baseline: str) -> float | None:
    """The continuous speedup against `baseline`, if it was timed."""
    for s in result.speedups:
        if s.baseline == baseline:
            return s.value
    return None


def milestone(result: EvalResult) -> float:
    """-1 fail or flagged / 1 correct / 2 faster than eager / 3 faster than eager and compile."""
    if failed(result):
        return -1.0
    if _faster(result, "eager") and _faster(result, "compile"):
        return 3.0
    if _faster(result, "eager"):
        return 2.0
    return 1.0


def speedup_vs_compile(result: EvalResult) -> float:
    """-1 on failure, else t_compile / t (0 when the compile baseline was not measured)."""
    if failed(result):
        return -1.0
    return speedup(result, "compile") or 0.0


def speedup_vs_eager(result: EvalResult) -> float:
    """-1 on failure, else t_eager / t (0 when the eager baseline was not measured)."""
    if failed(result):
        return -1.0
    return speedup(result, "eager") or 0.0


def binary(result: EvalResult) -> float:
    """1 when correct and unflagged, else 0."""
    return 0.0 if failed(result) else 1.0


MIB = 1 << 20


class CompositeConfig(msgspec.Struct, kw_only=True, frozen=True):
    """Constants of the `composite` reward (docs/reward.md has the table they were chosen by)."""

    cap: float = 4.0
    """Speedup over torch.compile (the conservative end of its interval) that earns the whole speed
    term (+1), and whose inverse costs all of it (-1); beyond, clipped: a 7x outlier counts as 4x."""
    correct: float = 1.0
    """What a correct, unflagged kernel earns at speedup 1 (so a correct kernel earns 0 to 2, before
    any memory penalty)."""
    memory_penalty: float = 0.5
    """Share of `correct` taken off when ModelNew's footprint during its calls exceeds memory_factor
    x the larger baseline's + the backend's slack (EvalResult.memory); below 1, so a correct kernel
    still earns more than a failure (with the defaults 0.5 off: -0.5 to 2)."""
    memory_factor: float = 2.0
    """How many times the larger baseline's footprint (eager, torch.compile) ModelNew may take before
    the penalty (a fair kernel's workspace fits; a 4x scratch buffer does not)."""
    memory_slack_cuda_mib: float = 256.0
    """cuda: MiB beyond memory_factor x the baseline that are never penalised: what the candidate's
    NVML figure counts and the baselines' allocator figure does not (loaded kernel modules, cuBLAS
    workspaces, the caching allocator's rounding of segments)."""
    memory_slack_cpu_mib: float = 128.0
    """cpu: MiB beyond memory_factor x the baseline that are never penalised: resident pages the
    candidate's worker gains that the judge's loop does not (the harness's probe call under the cpu
    profiler: 0-100 MiB of heap it leaves resident; the extension and model_new.py mapped in, OpenMP
    thread stacks)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.memory_penalty < 1.0:
            raise ValueError("composite.memory_penalty (a share of composite.correct) must be at least 0 and below 1:"
                             " a correct kernel, however slow and large, must earn more than a failure (-1)")


DEFAULT_COMPOSITE = CompositeConfig()


def memory_limit(result: EvalResult, config: CompositeConfig = DEFAULT_COMPOSITE) -> float | None:
    """Bytes ModelNew's footprint may reach unpenalised: memory_factor x the larger baseline's
    footprint + the backend's slack (None when no baseline's footprint was measured)."""
    m = result.memory
    base = larger_baseline_bytes(m.eager_bytes, m.compile_bytes) if m is not None else None
    if base is None:
        return None
    slack = config.memory_slack_cuda_mib if result.backend == "cuda" else config.memory_slack_cpu_mib
    return config.memory_factor * base + slack * MIB


def over_memory(result: EvalResult, config: CompositeConfig = DEFAULT_COMPOSITE) -> bool:
    """ModelNew's footprint exceeds memory_limit (False when either side was not measured)."""
    limit = memory_limit(result, config)
    used = result.memory.candidate_call_bytes if result.memory is not None else None
    return limit is not None and used is not None and used > limit


def composite(result: EvalResult, config: CompositeConfig = DEFAULT_COMPOSITE) -> float:
    """-1 on failure or a flag; else `correct` + clip(log(s) / log(cap), -1, 1), s the conservative
    speedup over torch.compile (over eager where compile was not timed; `correct` alone where
    neither was), less `memory_penalty` x `correct` when over_memory: bounded (above -1 for correct work),
    monotone in s, and an outlier cannot dominate a batch's mean."""
    if failed(result):
        return -1.0
    penalty = config.memory_penalty * config.correct if over_memory(result, config) else 0.0
    lows = {s.baseline: s.low for s in result.speedups}
    low = lows.get("compile", lows.get("eager"))
    if low is None or low <= 0 or not math.isfinite(low):
        return config.correct - penalty
    return config.correct + max(-1.0, min(1.0, math.log(low) / math.log(config.cap))) - penalty


REWARDS: dict[str, RewardFn] = {
    "milestone": milestone,
    "speedup_vs_compile": speedup_vs_compile,
    "speedup_vs_eager": speedup_vs_eager,
    "binary": binary,
    "composite": composite,
}


def get_reward_fn(name: str, composite_config: CompositeConfig | None = None) -> RewardFn:
    """The reward function called `name` (composite with these constants); an unknown name lists
    the valid ones."""
    if name == "composite" and composite_config is not None:
        return functools.partial(composite, config=composite_config)
    try:
        return REWARDS[name]
    except KeyError:
        raise KeyError(f"unknown reward function {name!r}; valid: {', '.join(sorted(REWARDS))}") from None
