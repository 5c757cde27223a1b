"""Decontamination: AST similarity with identifiers and constants normalised.

A problem becomes a token sequence: a pre-order walk of the AST of ``class Model`` and the
functions (``get_inputs``, ``get_init_inputs``), without imports, module constants, docstrings
and comments. Names we choose are normalised (variables, parameters, attributes of ``self``,
module constants: all ``N``/``A``/``arg``) and so are literal values (``C``); what the problem
computes is kept: the torch API it calls (``torch.*``, ``nn.*``, ``F.*`` attribute chains), the
keyword names of those calls and the syntax. So renaming variables, resizing tensors or changing
a slope does not make a copy look new; calling a different operator does.

Similarity is the Jaccard index of the sets of token ``K``-grams (``K = 4``). Against held-out
problems (default: the bundled ``problems/level1-3``) it is computed exactly; inside a generated
set, candidates are found with MinHash LSH (``BANDS`` bands of ``ROWS`` rows; a pair at
similarity 0.9 is a candidate with probability 1 - (1 - 0.9**4)**32 > 0.9999998) and then
scored exactly. A problem at similarity >= ``THRESHOLD`` to a held-out problem or to an earlier
accepted one is dropped.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

K = 4
"""Length of the token n-grams compared."""
THRESHOLD = 0.9
"""Similarity at or above which a problem is a near-duplicate."""
BANDS = 32
"""MinHash LSH bands."""
ROWS = 4
"""MinHash rows per band."""
_API = frozenset({"torch", "nn", "F", "math"})
_KEEP_DEFS = frozenset({"__init__", "forward", "get_inputs", "get_init_inputs"})
_MASK = (1 << 64) - 1
_SEEDS = np.random.default_rng(20261130).integers(0, 1 << 63, size=BANDS * ROWS, dtype=np.uint64)


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _walk(node: ast.AST, out: list[str]) -> None:
    if isinstance(node, ast.Name):
        out.append(f"N:{node.id}" if node.id in _API else "N")
        return
    if isinstance(node, ast.Attribute):
        out.append(f"A:{node.attr}" if _root(node) in _API else "A")
        _walk(node.value, out)
        return
    if isinstance(node, ast.Constant):
        out.append("C")
        return
    if isinstance(node, ast.keyword):
        out.append(f"K:{node.arg}")
    elif isinstance(node, ast.FunctionDef):
        out.append(f"def:{node.name}" if node.name in _KEEP_DEFS else "def")
    elif isinstance(node, ast.arg):
        out.append("arg")
        return
    elif not isinstance(node, ast.Load | ast.Store | ast.Del):
        out.append(type(node).__name__)
    body = getattr(node, "body", None)
    for field, value in ast.iter_fields(node):
        if field in ("returns", "type_comment") or (isinstance(node, ast.arg) and field == "annotation"):
            continue
        items = value if isinstance(value, list) else [value]
        if field == "body" and body and _is_docstring(body[0]):
            items = items[1:]
        for item in items:
            if isinstance(item, ast.AST):
                _walk(item, out)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def tokens(source: str) -> list[str]:
    """The normalised token sequence of a problem source (see the module docstring)."""
    tree = ast.parse(source)
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            _walk(node, out)
    return out


def shingles(source: str) -> frozenset[int]:
    """Hashed token ``K``-grams of a source (stable across processes and runs)."""
    toks = tokens(source)
    grams = [" ".join(toks[i:i + K]) for i in range(max(1, len(toks) - K + 1))]
    return frozenset(int.from_bytes(hashlib.blake2b(g.encode(), digest_size=8).digest(), "little") & _MASK for g in grams)


def similarity(a: frozenset[int], b: frozenset[int]) -> float:
    """Jaccard index of two shingle sets."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _mix(z: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """splitmix64's finaliser (uint64 arithmetic wraps, which is what mixing wants)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: NDArray[np.uint64] = z ^ (z >> np.uint64(31))
    return out


def _minhash(s: frozenset[int]) -> NDArray[np.uint64]:
    """``BANDS * ROWS`` minimum hashes of a shingle set (one independent hash per seed)."""
    x = np.array(sorted(s), dtype=np.uint64)
    out: NDArray[np.uint64] = _mix(x[:, None] ^ _SEEDS[None, :]).min(axis=0)
    return out


class Index:
    """Near-duplicate lookup: exact against held-out problems, MinHash LSH inside the set."""

    def __init__(self, held_out: Iterable[tuple[str, str]] = ()) -> None:
        self.held_out = [(name, shingles(src)) for name, src in held_out]
        self.items: list[tuple[str, frozenset[int]]] = []
        self.buckets: dict[tuple[int, bytes], list[int]] = {}

    def nearest_held_out(self, sh: frozenset[int]) -> tuple[str | None, float]:
        """The most similar held-out problem and its similarity."""
        best: tuple[str | None, float] = (None, 0.0)
        for name, other in self.held_out:
            s = similarity(sh, other)
            if s > best[1]:
                best = (name, s)
        return best

    def _keys(self, sh: frozenset[int]) -> list[tuple[int, bytes]]:
        sig = _minhash(sh)
        return [(band, sig[band * ROWS:(band + 1) * ROWS].tobytes()) for band in range(BANDS)]

    def nearest_in_set(self, sh: frozenset[int]) -> tuple[str | None, float]:
        """The most similar accepted problem among the LSH candidates, and its similarity."""
        seen: set[int] = set()
        best: tuple[str | None, float] = (None, 0.0)
        for key in self._keys(sh):
            for i in self.buckets.get(key, ()):
                if i in seen:
                    continue
                seen.add(i)
                s = similarity(sh, self.items[i][1])
                if s > best[1]:
                    best = (self.items[i][0], s)
        return best

    def add(self, name: str, sh: frozenset[int]) -> None:
        """Record an accepted problem."""
        self.items.append((name, sh))
        for key in self._keys(sh):
            self.buckets.setdefault(key, []).append(len(self.items) - 1)


def held_out_sources(root: Path, exclude: Path | None = None) -> list[tuple[str, str]]:
    """(name, source) of the held-out problems in ``root``.

    A folder with ``levelN/`` subfolders (like ``problems/``) contributes ``levelN/*.py`` only
    (not its generated sets or reference solutions); any other folder every ``*.py`` below it.
    Files under ``exclude`` (the run's own output) are skipped.
    """
    from skills.evaluator.problem import iter_problems

    files = iter_problems(root) or [p for p in sorted(root.rglob("*.py"))
                                    if not p.name.startswith("_") and p.stem.lower() != "readme"]
    skip = exclude.resolve() if exclude is not None else None
    out = []
    for p in files:
        if skip is not None and p.resolve().is_relative_to(skip):
            continue
        out.append((p.relative_to(root).with_suffix("").as_posix(), p.read_text(encoding="utf-8")))
    return out
