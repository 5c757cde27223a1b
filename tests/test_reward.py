"""The reward functions' shape (skills/reward.py): the composite reward is -1 on failure, bounded,
monotone in the conservative speedup, and clipped so that an outlier counts as the cap."""

from __future__ import annotations

import math

import pytest

from skills.results import EvalResult, Flag, Speedup, StageTimes
from skills.reward import CompositeConfig, composite, get_reward_fn, milestone


def result(compile_low: float | None, eager_low: float | None = 2.0, *, correct: bool = True,
           flags: list[Flag] | None = None) -> EvalResult:
    """A final evaluation with these conservative speedups (None: that baseline was not timed)."""
    speedups = [Speedup(baseline=b, value=low * 1.01, low=low, high=low * 1.02, faster=low > 1.05)
                for b, low in (("eager", eager_low), ("compile", compile_low)) if low is not None]
    return EvalResult(problem="p", problem_id="x", backend="cpu", mode="final", compiled=True, correct=correct,
                      stage="done", error=None, build=None, sets=[], flags=flags or [], candidate=None, eager=None,
                      compiled_baseline=None, speedups=speedups, reward=None, reward_fn=None, precision="fp32",
                      gpu=None, torch_version="", stages=StageTimes(), log="")


def test_failure_and_flags_cost_minus_one() -> None:
    assert composite(result(3.0, correct=False)) == -1.0
    assert composite(result(3.0, flags=[Flag(name="timer_tampering", detail="d")])) == -1.0


def test_bounded_and_monotone_in_the_conservative_speedup() -> None:
    lows = [0.01, 0.25, 0.5, 0.9, 1.0, 1.1, 2.0, 3.9, 4.0, 7.0, 1000.0]
    values = [composite(result(s)) for s in lows]
    assert values == sorted(values)
    assert all(0.0 <= v <= 2.0 for v in values), values
    assert composite(result(1.0)) == pytest.approx(1.0)  # correct, as fast as torch.compile
    assert composite(result(2.0)) == pytest.approx(1.5)  # half way to the cap on a log scale
    # outliers do not dominate: 7x and 1000x count as the 4x cap; 0.01x as its inverse
    assert composite(result(7.0)) == composite(result(1000.0)) == composite(result(4.0)) == pytest.approx(2.0)
    assert composite(result(0.01)) == composite(result(0.25)) == pytest.approx(0.0)
    # a correct kernel always earns more than a failure, however slow
    assert composite(result(0.001)) > composite(result(0.001, correct=False))


def test_the_conservative_end_and_the_fallbacks() -> None:
    r = result(2.0)
    r.speedups[1].value = 50.0  # a noisy point estimate: only the interval's low end counts
    assert composite(r) == pytest.approx(1.5)
    assert composite(result(None, eager_low=2.0)) == pytest.approx(1.5)  # compile not timed: eager
    assert composite(result(None, eager_low=None)) == 1.0  # nothing timed: correct only


def test_constants_are_settings() -> None:
    cfg = CompositeConfig(cap=2.0, correct=0.5)
    fn = get_reward_fn("composite", cfg)
    assert fn(result(2.0)) == pytest.approx(1.5) and fn(result(8.0)) == pytest.approx(1.5)
    assert fn(result(math.sqrt(2.0))) == pytest.approx(1.0)
    assert get_reward_fn("milestone", cfg) is milestone
    with pytest.raises(KeyError, match="valid: binary, composite, milestone"):
        get_reward_fn("nope")
