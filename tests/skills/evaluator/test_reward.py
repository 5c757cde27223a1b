"""The reward functions' shape (skills/evaluator/reward.py): the composite reward is -1 on failure, bounded,
monotone in the conservative speedup, clipped so that an outlier counts as the cap, and less a
memory penalty only past the factor (and only where every figure it compares was measured)."""

from __future__ import annotations

import math

import msgspec
import pytest

from skills.evaluator.results import Backend, EvalResult, Flag, MemoryUse, Speedup, StageTimes
from skills.evaluator.reward import (
    MIB,
    CompositeConfig,
    composite,
    get_reward_fn,
    memory_limit,
    milestone,
    over_memory,
)


def result(compile_low: float | None, eager_low: float | None = 2.0, *, correct: bool = True,
           flags: list[Flag] | None = None, memory: MemoryUse | None = None, backend: Backend = "cpu") -> EvalResult:
    """A final evaluation with these conservative speedups (None: that baseline was not timed)."""
    speedups = [Speedup(baseline=b, value=low * 1.01, low=low, high=low * 1.02, faster=low > 1.05)
                for b, low in (("eager", eager_low), ("compile", compile_low)) if low is not None]
    return EvalResult(problem="p", problem_id="x", backend=backend, mode="final", compiled=True, correct=correct,
                      stage="done", error=None, build=None, sets=[], flags=flags or [], candidate=None, eager=None,
                      compiled_baseline=None, speedups=speedups, reward=None, reward_fn=None, precision="fp32",
                      gpu=None, torch_version="", stages=StageTimes(), log="", memory=memory)


def mem(candidate_mib: float | None, eager_mib: float | None = 100.0, compile_mib: float | None = None) -> MemoryUse:
    """Footprints in MiB (None: not measured)."""
    def b(x: float | None) -> int | None:
        return None if x is None else int(x * MIB)

    return MemoryUse(judge_bytes=None, candidate_bytes=None, candidate_call_bytes=b(candidate_mib),
                     eager_bytes=b(eager_mib), compile_bytes=b(compile_mib), candidate_method="peak_rss",
                     baseline_method="peak_rss")


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


def test_memory_penalty_only_past_the_factor() -> None:
    """cpu defaults: limit = 2 x the larger baseline's footprint + 128 MiB; at the limit no penalty,
    past it `memory_penalty` (0.5) off, whatever the speed."""
    limit = 2 * 100 + 128
    assert memory_limit(result(2.0, memory=mem(0.0))) == limit * MIB
    for low in (0.1, 1.0, 2.0, 10.0):
        lean = composite(result(low, memory=mem(limit)))
        assert lean == composite(result(low)), low  # exactly at the limit: nothing taken off
        assert composite(result(low, memory=mem(limit + 1))) == pytest.approx(lean - 0.5)
        assert composite(result(low, memory=mem(10 * limit))) == pytest.approx(lean - 0.5)  # one step, not a slope
    assert not over_memory(result(2.0, memory=mem(limit))) and over_memory(result(2.0, memory=mem(limit + 1)))
    # the larger baseline counts: torch.compile's 300 MiB lifts the limit to 728 MiB
    assert not over_memory(result(2.0, memory=mem(700, eager_mib=100, compile_mib=300)))
    assert over_memory(result(2.0, memory=mem(729, eager_mib=100, compile_mib=300)))
    # the cuda slack is 256 MiB (the candidate's NVML figure counts loaded modules, cuBLAS workspaces)
    assert memory_limit(result(2.0, memory=mem(0.0), backend="cuda")) == (2 * 100 + 256) * MIB


def test_memory_penalty_keeps_the_reward_bounded_and_monotone() -> None:
    """Penalised or not, the reward rises with the speedup; a correct kernel, however slow and
    large, still earns more than a failure (-1): with the defaults a correct one earns -0.5 to 2."""
    lows = [0.01, 0.25, 0.5, 1.0, 2.0, 4.0, 1000.0]
    for footprint in (50.0, 5000.0):
        values = [composite(result(s, memory=mem(footprint))) for s in lows]
        assert values == sorted(values), values
        assert all(-1.0 < v <= 2.0 for v in values), values
    assert composite(result(0.001, memory=mem(1e6))) == pytest.approx(-0.5)
    assert composite(result(0.001, memory=mem(1e6))) > composite(result(0.001, correct=False, memory=mem(1e6)))
    assert composite(result(4.0, memory=mem(1e6), flags=[Flag(name="timer_tampering", detail="d")])) == -1.0


def test_no_memory_penalty_when_a_figure_is_missing() -> None:
    """Nothing measured, the candidate's figure missing, or no baseline's: no penalty (never a guess)."""
    huge = 1e6
    assert composite(result(2.0, memory=None)) == pytest.approx(1.5)
    assert composite(result(2.0, memory=mem(None))) == pytest.approx(1.5)
    assert composite(result(2.0, memory=mem(huge, eager_mib=None, compile_mib=None))) == pytest.approx(1.5)
    assert memory_limit(result(2.0, memory=mem(huge, eager_mib=None))) is None
    assert composite(result(2.0, memory=mem(huge, eager_mib=None, compile_mib=1.0))) == pytest.approx(1.0)  # compile alone


def test_memory_constants_are_settings() -> None:
    cfg = CompositeConfig(memory_factor=4.0, memory_penalty=0.25, memory_slack_cpu_mib=0.0)
    fn = get_reward_fn("composite", cfg)
    assert fn(result(2.0, memory=mem(400))) == pytest.approx(1.5)  # 4 x 100 MiB + 0
    assert fn(result(2.0, memory=mem(401))) == pytest.approx(1.25)
    # a share of `correct`: with correct 0.5 the slowest penalised kernel still earns more than -1
    small = get_reward_fn("composite", CompositeConfig(correct=0.5, memory_penalty=0.9))
    assert small(result(0.001, memory=mem(1e6))) == pytest.approx(0.5 - 1 - 0.45)
    # a penalty that could take a correct kernel down to a failure's -1 is refused
    for bad in (1.0, 2.0, -0.1):
        with pytest.raises(ValueError, match="memory_penalty"):
            CompositeConfig(memory_penalty=bad)
    with pytest.raises(msgspec.ValidationError, match="memory_penalty"):
        msgspec.convert({"memory_penalty": 1.5}, CompositeConfig)
