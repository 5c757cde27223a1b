"""Where rollout jobs come from (DESIGN §10): the problems folder, and the curriculum's weights.

The scheduler asks a `CurriculumSource` for the next problem. `StoreCurriculum` samples uniformly
over the problems folder until the store's `curriculum` table holds weights (the trainer writes
them); from then on it samples by `Store.curriculum_weights()`, re-read every `refresh_s`.
Problems the table does not list get weight 1.0 (the table's default), so a problem added to the
folder later is still drawn.
"""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path
from typing import Protocol

import anyio
import msgspec

from runtime.store import ProblemRow, Store
from skills.evaluator.problem import (
    MANIFEST_NAME,
    ManifestRow,
    iter_problems,
    level_of,
    read_manifest,
    source_id,
)

log = logging.getLogger("kagent.curriculum")


class NoProblems(Exception):
    """There is nothing to draw rollouts from."""


class CurriculumSource(Protocol):
    """Picks the next problem for a rollout."""

    async def next_problem(self) -> ProblemRow: ...


def scan_problems(root: Path) -> list[ProblemRow]:
    """Rows for `root/levelN/*.py` (precision and tier from root/manifest.jsonl where it lists them)."""
    if not root.is_dir():
        raise NoProblems(f"problems folder {root} does not exist")
    manifest: dict[str, ManifestRow] = {}
    if (root / MANIFEST_NAME).is_file():
        manifest = {r.id: r for r in read_manifest(root / MANIFEST_NAME)}
    rows = []
    for path in iter_problems(root):
        code = path.read_text(encoding="utf-8")
        pid = source_id(code)
        m = manifest.get(pid)
        rows.append(ProblemRow(
            id=pid, name=f"{path.parent.name}/{path.stem}", source=m.source if m else "kagent",
            level=level_of(path.parent.name),
            path=path.relative_to(root).as_posix(), precision=m.precision if m else None,
            tier=m.tier if m else None, code=code,
            manifest=msgspec.json.encode(m).decode() if m else None))
    return rows


class StoreCurriculum:
    """Uniform until the store holds curriculum weights, then weighted by them."""

    def __init__(self, store: Store, problems: list[ProblemRow], *, refresh_s: float = 30.0,
                 seed: int | None = None) -> None:
        self.store = store
        self.problems = list(problems)
        self.refresh_s = refresh_s
        self.rng = random.Random(seed)
        self._weights: dict[str, float] = {}
        self._read_at = -float("inf")
        self._lock = anyio.Lock()

    def set_problems(self, problems: list[ProblemRow]) -> None:
        self.problems = list(problems)

    async def weights(self) -> dict[str, float]:
        async with self._lock:
            if time.monotonic() - self._read_at >= self.refresh_s:
                self._weights = await self.store.curriculum_weights()
                self._read_at = time.monotonic()
            return self._weights

    async def next_problem(self) -> ProblemRow:
        if not self.problems:
            raise NoProblems("the problems folder holds no problems (levelN/*.py)")
        weights = await self.weights()
        if not weights:
            return self.rng.choice(self.problems)
        w = [max(0.0, weights.get(p.id, 1.0)) for p in self.problems]
        if sum(w) <= 0:
            log.warning("every curriculum weight is 0; drawing uniformly")
            return self.rng.choice(self.problems)
        return self.rng.choices(self.problems, weights=w)[0]
