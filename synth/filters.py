"""The checks a candidate must pass, run inside a worker process (``synth.workers``).

In order: default sizes fitted to a predicted-runtime target (``synth.sizing``), the predicted
H200 eager time inside the window, a memory bound, the rendered file loads with
``skills.evaluator.problem.load_problem_source`` (small sizes), eager runs on the CPU (one thread, warnings
are errors): finite outputs, deterministic (same weights and inputs, another RNG state: identical
outputs), fast enough at the small sizes (the faster of those two calls, a measurement), not
constant, not tiny, input-dependent (other inputs give other outputs), the fp32 (or
bf16/fp16) result agrees with an fp64 run (the judge's reference is fp64: an ill-conditioned
problem would grade noise), then ``torch.compile``: by default a tracing check (TorchDynamo and
AOTAutograd with the ``aot_eager`` backend, output compared with eager), optionally full
Inductor. Graph breaks are allowed, as in the evaluator's ``torch.compile`` baseline. The first
failure is the verdict's reason; every verdict is kept.
"""

from __future__ import annotations

import math
import random
import time
import warnings
from collections.abc import Mapping
from typing import Any, Literal

import msgspec
import torch

from skills.evaluator.problem import LoadedProblem, load_problem_source
from synth.builder import OpDef
from synth.predict import Prediction
from synth.render import render
from synth.sizing import fit
from synth.spec import Composition, Val, ValList

Reason = Literal[
    "compose_stuck", "no_meta", "too_fast", "too_slow", "too_big", "load", "eager", "nonfinite",
    "nondeterministic", "input_independent", "constant", "tiny", "fp64_mismatch", "slow_cpu",
    "compile", "compile_mismatch", "timeout", "worker_crash", "near_duplicate_eval", "near_duplicate_set",
]
"""Why a candidate was rejected (see the module docstring for the order of the checks)."""
CompileCheck = Literal["trace", "inductor", "none"]
"""``trace``: TorchDynamo + AOTAutograd (``aot_eager``); ``inductor``: full compile; ``none``: skip."""


class FilterConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Settings of the filters (the same for every candidate of a run)."""

    min_us: float = 120.0
    """Lowest predicted H200 eager time per call. 120 us predicted is >= 50 us measured even for
    the calibration's worst over-prediction (0.43x)."""
    max_us: float = 10_000.0
    """Highest predicted H200 eager time per call."""
    min_est_us: float = 50.0
    """Lowest ``est_h200_us`` (the loader's estimate, minimal bytes only) in the manifest row, the
    repository's sizing convention for problems (>= 50 us)."""
    target_lo_us: float = 150.0
    """Sizing aims at a target drawn log-uniformly in [target_lo_us, target_hi_us]."""
    target_hi_us: float = 3_000.0
    """See ``target_lo_us``."""
    max_bytes: int = 4 << 30
    """Memory bound at the default sizes: inputs + parameters + every op's outputs."""
    max_cpu_ms: float = 50.0
    """Longest eager call at the small sizes on one CPU thread: ``SMALL_SIZES`` are for CI and the
    CPU backend, where the repository's convention is about 0.5-20 ms per call on 2 cores."""
    tiny: float = 1e-5
    """Outputs whose largest magnitude is below this are rejected (the judge refuses < 1e-6)."""
    compile: CompileCheck = "trace"
    """``torch.compile`` check."""


class Features(msgspec.Struct, frozen=True):
    """Difficulty features of an accepted candidate, for the curriculum."""

    n_ops: int
    """Operators in the chain (merges included)."""
    ops: list[str]
    """Catalogue names, in order."""
    categories: list[str]
    """Sorted unique categories."""
    layout: str
    """Layout of the first input."""
    dtype: str
    """Floating dtype."""
    branches: int
    """Nodes that read a value other than the chain's previous one (residual add, concat)."""
    inputs: int
    """Forward inputs."""
    pred_eager_us_h200: float
    """Predicted (not measured) H200 eager time per call at the default sizes (``synth.predict``)."""
    flops: int
    """Matmul/convolution FLOPs at the default sizes."""
    bytes: int
    """Bytes all kernels read and write at the default sizes (intermediates included)."""
    kernels: int
    """Kernel-launching ATen ops per forward."""
    cpu_ms_small: float
    """Measured eager time of one call at the small sizes on one CPU thread."""
    difficulty: float
    """Heuristic score: n_ops + 0.5 branches + 1 (matmul/conv/attention/recurrent) + 0.5 (more
    than 8 kernels) + 0.5 (bf16/fp16)."""


class Verdict(msgspec.Struct, frozen=True):
    """The outcome of checking one candidate."""

    index: int
    """Candidate number."""
    ok: bool
    """Passed every filter (decontamination is decided later, by the parent)."""
    reason: Reason | None = None
    """First failed check; None when ok."""
    detail: str | None = None
    """Human detail of the failure (error message, measured value)."""
    source: str | None = None
    """The rendered problem (ok verdicts only)."""
    features: Features | None = None
    """Difficulty features (ok verdicts only)."""
    seconds: float = 0.0
    """Wall time spent in the worker."""


