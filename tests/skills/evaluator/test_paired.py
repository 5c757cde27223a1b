"""Paired timing (skills/evaluator/paired.py): the final reward's speedups come from rounds of the candidate
and its baselines timed in turn, decided sequentially; on made-up timings, then one real final
evaluation on the cpu backend."""

from __future__ import annotations

from pathlib import Path

import anyio

from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.paired import PairedConfig, paired_speedup, straddles
from skills.evaluator.report import format_result
from skills.evaluator.results import Interval, TimingResult
from tests.conftest import PROBLEMS, PROJECT_ROOT


def _t(median: float, spread: float = 0.01) -> TimingResult:
    return TimingResult(per_call_us=Interval(median=median, low=median * (1 - spread), high=median * (1 + spread), n=100),
                        kernel_us=None, calls=100, cv=spread)


def test_one_loaded_round_does_not_move_the_decision() -> None:
    """The busy-box case: one round's candidate loop ran while the host was loaded (18x slower)."""
    cands = [_t(100.0), _t(1800.0), _t(100.0)]
    bases = [_t(150.0), _t(150.0), _t(150.0)]
    s = paired_speedup("eager", bases, cands, margin=0.05)
    assert s.rounds == 3 and s.value == 1.5 and s.faster
    assert s.round_values == [1.5, 150.0 / 1800.0, 1.5]


def test_load_on_both_sides_of_a_round_cancels() -> None:
    cands = [_t(100.0), _t(300.0), _t(100.0)]
    bases = [_t(130.0), _t(390.0), _t(130.0)]
    s = paired_speedup("eager", bases, cands, margin=0.05)
    assert abs(s.value - 1.3) < 1e-9 and s.faster


def test_straddling_is_decided_by_the_paired_point() -> None:
    wide = [_t(100.0, 0.1)] * 3
    above, below = [_t(108.0, 0.1)] * 3, [_t(102.0, 0.1)] * 3
    up, down = paired_speedup("eager", above, wide, 0.05), paired_speedup("eager", below, wide, 0.05)
    assert straddles(up, 0.05) and straddles(down, 0.05)
    assert up.faster and not down.faster
    clear = paired_speedup("eager", [_t(200.0)] * 3, [_t(100.0)] * 3, 0.05)
    assert not straddles(clear, 0.05) and clear.faster


def test_impossible_timings_give_zero() -> None:
    s = paired_speedup("eager", [_t(100.0)], [_t(0.0)], 0.05)
    assert (s.value, s.low, s.high, s.faster) == (0.0, 0.0, 0.0, False)


def test_a_final_evaluation_is_paired(tmp_path: Path) -> None:
    cfg = EvalConfig(backend="cpu", baselines=["eager"], build=BuildConfig(backend="cpu", cache_dir=str(tmp_path / "b")),
                     timing=TimingConfig(target_seconds=0.05, max_calls=80, min_calls=10),
                     paired=PairedConfig(min_rounds=3, max_rounds=4))
    solution = PROJECT_ROOT / "problems" / "solutions" / "cpu" / "level1" / "01_relu"
    result = anyio.run(lambda: evaluate(PROBLEMS / "level1" / "01_relu.py", solution, mode="final", config=cfg))
    assert result.correct and not result.flags, result.error
    [s] = result.speedups
    assert s.baseline == "eager" and 3 <= s.rounds <= 4 and len(s.round_values) == s.rounds
    assert result.reward in (1.0, 2.0)
    assert f"{s.rounds} paired rounds: " in format_result(result)  # the agent sees the rounds
    assert result.candidate is not None and result.eager is not None
    assert result.candidate.calls >= 3 * 10 and result.eager.calls >= 3 * 10  # every round's calls
    profile = anyio.run(lambda: evaluate(PROBLEMS / "level1" / "01_relu.py", solution, mode="profile", config=cfg))
    assert [s.rounds for s in profile.speedups] == [1]  # profile() stays one loop against the (cached) baseline
