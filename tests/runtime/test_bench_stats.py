"""The numbers of `kagent bench` (runtime/bench_stats.py) against plain-loop references, the table
and compare texts, the plot, and where solutions are found (runtime/bench_sources.py)."""

from __future__ import annotations

import csv
import itertools
import json
import math
import random
from pathlib import Path

import msgspec
import numpy as np
import pytest

from runtime.bench_plot import plot
from runtime.bench_report import render, side_by_side, summary
from runtime.bench_rows import (
    BenchFile,
    BenchRow,
    fault_row,
    missing_row,
    read_results,
    row_from_result,
    run_header,
    write_results,
)
from runtime.bench_sources import (
    builds_inline,
    collect_problems,
    find_solutions,
    reference_solution,
)
from runtime.bench_stats import (
    compare,
    compare_memory,
    geomean,
    ks_for,
    level_stats,
    memory_ratio,
    pass_at_k,
    table,
)
from skills.evaluator.results import EvalResult
from skills.evaluator.reward import MIB, get_reward_fn, memory_limit, over_memory
from tests.skills.evaluator.test_reward import mem, result

PROBLEMS = Path(__file__).resolve().parents[2] / "problems"
MEMORY_FIELDS = ("reward_fn", "candidate_call_bytes", "candidate_method", "eager_bytes", "compile_bytes",
                 "limit_bytes", "over_memory", "memory_penalty")
"""The row's fields that bench did not keep before it reported memory."""


def row(pid: str, *, level: int | None = 1, attempt: int = 0, passed: bool = True, eager: float | None = None,
        compile_: float | None = None, fault: str | None = None,
        memory: tuple[float | None, float | None, float | None] | None = None) -> BenchRow:
    """`memory`: ModelNew's, eager's and compile's footprints in MiB (None: not measured), the limit
    2 x the larger baseline's + 128 MiB and the penalty taken where ModelNew is past it (composite)."""
    figures: dict[str, object] = {}
    if memory is not None:
        cand, base_e, base_c = (None if v is None else int(v * MIB) for v in memory)
        bases = [b for b in (base_e, base_c) if b is not None]
        limit = 2 * max(bases) + 128 * MIB if bases else None
        over = cand > limit if cand is not None and limit is not None else None
        figures = {"reward_fn": "composite", "candidate_call_bytes": cand, "eager_bytes": base_e,
                   "compile_bytes": base_c, "limit_bytes": limit, "over_memory": over,
                   "memory_penalty": bool(over) and passed}
    return BenchRow(problem=f"level{level}/{pid}", problem_id=pid, level=level, attempt=attempt, solution=None,
                    reward=None if fault else (1.0 if passed else -1.0), passed=passed and fault is None,
                    compiled=True, correct=passed, fault=fault, speedup_eager=eager,
                    faster_eager=None if eager is None else eager > 1.05, speedup_compile=compile_,
                    faster_compile=None if compile_ is None else compile_ > 1.05, seconds=1.0,
                    **figures)  # type: ignore[arg-type]


def test_pass_at_k_is_the_share_of_k_subsets_holding_a_pass() -> None:
    for n in range(1, 7):
        for c in range(n + 1):
            outcomes = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(outcomes, k))
                expected = sum(any(s) for s in subsets) / len(subsets)
                assert pass_at_k(n, c, k) == pytest.approx(expected)
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_geomean_and_ks() -> None:
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([]) is None
    assert ks_for(1) == [] and ks_for(4) == [1, 4] and ks_for(10) == [1, 5, 10]


