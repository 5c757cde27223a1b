"""profile's repeated and A/B forms: the workspace (A) evaluated `repeats` times, or A and another
variant (B) evaluated in turn, A B B A A B ..., each run a full profile evaluation (correctness,
then timing) of a frozen copy.

A pair is one run of each variant, next to each other (pair 0: A then B, pair 1: B then A, ...),
so a load that rises or falls steadily over the series slows the later run of one pair and the
earlier run of the next. Each pair's ratio is B's median time per call over A's, with the pair's
interval from the two runs' own 95% intervals (B's low over A's high, B's high over A's low). The
series' ratio is the median of the pairs' ratios and its interval the hull of the pairs' intervals
(lowest low to highest high): a difference is claimed only when every pair shows it beyond its runs'
noise. A single pair cannot see a change of load between its two runs; more pairs can.
"""

from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal

import anyio
import msgspec

from skills.evaluator.report import format_result, status
from skills.evaluator.results import EvalResult, Mode
from skills.snapshots import Snapshots
from skills.workspace import KERNELS, MODEL_NEW, Workspace, WorkspaceError

LAST_PASSING = "last_passing"
INTERVAL = "hull of the pairs' 95% intervals"
Variant = Literal["A", "B"]
Verdict = Literal["a_faster", "b_faster", "no_clear_difference", "failed", "environment_fault"]
Evaluate = Callable[[Path, Mode], Awaitable[EvalResult]]


class Ratio(msgspec.Struct):
    """B's time per call over A's, from the pairs (above 1: B is slower)."""

    value: float
    """Median of the pairs' ratios of medians."""
    low: float
    """Lowest end of the pairs' intervals (a pair's: B's 95% low over A's 95% high)."""
    high: float
    """Highest end of the pairs' intervals (a pair's: B's 95% high over A's 95% low)."""
    pairs: list[float]
    """Each pair's ratio of medians, in order."""
    method: str = INTERVAL
    """What the interval is."""


class ProfileRuns(msgspec.Struct, kw_only=True):
    """profile with `repeats` > 1 or `against`: every evaluation, in the order run, and the verdict."""

    against: str
    """The argument: "" (the workspace alone, repeated), "last_passing", or a workspace folder."""
    against_what: str
    """What B is, in words ("" without `against`)."""
    same_files: bool | None
    """B's model_new.py and kernels/ are A's byte for byte (None without `against`)."""
    planned: int
    """Evaluations planned: `repeats`, or 2 x `repeats` with `against`."""
    order: list[Variant]
    """The variant of each evaluation run, in order (shorter than `planned` when the series stopped)."""
    runs: list[EvalResult]
    """A's evaluations (the workspace's), in order."""
    against_runs: list[EvalResult]
    """B's evaluations, in order (empty without `against`)."""
    ratio: Ratio | None
    """B over A; None when no ratio is claimed (no `against`, a failed run, an environment fault)."""
    verdict: Verdict | None
    """The comparison's outcome (None without `against`)."""
    stopped: str | None
    """Why the series stopped before its plan (a run failed or hit an environment fault), or None."""


def abba(pairs: int) -> list[Variant]:
    """A B, B A, A B, ...: `pairs` pairs."""
    order: list[Variant] = []
    for i in range(pairs):
        order += ["A", "B"] if i % 2 == 0 else ["B", "A"]
    return order


def trouble(r: EvalResult) -> str | None:
    """Why a run cannot be compared (None when it passed and was timed)."""
    if r.environment_fault is not None:
        return f"environment fault: {r.environment_fault}"
    if not (r.compiled and r.correct) or r.flags:
        return status(r)
    if r.candidate is None:
        return "ModelNew was not timed"
    return None


def pair_ratio(a: EvalResult, b: EvalResult) -> tuple[float, float, float]:
    """(B median over A median, B low over A high, B high over A low) of one pair of timed runs."""
    assert a.candidate is not None and b.candidate is not None
    ta, tb = a.candidate.per_call_us, b.candidate.per_call_us
    if min(ta.low, ta.median, ta.high) <= 0:  # an impossible timing is flagged by the evaluation
        return float("inf"), float("inf"), float("inf")
    return tb.median / ta.median, tb.low / ta.high, tb.high / ta.low


def compare(a_runs: list[EvalResult], b_runs: list[EvalResult], same: bool | None = False
            ) -> tuple[Ratio | None, Verdict]:
    """The ratio and verdict of a series (no ratio once any run faulted or failed). Where A and B
    are the same files (`same`), neither is faster whatever the interval says: a load that changed
    within the series moved it (measured on the loaded 2-core box: 0.86x, interval 0.71-0.99)."""
    runs = a_runs + b_runs
    if any(r.environment_fault is not None for r in runs):
        return None, "environment_fault"
    if any(trouble(r) for r in runs) or not a_runs or len(a_runs) != len(b_runs):
        return None, "failed"
    pairs = [pair_ratio(a, b) for a, b in zip(a_runs, b_runs, strict=True)]
    ratio = Ratio(value=statistics.median(p[0] for p in pairs), low=min(p[1] for p in pairs),
                  high=max(p[2] for p in pairs), pairs=[p[0] for p in pairs])
    if same:
        return ratio, "no_clear_difference"
    if ratio.low > 1.0:
        return ratio, "a_faster"
    if ratio.high < 1.0:
        return ratio, "b_faster"
    return ratio, "no_clear_difference"


