"""Precision calibration (issue 3): do fair fp32 candidates pass and downcasts fail?

    python scripts/calibrate_precision.py [--device cpu|cuda] [--sizes small|default]
                                             [--out precision-calibration-cpu] [--only SUBSTR ...]
                                             [--sets 3] [--seed 0]

On the CPU (default) sizes default to small and the result is precision-calibration-cpu; with
`--device cuda` (an H200) sizes default to default and the result is precision-calibration-h200.

For every bundled problem the reference is built by the judge itself (`skills.evaluator.harness.judge.Judge`
on the chosen device: `set_precision`, inputs drawn from derived seeds on that device, r from the
fp32 model, r64 from its fp64 deep copy on fp64 inputs) and each candidate output is graded by
`compare_output` against those `Reference`s, exactly as an evaluation would. Every candidate runs
on the same device as the reference. Candidates:

fair (a correct fp32 kernel could produce them; all must pass):
  threads   the fp32 model run with another thread count (1 instead of the default): a legal
            reordering. On cuda the thread count does not reach GPU kernels: the model is rerun
            with cudnn.benchmark on (autotuned cuDNN algorithms instead of the heuristic pick)
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
            cores do; also rounds intermediate activations); the tf32 rows are n/a without such ops
            (on cuda an RNN is one cuDNN op: tf32_ops and reorder run it with cuDNN off, as matmuls)
  tf32_hw   cuda only: the fp32 model with real TF32 tensor cores (torch.backends.cuda.matmul and
            cudnn allow_tf32 on during its forward, restored afterwards)

Writes benchmarks/results/OUT.json and OUT.md and prints the table. Misses (a fair candidate
rejected, a downcast passed on an fp32 problem) are findings: thresholds live in
skills/evaluator/harness/compare.py and are not tuned here.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import math
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from benchmarks.common import RESULTS, environment, table, write_result  # noqa: E402
from skills.evaluator.harness import protocol as P  # noqa: E402
from skills.evaluator.harness.compare import Budget, BudgetUndefined, Reference, compare_output  # noqa: E402
from skills.evaluator.harness.exchange import to_device  # noqa: E402
from skills.evaluator.harness.judge import Judge, ProblemRefused, as_outputs, set_precision  # noqa: E402
from skills.evaluator.precision_code import PrecisionEvidence  # noqa: E402
from skills.evaluator.problem import PROBLEMS_ROOT, iter_problems  # noqa: E402

FAIR_TORCH = ("threads", "split", "reorder", "ulp2")
# Fair fp32 algorithms a hand-written kernel may use, emulated at dispatch; graded against the fair
# budget (the judge's budget when the scan of the code finds no reduced-precision instruction).
FAIR_CODE = ("seq", "blocked", "pairwise", "kahan", "online", "fastmath")
FAIR = FAIR_TORCH + FAIR_CODE
DOWNCAST = ("bf16", "fp16", "tf32_in", "tf32_ops", "tf32_hw")
CANDIDATES = FAIR + DOWNCAST
CUDA_ONLY = ("tf32_hw",)


def device_candidates(device: str) -> tuple[str, ...]:
    """The candidates that run on `device` ("cpu" or "cuda"): tf32_hw needs TF32 tensor cores."""
    return tuple(c for c in CANDIDATES if device == "cuda" or c not in CUDA_ONLY)


SPLIT_TOL = 1e-9
"""The fp64 model on the split batch must equal r64 within this (relative to |r64| + rms(r64))."""

# Operands that TF32 tensor cores round, by aten op: positions in the op's arguments.
TF32_OPERANDS: dict[str, tuple[int, ...]] = {
    "mm": (0, 1), "bmm": (0, 1), "matmul": (0, 1), "linear": (0, 1), "dot": (0, 1), "mv": (0, 1),
    "addmm": (1, 2), "baddbmm": (1, 2), "addbmm": (1, 2), "addmv": (1, 2),
    "convolution": (0, 1), "_convolution": (0, 1), "convolution_overrideable": (0, 1),
}
# Ops that hold matmuls a dispatch mode cannot reach into (cuDNN runs a whole RNN as one op): they
# make the tf32 candidates applicable, and the dispatch-mode candidates run them with cuDNN off.
OPAQUE_MATMUL = {"_cudnn_rnn", "miopen_rnn"}


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
        self.opaque = 0

    def __torch_dispatch__(self, func: Any, types: Sequence[type], args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        name = func.overloadpacket.__name__
        if name in OPAQUE_MATMUL:
            self.opaque += 1
        pos = TF32_OPERANDS.get(name)
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


BLOCK = 64
"""Block length of the `blocked` candidate (partials by torch, then added left to right)."""


def _seq(parts: Iterable[torch.Tensor], how: str) -> torch.Tensor:
    """Partials added in fp32: left to right (seq, blocked), as a tree (pairwise), compensated (kahan).
    Left to right and compensated take the partials one at a time (a generator holds one: the rank-1
    updates of a 4096-deep matmul, all held at once, outgrew the H200's memory)."""
    if how == "pairwise":
        parts = list(parts)
        while len(parts) > 1:
            parts = [parts[i] + parts[i + 1] if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
        return parts[0]
    it = iter(parts)
    acc = next(it)
    comp = torch.zeros_like(acc)
    for t in it:
        if how == "kahan":
            y = t - comp
            nxt = acc + y
            comp = (nxt - acc) - y
            acc = nxt
        else:
            acc = acc + t
    return acc


LONG = 8192
"""Reductions longer than this are summed without a Python loop per element (one loop step per
element made a whole-tensor sum over millions of elements run for minutes)."""


SEQ_LIMIT = 1 << 18
"""Longest left-to-right sum `seq` and `blocked` stand for: past it the worst-case error bound
n·u (u = 2^-24) passes 1.6% and a sum of same-signed terms really loses digits to stagnation (KernelBench-
size mse_loss, 2^26 terms: 6.75e6x the reference's error on the CPU), so it is not an fp32-accurate
algorithm and the candidate is n/a there; the issue's example row sum (65,536 terms) is inside."""


def _reduce_last(x: torch.Tensor, how: str) -> torch.Tensor:
    """Sum over the last dim of fp32 `x` in the order `how` names."""
    n = x.shape[-1]
    if n == 0:
        return x.sum(-1)
    terms = -(-n // BLOCK) if how == "blocked" else n  # the additions a left-to-right order makes
    if how in ("seq", "blocked") and terms > SEQ_LIMIT:
        raise Skip(f"a left-to-right fp32 sum of {terms} terms (error bound {terms}·u = {terms * 2.0 ** -24:.2g} "
                   f"of the magnitude sum: the running sum stagnates); no accurate kernel sums that way")
    if how == "blocked":
        if n > LONG * BLOCK:  # the partials themselves are a long row: add them the same way
            return _reduce_last(_block_sums(x), "seq")
        return _seq([x[..., i:i + BLOCK].sum(-1) for i in range(0, n, BLOCK)], "seq")
    if n > LONG:
        return _reduce_long(x, how)
    return _seq([x[..., i] for i in range(n)], how)


def _block_sums(x: torch.Tensor) -> torch.Tensor:
    """torch's sums of consecutive BLOCK-long pieces of the last dim (the last piece zero-padded)."""
    pad = (-x.shape[-1]) % BLOCK
    return torch.nn.functional.pad(x, (0, pad)).unflatten(-1, (-1, BLOCK)).sum(-1)


def _reduce_long(x: torch.Tensor, how: str) -> torch.Tensor:
    """The same orders over a long last dim, vectorised: `seq` by numpy's running fp32 sum (add.accumulate
    is left to right by definition), `pairwise` as a tree over the zero-padded row (adding 0.0 is exact),
    `kahan` compensated within √n-long pieces, then compensated across them."""
    n = x.shape[-1]
    if how == "seq":
        arr = x.detach().cpu().numpy()
        return torch.from_numpy(np.add.accumulate(arr, axis=-1, dtype=np.float32)[..., -1].copy()).to(x.device)
    if how == "pairwise":
        width = 1 << (n - 1).bit_length()
        y = torch.nn.functional.pad(x, (0, width - n))
        while y.shape[-1] > 1:
            y = y[..., 0::2] + y[..., 1::2]
        return y[..., 0]
    piece = math.isqrt(n) + 1
    y = torch.nn.functional.pad(x, (0, (-n) % piece)).unflatten(-1, (-1, piece))
    inner = _seq([y[..., i] for i in range(piece)], how)
    return _seq([inner[..., j] for j in range(inner.shape[-1])], how)


def _sum_dims(x: torch.Tensor, dim: Any, keepdim: bool, how: str) -> torch.Tensor:
    dims = _dims(x, dim)
    rest = [d for d in range(x.dim()) if d not in dims]
    moved = x.permute(*rest, *dims).reshape(*[x.shape[d] for d in rest], -1)
    out = _reduce_last(moved, how)
    if keepdim:
        for d in sorted(dims):
            out = out.unsqueeze(d)
    return out


def _mm(a: torch.Tensor, b: torch.Tensor, how: str, func: Any) -> torch.Tensor:
    """a @ b (batched alike) summed over K in the order `how` names: rank-1 updates, or blocks."""
    k = a.shape[-1]
    if how in ("blocked", "pairwise"):
        step = BLOCK if how == "blocked" else 16
        parts = [func(a[..., i:i + step], b[..., i:i + step, :]) for i in range(0, k, step)]
        return _seq(parts, "seq" if how == "blocked" else "pairwise")
    return _seq((a[..., i:i + 1] * b[..., i:i + 1, :] for i in range(k)), how)


def _online(x: torch.Tensor, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(max, sum of exp(x - max)) along dim d in one pass, the sum rescaled when the max grows."""
    xs = x.movedim(d, -1)
    m = torch.full(xs.shape[:-1], -math.inf, dtype=x.dtype, device=x.device)
    acc = torch.zeros_like(m)
    for i in range(xs.shape[-1]):
        v = xs[..., i]
        grow = v > m
        acc = torch.where(grow, acc * torch.exp(m - v) + 1.0, acc + torch.exp(v - m))
        m = torch.maximum(m, v)
    return m.unsqueeze(d), acc.unsqueeze(d)


def _welford(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, biased variance) over the last dim of `x`, one pass (Welford)."""
    mean = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)
    m2 = torch.zeros_like(mean)
    for i in range(x.shape[-1]):
        v = x[..., i]
        delta = v - mean
        mean = mean + delta / (i + 1)
        m2 = m2 + delta * (v - mean)
    return mean, m2 / x.shape[-1]


FASTMATH_OPS = {"exp", "log", "tanh", "sigmoid", "erf", "gelu", "silu", "softplus", "sin", "cos", "rsqrt", "sqrt",
                "pow", "log1p", "expm1", "mish", "elu", "reciprocal", "hardswish", "logit", "erfc", "exp2"}


def _fp32(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.dtype == torch.float32


class FairCode(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """The fp32 model as a hand-written fp32 kernel might compute it: reductions (sum, mean,
    matmuls, convolutions over input channels) summed left to right (seq), in blocks of BLOCK
    (blocked), as a tree (pairwise) or compensated (kahan); softmax/log_softmax/logsumexp online
    and layer/group norm statistics by Welford (online); transcendental results 0-2 ulps off
    at random (fastmath)."""

    def __init__(self, how: str) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.how = how
        self.changed = 0
        self.gen = torch.Generator().manual_seed(7)

    def __torch_dispatch__(self, func: Any, types: Sequence[type], args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        a = list(args)
        out = self._fast(func, name, a, kwargs) if self.how == "fastmath" else (
            self._online(name, a, kwargs) if self.how == "online" else self._order(func, name, a, kwargs))
        if out is NotImplemented:
            return func(*args, **kwargs)
        self.changed += 1
        return out

    def _fast(self, func: Any, name: str, a: list[Any], kwargs: dict[str, Any]) -> Any:
        if name not in FASTMATH_OPS:
            return NotImplemented
        out = func(*a, **kwargs)
        if not _fp32(out):
            return NotImplemented
        k = torch.randint(-2, 3, out.shape, generator=self.gen).to(out.device, torch.float32)
        step = torch.nextafter(out, torch.full_like(out, math.inf)) - out
        return torch.where(torch.isfinite(out), out + k * step, out)

    def _order(self, func: Any, name: str, a: list[Any], kwargs: dict[str, Any]) -> Any:
        how = self.how
        x: Any = a[0] if a else None
        if name in ("sum", "mean") and _fp32(x) and x.dim() and not kwargs.get("dtype"):
            dim = a[1] if len(a) > 1 else kwargs.get("dim")
            keep = bool(a[2]) if len(a) > 2 else bool(kwargs.get("keepdim", False))
            out = _sum_dims(x, dim, keep, how)
            return out / (x.numel() // max(out.numel(), 1)) if name == "mean" else out
        if name in ("mm", "bmm") and _fp32(x) and x.shape[-1] >= 2:
            return _mm(x, a[1], how, func)
        if name in ("addmm", "baddbmm") and len(a) >= 3 and _fp32(a[1]) and a[1].shape[-1] >= 2:
            mm = torch.ops.aten.mm if name == "addmm" else torch.ops.aten.bmm
            prod = _mm(a[1], a[2], how, mm)
            beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
            return (a[0] if beta == 1 else beta * a[0]) + (prod if alpha == 1 else alpha * prod)
        if name == "convolution" and _fp32(x) and a[8] == 1 and not a[6] and x.shape[1] >= 2:
            step = BLOCK if how == "blocked" else 1
            parts = [func(x[:, i:i + step], a[1][:, i:i + step], None, *a[3:]) for i in range(0, x.shape[1], step)]
            out = _seq(parts, "seq" if how == "blocked" else how)
            return out if a[2] is None else out + a[2].reshape(1, -1, *([1] * (out.dim() - 2)))
        return NotImplemented

    def _online(self, name: str, a: list[Any], kwargs: dict[str, Any]) -> Any:
        x: Any = a[0] if a else None
        if not _fp32(x) or not x.dim():
            return NotImplemented
        if name in ("_softmax", "_log_softmax", "_safe_softmax"):
            d = a[1] % x.dim()
            m, s = _online(x, d)
            return torch.exp(x - m) / s if name != "_log_softmax" else x - m - torch.log(s)
        if name == "logsumexp" and isinstance(a[1], (list, tuple)) and len(a[1]) == 1:
            d = a[1][0] % x.dim()
            m, s = _online(x, d)
            out = m + torch.log(s)
            return out if (len(a) > 2 and a[2]) else out.squeeze(d)
        if name == "native_layer_norm":
            nd = len(a[1])
            flat = x.reshape(*x.shape[: x.dim() - nd], -1)
            mean, var = _welford(flat)
            rstd = torch.rsqrt(var + a[4])
            out = ((flat - mean.unsqueeze(-1)) * rstd.unsqueeze(-1)).reshape(x.shape)
            out = out * a[2] if a[2] is not None else out
            out = out + a[3] if a[3] is not None else out
            shape = [*x.shape[: x.dim() - nd], *([1] * nd)]
            return out, mean.reshape(shape), rstd.reshape(shape)
        return NotImplemented


class Skip(Exception):
    """The candidate does not apply to this problem (the message says why)."""


class Ctx:
    """The judge's references for one problem and a pristine copy of its fp32 model, on the
    judge's device (inputs, references and every candidate run live there)."""

    def __init__(self, judge: Judge, pristine: torch.nn.Module) -> None:
        self.judge = judge
        self.device: torch.device = judge.device
        self.pristine = pristine
        self.sets: list[list[Any]] = judge.sets
        # The judge built the fair budget (its code evidence says: scanned, nothing reduced); the
        # strict one (reduced-precision instructions found) is rebuilt from the same r and r64.
        self.fair_refs: list[list[Reference]] = judge.refs
        strict = Budget(tf32=judge.budget.tf32)
        self.refs: list[list[Reference]] = [[Reference(ref.r, ref.r64, strict) for ref in refs] for refs in judge.refs]
        self._probe: tuple[int, int] | None = None

    def matmul_ops(self) -> tuple[int, int]:
        """(matmul/conv operands TF32Ops rounds, opaque RNN ops) in one fp64 forward of set 0:
        a cheap probe of which ops run (fp64 so nothing else changes). Cached."""
        if self._probe is None:
            mode = TF32Ops()
            model = self.model(torch.float64)
            with mode:
                self.run(model, to_device(self.sets[0], self.device, double=True))
            self._probe = (mode.rounded, mode.opaque)
        return self._probe

    def dispatchable(self) -> contextlib.AbstractContextManager[Any]:
        """Where the model has an RNN that cuDNN runs as one opaque op (cuda), cuDNN off so the
        RNN runs as matmuls a dispatch mode can see (a legal fp32 implementation too)."""
        if self.device.type == "cuda" and self.matmul_ops()[1]:
            return _cudnn_enabled(False)
        return contextlib.nullcontext()

    def model(self, dtype: torch.dtype | None = None) -> torch.nn.Module:
        m = copy.deepcopy(self.pristine)
        return m.to(dtype) if dtype is not None else m

    def run(self, model: torch.nn.Module, inputs: list[Any]) -> list[Any]:
        with torch.no_grad():
            return as_outputs(model(*inputs), "Model")


@contextlib.contextmanager
def _cudnn_enabled(on: bool) -> Iterator[None]:
    before = torch.backends.cudnn.enabled
    torch.backends.cudnn.enabled = on
    try:
        yield
    finally:
        torch.backends.cudnn.enabled = before


def _cast(args: list[Any], dtype: torch.dtype) -> list[Any]:
    return [a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]


def _back(outs: list[Any], refs: list[Reference]) -> list[Any]:
    """Float outputs back to the reference's dtype (what a kernel writing the output buffer does)."""
    return [o.to(ref.r.dtype) if isinstance(o, torch.Tensor) and o.is_floating_point() else o
            for o, ref in zip(outs, refs, strict=False)]


# ---------------------------------------------------------------------------------------------
# Candidates: each returns (outputs per set, note) or raises Skip.


def cand_threads(ctx: Ctx) -> tuple[list[list[Any]], str]:
    if ctx.device.type == "cuda":
        model = ctx.model()
        before = torch.backends.cudnn.benchmark
        torch.backends.cudnn.benchmark = True
        try:
            outs = [ctx.run(model, s) for s in ctx.sets]
        finally:
            torch.backends.cudnn.benchmark = before
        return outs, "cudnn.benchmark on (autotuned cuDNN algorithms); other ops rerun as they are"
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
            legal = max(_matches_r64(_split_run(ctx, model64, to_device(s, ctx.device, double=True), all_inputs),
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


def _under(ctx: Ctx, mode: Any) -> list[list[Any]]:
    """The model's outputs on every set, each call run under the dispatch mode `mode`."""
    model = ctx.model()
    outs = []
    with ctx.dispatchable():
        for s in ctx.sets:
            with mode:
                outs.append(ctx.run(model, s))
    return outs


def cand_reorder(ctx: Ctx) -> tuple[list[list[Any]], str]:
    mode = Reorder()
    outs = _under(ctx, mode)
    if not mode.changed:
        raise Skip("no matmul, conv or reduction op to reorder")
    return outs, f"{mode.changed // len(ctx.sets)} ops reordered per call"


def cand_ulp2(ctx: Ctx) -> tuple[list[list[Any]], str]:
    g = torch.Generator(device=ctx.device).manual_seed(1234)
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
            mask = torch.rand(c.shape, generator=g, device=c.device) < 0.5
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
    """The applicability rule of every tf32 candidate: the model runs a matmul, conv or RNN op."""
    return sum(ctx.matmul_ops())


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
    with ctx.dispatchable():
        for s in ctx.sets:
            with mode:
                outs.append(ctx.run(model, s))
    if not mode.rounded:
        raise Skip("no matmul/conv op")
    note = f"{mode.rounded // len(ctx.sets)} operands rounded per call"
    if mode.opaque:  # cannot happen with cuDNN off; said rather than hidden if it does
        note += f"; {mode.opaque // len(ctx.sets)} opaque RNN op(s) NOT rounded"
    return outs, note


def cand_tf32_hw(ctx: Ctx) -> tuple[list[list[Any]], str]:
    if ctx.device.type != "cuda":
        raise Skip("cuda only (TF32 tensor cores)")
    if not _has_matmul(ctx):
        raise Skip("no matmul/conv op")
    model = ctx.model()
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        outs = [ctx.run(model, s) for s in ctx.sets]
        torch.cuda.synchronize(ctx.device)
    finally:
        # Back to exactly what the judge set for the reference (legacy flags only, as it does:
        # mixing them with torch's newer fp32_precision API raises).
        set_precision(ctx.judge.precision)
    return outs, "cuBLAS and cuDNN allowed TF32"


def _fair_code(how: str) -> Callable[[Ctx], tuple[list[list[Any]], str]]:
    def cand(ctx: Ctx) -> tuple[list[list[Any]], str]:
        mode = FairCode(how)
        outs = _under(ctx, mode)
        if not mode.changed:
            raise Skip({"online": "no softmax, logsumexp or layer norm", "fastmath": "no transcendental op"}.get(
                how, "no sum, mean, matmul or convolution"))
        return outs, f"{mode.changed // len(ctx.sets)} ops per call"
    return cand


RUNNERS: dict[str, Callable[[Ctx], tuple[list[list[Any]], str]]] = {
    "threads": cand_threads, "split": cand_split, "reorder": cand_reorder, "ulp2": cand_ulp2,
    **{how: _fair_code(how) for how in FAIR_CODE},
    "bf16": _lowp(torch.bfloat16), "fp16": _lowp(torch.float16),
    "tf32_in": cand_tf32_in, "tf32_ops": cand_tf32_ops, "tf32_hw": cand_tf32_hw,
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
    share = ref.norm_floor / ref.norm_budget if ref.norm_budget > 0 else 1.0
    if not isinstance(c, torch.Tensor) or list(c.shape) != list(ref.r64.shape):
        return math.inf, math.inf, share
    d = c.double()
    skip = torch.isnan(ref.r64) | (torch.isinf(ref.r64) & (d == ref.r64))
    err = torch.where(skip, torch.zeros_like(d), (d - ref.r64).abs()).nan_to_num(math.inf)
    elem = float((err / ref.budget).max()) if err.numel() else 0.0
    norm = float(torch.linalg.vector_norm(err)) / ref.norm_budget if ref.norm_budget > 0 else math.inf
    return elem, norm, share


def grade(ctx: Ctx, outs: list[list[Any]], expect_ok: bool, fair: bool = False) -> dict[str, Any]:
    """compare_output on every output of every set (against the fair budget's references where
    `fair`, else the strict one's); the worst ratio and the bad fraction (and the budget
    diagnostics of outputs whose verdict is not the expected one)."""
    ok, ratio, bad, total, identical, msg = True, 0.0, 0, 0, True, ""
    elem_use = norm_use = floor_share = 0.0
    diagnosed = False
    for per, refs in zip(outs, ctx.fair_refs if fair else ctx.refs, strict=True):
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
    if identical and not expect_ok:
        # A "downcast" whose output is bit-identical to r did not downcast (cuBLAS runs a
        # matrix-vector product without TF32 even when TF32 is allowed): nothing to catch.
        return {"status": "n/a", "ok": None, "err_ratio": _num(ratio), "bad_frac": 0.0, "identical": True,
                "message": "", "note": "bit-identical to the fp32 reference: the shortcut was not taken"}
    return {"status": "pass" if ok else "FAIL", "ok": ok, "err_ratio": _num(ratio),
            "bad_frac": bad / max(total, 1), "identical": identical, "message": msg,
            **({"elem_use": _num(elem_use), "norm_use": _num(norm_use), "rtol_share": floor_share}
               if diagnosed else {})}


def calibrate(path: Path, *, sizes: str = "small", seed: int = 0, n_sets: int = 3,
              only: Sequence[str] | None = None, device: str = "cpu") -> dict[str, Any]:
    """Every candidate of one problem (default: those of `device`) graded against the judge's own
    references, all on `device` ("cpu" or "cuda")."""
    t0 = time.perf_counter()
    if only is None:
        only = device_candidates(device)
    with tempfile.TemporaryDirectory(prefix="kagent-calib-") as tmp:
        start = P.JudgeStart(nonce="calibrate", problem_path=str(path), sizes=sizes, device=device,  # type: ignore[arg-type]
                             seed=seed, n_sets=n_sets,
                             exchange_dir=tmp, shape_check=False,
                             evidence=PrecisionEvidence(checked=True, how="calibration: a clean scan"))
        judge = Judge(start)
        # Before build(): a forward may update buffers (BatchNorm running stats); candidates start
        # from the weights the candidate process gets.
        pristine = copy.deepcopy(judge.model)
        rec: dict[str, Any] = {"name": judge.loaded.problem.name, "precision": judge.precision,
                               "candidates": {}}
        try:
            judge.build()
        except (ProblemRefused, BudgetUndefined) as exc:
            rec["refused"] = str(exc)
            rec["seconds"] = time.perf_counter() - t0
            return rec
        ctx = Ctx(judge, pristine)
        rec["outputs"] = [[list(r.r.shape), str(r.r.dtype).removeprefix("torch.")] for r in ctx.refs[0]]
        for name in only:
            t = time.perf_counter()
            try:
                outs, note = RUNNERS[name](ctx)
                res = grade(ctx, outs, expect_ok=name in FAIR, fair=name in FAIR_CODE)
                if name in DOWNCAST and res["status"] != "n/a":
                    # Done by bit-masking, no instruction would show it: the fair budget would apply.
                    res["fair_budget_ok"] = grade(ctx, outs, expect_ok=False, fair=True)["ok"]
                res["note"] = f"{res['note']} ({note})" if res.get("note") else note
            except Skip as exc:
                res = {"status": "n/a", "ok": None, "note": str(exc)}
            except Exception as exc:  # e.g. an op without a CPU fp16 kernel: reported, not counted
                res = {"status": "error", "ok": None, "note": f"{type(exc).__name__}: {exc}"[:300]}
            res["seconds"] = round(time.perf_counter() - t, 3)
            rec["candidates"][name] = res
            if res["status"] == "error" and device == "cuda":  # e.g. out of memory: a clean slate
                gc.collect()
                torch.cuda.empty_cache()
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


def summarize(records: list[dict[str, Any]], cands: Sequence[str] = CANDIDATES) -> dict[str, Any]:
    """Counts over the candidates `cands` (those of the device the records were made on)."""
    fair = [(r, c) for r in records for c in FAIR if c in cands and r["candidates"].get(c, {}).get("ok") is not None]
    down = [(r, c) for r in records if r["precision"] == "fp32" for c in DOWNCAST
            if c in cands and r["candidates"].get(c, {}).get("ok") is not None]
    misses = [{"problem": r["name"], "precision": r["precision"], "candidate": c,
               "kind": "fair rejected" if c in FAIR else "downcast passed",
               **{k: r["candidates"][c].get(k) for k in ("err_ratio", "bad_frac", "elem_use", "norm_use",
                                                         "rtol_share", "identical", "note", "message")}}
              for r in records for c in cands if miss(r, c)]
    by_cand = {c: {"pass": sum(1 for r in records if r["candidates"].get(c, {}).get("ok") is True),
                   "fail": sum(1 for r in records if r["candidates"].get(c, {}).get("ok") is False),
                   "n/a": sum(1 for r in records if r["candidates"].get(c, {}).get("status") == "n/a"),
                   "error": sum(1 for r in records if r["candidates"].get(c, {}).get("status") == "error")}
               for c in cands}
    return {
        "fair_passed": sum(1 for r, c in fair if r["candidates"][c]["ok"]), "fair_total": len(fair),
        "downcast_caught_fp32": sum(1 for r, c in down if not r["candidates"][c]["ok"]),
        "downcast_total_fp32": len(down),
        "fair_identical": sum(1 for r, c in fair if r["candidates"][c].get("identical")),
        # Shortcuts done by bit-masking (no instruction for the scan to find) get the fair budget.
        "downcast_masked_caught_fp32": sum(1 for r, c in down if r["candidates"][c].get("fair_budget_ok") is False),
        "downcast_masked_passed": [f"{r['name']}:{c}" for r, c in down if r["candidates"][c].get("fair_budget_ok")],
        "by_candidate": by_cand,
        "misses": misses,
        "not_fp32": [{"problem": r["name"], "precision": r["precision"],
                      **{c: r["candidates"].get(c, {}).get("status") for c in cands}}
                     for r in records if r["precision"] not in ("fp32", None)],
        "errors": [{"problem": r["name"], "candidate": c, "note": r["candidates"][c]["note"]}
                   for r in records for c in cands if r["candidates"].get(c, {}).get("status") == "error"],
        "refused": [{"problem": r["name"], "why": r["refused"]} for r in records if "refused" in r],
        "failed": [{"problem": r["name"], "why": r["failed"]} for r in records if "failed" in r],
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
    st: str = res["status"]
    if st in ("n/a", "error"):
        return st
    ratio = res["err_ratio"]
    rs = ratio if isinstance(ratio, str) else f"{ratio:.3g}"
    if st == "pass":
        return "ok =" if res.get("identical") else f"ok {rs}x"
    return f"FAIL {rs}x {100 * res['bad_frac']:.3g}%"


def rows_of(records: list[dict[str, Any]], cands: Sequence[str] = CANDIDATES) -> list[list[Any]]:
    def whole(r: dict[str, Any]) -> str | None:
        return "refused" if "refused" in r else "failed" if "failed" in r else None

    return [[r["name"], r["precision"] or "?", *[whole(r) or cell(r["candidates"].get(c)) for c in cands],
             r["seconds"]] for r in records]


def headers(cands: Sequence[str] = CANDIDATES) -> list[str]:
    return ["problem", "prec", *cands, "s"]


def device_label(device: str, gpu: str | None) -> str:
    """'CPU', or the GPU's name ('NVIDIA H200') for cuda."""
    return "CPU" if device == "cpu" else gpu or "CUDA (GPU name unknown)"


def markdown(payload: dict[str, Any]) -> str:
    s = payload["summary"]
    env = payload["env"]
    device = payload.get("device", "cpu")
    cands = [*payload["candidates"]["fair"], *payload["candidates"]["downcast"]]
    where = f"{env['cpus']} CPUs" if device == "cpu" else f"GPU {env.get('gpu')}, {env['cpus']} CPUs"
    out = [
        f"# Precision calibration ({device_label(device, env.get('gpu'))})",
        "",
        f"{env['date']}, torch {env['torch']}, {where}, sizes={payload['sizes']}, seed={payload['seed']},"
        f" {payload['n_sets']} input set(s) per problem, {payload['seconds']:.0f} s."
        " Produced by `scripts/calibrate_precision.py`; references built by the judge"
        f" (`Judge` on device {device}), candidates graded by `compare_output`.",
        "",
        *([f"**Partial: written after {len(payload['problems'])} problem(s); the run did not finish.**", ""]
          if payload.get("partial") else []),
        f"- **fair candidates passed: {s['fair_passed']}/{s['fair_total']}** (target: all;"
        f" {s['fair_identical']} of them bit-identical to r)",
        f"- **downcasts caught on fp32 problems: {s['downcast_caught_fp32']}/{s['downcast_total_fp32']}**"
        " (target: all; the strict budget, which applies where the code holds reduced-precision instructions)",
        f"- the same downcasts done by bit-masking (no instruction to find, so the fair budget applies):"
        f" {s.get('downcast_masked_caught_fp32', '?')}/{s['downcast_total_fp32']} still caught"
        + (f"; passed: {', '.join(s['downcast_masked_passed'])}" if s.get("downcast_masked_passed") else ""),
        f"- misses: {len(s['misses'])}",
        "",
        "Cells: `ok =` bit-identical to r; `ok Rx` passed with error norm R times the reference's;"
        " `FAIL Rx B%` rejected, B = elements over the per-element budget (a fail with 0% is the norm"
        " test); `inf` ratio = the reference is exact (e_ref = 0) so only the rtol/atol floor applies;"
        " `n/a` does not apply (see notes); `error` the candidate raised (e.g. an op without a"
        f" {device.upper() if device == 'cpu' else 'CUDA'} kernel for that dtype; the note says).",
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
                       f" {'-' if m['rtol_share'] is None else format(100 * m['rtol_share'], '.0f') + '%'} | {text} |")
    else:
        out.append("None.")
    out += ["", "## Per candidate", "", "| candidate | pass | fail | n/a | error |", "|---|---|---|---|---|"]
    for c, d in s["by_candidate"].items():
        out.append(f"| {c} | {d['pass']} | {d['fail']} | {d['n/a']} | {d['error']} |")
    if s.get("failed"):
        out += ["", "## Problems that failed as a whole", "", "| problem | why |", "|---|---|"]
        out += [f"| {f['problem']} | {f['why']} |" for f in s["failed"]]
    head = headers(cands)
    out += ["", "## Table", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows_of(payload["problems"], cands):
        out.append("| " + " | ".join(str(c) for c in row) + " |")
    out += ["", "## Notes", ""]
    out += payload["notes"]
    recs = payload["problems"]

    def status(r: dict[str, Any], c: str) -> str | None:
        got: str | None = r["candidates"].get(c, {}).get("status")
        return got

    likewise = "`tf32_ops` likewise" if "tf32_hw" not in cands else "`tf32_ops` and `tf32_hw` likewise"
    for c, why in (("tf32_in", "no matmul/conv op"), ("reorder", "no matmul, conv or reduction op"),
                   ("ulp2", "integer outputs only")):
        names = [r["name"] for r in recs if status(r, c) == "n/a"]
        if names:
            out.append(f"- `{c}` n/a ({why}; {likewise}): {', '.join(names)}" if c == "tf32_in"
                       else f"- `{c}` n/a ({why}): {', '.join(names)}")
    split_na = [(r["name"], r["candidates"]["split"]["note"]) for r in recs if status(r, "split") == "n/a"]
    if split_na:
        out += ["", "`split` not applicable:", "", "| problem | why |", "|---|---|"]
        out += [f"| {n} | {w} |" for n, w in split_na]
    odd = [(r["name"], c, status(r, c), r["candidates"][c]["note"]) for r in recs for c in cands
           if status(r, c) == "error" or (c in ("bf16", "fp16") and r["candidates"].get(c, {}).get("note"))]
    if odd:
        out += ["", "Errors and overflows:", "", "| problem | candidate | status | note |", "|---|---|---|---|"]
        out += [f"| {n} | {c} | {st} | {note} |" for n, c, st, note in odd]
    return "\n".join(out) + "\n"


BUDGET_NOTE = (
    "- Budgets: `threads`, `split`, `reorder`, `ulp2` and every downcast are graded against the strict"
    " budget (K x torch's own rounding: what applies where the scan of the code finds reduced-precision"
    " instructions); the fair-code candidates `seq` (left-to-right fp32 sums: rank-1 updates for"
    " matmuls, one input channel at a time for convolutions), `blocked` (partials of 64 added left to"
    " right), `pairwise` (a tree; blocks of 16 for matmuls), `kahan` (compensated), `online`"
    " (single-pass softmax/log_softmax/logsumexp, Welford layer norm) and `fastmath` (every"
    " transcendental result moved 0-2 ulps at random) against the fair budget (what applies where it"
    " finds none: + 8 * 2^-24 * sqrt(n) * (|r64| + rms), n the longest reduction of the forward).")
NOTES = [
    "- Non-fp32 problems (bf16, tf32) are recorded but not counted in the downcast score: their budget"
    " is relative to the reference under their own policy.",
    "- `tf32` on the CPU: `set_precision('tf32')` does not change CPU matmuls, so the CPU reference of a"
    " tf32 problem is plain fp32; its budget adds TF32 operand rounding analytically (Budget.tf32 in"
    " skills/evaluator/harness/compare.py: 8 * 2^-11 * (|r64| + rms) per element, 4 * 2^-11 * ||r64|| on the norm).",
    "- `split` legality is decided in fp64 (fp64 model on the halves vs r64 within 1e-9), so the"
    " fp32 split is tested, not assumed; problems where it is not legal are n/a with the reason.",
    "- `ulp2` on a bf16/fp16 output adds 2 fp32 ulps and rounds back to the output dtype (what fp32"
    " math with a 2-ulp expf gives there), so it is usually identical to r.",
    "- `threads` is often bit-identical to r on the CPU (many kernels split work without changing"
    " the summation order); identical cells say nothing about the budget.",
    "- Scalar outputs (mse_loss, cross_entropy) have a single e_ref, which can be small by luck: fair"
    " candidates there show err_ratio well above K_NORM = 4 and pass on the RTOL * |r64| term.",
    "- With RTOL = 1e-5 (before it became 1e-6) this calibration had misses: `tf32_*` passed with 0"
    " elements over budget and an error norm inside the norm budget, ~98-99% of which was the"
    " RTOL * ||r64|| floor; their output is a row reduction (sum of sigmoids, logsumexp) of a matmul"
    " whose fp32 error is ~1e-7 relative, and TF32's operand error averages out in the reduction to"
    " below 1e-5 relative.",
    "- On the H200 at default sizes, RTOL = 1e-6 still let `tf32_in`, `tf32_ops` and real TF32 through"
    " level2/25_linear_logsumexp (error norm 21-25x the reference's, inside a norm budget 90% of which"
    " was the floor); the norm floor is now 2.5e-7 * ||r64|| (about 2 fp32 ulps) for outputs of 1024"
    " elements or more, 1e-6 below that (scalars, whose e_ref can be small by luck). A fair"
    " reordering put 1 of 33M softmax elements at 1.08x its budget there: a tail of at most 1e-6 of"
    " the elements within 4x their budget is now tolerated. A `downcast` bit-identical to r (cuBLAS"
    " runs a matrix-vector product without TF32) is n/a, not a miss.",
]
CUDA_NOTES = [
    NOTES[0],
    "- `tf32` problems on the GPU: `set_precision('tf32')` allows TF32 in cuBLAS and cuDNN, so r itself"
    " runs on TF32 tensor cores and the tf32 candidates are graded against that.",
    NOTES[2],
    NOTES[3],
    "- `threads` on the GPU: a thread count does not reach GPU kernels, so the column reruns the fp32"
    " model with `cudnn.benchmark` on (autotuned cuDNN convolution algorithms, legal fp32"
    " reorderings); for every other op it is a plain rerun, and `ok =` there only says the op is"
    " deterministic.",
    "- An RNN (LSTM/GRU) on the GPU is one cuDNN op (`_cudnn_rnn`) that the dispatch modes cannot"
    " reach into: `reorder` and `tf32_ops` run models holding one with cuDNN off (PyTorch's native"
    " RNN: matmuls and fused cells, a legal fp32 implementation); `tf32_hw` keeps cuDNN and its TF32 path.",
    "- `tf32_hw` is what the emulations stand for: the fp32 model with `torch.backends.cuda.matmul"
    ".allow_tf32` and `torch.backends.cudnn.allow_tf32` on during its forward (then the judge's"
    " policy again); only cuBLAS matmuls and cuDNN convolutions/RNNs change. Same applicability as"
    " `tf32_in` (a matmul, conv or RNN op in the model).",
    NOTES[5],
    NOTES[-1],
]


def build_payload(args: argparse.Namespace, records: list[dict[str, Any]], env: dict[str, Any],
                  seconds: float, partial: bool = False) -> dict[str, Any]:
    cands = device_candidates(args.device)
    return {"env": env, "device": args.device, "gpu": env.get("gpu"), "sizes": args.sizes, "seed": args.seed,
            "n_sets": args.sets, "seconds": round(seconds, 1),
            "candidates": {"fair": [c for c in FAIR if c in cands], "downcast": [c for c in DOWNCAST if c in cands]},
            "summary": summarize(records, cands),
            "notes": [BUDGET_NOTE, *(NOTES if args.device == "cpu" else CUDA_NOTES)],
            **({"partial": True} if partial else {}), "problems": records}


def _short_of_memory(rec: dict[str, Any]) -> bool:
    """The record failed, or a candidate raised, for want of GPU memory (not a verdict on precision)."""
    notes = [rec.get("failed") or ""] + [c.get("note") or "" for c in rec.get("candidates", {}).values()
                                          if isinstance(c, dict)]
    return any("OutOfMemoryError" in n or ("ProblemRefused" in n and "GPU memory" in n) for n in notes)


def _one_problem(path: Path, name: str, sizes: str, seed: int, n_sets: int, device: str) -> dict[str, Any]:
    t = time.perf_counter()
    try:
        rec = calibrate(path, sizes=sizes, seed=seed, n_sets=n_sets, device=device)
    except Exception as exc:  # the judge could not build the references: say so, go on
        rec = {"name": name, "precision": None, "candidates": {},
               "failed": f"{type(exc).__name__}: {exc}"[:300], "seconds": round(time.perf_counter() - t, 3)}
    if device == "cuda":
        gc.collect()
        torch.cuda.empty_cache()
    return rec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=PROBLEMS_ROOT)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="where the judge builds the references and every candidate runs")
    ap.add_argument("--sizes", default=None, choices=["small", "default"],
                    help="problem sizes (default: small on cpu, default on cuda)")
    ap.add_argument("--out", default=None,
                    help="result name (default: precision-calibration-cpu, or -h200 with --device cuda)")
    ap.add_argument("--only", nargs="*", default=[], help="problem name substrings")
    ap.add_argument("--sets", type=int, default=3, help="input sets per problem (3 as in an evaluation)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1,
                    help="problems calibrated at once, one process each (precision only: no clock to disturb)")
    args = ap.parse_args()
    if args.sizes is None:
        args.sizes = "small" if args.device == "cpu" else "default"
    if args.out is None:
        args.out = "precision-calibration-cpu" if args.device == "cpu" else "precision-calibration-h200"
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: torch sees no CUDA device")
    cands = device_candidates(args.device)
    env = environment()
    print(f"device {args.device} ({device_label(args.device, env.get('gpu'))}), torch {env['torch']},"
          f" sizes={args.sizes}, {args.sets} set(s), candidates {' '.join(cands)}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    names = [(path, f"{path.parent.name}/{path.stem}") for path in iter_problems(args.root)]
    names = [(p, n) for p, n in names if not args.only or any(s in n for s in args.only)]
    by_name: dict[str, dict[str, Any]] = {}  # a problem calibrated again replaces its record

    def in_order() -> list[dict[str, Any]]:
        return [by_name[n] for _, n in names if n in by_name]

    def done(name: str, rec: dict[str, Any]) -> None:
        by_name[name] = rec
        print(f"{name}: {rec['seconds']:.1f} s  " + (f"FAILED {rec['failed']}" if "failed" in rec else "  ".join(
            f"{c}={cell(rec['candidates'].get(c))}" for c in cands)), file=sys.stderr, flush=True)
        # What is done so far survives a run cut short (a device call's time limit).
        partial = build_payload(args, in_order(), env, time.perf_counter() - t0, partial=True)
        write_result(args.out, partial)
        (RESULTS / f"{args.out}.md").write_text(markdown(partial))

    jobs = [(p, n, args.sizes, args.seed, args.sets, args.device) for p, n in names]
    if args.jobs <= 1:
        for job in jobs:
            done(job[1], _one_problem(*job))
    else:  # problems are independent (each its own seeded inputs): one process each, `--jobs` at a time
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(_one_problem, *job): job[1] for job in jobs}
            for fut in as_completed(futures):
                done(futures[fut], fut.result())
        # Problems side by side can run the GPU out of memory where one alone fits: those again, alone.
        again = [job for job in jobs if _short_of_memory(by_name[job[1]])]
        if again:
            print(f"again alone, out of GPU memory beside the others: {' '.join(j[1] for j in again)}",
                  file=sys.stderr, flush=True)
            for job in again:
                done(job[1], _one_problem(*job))
    records = in_order()
    payload = build_payload(args, records, env, time.perf_counter() - t0)
    summary = payload["summary"]
    print(table(headers(cands), rows_of(records, cands)))
    print(f"\nfair passed {summary['fair_passed']}/{summary['fair_total']}"
          f" ({summary['fair_identical']} bit-identical to r);"
          f" downcasts caught on fp32 problems {summary['downcast_caught_fp32']}/{summary['downcast_total_fp32']};"
          f" {len(summary['misses'])} misses; {payload['seconds']:.0f} s")
    for m in summary["misses"]:
        print(f"  MISS {m['problem']} {m['candidate']} ({m['kind']}): {miss_text(m)}")
    for e in summary["errors"]:
        print(f"  error {e['problem']} {e['candidate']}: {e['note']}")
    for f in summary["failed"]:
        print(f"  FAILED {f['problem']}: {f['why']}")
    path = write_result(args.out, payload)
    md = RESULTS / f"{args.out}.md"
    md.write_text(markdown(payload))
    print(f"wrote {path} and {md}")


if __name__ == "__main__":
    main()
