"""Paired timing: the final reward's speedups come from the candidate and its baselines timed in
turn, in the same evaluation, under the same conditions.

A round is one timed loop of the candidate followed at once by one of each baseline. Its speedup
is the ratio of the medians, with the within-round interval (baseline low over candidate high, and
the reverse). Over the rounds, the point is the median of the rounds' ratios and the interval is
the median of their bounds: a round that load slowed on one side only moves one ratio, not the
decision. Load that lasts changes both sides of a round alike, which is why the rounds are paired.

The decision is sequential: after `min_rounds`, while an interval straddles the threshold
(1 + margin) another round is timed, up to `max_rounds`; still straddling then, the paired point
decides. Today's one-shot form compared a candidate timed under one load with baselines cached
from another: a layer norm at 1.4-1.7x eager was judged 0.66x on a busy box and a fused layer
norm + GELU at ~1.55x was judged 11.3x; the same relu scored 1, 1, 3, 1, 3 in five episodes.
"""

from __future__ import annotations

import statistics

import msgspec

from skills.evaluator.harness import protocol as P
from skills.evaluator.results import Speedup, TimingResult


class PairedConfig(msgspec.Struct, kw_only=True, frozen=True):
    """How the final evaluation times the candidate against its baselines."""

    min_rounds: int = 3
    """Rounds (candidate loop, then each baseline's) before deciding; 0 turns pairing off, so the
    final evaluation uses the cached baselines as profile() does."""
    max_rounds: int = 7
    """Most rounds, spent only while a speedup's interval straddles 1 + margin."""


def round_speedup(base: TimingResult, cand: TimingResult) -> tuple[float, float, float]:
    """(ratio of medians, low, high) of one round; zeros for impossible timings (flagged elsewhere)."""
    b, c = base.per_call_us, cand.per_call_us
    if min(c.low, c.median, c.high) <= 0:
        return 0.0, 0.0, 0.0
    return b.median / c.median, b.low / c.high, b.high / c.low


def paired_speedup(baseline: str, bases: list[TimingResult], cands: list[TimingResult], margin: float) -> Speedup:
    """The speedup over `baseline` from the rounds both sides were timed in."""
    rounds = [round_speedup(b, c) for b, c in zip(bases, cands, strict=False)]
    value = statistics.median(r[0] for r in rounds)
    low = statistics.median(r[1] for r in rounds)
    high = statistics.median(r[2] for r in rounds)
    threshold = 1.0 + margin
    decided = low > threshold or high <= threshold
    return Speedup(baseline=baseline, value=value, low=low, high=high,
                   faster=low > threshold if decided else value > threshold,
                   rounds=len(rounds), round_values=[r[0] for r in rounds])


def straddles(s: Speedup, margin: float) -> bool:
    """The interval holds the threshold: more rounds may decide it."""
    return s.low <= 1.0 + margin < s.high


def merged(samples: list[P.Samples]) -> P.Samples:
    """The rounds' samples as one (the reported timing of a callable over all its rounds)."""
    first = samples[0]
    return P.Samples(per_call_us=[t for s in samples for t in s.per_call_us],
                     wall_us=[t for s in samples for t in s.wall_us],
                     sync_overhead_us=statistics.median(s.sync_overhead_us for s in samples),
                     kernel_us=first.kernel_us, caller_us=[t for s in samples for t in s.caller_us],
                     lead_us=[t for s in samples for t in s.lead_us])