async def series(evaluate: Evaluate, a: Path, b: Path | None, repeats: int
                 ) -> tuple[list[Variant], list[EvalResult], list[EvalResult], str | None]:
    """Run the plan (A `repeats` times, or `repeats` ABBA pairs) until a run cannot be compared:
    (order run, A's runs, B's runs, why it stopped or None)."""
    plan: list[Variant] = abba(repeats) if b is not None else ["A"] * repeats
    order: list[Variant] = []
    runs: dict[Variant, list[EvalResult]] = {"A": [], "B": []}
    for variant in plan:
        result = await evaluate(a if variant == "A" or b is None else b, "profile")
        order.append(variant)
        runs[variant].append(result)
        why = trouble(result)
        if why is not None:
            k = len(runs[variant])
            stopped = f"{variant} run {k} ({why})" if b is not None else f"run {k} ({why})"
            return order, runs["A"], runs["B"], stopped
    return order, runs["A"], runs["B"], None


def same_files(a: Path, b: Path) -> bool:
    """model_new.py and kernels/** of two copies are equal byte for byte."""
    def files(root: Path) -> dict[str, bytes]:
        found = {MODEL_NEW: (root / MODEL_NEW).read_bytes()} if (root / MODEL_NEW).is_file() else {}
        found.update({p.relative_to(root).as_posix(): p.read_bytes()
                      for p in sorted((root / KERNELS).rglob("*")) if p.is_file()})
        return found
    return files(a) == files(b)


async def profile_runs(evaluate: Evaluate, ws: Workspace, snaps: Snapshots, *, against: str,
                       repeats: int) -> ProfileRuns:
    """The repeated or A/B profile of `ws`. A is a copy of the workspace taken now, B the last
    passing copy or a copy of the folder `against`; A becomes the last passing version when every
    one of its runs passed. WorkspaceError when `against` names nothing usable."""
    b: Path | None = None
    what = ""
    if against == LAST_PASSING:
        if snaps.last_passing is None:
            raise WorkspaceError(
                'against="last_passing": no version has passed yet in this episode (a run_tests() or'
                " profile() that is correct and unflagged keeps one); nothing to compare against")
        b = snaps.last_passing
        what = (f"the last passing version (kept by {snaps.kept_by}, evaluating call {snaps.kept_at}"
                f" of this episode; this is call {snaps.calls})")
    elif against:
        folder = await anyio.to_thread.run_sync(snaps.folder)
        try:
            b = (await anyio.to_thread.run_sync(ws.variant_snapshot, against, folder)).path
        except WorkspaceError as e:
            await anyio.to_thread.run_sync(snaps.drop, folder)
            raise WorkspaceError(f"against={against!r}: {e}") from None
        what = f"the folder {ws.normalize(against)}/"
    a = await anyio.to_thread.run_sync(snaps.take, ws)
    same = await anyio.to_thread.run_sync(same_files, a, b) if b is not None else None
    order, a_runs, b_runs, stopped = await series(evaluate, a, b, repeats)
    ratio, verdict = compare(a_runs, b_runs, same) if b is not None else (None, None)
    if a_runs and all(trouble(r) is None for r in a_runs):
        await anyio.to_thread.run_sync(snaps.keep, a, "profile")
    else:
        await anyio.to_thread.run_sync(snaps.drop, a)
    if b is not None and b != snaps.last_passing:
        await anyio.to_thread.run_sync(snaps.drop, b)
    return ProfileRuns(against=against, against_what=what, same_files=same,
                       planned=2 * repeats if b is not None else repeats,
                       order=order, runs=a_runs, against_runs=b_runs, ratio=ratio, verdict=verdict, stopped=stopped)


def workspace_evaluations(record: msgspec.Struct | None) -> list[EvalResult]:
    """The evaluations of the episode's workspace in a skill's record (B's are not the workspace's)."""
    if isinstance(record, EvalResult):
        return [record]
    if isinstance(record, ProfileRuns):
        return list(record.runs)
    return []


