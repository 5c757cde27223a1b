"""The parent's checks on a candidate's timed loop (docs/security.md, EXPLOITS rows 1-9 and 31): its
outputs on the checked calls, the memory floor, the kernel-stamped clock marks, threads working
between the calls, work left running after a call."""

from __future__ import annotations

import statistics

from skills.evaluator.config import EvalConfig
from skills.evaluator.harness import protocol as P
from skills.evaluator.marks import Mark
from skills.evaluator.results import Flag, TimingResult


def checked_calls_flags(timed: P.TimeReport) -> list[Flag]:
    """Rows 7-9: the judge read the whole outputs of a secret subset of the timed calls (each on a set
    drawn for it alone) and of the probe calls after the loop; each must match its own reference."""
    if not timed.bad_calls:
        return []
    return [Flag(name="timed_output_mismatch",
                 detail=f"{timed.bad_calls} of the {timed.checked_calls} timed calls checked returned wrong values:"
                        " outputs must be computed by each call")]

def floor_check(cand: TimingResult, read_bytes: int, cfg: EvalConfig) -> list[Flag]:
    """A call cannot beat reading its inputs and weights once from memory (the cache is flushed)."""
    gbs = cfg.max_bandwidth_gbs or (10_000.0 if cfg.backend == "cuda" else 500.0)
    floor_us = read_bytes / (gbs * 1e3)
    if cand.per_call_us.median > floor_us:  # floor_us >= 0, so a zero or negative time fails too
        return []
    return [Flag(name="implausible_timing",
                 detail=f"measured {cand.per_call_us.median:.3g} us per call, but reading its {read_bytes} input"
                        f" bytes takes at least {floor_us:.3g} us at {gbs:.0f} GB/s: the clock was tampered with")]


CLOCK_SLACK_US = 50.0
"""What the parent's window of a timed call may exceed the reported time by, besides the lead and
CLOCK_SLACK_FRACTION of the window: the Python around the clock reads and the marks' sends."""
CLOCK_SLACK_FRACTION = 0.1
HANDOFF_SLACK_US = {"cuda": 500.0, "cpu": 2000.0}
"""What the candidate's own time around a call (from the judge's request to the start mark, and
from the end mark to its answer) may exceed HANDOFF_FACTOR x the judge's yardstick for that work
by: the worker's Python (the loop, the output checks; ~50-100 us on a loaded 2-core box) and the
wake-ups of a process that just ran a call, which a stand-in that did not wakes faster from. On
the cpu the two processes share the few cores with whatever else runs: an honest content cache
(28 ms calls) was flagged once in four runs at 500 us on the 2-core box."""
HANDOFF_FACTOR = 2.0
MARK_SKEW_US = 20.0
"""How much shorter than the reported time a window may read: the kernel's stamps (realtime clock)
and the candidate's clock (monotonic) tick at the same rate but are different clocks."""


def mark_times(marks: list[Mark], n: int) -> tuple[list[int], list[int]] | None:
    """Per timed call, the stamps (ns) of its start and end marks; None when a call lacks either
    mark or ends before it starts."""
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    for call, end, t in marks:
        (ends if end else starts).setdefault(call, t)
    if not all(i in starts and i in ends and starts[i] <= ends[i] for i in range(n)):
        return None
    return [starts[i] for i in range(n)], [ends[i] for i in range(n)]


def mark_windows(marks: list[Mark], n: int) -> tuple[list[float], list[float]] | None:
    """Per timed call, its marks' window (us), and the time between consecutive calls (us)."""
    got = mark_times(marks, n)
    if got is None:
        return None
    starts, ends = got
    return ([(e - s) / 1e3 for s, e in zip(starts, ends, strict=True)],
            [(starts[i + 1] - ends[i]) / 1e3 for i in range(n - 1)])


OWN_THREADS_CUDA_FRACTION = 0.1
OWN_THREADS_CUDA_US = 100.0
"""On cuda the candidate's other threads have nothing to compute: what they may use inside a
call's window before their CPU stops the main thread's wait being excused (the driver's threads)."""


def own_threads_allowance(window_us: float, backend: str, cores: int) -> float:
    """CPU (us) the candidate's other threads may have used inside one call's window: on the cpu,
    OpenMP workers on every other core it may use for the whole window; on cuda, a little."""
    if backend == "cpu":
        return max(0, cores - 1) * window_us
    return OWN_THREADS_CUDA_FRACTION * window_us + OWN_THREADS_CUDA_US


def _own_busy(timed: P.TimeReport, windows: list[float], backend: str) -> list[float] | None:
    """Per timed call, the CPU (us) the candidate's other threads used beyond what they could have
    used inside the window (own_threads_allowance; threads that came and went, read from the
    process's total, spread over the calls): what they kept the cores busy with. None without a
    count for every call."""
    th = timed.threads
    n = len(windows)
    if th is None or len(th.waited_ns) != n or len(th.others_ns) != n or n == 0:
        return None
    unseen = th.unseen_ns / 1e3 / n
    return [max(0.0, o / 1e3 + unseen - own_threads_allowance(w, backend, th.cores))
            for o, w in zip(th.others_ns, windows, strict=True)]


