"""Reward functions, chosen by name.

Default `milestone` (CUDA Agent): -1 when the build or correctness fails or a check flags a hack;
1 when correct; 2 when more than the margin faster than eager; 3 when more than the margin faster
than both eager and torch.compile. "Faster" is judged on the timing interval (`Speedup.faster`),
not on one noisy number. The continuous speedups are stored beside the reward in `EvalResult`.
"""

from __future__ import annotations

from collections.abc import Callable

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


REWARDS: dict[str, RewardFn] = {
    "milestone": milestone,
    "speedup_vs_compile": speedup_vs_compile,
    "speedup_vs_eager": speedup_vs_eager,
    "binary": binary,
}


def get_reward_fn(name: str) -> RewardFn:
    """The reward function called `name`; an unknown name lists the valid ones."""
    try:
        return REWARDS[name]
    except KeyError:
        raise KeyError(f"unknown reward function {name!r}; valid: {', '.join(sorted(REWARDS))}") from None
