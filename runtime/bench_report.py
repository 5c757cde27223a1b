"""table.md of a `kagent bench` run and the text of `kagent bench compare` (markdown, from bench_stats)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

from runtime.bench_rows import BenchFile, BenchInvocation, BenchRow
from runtime.bench_stats import (
    FAST_P,
    Comparison,
    LevelStats,
    compare_memory,
    has_memory,
    larger_baseline_bytes,
    memory_ratio,
    table,
)
from skills.evaluator.reward import MIB


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}%"


def _x(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}×"


def _mib(v: int | None) -> str:
    return "—" if v is None else f"{v / MIB:.1f}"


def _over(s: LevelStats) -> str:
    return f"{s.over_memory} of {s.memory_measured}" if s.memory_measured else "—"


def _name(s: LevelStats) -> str:
    if s.total:
        return "**all**"
    return f"level {s.level}" if s.level is not None else "no level"


def main_table(lines: Sequence[LevelStats]) -> list[str]:
    out = ["| level | problems | rows | faults | missing | pass | faster than eager | faster than compile"
           " | geomean × eager | geomean × compile | memory × baseline | over memory limit |",
           "| --- |" + " ---: |" * 11]
    for s in lines:
        out.append(f"| {_name(s)} | {s.problems} | {s.rows} | {s.faults} | {s.missing} | {_pct(s.pass_rate)}"
                   f" | {_pct(s.faster_eager)} | {_pct(s.faster_compile)} | {_x(s.geomean_eager)}"
                   f" | {_x(s.geomean_compile)} | {_x(s.geomean_memory)} | {_over(s)} |")
    return out


def _outcome(r: BenchRow) -> str:
    return "fault" if r.fault else "missing" if r.missing else "passed" if r.passed else "failed"


def _over_cell(r: BenchRow) -> str:
    if r.over_memory is None:
        return "—"
    return ("yes, penalised" if r.memory_penalty else "yes") if r.over_memory else "no"


def problem_table(rows: Sequence[BenchRow]) -> list[str]:
    """One line per row: its speed beside its memory (MiB; the larger baseline's: eager or compile)."""
    out = ["| problem | attempt | result | reward | × eager | × compile | ModelNew MiB | larger baseline MiB"
           " | memory × baseline | limit MiB | over limit |",
           "| --- | ---: | --- |" + " ---: |" * 7 + " --- |"]
    for r in rows:
        out.append(f"| {r.problem} | {r.attempt} | {_outcome(r)} | {'—' if r.reward is None else f'{r.reward:g}'}"
                   f" | {_x(r.speedup_eager)} | {_x(r.speedup_compile)} | {_mib(r.candidate_call_bytes)}"
                   f" | {_mib(larger_baseline_bytes(r))} | {_x(memory_ratio(r))} | {_mib(r.limit_bytes)}"
                   f" | {_over_cell(r)} |")
    return out


def over_memory_list(rows: Sequence[BenchRow]) -> list[str]:
    """The rows past the memory limit, with their figures (empty when none is)."""
    over = [r for r in rows if r.over_memory]
    if not over:
        return []
    out = [f"Over the memory limit ({len(over)} row(s), {len({r.problem_id for r in over})} problem(s)):", ""]
    for r in over:
        penalty = "; the composite reward took the memory penalty off" if r.memory_penalty else ""
        out.append(f"- {r.problem} attempt {r.attempt}: ModelNew {_mib(r.candidate_call_bytes)} MiB,"
                   f" {_x(memory_ratio(r))} the larger baseline's, limit {_mib(r.limit_bytes)} MiB{penalty}")
    return out


def fast_p_table(lines: Sequence[LevelStats]) -> list[str]:
    heads = [f"fast_{p:g} {b}" for b in ("eager", "compile") for p in FAST_P]
    out = ["| level | " + " | ".join(heads) + " |", "| --- |" + " ---: |" * len(heads)]
    for s in lines:
        out.append(f"| {_name(s)} | " + " | ".join(_pct(v) for v in [*s.fast_eager, *s.fast_compile]) + " |")
    return out


def pass_at_table(lines: Sequence[LevelStats]) -> list[str]:
    ks = [k for k, _ in lines[0].pass_at] if lines else []
    if not ks:
        return []
    out = ["| level | " + " | ".join(f"pass@{k}" for k in ks) + " |", "| --- |" + " ---: |" * len(ks)]
    for s in lines:
        out.append(f"| {_name(s)} | " + " | ".join(_pct(v) for _, v in s.pass_at) + " |")
    return out


def _invocation(i: int, s: BenchInvocation, first_commit: str | None) -> str:
    """One invocation's line; its kagent commit where it is not the one the header names (a resumed
    run's later rows were graded by a newer kagent)."""
    took = f"{s.seconds:.0f} s" if s.seconds is not None else "did not finish"
    ahead = f" (load_inline builds ahead: {s.prebuild_seconds:.0f} s)" if s.prebuild_seconds is not None else ""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(s.started))
    driver = f", driver {s.driver}" if s.driver else ""
    rows = f"{s.jobs} rows" if s.graded is None else f"{s.graded} of {s.jobs} rows"
    stop = ", interrupted (a rerun resumes)" if s.interrupted else ""
    commit = f", kagent {s.kagent_commit[:12]}" if s.kagent_commit and s.kagent_commit != first_commit else ""
    return (f"- invocation {i + 1} ({when}): {rows} on {len(s.slots)} slot(s) [{', '.join(s.slots)}]{driver}{commit}"
            f" in {took}{ahead}{stop}")


