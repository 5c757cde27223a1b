"""``python -m synth generate``: compose candidates, filter them in workers, decontaminate, write.

The loop: compose candidate ``i`` (parent), send it to an idle worker (filters, with a
timeout), collect verdicts, and commit them strictly in index order: an ok verdict is checked
against the held-out problems and the accepted set (``synth.dedup``) and then written as
``levelL/IIIIII_ops.py`` plus a manifest row; anything else becomes a rejection row. The run
stops when ``n`` problems are accepted. Because acceptance depends only on the seed, the
candidate and the problems accepted before it, the same seed gives the same set, whatever the
worker count, and a run can stop anywhere and resume (verdicts in flight are recomputed).
Timeouts are the exception: a candidate that only times out under load can flip.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import torch

from skills.evaluator.problem import ManifestRow, ProblemError, manifest_row
from synth.builder import OpDef
from synth.compose import compose
from synth.dedup import THRESHOLD, Index, held_out_sources, shingles
from synth.filters import Reason, Verdict
from synth.ops import catalogue
from synth.probe import ProbeResult, probe_catalogue
from synth.spec import Composition
from synth.store import (
    CATALOGUE,
    MANIFEST,
    REJECTED,
    Rejection,
    RunConfig,
    SynthError,
    SynthInfo,
    SynthRow,
    append,
    check_writable,
    open_run,
    read_log,
    write_atomic,
)
from synth.workers import Job, WorkerPool


class _Probed(msgspec.Struct):
    torch: str
    code: str
    results: list[ProbeResult]


def code_fingerprint() -> str:
    """Hash of the synth sources that decide which problems a seed yields (not the CLI or summary)."""
    import hashlib

    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        if p.name not in ("__main__.py", "summary.py"):
            h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def probed_catalogue(out: Path | None) -> tuple[dict[str, OpDef], dict[str, frozenset[str]], list[ProbeResult]]:
    """The usable catalogue, each operator's dtypes and the probe results.

    Cached in ``out/catalogue.json``, valid for the same torch version and synth code.
    """
    static = catalogue()
    cache = out / CATALOGUE if out is not None else None
    key = (str(torch.__version__), code_fingerprint())
    if cache is not None and cache.exists():
        try:
            saved = msgspec.json.decode(cache.read_bytes(), type=_Probed)
        except msgspec.DecodeError:
            saved = None  # unreadable or an older layout: probe again
        if saved is not None and (saved.torch, saved.code) == key:
            return _apply(static, saved.results)
    _, results = probe_catalogue(static)
    ordered = [results[k] for k in sorted(results)]
    if cache is not None:
        write_atomic(cache, msgspec.json.format(msgspec.json.encode(_Probed(key[0], key[1], ordered))))
    return _apply(static, ordered)


def _apply(static: Mapping[str, OpDef], results: list[ProbeResult]) -> tuple[dict[str, OpDef], dict[str, frozenset[str]], list[ProbeResult]]:
    import dataclasses

    ops: dict[str, OpDef] = {}
    for r in results:
        if r.ok and r.name in static:
            op = static[r.name]
            if r.domain is not None:  # measured by the probe
                op = dataclasses.replace(op, v={"domain": r.domain, "out": r.out_range})
            ops[r.name] = op
    return ops, {r.name: frozenset(r.dtypes) for r in results if r.ok}, results


def held_out_path(held_out: str) -> Path:
    """``bundled`` means this repository's ``problems/`` (its level folders); else a folder."""
    from skills.evaluator.problem import PROBLEMS_ROOT

    return PROBLEMS_ROOT if held_out == "bundled" else Path(held_out)


def slug(comp: Composition) -> str:
    """File-name part from the first three operators: ``conv2d_leaky_relu_sum``."""
    from synth.render import snake

    parts = [snake(n.op.rsplit(".", 1)[-1]) for n in comp.nodes[:3]]
    return re.sub(r"[^a-z0-9_]", "", "_".join(parts))[:60]


@dataclass
class Run:
    """State of one generation run."""

    out: Path
    n: int
    cfg: RunConfig
    ops: dict[str, OpDef]
    dtypes: dict[str, frozenset[str]]
    index: Index
    accepted: int = 0
    rejected: int = 0
    next_index: int = 0
    comps: dict[int, Composition | None] = field(default_factory=dict)
    pending: dict[int, Verdict] = field(default_factory=dict)


