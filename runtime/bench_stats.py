"""The numbers of `kagent bench`'s table, as pure functions of its rows (no I/O).

    pass rate      passed rows / graded rows (graded: every row but environment faults; a missing
                   solution is graded, as a failure)
    faster than    rows judged faster than the baseline on their timing interval (the reward's
                   rule, margin included) / graded rows
    geomean        geometric mean of the speedup point over the passed rows that were timed
    fast_p         rows passed with a speedup point > p / graded rows (KernelBench's fast_p)
    memory ×       geometric mean of ModelNew's footprint over the larger baseline's (eager or
                   torch.compile) over the passed rows where both were measured
    over memory    graded rows whose ModelNew exceeded the composite reward's memory limit / graded
                   rows where ModelNew's footprint and the limit were measured
    pass@k         per problem the unbiased estimator 1 - C(n-c, k) / C(n, k) over its n graded
                   attempts with c passed (Chen et al. 2021), averaged over the problems with n >= k
    compare        paired bootstrap over the problems both sets passed: resample problems with
                   replacement, difference of the two geomeans, 2.5% and 97.5% percentiles
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Literal

import msgspec
import numpy as np

from runtime.bench_rows import BenchRow
from skills.evaluator.results import larger_baseline_bytes as larger_of

Baseline = Literal["eager", "compile"]
FAST_P = (1.0, 1.5, 2.0)
"""The p of fast_p in the table."""


class LevelStats(msgspec.Struct, kw_only=True):
    """One line of the table: a level, or all levels (level None with `total`)."""

    level: int | None
    """KernelBench level (None: not in a levelN folder, or the total line)."""
    total: bool
    """The line over every level."""
    problems: int
    """Distinct problems."""
    rows: int
    """Attempts (problems x K)."""
    faults: int
    """Rows the environment could not grade (counted apart)."""
    missing: int
    """Rows without a solution (failures)."""
    passed: int
    """Rows compiled, correct and unflagged."""
    pass_rate: float | None
    """passed / graded rows (None when none was graded)."""
    faster_eager: float | None
    """Share of graded rows judged faster than eager (None when eager was never timed)."""
    faster_compile: float | None
    """Share of graded rows judged faster than torch.compile (None when it was never timed)."""
    geomean_eager: float | None
    """Geometric mean speedup over eager of the passed, timed rows."""
    geomean_compile: float | None
    """Geometric mean speedup over torch.compile of the passed, timed rows."""
    fast_eager: list[float | None]
    """fast_p over eager for each p of FAST_P."""
    fast_compile: list[float | None]
    """fast_p over torch.compile for each p of FAST_P."""
    pass_at: list[tuple[int, float | None]]
    """(k, pass@k) for the k of `ks` (see level_stats)."""
    geomean_memory: float | None
    """Geometric mean of ModelNew's footprint over the larger baseline's, passed rows with both measured."""
    memory_measured: int
    """Graded rows with ModelNew's footprint and the memory limit measured."""
    over_memory: int
    """Of those, rows whose ModelNew exceeded the limit (penalised under the composite reward)."""


def geomean(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k attempts drawn from n (c of them passed) passes."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@{k} needs 0 < k <= n and 0 <= c <= n (n={n}, c={c})")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


def ks_for(attempts: int) -> list[int]:
    """The k shown for K attempts: 1, the usual 5/10/100 below K, and K."""
    return sorted({k for k in (1, 5, 10, 100) if k < attempts} | {attempts}) if attempts > 1 else []


def larger_baseline_bytes(row: BenchRow) -> int | None:
    """The larger of the row's baselines' footprints (eager, torch.compile: whichever were measured)."""
    return larger_of(row.eager_bytes, row.compile_bytes)


def memory_ratio(row: BenchRow) -> float | None:
    """ModelNew's footprint over the larger baseline's (None where either was not measured)."""
    base = larger_baseline_bytes(row)
    if row.candidate_call_bytes is None or base is None or base <= 0:
        return None
    return row.candidate_call_bytes / base


def has_memory(rows: Iterable[BenchRow]) -> bool:
    """Some row holds ModelNew's footprint (rows written before bench kept memory hold none)."""
    return any(r.candidate_call_bytes is not None for r in rows)


def _speedup(row: BenchRow, baseline: Baseline) -> float | None:
    return row.speedup_eager if baseline == "eager" else row.speedup_compile


def _faster(row: BenchRow, baseline: Baseline) -> bool | None:
    return row.faster_eager if baseline == "eager" else row.faster_compile


def _share(graded: Sequence[BenchRow], baseline: Baseline) -> float | None:
    if not graded or all(_faster(r, baseline) is None for r in graded):
        return None
    return sum(1 for r in graded if _faster(r, baseline)) / len(graded)


def _fast_p(graded: Sequence[BenchRow], baseline: Baseline, p: float) -> float | None:
    if not graded or all(_speedup(r, baseline) is None for r in graded):
        return None
    return sum(1 for r in graded if r.passed and (_speedup(r, baseline) or 0.0) > p) / len(graded)


def _pass_at(graded: Sequence[BenchRow], k: int) -> float | None:
    by_problem: dict[str, list[BenchRow]] = defaultdict(list)
    for r in graded:
        by_problem[r.problem_id].append(r)
    values = [pass_at_k(len(rs), sum(r.passed for r in rs), k) for rs in by_problem.values() if len(rs) >= k]
    return sum(values) / len(values) if values else None