def _in_all(invocations: list[BenchInvocation]) -> list[str]:
    """Over a resumed run's invocations: rows graded and the wall time they took (the time a run
    such as 250 load_inline files needs, summed over the calls it was split into)."""
    counted = [s for s in invocations if s.graded is not None and s.seconds is not None]
    if len(invocations) < 2 or len(counted) < len(invocations):
        return []
    rows, seconds = sum(s.graded or 0 for s in counted), sum(s.seconds or 0.0 for s in counted)
    rate = f" ({seconds / rows:.1f} s a row)" if rows else ""
    return [f"- in all: {rows} rows graded in {seconds:.0f} s of wall time over {len(counted)} invocations{rate}"]


def _stage_times(rows: Sequence[BenchRow]) -> list[str]:
    """Where a row's time goes: the median of each stage of the final evaluations over the rows that
    record it (rows of older results have none), beside the median row."""
    stages = [("workers", "workers_seconds"), ("correctness", "correctness_seconds"),
              ("timing", "timing_seconds"), ("baselines", "baselines_seconds")]
    graded = [r for r in rows if r.timing_seconds is not None]
    if not graded:
        return []
    parts = []
    for name, field in stages:
        got = [v for r in graded if (v := getattr(r, field)) is not None]
        if got:
            parts.append(f"{name} {statistics.median(got):.1f} s")
    whole = statistics.median(r.seconds for r in graded)
    return [f"- time by stage (median over the {len(graded)} timed rows that record it): {', '.join(parts)};"
            f" the median row {whole:.1f} s"]


def render(bench: BenchFile) -> str:
    """The whole table.md."""
    run = bench.run
    lines = table(bench.rows, run.attempts)
    gpus = sorted({r.gpu for r in bench.rows if r.gpu})
    torches = sorted({r.torch_version for r in bench.rows if r.torch_version})
    what = {"solutions": f"solutions in `{run.solutions}`", "reference": "the bundled reference solutions",
            "reference_model": "each problem's own Model as its ModelNew (a check of the harness)",
            "policy": f"agent episodes against `{run.model}` at `{run.policy_url}`"}[run.source]
    out = [f"# kagent bench: {what}", "",
           f"- backend {run.backend}; device {', '.join(gpus) or 'cpu'}; torch {', '.join(torches) or '?'};"
           f" Python {run.python}; kagent {run.kagent_commit or '?'}; host {run.host}",
           f"- {run.attempts} attempt(s) per problem; command: `{run.command}`",
           *[_invocation(i, s, run.kagent_commit) for i, s in enumerate(run.invocations)], *_in_all(run.invocations),
           *_stage_times(bench.rows),
           "- pass: compiled, correct and unflagged, over graded rows (faults are not graded; a missing"
           " solution is a failure). faster than: judged on the speedup's 95% interval with the reward's"
           " margin. geomean: over passed, timed rows. fast_p: passed with speedup > p, over graded rows.",
           "- memory: ModelNew's footprint during its calls, measured outside its process, over the larger"
           " baseline's (eager or torch.compile), geomean over passed rows measured; over memory limit: graded"
           " rows past the composite reward's limit (memory_factor x the larger baseline's + slack), of those"
           " measured (docs/reward.md).",
           "", *main_table(lines), "", *fast_p_table(lines)]
    if at := pass_at_table(lines):
        out += ["", *at]
    out += ["", "Per problem:", "", *problem_table(bench.rows)]
    if over := over_memory_list(bench.rows):
        out += ["", *over]
    faults = [r for r in bench.rows if r.fault]
    if faults:
        out += ["", f"Environment faults ({len(faults)}, not counted as failures):", ""]
        out += [f"- {r.problem} attempt {r.attempt}: {r.fault.splitlines()[0][:200]}" for r in faults if r.fault]
    return "\n".join(out) + "\n"


