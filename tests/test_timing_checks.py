"""The parent's checks on a timed loop's raw samples (skills/evaluate.py), on made-up samples."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

from skills.evaluate import canary_time_check, clock_check
from skills.harness import protocol as P
from skills.marks import ENV as MARK_ENV
from skills.marks import Mark, MarkSocket

ROOT = Path(__file__).resolve().parents[1]


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


# ---- clock_check: the candidate's reported times against the kernel-stamped marks (row 4) ----


def _marked(reported: list[float], windows: list[float], gap_us: float = 100.0) -> tuple[P.Samples, list[Mark]]:
    """Samples with these reported times, and start/end marks `windows` apart, `gap_us` between calls."""
    marks: list[Mark] = []
    t = 1_000_000_000
    for i, w in enumerate(windows):
        marks.append((i, False, t))
        t += int(w * 1e3)
        marks.append((i, True, t))
        t += int(gap_us * 1e3)
    return P.Samples(per_call_us=reported, wall_us=reported, sync_overhead_us=0.0), marks


def test_reported_times_inside_their_windows_pass() -> None:
    rng = random.Random(1)
    reported = [150.0 * (1 + 0.05 * rng.random()) for _ in range(60)]
    samples, marks = _marked(reported, [r + 16.0 for r in reported])  # the ~16 us measured on this box
    assert clock_check(samples, marks, 0.0, [[150.0] * 15]) == []
    # cuda: the lead runs inside the window, before the start event
    samples, marks = _marked(reported, [r + 100.0 + 20.0 for r in reported])
    assert clock_check(samples, marks, 100.0, [[150.0] * 15]) == []
    # marks arrive out of order (both ends of every call are there): fine
    assert clock_check(samples, list(reversed(marks)), 100.0, [[150.0] * 15]) == []


def test_a_fake_clock_is_flagged() -> None:
    # the clock_patch_harness cheat on this box: every call "takes" 10 us, the stamps saw ~180 us
    samples, marks = _marked([10.0] * 60, [180.0] * 60)
    flags = clock_check(samples, marks, 0.0, [[150.0] * 15])
    assert [f.name for f in flags] == ["timer_tampering"]
    assert "180 us" in flags[0].detail and "reported 10 us" in flags[0].detail
    # around what is allowed: 50 us + 10% of the window (+1.1x the lead on cuda); a window of
    # 100 + x us allows x up to 66.7 us on cpu and 188.9 us with a 100 us lead
    for lead, x, caught in [(0.0, 63.0, False), (0.0, 70.0, True), (100.0, 185.0, False), (100.0, 192.0, True)]:
        samples, marks = _marked([100.0] * 60, [100.0 + x] * 60)
        assert bool(clock_check(samples, marks, lead, [[150.0] * 15])) == caught, (lead, x)


def test_work_moved_between_the_calls_is_flagged() -> None:
    # honest: the gap is the loop's own work (the judge measured 150 us) and a little more
    samples, marks = _marked([10.0] * 60, [20.0] * 60, gap_us=260.0)
    assert clock_check(samples, marks, 0.0, [[150.0] * 15]) == []
    # the call's 5 ms of work done before its start mark
    samples, marks = _marked([10.0] * 60, [20.0] * 60, gap_us=5150.0)
    flags = clock_check(samples, marks, 0.0, [[150.0] * 15])
    assert [f.name for f in flags] == ["timer_tampering"]
    assert "moved out of the timed calls" in flags[0].detail
    # a machine that got busier during the loop: the judge's samples after it count too
    assert clock_check(samples, marks, 0.0, [[150.0] * 15, [4000.0] * 15]) == []
    # a few long gaps (a hiccup) are not enough: three in four must be long
    samples, marks = _marked([10.0] * 60, [20.0] * 60, gap_us=260.0)
    t = 1_000_000_000
    stretched = []
    for i in range(60):
        start = t
        end = start + 20_000
        stretched += [(i, False, start), (i, True, end)]
        t = end + (5_000_000 if i % 3 == 0 else 260_000)
    assert clock_check(samples, stretched, 0.0, [[150.0] * 15]) == []


def test_marks_sent_apart_from_the_calls_are_tampering() -> None:
    """Code that sends the marks itself (not around the calls) cannot make them bracket the times it
    reports: every window shorter than its call, or all of them sent in one burst."""
    samples, marks = _marked([300.0] * 60, [2.0] * 60, gap_us=2.0)  # a burst: 60 calls in ~0.2 ms
    flags = clock_check(samples, marks, 0.0, [[150.0] * 15])
    assert [f.name for f in flags] == ["harness_tampering"] and "bracket" in flags[0].detail
    # honest windows a hair shorter than the reported time (clock skew) pass
    samples, marks = _marked([300.0] * 60, [295.0] * 60, gap_us=200.0)
    assert clock_check(samples, marks, 0.0, [[150.0] * 15]) == []


def test_missing_marks_are_tampering() -> None:
    samples, marks = _marked([100.0] * 10, [110.0] * 10)
    flags = clock_check(samples, [m for m in marks if m[0] != 4], 0.0, [])
    assert [f.name for f in flags] == ["harness_tampering"] and "9 of the 10" in flags[0].detail
    # an end before its start
    bad = [(c, e, t if c != 2 else (0 if e else t)) for c, e, t in marks]
    assert [f.name for f in clock_check(samples, bad, 0.0, [])] == ["harness_tampering"]
    # no socket at all (a worker started by hand): nothing to check against
    assert clock_check(samples, None, 0.0, []) == []


def test_the_kernel_stamps_marks_when_they_are_sent() -> None:
    """The stamps come from the kernel at send time, not from the sender's clock or the reader's."""
    sock = MarkSocket()
    code = ("import time\nfrom skills.marks import mark_sender\n"
            "time.time_ns = lambda: 0\ntime.perf_counter_ns = lambda: 0\n"  # the sender's clocks lie
            "mark = mark_sender()\nmark(0, False)\ntime.sleep(0.2)\nmark(0, True)\nmark(1, False)\n")
    env = {**os.environ, MARK_ENV: str(sock.child_fd), "PYTHONPATH": str(ROOT)}
    sock.begin()
    subprocess.run([sys.executable, "-c", code], env=env, pass_fds=(sock.child_fd,), check=True, timeout=60)
    sock.started()
    time.sleep(0.3)  # read late: the stamps must not move
    marks = sock.end()
    sock.close()
    assert sock.stamped
    assert [(c, e) for c, e, _ in marks] == [(0, False), (0, True), (1, False)]
    window_ms = (marks[1][2] - marks[0][2]) / 1e6
    assert 195 <= window_ms < 400, window_ms
    assert (marks[2][2] - marks[1][2]) / 1e6 < 50