def test_level_stats_count_faults_apart_and_missing_as_failures() -> None:
    rows = [row("a", eager=2.0, compile_=1.6), row("b", eager=0.5, compile_=0.25), row("c", passed=False),
            missing_row(problem="level1/d", problem_id="d", level=1, attempt=0), row("e", fault="judge died")]
    s = level_stats(rows, level=1, total=False, ks=[])
    assert (s.problems, s.rows, s.faults, s.missing, s.passed) == (5, 5, 1, 1, 2)
    assert s.pass_rate == pytest.approx(2 / 4)  # the fault is not graded; the missing one fails
    assert s.faster_eager == pytest.approx(1 / 4) and s.faster_compile == pytest.approx(1 / 4)
    assert s.geomean_eager == pytest.approx(1.0) and s.geomean_compile == pytest.approx(math.sqrt(0.4))
    assert s.fast_eager == pytest.approx([1 / 4, 1 / 4, 0.0])  # speedup > 1, > 1.5, > 2 (2.0 is not > 2)
    assert s.fast_compile == pytest.approx([1 / 4, 1 / 4, 0.0])


def test_table_has_a_line_per_level_and_pass_at_k_for_k_attempts() -> None:
    rows = [row("a", attempt=0, passed=True), row("a", attempt=1, passed=False),
            row("b", level=2, attempt=0, passed=False), row("b", level=2, attempt=1, passed=False)]
    lines = table(rows, attempts=2)
    assert [(s.level, s.total) for s in lines] == [(1, False), (2, False), (None, True)]
    assert lines[0].pass_at == [(1, 0.5), (2, 1.0)] and lines[1].pass_at == [(1, 0.0), (2, 0.0)]
    assert lines[2].pass_at == [(1, 0.25), (2, 0.5)]


def _plain_bootstrap(a: list[float], b: list[float], resamples: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(resamples, len(a)))
    diffs = []
    for draw in idx:
        ga = math.exp(sum(math.log(a[i]) for i in draw) / len(draw))
        gb = math.exp(sum(math.log(b[i]) for i in draw) / len(draw))
        diffs.append(gb - ga)
    diffs.sort()
    return float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5))


def test_compare_is_a_paired_bootstrap_over_problems_both_passed() -> None:
    rng = random.Random(3)
    a_sp = [rng.uniform(0.5, 2.0) for _ in range(12)]
    b_sp = [s * rng.uniform(1.1, 1.6) for s in a_sp]
    a = [row(f"p{i:02d}", compile_=s) for i, s in enumerate(a_sp)] + [row("only_a", compile_=3.0)]
    b = [row(f"p{i:02d}", compile_=s) for i, s in enumerate(b_sp)] + [row("only_a", passed=False)]
    c = compare(a, b, "compile", resamples=400, seed=7)
    assert (c.paired, c.only_a, c.only_b) == (12, 1, 0)
    assert c.geomean_a == pytest.approx(geomean(a_sp)) and c.geomean_b == pytest.approx(geomean(b_sp))
    assert c.difference == pytest.approx(geomean(b_sp) - geomean(a_sp))  # type: ignore[operator]
    low, high = _plain_bootstrap(a_sp, b_sp, 400, 7)
    assert (c.low, c.high) == (pytest.approx(low), pytest.approx(high))
    assert 0 < c.low < c.difference < c.high  # type: ignore[operator]  # every B is faster: the interval excludes 0
    assert compare(a, b, "eager").difference is None  # eager never timed


def test_table_and_compare_texts(tmp_path: Path) -> None:
    header = run_header(source="solutions", backend="cpu", solutions="/x", policy_url=None, model=None,
                        attempts=1, command="kagent bench x")
    a = BenchFile(run=header, rows=[row("a", compile_=2.0, eager=3.0), row("b", passed=False),
                                    row("c", fault="worker did not start")])
    text = render(a)
    assert "| level 1 | 3 | 3 | 1 | 0 | 50.0% | 50.0% | 50.0% | 3.00× | 2.00× |" in text
    assert "Environment faults (1, not counted as failures)" in text and "worker did not start" in text
    write_results(tmp_path, a)
    again = read_results(tmp_path)
    assert again == a
    assert (tmp_path / "results.csv").read_text().count("\n") == 4  # header + 3 rows
    b = BenchFile(run=header, rows=[row("a", compile_=4.0, eager=3.0), row("b", compile_=1.0)])
    out = side_by_side(a, b, "A", "B", [compare(a.rows, b.rows, "compile", resamples=200)])
    assert "| level 1 | 50.0% | 100.0% |" in out
    assert "1 paired problems: A 2.00×, B 4.00×; B - A = +2.000" in out and "in B alone 1" in out
    png = plot(a.rows, tmp_path / "speedup.png", title="t")
    assert png is not None and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot([row("z", passed=False)], tmp_path / "none.png", title="t") is None
    assert not (tmp_path / "none.png").exists()


