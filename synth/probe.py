"""Probe every catalogue entry on the CPU: does it run, in which dtypes, deterministically, and does
its shape rule agree with torch?

For each operator a one-operator problem is composed (``synth.compose.single``), rendered and
loaded through the problem loader, then run at the small sizes in float32 (twice: determinism),
float64 (the judge's reference runs in fp64), bfloat16 and float16. Any warning counts as a
failure (the test suite runs with warnings as errors). Pointwise ATen operators without a
domain note first get their domain and output range measured on sample inputs.
An operator that fails is dropped with its reason; nothing is dropped silently.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from typing import Any

import msgspec
import torch

from synth.builder import OpDef
from synth.compose import single
from synth.predict import predict
from synth.render import render
from synth.spec import FLOAT_DTYPES, Dtype

_SAMPLES: list[tuple[str, Any]] = [
    ("any", lambda g: torch.randn(4096, generator=g, dtype=torch.float64) * 3),
    ("nonneg", lambda g: torch.rand(4096, generator=g, dtype=torch.float64) * 3),
    ("pos", lambda g: torch.rand(4096, generator=g, dtype=torch.float64) * 3 + 0.05),
    ("sym1", lambda g: torch.rand(4096, generator=g, dtype=torch.float64) * 2 - 1),
    ("unit", lambda g: torch.rand(4096, generator=g, dtype=torch.float64)),
]


class ProbeResult(msgspec.Struct, frozen=True):
    """What probing found out about one operator."""

    name: str
    """Catalogue name."""
    ok: bool
    """Usable: runs in float32 and float64, deterministic, shape rule confirmed."""
    reason: str | None
    """Why it is not usable; None when ok."""
    dtypes: list[str]
    """Float dtypes it ran in (of float32, bfloat16, float16)."""
    deterministic: bool
    """Two runs on the same inputs gave identical outputs."""
    domain: str | None = None
    """Measured input domain (pointwise operators without a note); None otherwise."""
    out_range: str | None = None
    """Measured output range (same operators); None otherwise."""


def _range_of(y: torch.Tensor) -> str:
    lo, hi = float(y.min()), float(y.max())
    if lo >= 0 and hi <= 1:
        return "unit"
    if lo >= -1 and hi <= 1:
        return "sym1"
    if lo > 0:
        return "pos"
    return "nonneg" if lo >= 0 else "any"


def measure_domain(op: OpDef) -> tuple[str | None, str | None, str | None]:
    """(domain, output range, reason) of a unary pointwise ATen operator, from sample inputs."""
    from synth.ops import _resolve

    fn = _resolve(op.name)
    g = torch.Generator().manual_seed(0)
    for domain, draw in _SAMPLES:
        x = draw(g)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                y = fn(x)
        except Exception as e:
            return None, None, f"fails on float64: {type(e).__name__}: {str(e)[:120]}"
        if not isinstance(y, torch.Tensor) or y.dtype != x.dtype:
            return None, None, f"output dtype {getattr(y, 'dtype', type(y).__name__)} differs from input"
        if bool(torch.isfinite(y).all()):
            if float(y.std()) < 1e-9:
                return None, None, "constant output"
            return domain, _range_of(y), None
    return None, None, "non-finite outputs on every sample domain"


def _run(src: str, name: str, dtype: str) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    from skills.evaluator.problem import load_problem_source

    lp = load_problem_source(src, name, sizes="small")
    outs = []
    torch.manual_seed(0)
    inputs = lp.get_inputs()
    for _ in range(2):
        torch.manual_seed(1)
        model = lp.make_model()
        with torch.no_grad():
            y = model(*inputs)
        outs.append([t for t in (y if isinstance(y, tuple | list) else [y])])
    if dtype == "float32":  # the judge computes its reference in fp64: the model must support it
        torch.manual_seed(1)
        model = lp.make_model().double()
        with torch.no_grad():
            model(*[t.double() if t.is_floating_point() else t for t in inputs])
        try:  # sizing predicts from a meta-device run
            predict(load_problem_source(src, name))
        except Exception as e:
            raise RuntimeError(f"no meta-device support (the runtime predictor needs it): {e}") from e
    return outs[0], outs[1]


def probe_op(op: OpDef, ops: Mapping[str, OpDef]) -> tuple[OpDef, ProbeResult]:
    """Probe one operator; returns it (with measured domain notes filled in) and the result."""
    domain = out_range = None
    if op.v.get("probe"):
        domain, out_range, why = measure_domain(op)
        if why is not None:
            return op, ProbeResult(op.name, False, why, [], False)
        op = dataclasses.replace(op, v={"domain": domain, "out": out_range})
    ops = {**ops, op.name: op}
    dtypes, det = [], True
    for dtype in FLOAT_DTYPES:
        outcome = _probe_dtype(op, ops, dtype)
        if isinstance(outcome, str):
            if dtype == "float32":  # fp32 (and fp64) support is required; bf16/fp16 is optional
                return op, ProbeResult(op.name, False, outcome, [], False, domain, out_range)
            continue
        det = det and outcome
        dtypes.append(dtype)
    if not det:
        return op, ProbeResult(op.name, False, "two runs on the same inputs differ", dtypes, False, domain, out_range)
    return op, ProbeResult(op.name, True, None, dtypes, True, domain, out_range)


def _probe_dtype(op: OpDef, ops: Mapping[str, OpDef], dtype: str) -> bool | str:
    """Run ``op`` in ``dtype`` on up to three input layouts (kernels differ by rank: LocalResponseNorm
    has no bf16 kernel on 4-D inputs); returns determinism, or why it failed."""
    tested: set[str] = set()
    det = True
    for seed in range(4):
        comp = single(op, ops, dtype, seed=seed)  # type: ignore[arg-type]
        if comp is None:
            return "its family never applied to a sampled input"
        if comp.layout in tested:
            continue
        tested.add(comp.layout)
        try:
            src = render(comp, ops)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                a, b = _run(src, f"probe_{op.name}", dtype)
        except Exception as e:
            return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
        shape = list(comp.nodes[-1].out.shape)
        if list(a[0].shape) != shape:
            return f"shape rule says {shape}, torch gives {list(a[0].shape)}"
        det = det and all(torch.equal(x, y) or (bool(x.isnan().any()) and torch.equal(x.isnan(), y.isnan()))
                          for x, y in zip(a, b, strict=True))
    return det


def probe_catalogue(ops: Mapping[str, OpDef]) -> tuple[dict[str, OpDef], dict[str, ProbeResult]]:
    """Probe every operator; returns the usable catalogue and every result."""
    usable: dict[str, OpDef] = {}
    results: dict[str, ProbeResult] = {}
    torch.set_num_threads(1)
    for name in sorted(ops):
        op, res = probe_op(ops[name], ops)
        results[name] = res
        if res.ok:
            usable[name] = op
    return usable, results


def supported_dtypes(results: Mapping[str, ProbeResult]) -> dict[str, frozenset[str]]:
    """Operator -> dtypes it ran in (for ``synth.compose.compose``)."""
    return {n: frozenset(r.dtypes) for n, r in results.items() if r.ok}


def dtype_name(dtype: Dtype) -> str:
    """``bfloat16`` -> ``bf16`` (the precision names of ``skills.evaluator.problem``)."""
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "int64": "int64"}[dtype]