class Rejected(Exception):
    """A failed check; carries its reason."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _outputs(y: Any) -> list[torch.Tensor]:
    return [t for t in (y if isinstance(y, tuple | list) else [y]) if isinstance(t, torch.Tensor)]


def _forward(lp: LoadedProblem, inputs: list[Any], *, rng: int = 11, double: bool = False) -> list[torch.Tensor]:
    """Build the model from seed 0 (same weights every time), then run forward with the global RNG
    at ``rng``: a forward that draws random numbers gives different outputs for different ``rng``."""
    return _timed_forward(lp, inputs, rng=rng, double=double)[0]


def _timed_forward(lp: LoadedProblem, inputs: list[Any], *, rng: int = 11,
                   double: bool = False) -> tuple[list[torch.Tensor], float]:
    """``_forward`` and the milliseconds of the forward call alone (not the model's construction)."""
    torch.manual_seed(0)
    model = lp.make_model()
    if double:
        model = model.double()
        inputs = [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
    torch.manual_seed(rng)
    with torch.no_grad():
        t0 = time.perf_counter()
        out = model(*inputs)
        ms = (time.perf_counter() - t0) * 1e3
    return _outputs(out), ms


def _inputs(lp: LoadedProblem, seed: int) -> list[Any]:
    torch.manual_seed(seed)
    return lp.get_inputs()


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and torch.equal(x, y) for x, y in zip(a, b, strict=True))


def _rel_err(a: torch.Tensor, ref: torch.Tensor) -> float:
    if not a.is_floating_point():
        return 0.0 if torch.equal(a, ref.to(a.dtype)) else 1.0
    a64, r64 = a.double(), ref.double()
    denom = float(r64.norm()) or 1.0
    return float((a64 - r64).norm()) / denom


def check_values(lp: LoadedProblem, dtype: str, cfg: FilterConfig) -> float:
    """Run the eager checks at the loaded sizes; returns the CPU time of one call in ms.

    Warnings are errors here, as in the test suite and the evaluator's callers. One thread, so
    that reduction order and hence the fp64 comparison do not depend on the caller's process.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return _check_values(lp, dtype, cfg)
    finally:
        torch.set_num_threads(threads)


def _check_values(lp: LoadedProblem, dtype: str, cfg: FilterConfig) -> float:
    x = _inputs(lp, 1)
    try:
        a, first_ms = _timed_forward(lp, x)
    except Exception as e:
        raise Rejected("eager", f"{type(e).__name__}: {str(e)[:300]}") from None
    if not a:
        raise Rejected("eager", "forward returned no tensor")
    if any(t.is_floating_point() and not bool(torch.isfinite(t).all()) for t in a):
        raise Rejected("nonfinite", "NaN or inf in the outputs")
    again, second_ms = _timed_forward(lp, x, rng=12)
    if not _same(a, again):
        raise Rejected("nondeterministic", "two runs on the same inputs differ")
    # The faster of two calls: other processes on the machine only ever add time. Still a
    # measurement, so a problem close to the bound can flip between runs (documented).
    cpu_ms = min(first_ms, second_ms)
    if cpu_ms > cfg.max_cpu_ms:
        raise Rejected("slow_cpu", f"{cpu_ms:.0f} ms per call at the small sizes")
    for t in a:
        if t.numel() > 1 and bool((t == t.reshape(-1)[0]).all()):
            raise Rejected("constant", f"every element equals {t.reshape(-1)[0].item():.3g}")
        peak = float(t.abs().max()) if t.numel() else 0.0
        if t.is_floating_point() and peak < cfg.tiny:
            raise Rejected("tiny", f"max |value| {peak:.3g}")
    if _same(a, _forward(lp, _inputs(lp, 2))):
        raise Rejected("input_independent", "other inputs give the same outputs")
    ref = _forward(lp, x, double=True)
    tol = 1e-3 if dtype == "float32" else 5e-2
    errs = [_rel_err(t, r) for t, r in zip(a, ref, strict=True)]
    if max(errs) > tol:
        raise Rejected("fp64_mismatch", f"relative error {max(errs):.3g} against fp64 (> {tol:g})")
    return cpu_ms


def check_compile(lp: LoadedProblem, dtype: str, mode: CompileCheck) -> None:
    """``torch.compile`` the model and compare its output with eager."""
    if mode == "none":
        return
    import torch._dynamo

    x = _inputs(lp, 1)
    eager = _forward(lp, x)
    torch.manual_seed(0)
    model = lp.make_model()
    torch._dynamo.reset()
    try:
        # Graph breaks are allowed (torch.compile falls back to eager there, as the baseline does).
        compiled = torch.compile(model, backend="aot_eager" if mode == "trace" else "inductor")
        with torch.no_grad():
            got = _outputs(compiled(*x))
    except Exception as e:
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        raise Rejected("compile", f"{type(e).__name__}: {first}") from None
    finally:
        torch._dynamo.reset()
    tol = 1e-4 if mode == "trace" and dtype == "float32" else 5e-2
    errs = [_rel_err(g, e) for g, e in zip(got, eager, strict=True)] if len(got) == len(eager) else [math.inf]
    if max(errs) > tol:
        raise Rejected("compile_mismatch", f"compiled vs eager relative error {max(errs):.3g}")


def _features(comp: Composition, ops: Mapping[str, OpDef], pred: Prediction, cpu_ms: float) -> Features:
    cats = [ops[n.op].category for n in comp.nodes]
    prev = {n.vid: k for k, n in enumerate(comp.nodes)}
    branches = 0
    for k, n in enumerate(comp.nodes):
        reads = {a.id for a in n.args if isinstance(a, Val)} | set(n.inputs)
        reads |= {i for a in n.args if isinstance(a, ValList) for i in a.ids}
        if any(prev[r] < k - 1 for r in reads if r in prev):  # reads a node output other than the previous one
            branches += 1
    heavy = any(c in ("linear", "matmul", "conv", "attention", "recurrent") for c in cats)
    diff = comp.n_ops + 0.5 * branches + (1.0 if heavy else 0.0) + (0.5 if pred.kernels > 8 else 0.0) + (
        0.5 if comp.dtype != "float32" else 0.0)
    return Features(n_ops=comp.n_ops, ops=[n.op for n in comp.nodes], categories=sorted(set(cats)),
                    layout=comp.layout, dtype=comp.dtype, branches=branches, inputs=len(comp.inputs),
                    pred_eager_us_h200=pred.us, flops=pred.flops, bytes=pred.bytes, kernels=pred.kernels,
                    cpu_ms_small=round(cpu_ms, 2), difficulty=diff)


def default_sizes(comp: Composition, ops: Mapping[str, OpDef], cfg: FilterConfig) -> tuple[dict[str, int], Prediction]:
    """The default sizes of a composition: a predicted-time target drawn from ``"target:{seed}:{index}"``
    (so it is reproducible), then ``synth.sizing.fit``."""
    rng = random.Random(f"target:{comp.seed}:{comp.index}")
    target = math.exp(rng.uniform(math.log(cfg.target_lo_us), math.log(cfg.target_hi_us)))
    return fit(comp, ops, target, cfg.max_bytes, min_est_us=cfg.min_est_us * 1.1)


def check(comp: Composition, ops: Mapping[str, OpDef], cfg: FilterConfig) -> Verdict:
    """Every filter on one composition (the whole pipeline of a worker)."""
    t0 = time.perf_counter()
    try:
        try:
            defaults, pred = default_sizes(comp, ops, cfg)
        except Exception as e:
            raise Rejected("no_meta", f"meta-device run failed: {type(e).__name__}: {str(e)[:200]}") from None
        if pred.us < cfg.min_us or pred.est_us < cfg.min_est_us:
            raise Rejected("too_fast", f"predicted {pred.us:.0f} us (est_h200_us {pred.est_us:.0f}) at the fitted sizes")
        if pred.us > cfg.max_us:
            raise Rejected("too_slow", f"predicted {pred.us:.0f} us (est_h200_us {pred.est_us:.0f}) at the fitted sizes")
        if pred.peak_bytes > cfg.max_bytes:
            raise Rejected("too_big", f"{pred.peak_bytes / 2**30:.1f} GiB at the default sizes")
        src = render(comp, ops, defaults, title=f"Synthetic problem (kagent synth, seed {comp.seed}, candidate {comp.index}).")
        try:
            lp = load_problem_source(src, f"synth_{comp.index}", sizes="small")
        except Exception as e:
            raise Rejected("load", str(e)[:300]) from None
        cpu_ms = check_values(lp, comp.dtype, cfg)
        check_compile(lp, comp.dtype, cfg.compile)
        feats = _features(comp, ops, pred, cpu_ms)
        return Verdict(index=comp.index, ok=True, source=src, features=feats, seconds=time.perf_counter() - t0)
    except Rejected as r:
        return Verdict(index=comp.index, ok=False, reason=r.reason, detail=r.detail, seconds=time.perf_counter() - t0)


def check_source(src: str, name: str, cfg: FilterConfig, index: int = -1) -> Verdict:
    """The value and compile checks on a finished problem file (``python -m synth check``)."""
    t0 = time.perf_counter()
    try:
        try:
            lp = load_problem_source(src, name, sizes="small")
        except Exception as e:
            raise Rejected("load", str(e)[:300]) from None
        dtype = {"bf16": "bfloat16", "fp16": "float16"}.get(lp.problem.precision, "float32")
        check_values(lp, dtype, cfg)
        check_compile(lp, dtype, cfg.compile)
        return Verdict(index=index, ok=True, seconds=time.perf_counter() - t0)
    except Rejected as r:
        return Verdict(index=index, ok=False, reason=r.reason, detail=r.detail, seconds=time.perf_counter() - t0)