def resume(out: Path, n: int, cfg: RunConfig, ops: dict[str, OpDef], dtypes: dict[str, frozenset[str]]) -> Run:
    """Load what an earlier run in ``out`` committed and rebuild the near-duplicate index."""
    held = held_out_path(cfg.held_out)
    if not held.is_dir():
        raise SynthError(f"held-out folder {held} does not exist")
    index = Index(held_out_sources(held, exclude=out))
    rows: list[SynthRow] = read_log(out / MANIFEST, SynthRow)
    rejections: list[Rejection] = read_log(out / REJECTED, Rejection)
    for r in rows:
        path = out / r.path
        if not path.is_file():
            raise SynthError(f"{out / MANIFEST} lists {r.path}, which is missing; restore it or start a new --out")
        index.add(r.name, shingles(path.read_text(encoding="utf-8")))
    seen = sorted([r.synth.index for r in rows] + [r.index for r in rejections])
    if seen != list(range(len(seen))):
        raise SynthError(f"{out}: the logs do not cover candidates 0..{len(seen) - 1} exactly; the folder was edited")
    return Run(out=out, n=n, cfg=cfg, ops=ops, dtypes=dtypes, index=index, accepted=len(rows),
               rejected=len(rejections), next_index=len(seen))


def commit(run: Run, v: Verdict) -> None:
    """Decide one candidate (in index order) and record it."""
    comp = run.comps.pop(v.index, None)
    ops = [n.op for n in comp.nodes] if comp is not None else []
    source, features = v.source, v.features
    if v.ok and comp is not None and source is not None and features is not None:
        sh = shingles(source)
        eval_name, eval_sim = run.index.nearest_held_out(sh)
        set_name, set_sim = run.index.nearest_in_set(sh)
        if eval_sim >= THRESHOLD:
            v = Verdict(index=v.index, ok=False, reason="near_duplicate_eval", detail=f"{eval_sim:.3f} to {eval_name}")
        elif set_sim >= THRESHOLD:
            v = Verdict(index=v.index, ok=False, reason="near_duplicate_set", detail=f"{set_sim:.3f} to {set_name}")
        else:
            info = SynthInfo(seed=comp.seed, index=v.index, features=features, nearest_eval=eval_name,
                             nearest_eval_similarity=round(eval_sim, 3), nearest_set_similarity=round(set_sim, 3))
            why = _write(run, comp, source, info, sh)
            if why is None:
                return
            v = why
    append(run.out / REJECTED, Rejection(index=v.index, reason=v.reason or "load", detail=v.detail, ops=ops))
    run.rejected += 1


def _write(run: Run, comp: Composition, source: str, info: SynthInfo, sh: frozenset[int]) -> Verdict | None:
    """Write the problem and its manifest row; a rejection instead when the loader's own manifest
    row (the authority on ``est_h200_us``) disagrees with the worker."""
    level = 1 if comp.n_ops == 1 else 2
    path = run.out / f"level{level}" / f"{comp.index:06d}_{slug(comp)}.py"
    write_atomic(path, source.encode())
    reason: Reason = "load"
    base: ManifestRow | None = None
    error: str | None
    try:
        base = manifest_row(path, run.out, source="synth")
    except ProblemError as e:
        error = str(e)
    else:
        error = base.error
        floor = run.cfg.filters.min_est_us
        if error is None and (base.est_h200_us is None or base.est_h200_us < floor):
            reason, error = "too_fast", f"manifest est_h200_us {base.est_h200_us} < {floor:g}"
    if base is None or error is not None:
        path.unlink()
        return Verdict(index=comp.index, ok=False, reason=reason, detail=(error or "")[:300])
    row = SynthRow(**{f: getattr(base, f) for f in base.__struct_fields__}, synth=info)
    append(run.out / MANIFEST, row)
    run.index.add(row.name, sh)
    run.accepted += 1
    return None


def _feed(run: Run, pool: WorkerPool) -> None:
    """Compose the next candidates for idle workers (stuck compositions are verdicts at once)."""
    while pool.idle() > 0:
        i = run.next_index
        run.next_index += 1
        comp = compose(run.cfg.seed, i, run.ops, run.dtypes)
        run.comps[i] = comp
        if comp is None:
            run.pending[i] = Verdict(index=i, ok=False, reason="compose_stuck", detail="no operator fitted the chain")
            continue
        pool.submit(Job(index=i, kind="composition", composition=comp))


Progress = Callable[[Run, float], None]


def generate(out: Path, n: int, cfg: RunConfig, *, workers: int = 2, timeout_s: float = 60.0,
             on_progress: Progress | None = None) -> Run:
    """Run (or resume) generation until ``n`` problems are accepted in ``out``."""
    if n < 1:
        raise SynthError(f"--n must be at least 1; got {n}")
    if workers < 1:
        raise SynthError(f"--workers must be at least 1; got {workers}")
    check_writable(out)
    open_run(out, cfg)
    ops, dtypes, _ = probed_catalogue(out)
    run = resume(out, n, cfg, ops, dtypes)
    if run.accepted >= n:
        return run
    t0 = time.monotonic()
    commit_at = run.next_index
    with WorkerPool(workers, ops, cfg.filters, timeout_s=timeout_s) as pool:
        while run.accepted < n:
            _feed(run, pool)
            for v in pool.poll(0.2):
                run.pending[v.index] = v
            while commit_at in run.pending and run.accepted < n:
                commit(run, run.pending.pop(commit_at))
                commit_at += 1
            if on_progress is not None:
                on_progress(run, time.monotonic() - t0)
    run.next_index = commit_at
    return run