def test_problems_are_found_in_level_then_number_order(tmp_path: Path) -> None:
    kb = tmp_path / "KernelBench"
    for level, names in {"level1": ["10_b.py", "2_a.py", "1_c.py"], "level2": ["1_d.py"]}.items():
        (kb / level).mkdir(parents=True)
        for n in names:
            (kb / level / n).write_text(f"# {n}\n")
    got = [p.name for p in collect_problems([kb])]
    assert got == ["level1/1_c", "level1/2_a", "level1/10_b", "level2/1_d"]
    assert [p.name for p in collect_problems([kb / "level2", kb / "level2" / "1_d.py"])] == ["level2/1_d"]
    with pytest.raises(ValueError, match="does not exist"):
        collect_problems([tmp_path / "nope"])


def test_solutions_are_found_in_every_layout(tmp_path: Path) -> None:
    kb = tmp_path / "KernelBench" / "level1"
    kb.mkdir(parents=True)
    for n in ("1_a.py", "2_b.py", "3_c.py", "4_d.py"):
        (kb / n).write_text(f"# {n}\n")
    a, b, c, d = collect_problems([kb])
    sol = tmp_path / "sol"
    (sol / "level1" / "1_a").mkdir(parents=True)
    (sol / "level1" / "1_a" / "model_new.py").write_text("x = 1\n")
    (sol / "2_b.py").write_text("from torch.utils.cpp_extension import load_inline\n")
    (sol / "level_1_problem_3_sample_0_kernel.py").write_text("s0\n")
    (sol / "level_1_problem_3_sample_2_kernel.py").write_text("s2\n")
    assert find_solutions(sol, a, 1) == [sol / "level1" / "1_a"]
    assert find_solutions(sol, b, 1) == [sol / "2_b.py"]
    assert find_solutions(sol, c, 3) == [sol / "level_1_problem_3_sample_0_kernel.py", None,
                                         sol / "level_1_problem_3_sample_2_kernel.py"]
    assert find_solutions(sol, d, 1) == [None]
    assert builds_inline(sol / "2_b.py") and not builds_inline(sol / "level1" / "1_a")
    relu = collect_problems([PROBLEMS / "level1" / "01_relu.py"])[0]
    assert reference_solution(relu, "cpu") == PROBLEMS / "solutions" / "cpu" / "level1" / "01_relu"
    assert reference_solution(relu, "cuda") is None  # relu has no bundled CUDA solution


def _final(r: EvalResult, reward_fn: str) -> EvalResult:
    """As skills/evaluator/state.py finishes a final evaluation: the limit under the defaults, then the reward."""
    if r.memory is not None:
        limit = memory_limit(r)
        r.memory.limit_bytes = int(limit) if limit is not None else None
    r.reward, r.reward_fn = get_reward_fn(reward_fn)(r), reward_fn
    return r


def _row_of(r: EvalResult) -> BenchRow:
    return row_from_result(r, problem="level1/p", problem_id="x", level=1, attempt=0, solution=None, seconds=1.0)


