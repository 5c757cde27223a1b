"""The parent's checks on a timed loop's raw samples (skills/evaluate.py), on made-up samples."""

from __future__ import annotations

import random

from skills.evaluate import canary_time_check
from skills.harness import protocol as P


def _timed(times: list[float], order: list[int]) -> P.CandTiming:
    samples = P.Samples(per_call_us=times, wall_us=times, sync_overhead_us=0.0)
    return P.CandTiming(nonce="n", samples=samples, set_order=order, spot=[], flags=[])


def _loop(n: int, canary_at: list[int], regular: float, canary: float, noise: float = 0.05,
          seed: int = 0) -> P.CandTiming:
    rng = random.Random(seed)
    order = [i % 3 for i in range(n)]
    times = [regular * (1 + noise * rng.random()) for _ in range(n)]
    for c, pos in enumerate(canary_at):
        order[pos] = 3 + c
        times[pos] = canary * (1 + noise * rng.random())
    return _timed(times, order)


def test_a_content_cache_is_flagged() -> None:
    flags = canary_time_check(_loop(200, [40, 150], regular=50.0, canary=800.0), 3)
    assert [f.name for f in flags] == ["input_dependent_time"]
    assert "never-seen inputs" in flags[0].detail


def test_honest_loops_are_not_flagged() -> None:
    assert canary_time_check(_loop(200, [40, 150], regular=50.0, canary=50.0), 3) == []
    # one slow canary (a hiccup) is not enough; both slow but not the slowest calls is not either
    t = _loop(200, [40, 150], regular=50.0, canary=50.0)
    t.samples.per_call_us[40] = 900.0
    assert canary_time_check(t, 3) == []
    t = _loop(200, [40, 150], regular=50.0, canary=200.0)
    t.samples.per_call_us[7] = 400.0  # a regular call slower than both canaries
    assert canary_time_check(t, 3) == []


def test_noisy_honest_loops_rarely_trip_it() -> None:
    """Heavy-tailed noise (a busy 2-core box): canaries drawn like every other call."""
    tripped = 0
    for seed in range(2000):
        rng = random.Random(seed)
        n = 60
        order = [i % 3 for i in range(n)]
        order[rng.randrange(5, 30)] = 3
        order[rng.randrange(31, 59)] = 4
        times = [50.0 * rng.lognormvariate(0, 0.6) for _ in range(n)]
        tripped += bool(canary_time_check(_timed(times, order), 3))
    assert tripped <= 2, tripped  # about 2 / n^2 of loops have both canaries slowest; few of those 3x the median


def test_too_few_calls_or_canaries_say_nothing() -> None:
    assert canary_time_check(_loop(10, [3, 7], regular=50.0, canary=800.0), 3) == []
    assert canary_time_check(_loop(200, [40], regular=50.0, canary=800.0), 3) == []


def test_canaries_land_on_distinct_calls_and_the_parent_checks_the_order() -> None:
    from skills.evaluate import order_check

    order = P.timed_order(3, 10, [0.5, 0.5, 0.55])  # all three want call 5
    assert sorted(i for i, s in enumerate(order) if s >= 3) == [5, 6, 7]
    assert [s for s in order if s >= 3] == [3, 4, 5]
    times = [50.0] * 10
    good = P.CandTiming(nonce="n", samples=P.Samples(per_call_us=times, wall_us=times, sync_overhead_us=0.0),
                        set_order=order, spot=[[] for _ in times], flags=[])
    assert order_check(good, 3, [0.5, 0.5, 0.55]) == []
    bad = P.CandTiming(nonce="n", samples=good.samples, set_order=P.rotation(3, 10), spot=good.spot, flags=[])
    assert [f.name for f in order_check(bad, 3, [0.5, 0.5, 0.55])] == ["harness_tampering"]
