"""speedup.png of a `kagent bench` run: per-problem speedup over torch.compile (over eager when
compile was never timed), log scale, problems grouped by level and sorted by speedup, with the 1x line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from runtime.bench_rows import BenchRow
from runtime.bench_stats import Baseline, problem_speedups

PLOT = "speedup.png"


def plotted_baseline(rows: Sequence[BenchRow]) -> Baseline | None:
    """compile when any passed row has it, else eager when any has that, else None (nothing to plot)."""
    if any(r.passed and r.speedup_compile for r in rows):
        return "compile"
    if any(r.passed and r.speedup_eager for r in rows):
        return "eager"
    return None


def plot(rows: Sequence[BenchRow], path: Path, title: str) -> Path | None:
    """Write the plot; None (and no file) when no passed row was timed."""
    baseline = plotted_baseline(rows)
    if baseline is None:
        return None
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on servers
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    speedups = problem_speedups(rows, baseline)
    levels = sorted({r.level for r in rows}, key=lambda v: (v is None, v or 0))
    level_of = {r.problem_id: r.level for r in rows}
    fig, ax = plt.subplots(figsize=(max(6.0, 0.12 * len(speedups) + 3.0), 4.0))
    x = 0
    ticks: list[tuple[float, str]] = []
    for lv in levels:
        vals = sorted(v for pid, v in speedups.items() if level_of[pid] == lv)
        n_problems = len({r.problem_id for r in rows if r.level == lv})
        if vals:
            xs = list(range(x, x + len(vals)))
            ax.scatter(xs, vals, s=14, label=f"level {lv}" if lv is not None else "no level")
            ticks.append((x + (len(vals) - 1) / 2, f"L{lv}: {len(vals)}/{n_problems}" if lv is not None
                          else f"{len(vals)}/{n_problems}"))
            x += len(vals) + 2
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}×"))
    ax.set_ylabel(f"speedup over {'torch.compile' if baseline == 'compile' else 'eager'}")
    ax.set_xticks([t for t, _ in ticks], [label for _, label in ticks])
    ax.set_xlabel("problems passed and timed / problems, by level (sorted by speedup)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