def test_rows_carry_the_memory_figures_and_whether_the_penalty_applied() -> None:
    """The figures are the evaluation's own (bytes, None where not measured); over_memory is the
    reward's test (skills.evaluator.reward.over_memory); the penalty applied only under composite, to a pass."""
    cases = {  # ModelNew, eager, compile (MiB) -> over the limit (2 x the larger baseline + 128 MiB)
        "lean": (mem(300.0, eager_mib=100.0, compile_mib=120.0), False),  # limit 368 MiB
        "fat": (mem(400.0, eager_mib=100.0, compile_mib=120.0), True),
        "candidate not measured": (mem(None), None),
        "no baseline measured": (mem(900.0, eager_mib=None), None),
    }
    for name, (m, over) in cases.items():
        for fn in ("composite", "milestone"):
            r = _final(result(2.0, memory=msgspec.structs.replace(m)), fn)
            got = _row_of(r)
            assert got.candidate_call_bytes == m.candidate_call_bytes and got.eager_bytes == m.eager_bytes, name
            assert got.compile_bytes == m.compile_bytes and got.candidate_method == "peak_rss", name
            assert r.memory is not None and got.limit_bytes == r.memory.limit_bytes, name
            assert got.over_memory is over, name
            assert bool(got.over_memory) is over_memory(r), name
            assert got.memory_penalty is (fn == "composite" and over is True), (name, fn)
            assert got.reward_fn == fn and got.passed, name
    penalised = _row_of(_final(result(2.0, memory=mem(400.0, eager_mib=100.0, compile_mib=120.0)), "composite"))
    lean = _row_of(_final(result(2.0, memory=mem(300.0, eager_mib=100.0, compile_mib=120.0)), "composite"))
    assert penalised.reward == pytest.approx(lean.reward - 0.5)  # type: ignore[operator]  # the penalty the row names
    assert memory_ratio(penalised) == pytest.approx(400 / 120)  # over the larger baseline, compile's here
    # A failure past the limit: over it, but no penalty (it earns -1 anyway).
    wrong = _row_of(_final(result(2.0, correct=False, memory=mem(400.0)), "composite"))
    assert wrong.over_memory is True and wrong.memory_penalty is False and wrong.reward == -1.0
    # Nothing measured (no MemoryUse), no reward (not final), no evaluation at all.
    bare = _row_of(_final(result(2.0), "composite"))
    assert (bare.candidate_call_bytes, bare.limit_bytes, bare.over_memory, bare.memory_penalty) == (None, None, None,
                                                                                                    False)
    assert _row_of(result(2.0, memory=mem(400.0))).memory_penalty is None
    for r in (missing_row(problem="level1/p", problem_id="x", level=1, attempt=0),
              fault_row(problem="level1/p", problem_id="x", level=1, attempt=0, fault="judge died", seconds=1.0)):
        assert [getattr(r, f) for f in MEMORY_FIELDS] == [None] * len(MEMORY_FIELDS)


def test_level_stats_count_rows_over_the_memory_limit() -> None:
    rows = [row("a", eager=2.0, memory=(300.0, 100.0, 200.0)),  # 1.5x, under 528 MiB
            row("b", eager=1.0, memory=(500.0, 100.0, None)),  # 5x, over 328 MiB
            row("c", passed=False, memory=(900.0, 100.0, None)),  # over, failed: counted, not in the geomean
            row("d", eager=1.0, memory=(None, 100.0, None)),  # ModelNew not measured
            row("e", eager=1.0),  # nothing measured (a row of a run before bench kept memory)
            row("f", fault="judge died")]
    s = level_stats(rows, level=1, total=False, ks=[])
    assert (s.memory_measured, s.over_memory) == (3, 2)
    assert s.geomean_memory == pytest.approx(math.sqrt(1.5 * 5.0))
    assert level_stats([row("e")], level=1, total=False, ks=[]).geomean_memory is None
    m = compare_memory(rows, [row("a", memory=(600.0, 100.0, 200.0)), row("e", memory=(100.0, 100.0, None))])
    assert (m.paired, m.geomean_a, m.geomean_b) == (1, pytest.approx(1.5), pytest.approx(3.0))


