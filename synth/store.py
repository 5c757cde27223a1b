"""The output folder of a run: problem files, ``manifest.jsonl``, ``rejected.jsonl``, ``run.json``.

Candidates are committed strictly in index order, so the two JSONL logs always describe a prefix
``0..k`` of the candidates and a run resumes at ``k + 1``. A problem file is written (atomically)
before its manifest row; a crash in between leaves a file that the resumed run rewrites with the
same content. A torn last line (a crash mid-append) is dropped on resume.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from skills.evaluator.problem import ManifestRow
from synth.filters import Features, FilterConfig, Reason

MANIFEST = "manifest.jsonl"
"""Accepted problems, one ``SynthRow`` per line."""
REJECTED = "rejected.jsonl"
"""Rejected candidates, one ``Rejection`` per line."""
RUN = "run.json"
"""The run's ``RunConfig``."""
CATALOGUE = "catalogue.json"
"""Probe results of the operator catalogue used by the run."""
SUMMARY = "summary.md"
"""The summary table of the run."""


class SynthError(Exception):
    """A run cannot start or continue; the message says why and what to do."""


class RunConfig(msgspec.Struct, frozen=True, kw_only=True):
    """What determines a run's problems (the target count and worker count do not)."""

    seed: int
    """Run seed: candidate ``i`` is composed from ``"{seed}:{i}"``."""
    filters: FilterConfig
    """Filter settings."""
    held_out: str
    """Held-out evaluation problems for decontamination: ``bundled`` (``problems/level*``) or a folder."""
    torch: str
    """torch version (the catalogue and the filters depend on it)."""
    code: str
    """Fingerprint of the synth code (``synth.generate.code_fingerprint``): the same seed gives the
    same set only with the same code."""
    format: int = 1
    """Version of this folder layout."""


class SynthInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What synth adds to a manifest row."""

    seed: int
    """Run seed."""
    index: int
    """Candidate number (``python -m synth show --seed S --index I`` re-renders it)."""
    features: Features
    """Difficulty features for the curriculum."""
    nearest_eval: str | None
    """Most similar held-out problem."""
    nearest_eval_similarity: float
    """Its AST similarity (``synth.dedup``); below the threshold."""
    nearest_set_similarity: float
    """Similarity to the most similar earlier accepted problem; below the threshold."""
    runtime: str = "predicted"
    """How ``features.pred_eager_us_h200`` was obtained: predicted from FLOP and byte counts on
    meta tensors against the H200 rates fitted to the bundled problems' measured eager times (no GPU
    was used); ``baselines`` stays empty until a GPU run measures it."""


class SynthRow(ManifestRow, kw_only=True):
    """A manifest row (``skills.evaluator.problem.ManifestRow``, source ``synth``) plus synth's fields."""

    synth: SynthInfo
    """Seed, index, difficulty features, decontamination distances."""


class Rejection(msgspec.Struct, frozen=True, kw_only=True):
    """One rejected candidate."""

    index: int
    """Candidate number."""
    reason: Reason
    """First failed check."""
    detail: str | None
    """What exactly failed."""
    ops: list[str]
    """The composition's operators (empty when composing got stuck)."""


def check_writable(out: Path) -> None:
    """Create ``out`` and prove it is writable, or raise ``SynthError`` before any work."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".synth-write-test"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as e:
        raise SynthError(f"cannot write to the output folder {out}: {e.strerror or e}") from None
    if not out.is_dir():
        raise SynthError(f"{out} is not a folder")


def open_run(out: Path, cfg: RunConfig) -> None:
    """Record ``cfg`` in a new folder, or check it matches the run already there."""
    path = out / RUN
    if path.exists():
        try:
            old = msgspec.json.decode(path.read_bytes(), type=RunConfig)
        except msgspec.DecodeError as e:
            raise SynthError(f"{path} is not a synth run file ({e}); use an empty --out folder") from None
        if old != cfg:
            diff = [f for f in cfg.__struct_fields__ if getattr(old, f) != getattr(cfg, f)]
            raise SynthError(f"{out} holds a run with other settings ({', '.join(diff)}: "
                             f"{', '.join(repr(getattr(old, f)) for f in diff)}); resume it with the same "
                             "settings or use another --out folder")
        return
    write_atomic(path, msgspec.json.format(msgspec.json.encode(cfg)) + b"\n")


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file so that readers see the old or the new content, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def read_log(path: Path, kind: type[Any]) -> list[Any]:
    """Rows of a JSONL log; a torn last line (no newline after it) is dropped and cut from the file."""
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    decoder = msgspec.json.Decoder(kind)
    rows = []
    kept = 0
    for k, line in enumerate(lines):
        torn = k == len(lines) - 1  # only a crash mid-append leaves text after the last newline
        if line.strip():
            try:
                rows.append(decoder.decode(line))
            except msgspec.DecodeError:
                if not torn:
                    raise SynthError(f"{path}: line {k + 1} is not a valid {kind.__name__}") from None
                with path.open("r+b") as f:
                    f.truncate(kept)
                break
            if torn:  # complete JSON but no newline: finish the line
                with path.open("ab") as f:
                    f.write(b"\n")
        kept += len(line) + 1
    return rows


def append(path: Path, row: msgspec.Struct) -> None:
    """Append one JSON line and flush it to disk."""
    with path.open("ab") as f:
        f.write(msgspec.json.encode(row) + b"\n")
        f.flush()
        os.fsync(f.fileno())