def level_stats(rows: Sequence[BenchRow], *, level: int | None, total: bool, ks: Sequence[int]) -> LevelStats:
    graded = [r for r in rows if r.fault is None]
    passed = [r for r in graded if r.passed]
    return LevelStats(
        level=level, total=total, problems=len({r.problem_id for r in rows}), rows=len(rows),
        faults=len(rows) - len(graded), missing=sum(r.missing for r in rows), passed=len(passed),
        pass_rate=len(passed) / len(graded) if graded else None,
        faster_eager=_share(graded, "eager"), faster_compile=_share(graded, "compile"),
        geomean_eager=geomean(s for r in passed if (s := r.speedup_eager) is not None),
        geomean_compile=geomean(s for r in passed if (s := r.speedup_compile) is not None),
        fast_eager=[_fast_p(graded, "eager", p) for p in FAST_P],
        fast_compile=[_fast_p(graded, "compile", p) for p in FAST_P],
        pass_at=[(k, _pass_at(graded, k)) for k in ks],
        geomean_memory=geomean(m for r in passed if (m := memory_ratio(r)) is not None),
        memory_measured=sum(r.over_memory is not None for r in graded),
        over_memory=sum(r.over_memory is True for r in graded))


def table(rows: Sequence[BenchRow], attempts: int) -> list[LevelStats]:
    """One line per level (in level order, unlevelled problems last) and a total line."""
    ks = ks_for(attempts)
    levels = sorted({r.level for r in rows}, key=lambda v: (v is None, v or 0))
    lines = [level_stats([r for r in rows if r.level == lv], level=lv, total=False, ks=ks) for lv in levels]
    return [*lines, level_stats(rows, level=None, total=True, ks=ks)]


class Comparison(msgspec.Struct, kw_only=True):
    """B against A on the problems both passed, for one baseline."""

    baseline: Baseline
    """Which speedup is compared."""
    paired: int
    """Problems passed and timed in both sets."""
    only_a: int
    """Problems passed (and timed) in A alone."""
    only_b: int
    """Problems passed (and timed) in B alone."""
    geomean_a: float | None
    """A's geomean speedup over the paired problems."""
    geomean_b: float | None
    """B's geomean speedup over the paired problems."""
    difference: float | None
    """geomean_b - geomean_a."""
    low: float | None
    """2.5% percentile of the bootstrapped difference."""
    high: float | None
    """97.5% percentile of the bootstrapped difference."""
    resamples: int
    """Bootstrap resamples."""


def problem_speedups(rows: Sequence[BenchRow], baseline: Baseline) -> dict[str, float]:
    """Per problem, the geomean speedup of its passed, timed attempts (problems with none left out)."""
    by_problem: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        s = _speedup(r, baseline)
        if r.passed and s is not None and s > 0:
            by_problem[r.problem_id].append(s)
    return {pid: g for pid, vals in by_problem.items() if (g := geomean(vals)) is not None}


def compare(a: Sequence[BenchRow], b: Sequence[BenchRow], baseline: Baseline, *, resamples: int = 10_000,
            seed: int = 0) -> Comparison:
    sa, sb = problem_speedups(a, baseline), problem_speedups(b, baseline)
    common = sorted(set(sa) & set(sb))
    out = Comparison(baseline=baseline, paired=len(common), only_a=len(set(sa) - set(sb)),
                     only_b=len(set(sb) - set(sa)), geomean_a=None, geomean_b=None, difference=None, low=None,
                     high=None, resamples=resamples)
    if not common:
        return out
    la = np.log(np.array([sa[p] for p in common]))  # (P,)
    lb = np.log(np.array([sb[p] for p in common]))  # (P,)
    out.geomean_a, out.geomean_b = float(np.exp(la.mean())), float(np.exp(lb.mean()))
    out.difference = out.geomean_b - out.geomean_a
    idx = np.random.default_rng(seed).integers(0, len(common), size=(resamples, len(common)))  # (R, P)
    diffs = np.exp(lb[idx].mean(axis=1)) - np.exp(la[idx].mean(axis=1))  # (R,)
    out.low, out.high = (float(v) for v in np.percentile(diffs, [2.5, 97.5]))
    return out


class MemoryComparison(msgspec.Struct, kw_only=True):
    """ModelNew's footprint over the larger baseline's in A and B, on the problems both passed and measured."""

    paired: int
    """Problems passed with both footprints measured in both sets."""
    geomean_a: float | None
    """A's geomean ratio over the paired problems."""
    geomean_b: float | None
    """B's geomean ratio over the paired problems."""


def problem_memory(rows: Sequence[BenchRow]) -> dict[str, float]:
    """Per problem, the geomean memory ratio of its passed, measured attempts (problems with none left out)."""
    by_problem: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r.passed and (m := memory_ratio(r)) is not None:
            by_problem[r.problem_id].append(m)
    return {pid: g for pid, vals in by_problem.items() if (g := geomean(vals)) is not None}


def compare_memory(a: Sequence[BenchRow], b: Sequence[BenchRow]) -> MemoryComparison:
    ma, mb = problem_memory(a), problem_memory(b)
    common = sorted(set(ma) & set(mb))
    return MemoryComparison(paired=len(common), geomean_a=geomean(ma[p] for p in common),
                            geomean_b=geomean(mb[p] for p in common))