def typical(record: msgspec.Struct | None) -> EvalResult | None:
    """The workspace's evaluation that stands for the call (a repeated profile: its run with the
    median time, so that repeating a profile does not pick its luckiest run)."""
    runs = workspace_evaluations(record)
    timed = sorted(((r.candidate.per_call_us.median, i) for i, r in enumerate(runs) if r.candidate is not None))
    if not timed or len(timed) != len(runs):
        return runs[-1] if runs else None
    return runs[timed[(len(timed) - 1) // 2][1]]


def passed_all(rec: ProfileRuns) -> bool:
    """Every run passed and, with `against`, the comparison was made."""
    if rec.stopped is not None:
        return False
    return rec.verdict is None or rec.verdict in ("a_faster", "b_faster", "no_clear_difference")


# -- the text the agent reads -----------------------------------------------------------------


def _times(runs: list[EvalResult]) -> list[float]:
    return [r.candidate.per_call_us.median for r in runs if r.candidate is not None]


def _speedups(runs: list[EvalResult]) -> str:
    names = [s.baseline for s in runs[0].speedups] if runs else []
    parts = []
    for name in names:
        values = [s.value for r in runs for s in r.speedups if s.baseline == name]
        parts.append(f"vs {name} " + ", ".join(f"{v:.2f}x" for v in values))
    return "; speedup " + "; ".join(parts) if parts else ""


def _variant_lines(name: str, runs: list[EvalResult]) -> list[str]:
    """The passing runs' times and speedups, then the failed run's report (if one failed)."""
    good = [r for r in runs if trouble(r) is None]
    if not runs:
        return [f"  {name}: not run"]
    if not good:
        return _failure_lines(name, runs)
    times = ", ".join(f"{t:.1f}" for t in _times(good))
    n = len(good)
    return [f"  {name}: correct in {n} run{'s' if n != 1 else ''}; ModelNew per call (each run's median):"
            f" {times} us{_speedups(good)}", *_failure_lines(name, runs)]


def _failure_lines(name: str, runs: list[EvalResult]) -> list[str]:
    bad = next((r for r in runs if trouble(r) is not None), None)
    if bad is None:
        return []
    k = runs.index(bad) + 1
    if bad.environment_fault is not None:
        return [f"  {name}: run {k} hit an environment fault, the machine's and not {name}'s:"
                f" {bad.environment_fault}. No ratio is claimed; profile again.",
                f"{name}'s run {k}:", format_result(bad)]
    return [f"  {name}: run {k}: {trouble(bad)}; no ratio is claimed. Its report:", format_result(bad)]


def _verdict_line(rec: ProfileRuns) -> str:
    r = rec.ratio
    if r is None:
        return "B/A: not compared (a run above did not pass)"
    pairs = ", ".join(f"{p:.3f}" for p in r.pairs)
    head = (f"B/A time per call: {r.value:.3f} (pair{'s' if len(r.pairs) != 1 else ''} {pairs};"
            f" interval {r.low:.3f}-{r.high:.3f}, the {r.method})")
    if rec.verdict == "a_faster":
        return f"{head}: A is faster; B takes {r.value:.2f}x A's time"
    if rec.verdict == "b_faster":
        return f"{head}: B is faster; it takes {r.value:.2f}x A's time ({1 / r.value:.2f}x faster)"
    if rec.same_files and not r.low <= 1.0 <= r.high:
        return (f"{head}: no clear difference: A and B are the same files, so the interval's missing 1 is this"
                f" machine's noise (its load changed during the series)")
    more = "; one pair cannot see a change of load between its runs: repeats=3 tells more" if len(r.pairs) == 1 else ""
    return f"{head}: no clear difference (the interval holds 1){more}"


def format_runs(rec: ProfileRuns) -> str:
    """The repeated or A/B profile's report."""
    if not rec.against:
        return _format_repeats(rec)
    n = rec.planned // 2
    same = " (the same files as A: the difference is noise)" if rec.same_files else ""
    lines = [f"profile A/B: A = the workspace, B = {rec.against_what}{same}; {n} pair{'s' if n != 1 else ''}"
             f" in ABBA order ({' '.join(abba(n))}), each run a full profile evaluation",
             *_variant_lines("A", rec.runs), *_variant_lines("B", rec.against_runs)]
    if rec.stopped is not None:
        lines.append(f"stopped after evaluation {len(rec.order)} of {rec.planned}: {rec.stopped}")
    lines.append(_verdict_line(rec))
    return "\n".join(lines)


def _format_repeats(rec: ProfileRuns) -> str:
    runs = rec.runs
    good = [r for r in runs if trouble(r) is None]
    bad = next((r for r in runs if trouble(r) is not None), None)
    lines = [format_result(bad if bad is not None else runs[-1])]
    if bad is not None:
        what = ("an environment fault, the machine's and not your kernel's" if bad.environment_fault is not None
                else trouble(bad))
        lines.append(f"run {len(runs)} of {rec.planned} of profile: {what}; the remaining runs were not made")
    times = _times(good)
    if times:
        spread = max(times) / min(times) - 1 if min(times) > 0 else 0.0
        lines.append(f"{len(good)} passing run{'s' if len(good) != 1 else ''} of profile"
                     f"{' (the report above is the last)' if bad is None else ''}: ModelNew per call (each run's"
                     f" median): {', '.join(f'{t:.1f}' for t in times)} us, spread {100 * spread:.1f}% (slowest"
                     f" over fastest - 1){_speedups(good)}")
    return "\n".join(lines)
