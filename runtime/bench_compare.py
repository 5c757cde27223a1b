"""`kagent bench compare A B`: two results folders side by side per level, and the paired bootstrap
interval of the difference in geomean speedup (runtime/bench_stats.py, `compare`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runtime.bench_args import UsageError
from runtime.bench_report import side_by_side
from runtime.bench_rows import BenchFile, read_results
from runtime.bench_stats import Baseline, compare


def _load(path: Path) -> BenchFile:
    bench = read_results(path)
    if bench is None:
        raise ValueError(f"{path} holds no results.json (a `kagent bench --out` folder)")
    return bench


def run_compare(args: argparse.Namespace) -> int:
    if len(args.problems) != 3:
        raise UsageError("usage: kagent bench compare A B (two --out folders of kagent bench)")
    a_path, b_path = Path(args.problems[1]), Path(args.problems[2])
    a, b = _load(a_path), _load(b_path)
    baselines: list[Baseline] = ["compile", "eager"]
    comparisons = [compare(a.rows, b.rows, base, resamples=max(100, args.resamples)) for base in baselines]
    sys.stdout.write(side_by_side(a, b, str(a_path), str(b_path), comparisons))
    return 0