def side_by_side(a: BenchFile, b: BenchFile, a_name: str, b_name: str,
                 comparisons: Sequence[Comparison]) -> str:
    """Both tables' main lines per level (memory too where both sets hold it), then the paired differences."""
    ta = {(s.level, s.total): s for s in table(a.rows, a.run.attempts)}
    tb = {(s.level, s.total): s for s in table(b.rows, b.run.attempts)}
    keys = sorted(set(ta) | set(tb), key=lambda k: (k[1], k[0] is None, k[0] or 0))
    memory = has_memory(a.rows) and has_memory(b.rows)
    cells: list[Callable[[LevelStats], str]] = [
        lambda s: _pct(s.pass_rate), lambda s: _pct(s.faster_compile), lambda s: _x(s.geomean_compile),
        lambda s: _x(s.geomean_eager)]
    heads = ["pass", ">compile", "geomean × compile", "geomean × eager"]
    if memory:
        cells += [lambda s: _x(s.geomean_memory), _over]
        heads += ["memory × baseline", "over memory limit"]
    out = [f"A = {a_name}", f"B = {b_name}", "",
           "| level | " + " | ".join(f"{h} {side}" for h in heads for side in "AB") + " |",
           "| --- |" + " ---: |" * (2 * len(heads))]
    for key in keys:
        sa, sb = ta.get(key), tb.get(key)
        probe = sa or sb
        assert probe is not None
        vals = [cell(s) if s else "—" for cell in cells for s in (sa, sb)]
        out.append(f"| {_name(probe)} | " + " | ".join(vals) + " |")
    out.append("")
    for c in comparisons:
        if c.difference is None:
            out.append(f"geomean speedup over {c.baseline}: no problem passed and timed in both sets"
                       f" (A alone {c.only_a}, B alone {c.only_b})")
            continue
        out.append(f"geomean speedup over {c.baseline}, {c.paired} paired problems: A {_x(c.geomean_a)},"
                   f" B {_x(c.geomean_b)}; B - A = {c.difference:+.3f} (95% paired bootstrap"
                   f" [{c.low:+.3f}, {c.high:+.3f}], {c.resamples} resamples); passed in A alone {c.only_a},"
                   f" in B alone {c.only_b}")
    out.append(_memory_line(a, b) if memory else _no_memory_line(a, b))
    return "\n".join(out) + "\n"


def _memory_line(a: BenchFile, b: BenchFile) -> str:
    m = compare_memory(a.rows, b.rows)
    if not m.paired:
        return "ModelNew's memory × the larger baseline: no problem passed and measured in both sets"
    return (f"ModelNew's memory × the larger baseline, {m.paired} paired problems: A {_x(m.geomean_a)},"
            f" B {_x(m.geomean_b)}")


def _no_memory_line(a: BenchFile, b: BenchFile) -> str:
    lacking = [n for n, bench in (("A", a), ("B", b)) if not has_memory(bench.rows)]
    return f"memory: not compared (no memory figures in {' or '.join(lacking)})"


def summary(row: BenchRow) -> str:
    """One line per finished row."""
    if row.fault:
        what = f"FAULT ({row.fault.splitlines()[0][:120]})"
    elif row.missing:
        what = "missing"
    elif row.passed:
        sp = [f"x{v:.2f} {n}" for n, v in (("eager", row.speedup_eager), ("compile", row.speedup_compile)) if v]
        what = f"passed, reward {row.reward:g}" + (f", {', '.join(sp)}" if sp else "") if row.reward is not None \
            else "passed"
    else:
        what = f"failed ({', '.join(row.flags) or row.error or 'incorrect'})"[:160]
    episode = f", episode {row.episode_id} ({row.episode_status}, {row.turns} turns)" if row.episode_id else ""
    return f"{row.problem} #{row.attempt}: {what}{_memory(row)}{episode} [{row.seconds:.1f} s]"


def _memory(row: BenchRow) -> str:
    """ModelNew's footprint, its ratio to the larger baseline's, and whether it passed the limit."""
    if row.candidate_call_bytes is None:
        return ""
    ratio = memory_ratio(row)
    over = ", over the memory limit" + (" (penalised)" if row.memory_penalty else "") if row.over_memory else ""
    return (f", memory {row.candidate_call_bytes / MIB:.1f} MiB"
            + (f" ({ratio:.2f}x the larger baseline's)" if ratio is not None else "") + over)