def excused_waits(timed: P.TimeReport, windows: list[float], backend: str) -> list[float]:
    """Per timed call, the run-queue wait (us) of the candidate's main thread that the clock checks
    take off as the host's: the kernel's count, less the CPU its own other threads used beyond what
    they could have used inside the window (_own_busy). The main thread only waits when every
    core it may use is busy: with other work on the host that is the host's doing, but a candidate
    that keeps its own threads spinning while a helper does the call's work outside the window makes
    its main thread wait too, and that wait is its own."""
    busy = _own_busy(timed, windows, backend)
    if busy is None or timed.threads is None:
        return [0.0] * len(windows)
    return [max(0.0, q / 1e3 - b) for q, b in zip(timed.threads.waited_ns, busy, strict=True)]


def judge_waits(timed: P.TimeReport, windows: list[float], backend: str) -> list[float]:
    """Per timed call, the judge's own run-queue wait (us) between its request and the answer, which
    its stamps of both include (a judge woken by the answer on a busy host runs only when a core
    frees up), less what the candidate's other threads kept the cores busy with, as for its own
    wait (_own_busy): the host's doing, unless the candidate's spinners made the judge wait. Nothing
    without the judge's counts, or without the candidate's (its spinners would go unseen)."""
    n = len(windows)
    busy = _own_busy(timed, windows, backend)
    if busy is None or len(timed.judge_waited_ns) != n:
        return [0.0] * n
    return [max(0.0, j / 1e3 - b) for j, b in zip(timed.judge_waited_ns, busy, strict=True)]


BACKGROUND_FRACTION = 0.25
BACKGROUND_MIN_US = 5000.0
"""The candidate's other threads may use this share of the time between timed calls (and at least
this much CPU in all) before that counts as work outside forward: honest ones sleep there."""
UNSEEN_MIN_US = 30_000.0
UNSEEN_FRACTION = 0.1
"""CPU that no live thread accounts for (threads that came and went) beyond this much and this
share of the process's CPU: the root's utime + stime come in clock ticks (10 ms), twice."""


def idle_work_flags(cpu_ns: int, wall_ns: int, when: str) -> list[Flag]:
    """`background_work` when the candidate's other threads used more than BACKGROUND_FRACTION of
    `wall_ns` (and BACKGROUND_MIN_US) of CPU while it had nothing to do."""
    cpu, wall = cpu_ns / 1e3, wall_ns / 1e3
    if cpu > max(BACKGROUND_MIN_US, BACKGROUND_FRACTION * wall):
        return [Flag(name="background_work", detail=(
            f"the candidate's other threads used {cpu / 1e3:.1f} ms of CPU in {wall / 1e3:.1f} ms {when}, when no"
            " call was running: work must run inside forward, on its caller's thread or on threads that finish"
            " with the call"))]
    return []


def background_check(timed: P.TimeReport) -> list[Flag]:
    """docs/exploits.md row 31: threads of the candidate's that work when no call is running, read
    from /proc by the judge: CPU between the calls (spinners that keep the machine busy, so the
    judge's yardsticks and the candidate's waits grow), and CPU of threads that exited before the
    judge could see them (a fresh thread per call)."""
    th = timed.threads
    if th is None:
        return []
    idle = idle_work_flags(th.idle_cpu_ns, th.idle_ns, "between the timed calls")
    if idle:
        return idle
    if th.unseen_ns / 1e3 > UNSEEN_MIN_US + UNSEEN_FRACTION * th.cpu_ns / 1e3:
        return [Flag(name="background_work", detail=(
            f"threads that started and exited during the timed loop used {th.unseen_ns / 1e6:.0f} ms of CPU"
            f" ({th.unseen_ns / max(1, th.cpu_ns):.0%} of the candidate's): start worker threads once, at init"))]
    return []


