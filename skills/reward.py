"""Reward functions, chosen by name.

Default `milestone` (CUDA Agent): -1 when the build or correctness fails or a check flags a hack;
1 when correct; 2 when more than the margin faster than eager; 3 when more than the margin faster
than both eager and torch.compile. "Faster" is judged on the timing interval (`Speedup.faster`),
not on one noisy number. The continuous speedups are stored beside the reward in `EvalResult`.
`composite`: the seed system's normalised speedup (bounded, monotone, clipped so that outliers do
not dominate); its memory penalty is not built (docs/reward.md).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import msgspec

from skills.results import EvalResult

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


class CompositeConfig(msgspec.Struct, kw_only=True, frozen=True):
    """Constants of the `composite` reward (docs/reward.md has the table they were chosen by)."""

    cap: float = 4.0
    """Speedup over torch.compile (the conservative end of its interval) that earns the whole speed
    term (+1), and whose inverse costs all of it (-1); beyond, clipped: a 7x outlier counts as 4x."""
    correct: float = 1.0
    """What a correct, unflagged kernel earns at speedup 1 (so a correct kernel earns 0 to 2)."""


DEFAULT_COMPOSITE = CompositeConfig()


def composite(result: EvalResult, config: CompositeConfig = DEFAULT_COMPOSITE) -> float:
    """-1 on failure or a flag; else `correct` + clip(log(s) / log(cap), -1, 1), s the conservative
    speedup over torch.compile (over eager where compile was not timed; `correct` alone where
    neither was): bounded, monotone in s, and an outlier cannot dominate a batch's mean."""
    if failed(result):
        return -1.0
    lows = {s.baseline: s.low for s in result.speedups}
    low = lows.get("compile", lows.get("eager"))
    if low is None or low <= 0 or not math.isfinite(low):
        return config.correct
    return config.correct + max(-1.0, min(1.0, math.log(low) / math.log(config.cap)))


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
