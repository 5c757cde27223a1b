"""Precision calibration on the CPU (issue 3): do fair fp32 candidates pass and downcasts fail?

    python benchmarks/calibrate_precision.py [--sizes small] [--out precision-calibration-cpu]
                                             [--only SUBSTR ...] [--sets 1] [--seed 0]

For every bundled problem the reference is built by the judge itself (`skills.harness.judge.Judge`
on device "cpu": `set_precision`, seeded inputs, r from the fp32 model, r64 from its fp64 deep
copy on fp64 inputs) and each candidate output is graded by `compare_output` against those
`Reference`s, exactly as an evaluation would. Candidates:

fair (a correct fp32 kernel could produce them; all must pass):
  threads   the fp32 model run with another thread count (1 instead of the default): a legal reordering
  split     the fp32 model on the batch split in two halves, outputs concatenated; only where the
            split is legal, checked in fp64 (the fp64 model on the split equals r64 to 1e-9); the
            first input alone is split, else every input with the same dim 0
  reorder   the fp32 model with legal reorderings at dispatch: split-K (the first third and
            the rest of the reduction added) for mm/bmm/addmm/baddbmm/convolution, the reduced dims reversed for
            sum/mean/prod/norm/logsumexp/softmax/log_softmax/layer_norm (not in the brief: on the
            CPU `threads` and `split` are mostly bit-identical to r, so this is the informative one)
  ulp2      the reference r with 2 ulps added (nextafter twice toward +inf, computed in fp32) on a
            random half of the elements: what a fast but legal expf gives
downcast (must fail on fp32 problems):
  bf16      model and float inputs cast to bfloat16, outputs cast back to the reference dtype
  fp16      same with float16 (an overflow to inf/NaN is a failure too; noted)
  tf32_in   float inputs and parameters rounded to TF32 (10 mantissa bits), run in fp32
  tf32_ops  every operand of every matmul/conv op rounded to TF32 at dispatch (what TF32 tensor
            cores do; also rounds intermediate activations); both tf32 rows are n/a without such ops

Writes benchmarks/results/OUT.json and OUT.md and prints the table. Misses (a fair candidate
rejected, a downcast passed on an fp32 problem) are findings: thresholds live in
skills/harness/compare.py and are not tuned here.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from benchmarks.common import RESULTS, environment, table, write_result  # noqa: E402
from skills.harness import protocol as P  # noqa: E402
from skills.harness.compare import RTOL, Reference, compare_output  # noqa: E402
from skills.harness.judge import Judge, ProblemRefused, as_outputs, to_device  # noqa: E402
from skills.problem import PROBLEMS_ROOT, iter_problems  # noqa: E402

FAIR = ("threads", "split", "reorder", "ulp2")
DOWNCAST = ("bf16", "fp16", "tf32_in", "tf32_ops")
CANDIDATES = FAIR + DOWNCAST
SPLIT_TOL = 1e-9
"""The fp64 model on the split batch must equal r64 within this (relative to |r64| + rms(r64))."""

# Operands that TF32 tensor cores round, by aten op: positions in the op's arguments.
TF32_OPERANDS: dict[str, tuple[int, ...]] = {
    "mm": (0, 1), "bmm": (0, 1), "matmul": (0, 1), "linear": (0, 1), "dot": (0, 1), "mv": (0, 1),
    "addmm": (1, 2), "baddbmm": (1, 2), "addbmm": (1, 2), "addmv": (1, 2),
    "convolution": (0, 1), "_convolution": (0, 1), "convolution_overrideable": (0, 1),
}


def tf32_round(x: torch.Tensor) -> torch.Tensor:
    """Round an fp32 tensor to TF32 (10 explicit mantissa bits, ties away from zero)."""
    if x.dtype != torch.float32:
        return x
    i = x.contiguous().view(torch.int32)
    return torch.bitwise_and(i + 0x1000, -0x2000).view(torch.float32).view(x.shape)


class TF32Ops(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Rounds the matrix operands of every matmul/convolution op to TF32 before it runs."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.rounded = 0

    def __torch_dispatch__(self, func: Any, types: Sequence[type], args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        pos = TF32_OPERANDS.get(func.overloadpacket.__name__)
        if pos:
            args = list(args)
            for p in pos:
                if p < len(args) and isinstance(args[p], torch.Tensor):
                    args[p] = tf32_round(args[p])
                    self.rounded += 1
        return func(*args, **(kwargs or {}))


def _flip_all(x: torch.Tensor) -> torch.Tensor:
    return x.flip(list(range(x.dim()))) if x.dim() else x


def _dims(x: torch.Tensor, dim: Any) -> list[int]:
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(x.dim()))
    return [d % max(x.dim(), 1) for d in ([dim] if isinstance(dim, int) else dim)]


def _cut(k: int) -> int:
    """Where split-K cuts a reduction of length k: a third, so it rarely lines up with a BLAS
    library's own K blocking (a cut at k/2 often reproduces its rounding bit for bit)."""
    return max(1, k // 3)


class Reorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Legal reorderings at dispatch: split-K for matmuls and convolutions (two parts of the
    reduction added), reversed order along reduced dims for sums, means, norms, softmax, layer norm."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.changed = 0

    def __torch_dispatch__(self, func: Any, types: Sequence[type], args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        a = list(args)
        x = a[0] if a and isinstance(a[0], torch.Tensor) else None
        fp = x is not None and x.is_floating_point()
        if name in ("mm", "bmm") and x is not None and fp and x.shape[-1] >= 2:
            h = _cut(x.shape[-1])
            self.changed += 1
            return func(x[..., :h], a[1][..., :h, :]) + func(x[..., h:], a[1][..., h:, :])
        if name in ("addmm", "baddbmm") and len(a) >= 3 and a[1].shape[-1] >= 2 and a[1].is_floating_point():
            h = _cut(a[1].shape[-1])
            alpha = kwargs.get("alpha", 1)
            first = func(a[0], a[1][..., :h], a[2][..., :h, :], **kwargs)
            self.changed += 1
            return func(first, a[1][..., h:], a[2][..., h:, :], beta=1, alpha=alpha)
        if name == "convolution" and fp and a[8] == 1 and x is not None and x.shape[1] >= 2:
            w = a[1]
            h = _cut(x.shape[1])
            wl, wh = (w[:h], w[h:]) if a[6] else (w[:, :h], w[:, h:])
            lo = func(x[:, :h], wl, a[2], *a[3:])
            self.changed += 1
            return lo + func(x[:, h:], wh, None, *a[3:])
        if name in ("sum", "mean", "linalg_vector_norm", "logsumexp", "prod") and fp and x is not None and x.dim():
            if name == "linalg_vector_norm":
                dim = a[2] if len(a) > 2 else kwargs.get("dim")
            else:
                dim = a[1] if len(a) > 1 else kwargs.get("dim")
            if not isinstance(dim, (int, list, tuple, type(None))):
                return func(*args, **kwargs)
            a[0] = x.flip(_dims(x, dim))
            self.changed += 1
            return func(*a, **kwargs)
        if name in ("_softmax", "_log_softmax", "_safe_softmax") and fp and x is not None and x.dim():
            d = a[1] % x.dim()
            a[0] = x.flip([d])
            self.changed += 1
            return func(*a, **kwargs).flip([d])
        if name == "native_layer_norm" and fp and x is not None:
            nd = len(a[1])
            dims = list(range(x.dim() - nd, x.dim()))
            a[0] = x.flip(dims)
            a[2] = _flip_all(a[2]) if isinstance(a[2], torch.Tensor) else a[2]
            a[3] = _flip_all(a[3]) if isinstance(a[3], torch.Tensor) else a[3]
            out, mean, rstd = func(*a, **kwargs)
            self.changed += 1
            return out.flip(dims), mean, rstd
        return func(*args, **kwargs)


class Skip(Exception):
    """The candidate does not apply to this problem (the message says why)."""


class Ctx:
    """The judge's references for one problem and a pristine copy of its fp32 model."""

    def __init__(self, judge: Judge, pristine: torch.nn.Module) -> None:
        self.judge = judge
        self.pristine = pristine
        self.sets: list[list[Any]] = judge.sets
        self.refs: list[list[Reference]] = judge.refs

    def model(self, dtype: torch.dtype | None = None) -> torch.nn.Module:
        m = copy.deepcopy(self.pristine)
        return m.to(dtype) if dtype is not None else m

    def run(self, model: torch.nn.Module, inputs: list[Any]) -> list[Any]:
        with torch.no_grad():
            return as_outputs(model(*inputs), "Model")


def _cast(args: list[Any], dtype: torch.dtype) -> list[Any]:
    return [a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]


def _back(outs: list[Any], refs: list[Reference]) -> list[Any]:
    """Float outputs back to the reference's dtype (what a kernel writing the output buffer does)."""
    return [o.to(ref.r.dtype) if isinstance(o, torch.Tensor) and o.is_floating_point() else o
            for o, ref in zip(outs, refs, strict=False)]


# ---------------------------------------------------------------------------------------------
# Candidates: each returns (outputs per set, note) or raises Skip.


def cand_threads(ctx: Ctx) -> tuple[list[list[Any]], str]:
    n0 = torch.get_num_threads()
    n1 = 1 if n0 > 1 else 2
    model = ctx.model()
    torch.set_num_threads(n1)
    try:
        outs = [ctx.run(model, s) for s in ctx.sets]
    finally:
        torch.set_num_threads(n0)
    return outs, f"{n1} thread(s) vs the reference's {n0}"


def _halves(inputs: list[Any], all_inputs: bool) -> tuple[list[Any], list[Any]] | None:
    first = inputs[0] if inputs else None
    if not isinstance(first, torch.Tensor) or first.dim() == 0 or first.shape[0] < 2:
        return None
    n = first.shape[0]
    h = n // 2
    lo, hi = [], []
    for i, a in enumerate(inputs):
        cut = isinstance(a, torch.Tensor) and a.dim() > 0 and a.shape[0] == n and (all_inputs or i == 0)
        lo.append(a[:h] if cut else a)
        hi.append(a[h:] if cut else a)
    return lo, hi


def _split_run(ctx: Ctx, model: torch.nn.Module, inputs: list[Any], all_inputs: bool) -> list[Any]:
    parts = _halves(inputs, all_inputs)
    if parts is None:
        raise Skip("first input has no batch dim of size >= 2")
    n = inputs[0].shape[0]
    a, b = ctx.run(model, parts[0]), ctx.run(model, parts[1])
    out = []
    for x, y in zip(a, b, strict=True):
        if not (isinstance(x, torch.Tensor) and x.dim() > 0 and x.shape[0] + y.shape[0] == n):
            raise Skip("outputs are not batch-major")
        out.append(torch.cat([x, y]))
    return out


def _matches_r64(outs: list[Any], refs: list[Reference]) -> float:
    """Largest fp64 deviation from r64, relative to |r64| + rms(r64) (inf on a shape mismatch)."""
    worst = 0.0
    for o, ref in zip(outs, refs, strict=True):
        if o.shape != ref.r64.shape:
            return math.inf
        d = (o.double() - ref.r64).abs()
        same_nan = torch.isnan(o) & torch.isnan(ref.r64)
        d = torch.where(same_nan | (o.double() == ref.r64), torch.zeros_like(d), d).nan_to_num(math.inf)
        rel = d / (ref.r64.abs().nan_to_num(0.0, posinf=0.0, neginf=0.0) + max(ref.scale, 1e-300))
        worst = max(worst, float(rel.max()) if rel.numel() else 0.0)
    return worst


def cand_split(ctx: Ctx) -> tuple[list[list[Any]], str]:
    why = []
    for all_inputs in (False, True):
        what = "every input with the batch dim" if all_inputs else "first input"
        model64 = ctx.model(torch.float64)
        try:
            legal = max(_matches_r64(_split_run(ctx, model64, to_device(s, torch.device("cpu"), double=True), all_inputs),
                                     refs) for s, refs in zip(ctx.sets, ctx.refs, strict=True))
        except Skip as exc:
            why.append(f"{what}: {exc}")
            continue
        except Exception as exc:  # a split that does not even run is not a legal one
            why.append(f"{what}: fp64 split raises {type(exc).__name__}")
            continue
        if legal > SPLIT_TOL:
            why.append(f"{what}: not batch-independent (fp64 split off r64 by {legal:.2g} rel)")
            continue
        model = ctx.model()
        n = ctx.sets[0][0].shape[0]
        return [_split_run(ctx, model, s, all_inputs) for s in ctx.sets], f"split {what}, dim 0 = {n} into halves"
    raise Skip("; ".join(why))


def cand_reorder(ctx: Ctx) -> tuple[list[list[Any]], str]:
    model = ctx.model()
    mode = Reorder()
    outs = []
    for s in ctx.sets:
        with mode:
            outs.append(ctx.run(model, s))
    if not mode.changed:
        raise Skip("no matmul, conv or reduction op to reorder")
    return outs, f"{mode.changed // len(ctx.sets)} ops reordered per call"


def cand_ulp2(ctx: Ctx) -> tuple[list[list[Any]], str]:
    g = torch.Generator().manual_seed(1234)
    outs = []
    floats = 0
    for refs in ctx.refs:
        per = []
        for ref in refs:
            r = ref.r
            if not r.is_floating_point():
                per.append(r.clone())
                continue
            floats += 1
            c = r.float()
            inf = torch.full_like(c, math.inf)
            up = torch.nextafter(torch.nextafter(c, inf), inf)
            mask = torch.rand(c.shape, generator=g) < 0.5
            per.append(torch.where(mask, up, c).to(r.dtype))
        outs.append(per)
    if not floats:
        raise Skip("integer outputs only")
    dt = {str(ref.r.dtype).removeprefix("torch.") for ref in ctx.refs[0]}
    note = "2 fp32 ulps, rounded to the output dtype" if dt - {"float32", "int64"} else "2 ulps on half the elements"
    return outs, note


def _lowp(dtype: torch.dtype) -> Callable[[Ctx], tuple[list[list[Any]], str]]:
    def cand(ctx: Ctx) -> tuple[list[list[Any]], str]:
        model = ctx.model(dtype)
        outs = [_back(ctx.run(model, _cast(s, dtype)), refs) for s, refs in zip(ctx.sets, ctx.refs, strict=True)]
        overflow = any(isinstance(o, torch.Tensor) and o.is_floating_point()
                       and bool((~torch.isfinite(o) & torch.isfinite(ref.r64)).any())
                       for per, refs in zip(outs, ctx.refs, strict=True) for o, ref in zip(per, refs, strict=False))
        name = str(dtype).removeprefix("torch.")
        return outs, (f"{name} overflows to inf/NaN" if overflow else "")
    return cand


def _has_matmul(ctx: Ctx) -> int:
    mode = TF32Ops()
    model = ctx.model(torch.float64)  # cheap probe: which ops run (fp64 so nothing else changes)
    with mode:
        ctx.run(model, to_device(ctx.sets[0], torch.device("cpu"), double=True))
    return mode.rounded


def cand_tf32_in(ctx: Ctx) -> tuple[list[list[Any]], str]:
    if not _has_matmul(ctx):
        raise Skip("no matmul/conv op")
    model = ctx.model()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(tf32_round(p))
    return [ctx.run(model, [tf32_round(a) if isinstance(a, torch.Tensor) else a for a in s])
            for s in ctx.sets], "inputs and parameters rounded"


def cand_tf32_ops(ctx: Ctx) -> tuple[list[list[Any]], str]:
    model = ctx.model()
    outs = []
    mode = TF32Ops()
    for s in ctx.sets:
        with mode:
            outs.append(ctx.run(model, s))
    if not mode.rounded:
        raise Skip("no matmul/conv op")
    return outs, f"{mode.rounded // len(ctx.sets)} operands rounded per call"


RUNNERS: dict[str, Callable[[Ctx], tuple[list[list[Any]], str]]] = {
    "threads": cand_threads, "split": cand_split, "reorder": cand_reorder, "ulp2": cand_ulp2,
    "bf16": _lowp(torch.bfloat16), "fp16": _lowp(torch.float16),
    "tf32_in": cand_tf32_in, "tf32_ops": cand_tf32_ops,
}


# ---------------------------------------------------------------------------------------------


def _num(x: float | None) -> float | str | None:
    if x is None or math.isfinite(x):
        return x
    return str(x)


def budget_use(c: Any, ref: Reference) -> tuple[float, float, float]:
    """Diagnostics beside the verdict (which is compare_output's alone): the largest
    |c - r64| / budget over elements, ||c - r64|| / norm budget, and the share of the norm budget
    that is the RTOL * ||r64|| floor rather than K_NORM * ||e_ref||."""
    n = max(ref.r64.numel(), 1)
    floor = RTOL * ref.scale * math.sqrt(n)
    share = floor / ref.norm_budget if ref.norm_budget > 0 else 1.0
    if not isinstance(c, torch.Tensor) or list(c.shape) != list(ref.r64.shape):
        return math.inf, math.inf, share
    d = c.double()
    skip = torch.isnan(ref.r64) | (torch.isinf(ref.r64) & (d == ref.r64))
    err = torch.where(skip, torch.zeros_like(d), (d - ref.r64).abs()).nan_to_num(math.inf)
    elem = float((err / ref.budget).max()) if err.numel() else 0.0
    norm = float(torch.linalg.vector_norm(err)) / ref.norm_budget if ref.norm_budget > 0 else math.inf
    return elem, norm, share


def grade(ctx: Ctx, outs: list[list[Any]], expect_ok: bool) -> dict[str, Any]:
    """compare_output on every output of every set; the worst ratio and the bad fraction (and the
    budget diagnostics of outputs whose verdict is not the expected one)."""
    ok, ratio, bad, total, identical, msg = True, 0.0, 0, 0, True, ""
    elem_use = norm_use = floor_share = 0.0
    diagnosed = False
    for per, refs in zip(outs, ctx.refs, strict=True):
        for i, ref in enumerate(refs):
            c = per[i] if i < len(per) else None
            e = compare_output(i, c, ref)
            if e.ok != expect_ok:
                diagnosed = True
                u = budget_use(c, ref)
                if u[1] >= norm_use:
                    floor_share = u[2]
                elem_use, norm_use = max(elem_use, u[0]), max(norm_use, u[1])
            total += ref.r.numel()
            bad += e.bad_elements
            ratio = math.inf if e.err_ratio is None else max(ratio, e.err_ratio)
            identical = identical and isinstance(c, torch.Tensor) and c.dtype == ref.r.dtype \
                and c.shape == ref.r.shape and bool(torch.equal(c, ref.r))
            if not e.ok and ok:
                ok, msg = False, e.message
    return {"status": "pass" if ok else "FAIL", "ok": ok, "err_ratio": _num(ratio),
            "bad_frac": bad / max(total, 1), "identical": identical, "message": msg,
            **({"elem_use": _num(elem_use), "norm_use": _num(norm_use), "rtol_share": floor_share}
               if diagnosed else {})}


def calibrate(path: Path, *, sizes: str = "small", seed: int = 0, n_sets: int = 3,
              only: Sequence[str] = CANDIDATES) -> dict[str, Any]:
    """Every candidate of one problem graded against the judge's own references."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kagent-calib-") as tmp:
        start = P.JudgeStart(nonce="calibrate", problem_path=str(path), sizes=sizes, device="cpu",  # type: ignore[arg-type]
                             seed=seed, n_sets=n_sets, n_canaries=0, samples_per_output=1,
                             exchange_dir=tmp)
        judge = Judge(start)
        # Before build(): a forward may update buffers (BatchNorm running stats); candidates start
        # from the weights the candidate process gets.
        pristine = copy.deepcopy(judge.model)
        rec: dict[str, Any] = {"name": judge.loaded.problem.name, "precision": judge.precision,
                               "candidates": {}}
        try:
            judge.build()
        except ProblemRefused as exc:
            rec["refused"] = str(exc)
            rec["seconds"] = time.perf_counter() - t0
            return rec
        ctx = Ctx(judge, pristine)
        rec["outputs"] = [[list(r.r.shape), str(r.r.dtype).removeprefix("torch.")] for r in ctx.refs[0]]
        for name in only:
            t = time.perf_counter()
            try:
                outs, note = RUNNERS[name](ctx)
                res = grade(ctx, outs, expect_ok=name in FAIR)
                res["note"] = note
            except Skip as exc:
                res = {"status": "n/a", "ok": None, "note": str(exc)}
            except Exception as exc:  # e.g. an op without a CPU fp16 kernel: reported, not counted
                res = {"status": "error", "ok": None, "note": f"{type(exc).__name__}: {exc}"[:300]}
            res["seconds"] = round(time.perf_counter() - t, 3)
            rec["candidates"][name] = res
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    return rec


def miss(rec: dict[str, Any], name: str) -> bool:
    """A fair candidate rejected anywhere, or a downcast passed on an fp32 problem."""
    res = rec["candidates"].get(name)
    if res is None or res["ok"] is None:
        return False
    if name in FAIR:
        return not res["ok"]
    return bool(res["ok"]) and rec["precision"] == "fp32"


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    fair = [(r, c) for r in records for c in FAIR if r["candidates"].get(c, {}).get("ok") is not None]
    down = [(r, c) for r in records if r["precision"] == "fp32" for c in DOWNCAST
            if r["candidates"].get(c, {}).get("ok") is not None]
    misses = [{"problem": r["name"], "precision": r["precision"], "candidate": c,
               "kind": "fair rejected" if c in FAIR else "downcast passed",
               **{k: r["candidates"][c].get(k) for k in ("err_ratio", "bad_frac", "elem_use", "norm_use",
                                                         "rtol_share", "identical", "note", "message")}}
              for r in records for c in CANDIDATES if miss(r, c)]
    by_cand = {c: {"pass": sum(1 for r in records if r["candidates"].get(c, {}).get("ok") is True),
                   "fail": sum(1 for r in records if r["candidates"].get(c, {}).get("ok") is False),
                   "n/a": sum(1 for r in records if r["candidates"].get(c, {}).get("status") == "n/a"),
                   "error": sum(1 for r in records if r["candidates"].get(c, {}).get("status") == "error")}
               for c in CANDIDATES}
    return {
        "fair_passed": sum(1 for r, c in fair if r["candidates"][c]["ok"]), "fair_total": len(fair),
        "downcast_caught_fp32": sum(1 for r, c in down if not r["candidates"][c]["ok"]),
        "downcast_total_fp32": len(down),
        "fair_identical": sum(1 for r, c in fair if r["candidates"][c].get("identical")),
        "by_candidate": by_cand,
        "misses": misses,
        "not_fp32": [{"problem": r["name"], "precision": r["precision"],
                      **{c: r["candidates"].get(c, {}).get("status") for c in CANDIDATES}}
                     for r in records if r["precision"] != "fp32"],
        "errors": [{"problem": r["name"], "candidate": c, "note": r["candidates"][c]["note"]}
                   for r in records for c in CANDIDATES if r["candidates"].get(c, {}).get("status") == "error"],
        "refused": [{"problem": r["name"], "why": r["refused"]} for r in records if "refused" in r],
    }


def _g(x: float | str | None) -> str:
    return x if isinstance(x, str) else "-" if x is None else f"{x:.3g}"


def miss_text(m: dict[str, Any]) -> str:
    return (f"err_ratio {_g(m['err_ratio'])}, bad {100 * m['bad_frac']:.3g}%, worst element at"
            f" {_g(m['elem_use'])}x its budget, error norm at {_g(m['norm_use'])}x the norm budget"
            f" ({100 * m['rtol_share']:.0f}% of which is the RTOL*||r64|| floor)"
            + (f"; {m['note']}" if m.get("note") else "") + (f"; {m['message']}" if m.get("message") else ""))


def cell(res: dict[str, Any] | None) -> str:
    if res is None:
        return "-"
    st = res["status"]
    if st in ("n/a", "error"):
        return st
    ratio = res["err_ratio"]
    rs = ratio if isinstance(ratio, str) else f"{ratio:.3g}"
    if st == "pass":
        return "ok =" if res.get("identical") else f"ok {rs}x"
    return f"FAIL {rs}x {100 * res['bad_frac']:.3g}%"


def rows_of(records: list[dict[str, Any]]) -> list[list[Any]]:
    return [[r["name"], r["precision"], *[cell(r["candidates"].get(c)) if "refused" not in r else "refused"
                                          for c in CANDIDATES], r["seconds"]] for r in records]


HEADERS = ["problem", "prec", *CANDIDATES, "s"]


def markdown(payload: dict[str, Any]) -> str:
    s = payload["summary"]
    env = payload["env"]
    out = [
        "# Precision calibration (CPU)",
        "",
        f"{env['date']}, torch {env['torch']}, {env['cpus']} CPUs, sizes={payload['sizes']}, seed={payload['seed']},"
        f" {payload['n_sets']} input set(s) per problem, {payload['seconds']:.0f} s."
        " Produced by `benchmarks/calibrate_precision.py`; references built by the judge"
        " (`Judge` on device cpu), candidates graded by `compare_output`.",
        "",
        f"- **fair candidates passed: {s['fair_passed']}/{s['fair_total']}** (target: all;"
        f" {s['fair_identical']} of them bit-identical to r)",
        f"- **downcasts caught on fp32 problems: {s['downcast_caught_fp32']}/{s['downcast_total_fp32']}**"
        " (target: all)",
        f"- misses: {len(s['misses'])}",
        "",
        "Cells: `ok =` bit-identical to r; `ok Rx` passed with error norm R times the reference's;"
        " `FAIL Rx B%` rejected, B = elements over the per-element budget (a fail with 0% is the norm"
        " test); `inf` ratio = the reference is exact (e_ref = 0) so only the rtol/atol floor applies;"
        " `n/a` does not apply (see notes); `error` the op has no CPU kernel for that dtype.",
        "",
        "## Misses",
        "",
    ]
    if s["misses"]:
        out += ["| problem | prec | candidate | kind | err_ratio | bad % | max elem err / budget"
                " | err norm / norm budget | RTOL floor share of norm budget | note / message |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for m in s["misses"]:
            text = "; ".join(x for x in (m.get("note"), m.get("message")) if x)
            out.append(f"| {m['problem']} | {m['precision']} | {m['candidate']} | {m['kind']} | {_g(m['err_ratio'])} |"
                       f" {100 * m['bad_frac']:.3g} | {_g(m['elem_use'])} | {_g(m['norm_use'])} |"
                       f" {100 * m['rtol_share']:.0f}% | {text} |")
    else:
        out.append("None.")
    out += ["", "## Per candidate", "", "| candidate | pass | fail | n/a | error |", "|---|---|---|---|---|"]
    for c, d in s["by_candidate"].items():
        out.append(f"| {c} | {d['pass']} | {d['fail']} | {d['n/a']} | {d['error']} |")
    out += ["", "## Table", "", "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for row in rows_of(payload["problems"]):
        out.append("| " + " | ".join(str(c) for c in row) + " |")
    out += ["", "## Notes", ""]
    out += payload["notes"]
    recs = payload["problems"]

    def status(r: dict[str, Any], c: str) -> str | None:
        return r["candidates"].get(c, {}).get("status")

    for c, why in (("tf32_in", "no matmul/conv op"), ("reorder", "no matmul, conv or reduction op"),
                   ("ulp2", "integer outputs only")):
        names = [r["name"] for r in recs if status(r, c) == "n/a"]
        if names:
            out.append(f"- `{c}` n/a ({why}; `tf32_ops` likewise): {', '.join(names)}" if c == "tf32_in"
                       else f"- `{c}` n/a ({why}): {', '.join(names)}")
    split_na = [(r["name"], r["candidates"]["split"]["note"]) for r in recs if status(r, "split") == "n/a"]
    if split_na:
        out += ["", "`split` not applicable:", "", "| problem | why |", "|---|---|"]
        out += [f"| {n} | {w} |" for n, w in split_na]
    odd = [(r["name"], c, status(r, c), r["candidates"][c]["note"]) for r in recs for c in CANDIDATES
           if status(r, c) == "error" or (c in ("bf16", "fp16") and r["candidates"].get(c, {}).get("note"))]
    if odd:
        out += ["", "Errors and overflows:", "", "| problem | candidate | status | note |", "|---|---|---|---|"]
        out += [f"| {n} | {c} | {st} | {note} |" for n, c, st, note in odd]
    return "\n".join(out) + "\n"


NOTES = [
    "- Non-fp32 problems (bf16, tf32) are recorded but not counted in the downcast score: their budget"
    " is relative to the reference under their own policy.",
    "- `tf32` on the CPU: `set_precision('tf32')` sets `torch.set_float32_matmul_precision('high')`,"
    " which does not change CPU matmuls, so the CPU reference of a tf32 problem is plain fp32 and TF32"
    " emulation is graded against fp32 there (on the GPU, r itself uses TF32).",
    "- `split` legality is decided in fp64 (fp64 model on the halves vs r64 within 1e-9), so the"
    " fp32 split is tested, not assumed; problems where it is not legal are n/a with the reason.",
    "- `ulp2` on a bf16/fp16 output adds 2 fp32 ulps and rounds back to the output dtype (what fp32"
    " math with a 2-ulp expf gives there), so it is usually identical to r.",
    "- `threads` is often bit-identical to r on the CPU (many kernels split work without changing"
    " the summation order); identical cells say nothing about the budget.",
    "- Scalar outputs (mse_loss, cross_entropy) have a single e_ref, which can be small by luck: fair"
    " candidates there show err_ratio well above K_NORM = 4 and pass on the RTOL * |r64| term.",
    "- The misses listed above have 0 elements over budget and an error norm well inside the norm"
    " budget, ~98-99% of which is the RTOL * ||r64|| floor (RTOL = 1e-5): their output is a row"
    " reduction (sum of sigmoids, logsumexp) of a matmul whose fp32 error is ~1e-7 relative, and"
    " TF32's operand error averages out in the reduction to below 1e-5 relative.",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=PROBLEMS_ROOT)
    ap.add_argument("--sizes", default="small", choices=["small", "default"])
    ap.add_argument("--out", default="precision-calibration-cpu")
    ap.add_argument("--only", nargs="*", default=[], help="problem name substrings")
    ap.add_argument("--sets", type=int, default=3, help="input sets per problem (3 as in an evaluation)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    records = []
    for path in iter_problems(args.root):
        name = f"{path.parent.name}/{path.stem}"
        if args.only and not any(s in name for s in args.only):
            continue
        rec = calibrate(path, sizes=args.sizes, seed=args.seed, n_sets=args.sets)
        records.append(rec)
        print(f"{name}: {rec['seconds']:.1f} s  " + "  ".join(
            f"{c}={cell(rec['candidates'].get(c))}" for c in CANDIDATES), file=sys.stderr, flush=True)
    summary = summarize(records)
    payload = {"env": environment(), "sizes": args.sizes, "seed": args.seed, "n_sets": args.sets,
               "seconds": round(time.perf_counter() - t0, 1), "candidates": {"fair": FAIR, "downcast": DOWNCAST},
               "summary": summary, "notes": NOTES, "problems": records}
    print(table(HEADERS, rows_of(records)))
    print(f"\nfair passed {summary['fair_passed']}/{summary['fair_total']}"
          f" ({summary['fair_identical']} bit-identical to r);"
          f" downcasts caught on fp32 problems {summary['downcast_caught_fp32']}/{summary['downcast_total_fp32']};"
          f" {len(summary['misses'])} misses; {payload['seconds']:.0f} s")
    for m in summary["misses"]:
        print(f"  MISS {m['problem']} {m['candidate']} ({m['kind']}): {miss_text(m)}")
    for e in summary["errors"]:
        print(f"  error {e['problem']} {e['candidate']}: {e['note']}")
    path = write_result(args.out, payload)
    md = RESULTS / f"{args.out}.md"
    md.write_text(markdown(payload))
    print(f"wrote {path} and {md}")


if __name__ == "__main__":
    main()