def clock_check(timed: P.TimeReport, marks: list[Mark] | None, lead_us: float,
                yardsticks: list[P.YardstickReport], slack_us: float = HANDOFF_SLACK_US["cuda"],
                backend: str = "cuda") -> list[Flag]:
    """Row 4: the candidate reads its clock in its own process, where code that got past the static
    checks can replace it. Each timed call marks its start and end on a socket the kernel stamps
    (skills/evaluator/marks.py): on the median call the reported (judged) time may fall short of that window
    only by the lead (cuda: it runs inside the window, before the start event; at most 1.1x its
    setting), CLOCK_SLACK_US and CLOCK_SLACK_FRACTION of the window. And work moved out of the
    windows shows in the candidate's own time around each call, which the judge's stamps of its
    request and of the answer bound (same clock as the marks): from the request to the start mark
    (a hop), from the end mark to the answer (copying the outputs into the arena, a hop), against
    the judge's yardsticks for that work (before and after the loop; the larger counts, so a
    machine that got busier meanwhile does not read as moved work) + `slack_us`, on three calls in four.
    What the candidate's main thread and the judge waited for a CPU there comes off (excused_waits,
    judge_waits)."""
    samples = timed.samples
    n = len(samples.per_call_us)
    if marks is None or n == 0:
        return []
    got = mark_times(marks, n)
    if got is None:
        both = len({c for c, e, _ in marks if e} & {c for c, e, _ in marks if not e} & set(range(n)))
        return [Flag(name="harness_tampering", detail=f"the evaluator's own clock saw {both} of the {n} timed calls"
                     " start and end in order (the harness in the candidate's process was changed)")]
    starts, ends = got
    windows = [(e - s) / 1e3 for s, e in zip(starts, ends, strict=True)]
    window = statistics.median(windows)
    # Time the candidate waited for a CPU (the kernel's count, per call) is the host's, not work
    # it moved or hid, unless its own threads kept the cores busy: what is excused comes off what
    # the checks below compare. Never below zero.
    waited = excused_waits(timed, windows, backend)
    excess = statistics.median(w - e - min(q, max(0.0, w - e)) for w, e, q in zip(windows, samples.per_call_us, waited, strict=True))
    # The stamps bracket the clock reads, so a real window is never shorter than its reported time,
    # and the marks together span at least the sum of the reported times: marks sent on their own,
    # not around the calls, fail one or the other.
    if excess < -MARK_SKEW_US or (ends[-1] - starts[0]) / 1e3 < sum(samples.per_call_us) - MARK_SKEW_US:
        return [Flag(name="harness_tampering", detail="the timed calls' marks do not bracket the times reported for"
                     " them (the harness in the candidate's process was changed)")]
    allowed = 1.1 * lead_us + CLOCK_SLACK_US + CLOCK_SLACK_FRACTION * window
    if excess > allowed:
        return [Flag(name="timer_tampering", detail=(
            f"the evaluator's clock saw the median timed call take {window:.0f} us, but the candidate's process"
            f" reported {window - excess:.0f} us (more than {allowed:.0f} us less): its clock was tampered with"))]
    # Around the call (request to start mark, end mark to answer) the judge's wake-up counts too.
    around = [q + j for q, j in zip(waited, judge_waits(timed, windows, backend), strict=True)]
    return _handoff_check(timed, starts, ends, yardsticks, slack_us, around)


def _at(values: list[float], q: float) -> float:
    """The q-quantile of the values (the value a fraction q of them is below)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _handoff_check(timed: P.TimeReport, starts: list[int], ends: list[int],
                   yardsticks: list[P.YardstickReport], slack_us: float, waited: list[float] | None = None) -> list[Flag]:
    if len(timed.sent_ns) != len(starts) or not yardsticks or not all(y.handback_us and y.hop_us for y in yardsticks):
        return []
    hop = max(_at(y.hop_us, 0.75) for y in yardsticks)
    handback = max(statistics.median(y.handback_us) for y in yardsticks)
    q = waited if waited is not None and len(waited) == len(starts) else [0.0] * len(starts)
    # three in four calls took at least this long around them, less what the candidate waited for a CPU
    before = _at([max(0.0, (s - sent) / 1e3 - w) for s, sent, w in zip(starts, timed.sent_ns, q, strict=True)], 0.25)
    after = _at([max(0.0, (back - e) / 1e3 - w) for e, back, w in zip(ends, timed.back_ns, q, strict=True)], 0.25)
    for seen, own, where in ((before, hop, "between the judge's request and the call's start"),
                             (after, hop + handback, "between the call's end and its answer")):
        if seen > HANDOFF_FACTOR * own + slack_us:
            return [Flag(name="timer_tampering", detail=(
                f"at least {seen:.0f} us passed {where} on three in four timed calls, where the worker's own work"
                f" there takes {own:.0f} us: work was moved out of the timed calls"))]
    return []


UNSYNCED_SLACK_US = 50.0
"""Wall time per call beyond the event time and the sync's own cost that is not yet work left
running: on the H200 the GPU's switch from the judge's context (which just wrote the inputs) to the
candidate's falls inside the wall window, and honest kernels read 20-23 us here (2026-12-02) with
the sync's cost measured the same way; a side stream's 20 launches read milliseconds."""


def unsynchronized_work(samples: P.Samples) -> float:
    """Median wall time per call not explained by the event time and the sync's own cost (us)."""
    diffs = sorted(w - e for w, e in zip(samples.wall_us, samples.per_call_us, strict=True))
    return diffs[len(diffs) // 2] - samples.sync_overhead_us if diffs else 0.0


def sync_check(samples: P.Samples) -> list[Flag]:
    """Row 1-2: work that finishes after the call returned (side stream, thread) shows in wall time."""
    if not samples.per_call_us:
        return []
    extra = unsynchronized_work(samples)
    median = sorted(samples.per_call_us)[len(samples.per_call_us) // 2]
    if extra > max(UNSYNCED_SLACK_US, 0.1 * median):
        return [Flag(name="unsynchronized_work",
                     detail=f"each call left ~{extra:.0f} us of work running after it returned (side stream or"
                            " background thread); all work must finish on the caller's stream")]
    return []
