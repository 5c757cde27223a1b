"""The summary table of a run folder: accepted, rejected by reason, and distributions."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from synth.store import MANIFEST, REJECTED, Rejection, SynthRow, read_log


def _table(title: str, counts: Counter[str], total: int, order: list[str] | None = None) -> list[str]:
    keys = order if order is not None else [k for k, _ in counts.most_common()]
    lines = [f"| {title} | count | share |", "| --- | ---: | ---: |"]
    lines += [f"| {k} | {counts[k]} | {100 * counts[k] / max(total, 1):.1f}% |" for k in keys if counts[k]]
    return lines


def summarize(out: Path, *, wall_s: float | None = None, workers: int | None = None, new: int = 0) -> str:
    """Markdown summary of the run in ``out``; with ``wall_s``, the rate of this invocation, which
    accepted ``new`` problems (a resumed folder holds earlier ones too)."""
    rows: list[SynthRow] = read_log(out / MANIFEST, SynthRow)
    rej: list[Rejection] = read_log(out / REJECTED, Rejection)
    total = len(rows) + len(rej)
    lines = [f"**{len(rows)} accepted of {total} candidates** ({100 * len(rows) / max(total, 1):.1f}%)"]
    if wall_s is not None:
        rate = 60 * new / wall_s if wall_s > 0 else 0.0
        lines[0] += f"; this invocation: {new} accepted in {wall_s:.0f} s wall" + (f" on {workers} workers" if workers else "")
        lines[0] += f" ({rate:.1f}/min, catalogue probe and worker start included)"
    lines += ["", *_table("rejected: reason", Counter(r.reason for r in rej), total)]
    feats = [r.synth.features for r in rows]
    n = len(rows)
    lines += ["", *_table("operators", Counter(str(f.n_ops) for f in feats), n, [str(k) for k in range(1, 6)])]
    lines += ["", *_table("category (problems containing it)", Counter(c for f in feats for c in f.categories), n)]
    lines += ["", *_table("input layout", Counter(f.layout for f in feats), n)]
    lines += ["", *_table("dtype", Counter(f.dtype for f in feats), n)]
    lines += ["", *_table("tier", Counter(str(r.tier) for r in rows), n, [str(k) for k in range(1, 7)])]
    if feats:
        us = sorted(f.pred_eager_us_h200 for f in feats)
        lines += ["", f"Predicted H200 eager time per call (not measured): median {us[n // 2]:.0f} us, "
                  f"range {us[0]:.0f}-{us[-1]:.0f} us. Branches (residual/concat) in "
                  f"{sum(f.branches > 0 for f in feats)} problems; "
                  f"{len({op for f in feats for op in f.ops})} distinct operators used."]
    return "\n".join(lines) + "\n"
