"""`kagent problems list` without torch: the problem files and the manifest's summary columns.

skills.evaluator.problem owns the problem format, the manifest and `iter_problems`, but importing it loads
torch (seconds on a small machine) for a command that only reads a folder and a JSONL file. This
reads the few manifest fields the table shows and walks `levelN/*.py` the way
`skills.evaluator.problem.iter_problems` does (tests/runtime/test_cli.py compares the two listings).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import msgspec

MANIFEST_NAME = "manifest.jsonl"  # skills.evaluator.problem.MANIFEST_NAME
_LEVEL_DIR = re.compile(r"level(\d+)")  # skills.evaluator.problem.level_of


class ManifestSummary(msgspec.Struct, kw_only=True):
    """The columns of a manifest row the table shows (skills.evaluator.problem.ManifestRow has them all)."""

    name: str
    """levelN/stem."""
    level: int | None = None
    """The problem's level."""
    precision: str | None = None
    """Lowest precision a solution may use."""
    est_h200_us: float | None = None
    """Estimated H200 time of one call, microseconds."""
    ops: list[str] = msgspec.field(default_factory=list)
    """Operators of the forward."""


def problem_files(root: Path) -> list[Path]:
    """`root/levelN/*.py` by level then name, without `_*`, README and non-files."""
    def level(d: Path) -> int | None:
        m = _LEVEL_DIR.fullmatch(d.name)
        return int(m.group(1)) if m else None
    dirs = sorted((d for d in root.iterdir() if d.is_dir() and level(d) is not None),
                  key=lambda d: (level(d), d.name))
    return [f for d in dirs for f in sorted(d.glob("*.py"))
            if not f.name.startswith("_") and f.stem.lower() != "readme" and f.is_file()]


def table(root: Path, level: int | None = None) -> Iterator[str]:
    """The lines of `kagent problems list`."""
    manifest = root / MANIFEST_NAME
    rows: dict[str, ManifestSummary] = {}
    if manifest.is_file():
        decoder = msgspec.json.Decoder(ManifestSummary)
        rows = {r.name: r for r in (decoder.decode(ln) for ln in manifest.read_bytes().splitlines() if ln.strip())}
    yield f"{'name':<40} {'level':>5} {'precision':>9} {'est H200 us':>11}  ops"
    for path in problem_files(root):
        name = f"{path.parent.name}/{path.stem}"
        row = rows.get(name)
        if level is not None and (row is None or row.level != level):
            continue
        if row is None:
            yield f"{name:<40} {'?':>5} {'?':>9} {'?':>11}  (not in manifest)"
            continue
        us = "?" if row.est_h200_us is None else f"{row.est_h200_us:.0f}"
        yield f"{name:<40} {row.level!s:>5} {row.precision or '?':>9} {us:>11}  {','.join(row.ops)[:60]}"
