"""The numbers of `kagent bench` (runtime/bench_stats.py) against plain-loop references, the table
and compare texts, the plot, and where solutions are found (runtime/bench_sources.py)."""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import numpy as np
import pytest

from runtime.bench_plot import plot
from runtime.bench_report import render, side_by_side
from runtime.bench_rows import (
    BenchFile,
    BenchRow,
    missing_row,
    read_results,
    run_header,
    write_results,
)
from runtime.bench_sources import (
    builds_inline,
    collect_problems,
    find_solutions,
    reference_solution,
)
from runtime.bench_stats import compare, geomean, ks_for, level_stats, pass_at_k, table

PROBLEMS = Path(__file__).resolve().parents[1] / "problems"


def row(pid: str, *, level: int | None = 1, attempt: int = 0, passed: bool = True, eager: float | None = None,
        compile_: float | None = None, fault: str | None = None) -> BenchRow:
    return BenchRow(problem=f"level{level}/{pid}", problem_id=pid, level=level, attempt=attempt, solution=None,
                    reward=None if fault else (1.0 if passed else -1.0), passed=passed and fault is None,
                    compiled=True, correct=passed, fault=fault, speedup_eager=eager,
                    faster_eager=None if eager is None else eager > 1.05, speedup_compile=compile_,
                    faster_compile=None if compile_ is None else compile_ > 1.05, seconds=1.0)


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