def test_the_table_shows_each_row_s_memory_beside_its_speed() -> None:
    header = run_header(source="solutions", backend="cpu", solutions="/x", policy_url=None, model=None,
                        attempts=1, command="kagent bench x")
    bench = BenchFile(run=header, rows=[row("a", compile_=2.0, eager=3.0, memory=(300.0, 100.0, 200.0)),
                                        row("b", eager=1.0, memory=(500.0, 100.0, None)),
                                        row("c", eager=1.0), missing_row(problem="level1/d", problem_id="d", level=1,
                                                                         attempt=0)])
    text = render(bench)
    assert "| memory × baseline | over memory limit |" in text
    assert "| 1.44× | 2.00× | 2.74× | 1 of 2 |" in text  # memory: geomean of 1.5x and 5x; b alone past its limit
    assert "| level1/a | 0 | passed | 1 | 3.00× | 2.00× | 300.0 | 200.0 | 1.50× | 528.0 | no |" in text
    assert "| level1/b | 0 | passed | 1 | 1.00× | — | 500.0 | 100.0 | 5.00× | 328.0 | yes, penalised |" in text
    assert "| level1/c | 0 | passed | 1 | 1.00× | — | — | — | — | — | — |" in text
    assert "| level1/d | 0 | missing | — | — | — | — | — | — | — | — |" in text
    assert "Over the memory limit (1 row(s), 1 problem(s)):" in text
    assert "- level1/b attempt 0: ModelNew 500.0 MiB, 5.00× the larger baseline's, limit 328.0 MiB; the" \
        " composite reward took the memory penalty off" in text
    assert "Over the memory limit" not in render(BenchFile(run=header, rows=[row("a", memory=(1.0, 1.0, None))]))
    # The progress line of each row says it too.
    assert "memory 500.0 MiB (5.00x the larger baseline's), over the memory limit (penalised)" in summary(bench.rows[1])
    assert "memory" not in summary(bench.rows[2])


def test_the_csv_has_a_column_per_memory_figure(tmp_path: Path) -> None:
    header = run_header(source="solutions", backend="cpu", solutions="/x", policy_url=None, model=None,
                        attempts=1, command="kagent bench x")
    write_results(tmp_path, BenchFile(run=header, rows=[row("a", memory=(500.0, 100.0, None)), row("e")]))
    with (tmp_path / "results.csv").open(newline="") as f:
        reader = csv.DictReader(f)
        lines = list(reader)
    assert set(MEMORY_FIELDS) <= set(reader.fieldnames or [])
    assert lines[0]["candidate_call_bytes"] == str(500 * MIB) and lines[0]["eager_bytes"] == str(100 * MIB)
    assert lines[0]["limit_bytes"] == str(328 * MIB) and lines[0]["compile_bytes"] == ""
    assert (lines[0]["over_memory"], lines[0]["memory_penalty"], lines[0]["reward_fn"]) == ("True", "True",
                                                                                            "composite")
    assert all(lines[1][f] == "" for f in MEMORY_FIELDS)  # not measured: empty, never a number


def test_a_results_file_written_before_memory_loads_and_compares(tmp_path: Path) -> None:
    """results.json as bench wrote it before it kept memory (no memory fields): it loads, tables with
    dashes, and compare shows memory only where both sets hold it."""
    header = run_header(source="solutions", backend="cpu", solutions="/x", policy_url=None, model=None,
                        attempts=1, command="kagent bench x")
    new = BenchFile(run=header, rows=[row("a", compile_=2.0, memory=(300.0, 100.0, 200.0))])
    data = json.loads(msgspec.json.encode(new))
    for r in data["rows"]:
        for f in MEMORY_FIELDS:
            del r[f]
    old_dir = tmp_path / "old"
    old_dir.mkdir()
    (old_dir / "results.json").write_text(json.dumps(data))
    old = read_results(old_dir)
    assert old is not None and old.rows[0].candidate_call_bytes is None and old.rows[0].memory_penalty is None
    assert old.rows[0].speedup_compile == 2.0
    assert "| 2.00× | — | — |" in render(old)  # geomean × compile, then no memory
    comparisons = [compare(old.rows, new.rows, "compile", resamples=200)]
    out = side_by_side(old, new, "old", "new", comparisons)
    assert "memory × baseline" not in out and "memory: not compared (no memory figures in A)" in out
    out = side_by_side(new, new, "new", "new", comparisons)
    assert "| memory × baseline A | memory × baseline B |" in out and "| 1.50× | 1.50× | 0 of 1 | 0 of 1 |" in out
    assert "ModelNew's memory × the larger baseline, 1 paired problems: A 1.50×, B 1.50×" in out
