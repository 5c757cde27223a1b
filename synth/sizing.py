"""Choose a composition's default sizes: scale its scalable size constants by powers of two until
the predicted H200 eager time reaches a target, without exceeding a memory bound.

The small sizes (``SMALL_SIZES``) are the composer's; the default sizes start there and double.
Doubling keeps every divisibility the composer relied on (pixel unshuffle, heads, GLU halves).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from skills.evaluator.problem import load_problem_source
from synth.builder import OpDef
from synth.predict import Prediction, predict
from synth.render import render
from synth.spec import Composition

CAPS: dict[str, int] = {"batch": 16384, "length": 16384, "spatial": 1024, "feature": 16384, "hidden": 8192}
"""Largest default value per size role (channels and vocabularies are never scaled)."""
ORDER = ("batch", "spatial", "length", "feature", "hidden")
"""Which roles grow first."""


def predict_source(src: str, name: str) -> Prediction:
    """Load a problem source at its default sizes and predict it."""
    return predict(load_problem_source(src, name))


def _grow(comp: Composition, values: dict[str, int], steps: int) -> int:
    """Double up to ``steps`` scalable sizes, always the least-scaled one first (ties by ``ORDER``),
    so that e.g. height and width grow together; returns how many doublings were made."""
    syms = [s for s in comp.sizes if s.scalable]
    grown = 0
    for _ in range(steps):
        growable = [s for s in syms if values[s.name] * 2 <= CAPS.get(s.role, 0)]
        if not growable:
            break
        pick = min(growable, key=lambda s: (values[s.name] // s.small, ORDER.index(s.role) if s.role in ORDER else 9))
        values[pick.name] *= 2
        grown += 1
    return grown


def _shrink(comp: Composition, values: dict[str, int]) -> bool:
    """Halve the most-scaled size (never below its small value); False when nothing can shrink."""
    best = max((s for s in comp.sizes if values[s.name] > s.small), key=lambda s: values[s.name] / s.small, default=None)
    if best is None:
        return False
    values[best.name] //= 2
    return True


def fit(comp: Composition, ops: Mapping[str, OpDef], target_us: float, max_bytes: int,
        min_est_us: float = 55.0, rounds: int = 8) -> tuple[dict[str, int], Prediction]:
    """Default sizes aiming at ``target_us`` predicted (within 1.5x) and at least ``min_est_us`` by
    the loader's own estimate (``est_h200_us``); also returns their prediction."""
    values = {s.name: s.small for s in comp.sizes}
    name = f"synth_{comp.seed}_{comp.index}"
    pred = predict_source(render(comp, ops, values), name)
    for _ in range(rounds):
        if pred.peak_bytes > max_bytes:
            if not _shrink(comp, values):
                break
        elif pred.us < target_us / 1.5 or pred.est_us < min_est_us:
            ratio = max(target_us / max(pred.us, 1.0), min_est_us / max(pred.est_us, 1.0))
            if _grow(comp, values, max(1, round(math.log2(ratio)))) == 0:
                break
        elif pred.us > target_us * 1.5 and pred.est_us >= 2 * min_est_us and _shrink(comp, values):
            pass
        else:
            break
        pred = predict_source(render(comp, ops, values), name)
    while pred.peak_bytes > max_bytes and _shrink(comp, values):
        pred = predict_source(render(comp, ops, values), name)
    return values, pred
