"""Precision parity: the candidate's error budget, measured against an fp64 reference.

For each output element i, with r64 the fp64 reference, r the reference under the problem's
precision policy (fp32 with TF32 off by default) and c the candidate:

    e_ref_i = |r_i - r64_i|          (the reference's own rounding error)
    e_i     = |c_i - r64_i|
    budget_i = K_ELEM * max(e_ref_i, mean(e_ref)) + RTOL * |r64_i| + ATOL_FRAC * scale

and the whole output must also satisfy ||e||_2 <= K_NORM * ||e_ref||_2 + RTOL_NORM(n) * ||r64||_2, where
the floor RTOL_NORM is RTOL for outputs of fewer than NORM_MIN_N elements (a scalar's e_ref can be
small by luck) and RTOL_NORM_LARGE (about 2 fp32 ulps) above: there ||e_ref|| is a stable
yardstick, and the looser floor let TF32 through a matmul + logsumexp on the H200 (calibration).
A vanishing tail is tolerated: at most TAIL_FRAC of the elements may exceed their budget, by at
most TAIL_FACTOR (on the H200 a fair reordering of a 33M-element softmax put 1 element at 1.08x
its budget; a downcast puts >90% of them 10-1000x over). NaN/inf mismatches are never tolerated.
`scale` is the RMS of r64. Legal reorderings and fp32 transcendental variants land near ratio 1;
TF32, fp16 and bf16 shortcuts on an fp32 problem land 10-1000x over (calibration in docs/results.md).
Runs in the judge process only: the candidate's process never holds r or r64.

That is the strict budget: torch's own rounding, K times over. A fair fp32 kernel whose summation
order differs from torch's (a left-to-right sum over 65,536 columns, an online softmax) can be
~20-200x further from r64 than torch's blocked/pairwise sums, so where the evidence about the
candidate's code (skills/evaluator/precision_code.py) shows no reduced-precision instruction on an fp32 or
tf32 problem the budget is `fair` (Budget.mode) and adds, per element and to the norm budget,

    fair_i    = C_SEQ * U32 * sqrt(n) * (|r64_i| + scale)        ||.|| <= C_SEQ_NORM * U32 * sqrt(n) * ||r64||

with U32 = 2^-24 (fp32's unit roundoff) and n the longest reduction any op of the forward
performs per output element (`reduction_length`: K of a matmul, C_in*kh*kw of a convolution,
the reduced extent of a sum/mean/norm/softmax/layer norm/cumsum, ...; found on meta tensors, so
it costs no memory). Why this estimate: a sequential fp32 sum of n terms has an error that is a
random walk over its partial sums, ~U32 * sqrt(n) * (|sum| + ||terms||_2) (measured: worst of 64
rows 0.9 * U32 * sqrt(n) * rms at n = 65,536, mean 0.17; biased up to 3.7 for the heavy-tailed
positive sum of an online softmax at n = 32,768, see the constants); every other order (blocked, pairwise,
Kahan, Welford, online softmax) is at or below it, and the reduction length is what all of
KernelBench's ops share (matmul, conv, norms, losses, softmax, attention), read from the problem
alone. `scale` stands in for ||terms||_2, which only the op knows: for the sums, means and
products of random data that problems draw the two agree. An elementwise op has n = 1: its fair
term is C_SEQ ulps of scale, far below bf16 rounding (2^-9), so rounding by bit-masking (which
no instruction scan can see) still fails there.

Where the problem's PRECISION allows TF32 and the reference was not computed on TF32 tensor cores
(the CPU; on CUDA set_precision lets cuBLAS/cuDNN use TF32 and e_ref carries it), operand rounding
to 10 mantissa bits is budgeted analytically: C_TF32 * U_TF32 * (|r64_i| + scale) per element
and C_TF32_NORM * U_TF32 * ||r64|| on the norm (U_TF32 = 2^-11; the products' relative errors are
independent, so the sum's error is ~0.8 * U_TF32 * ||terms||_2 whatever n; truncation instead of
rounding doubles it). bf16's error (8x) stays over the norm budget.

No budget is ever infinite or NaN: where the fp32 reference overflowed (or went NaN) and fp64 is
finite, e_ref there is one rounding of r64 in the output dtype (the budget comes from fp64 alone),
and an output whose exact value lies beyond its dtype's range cannot be graded (BudgetUndefined,
which the judge reports as a refused problem).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal

import msgspec
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from skills.evaluator.results import OutputError

K_ELEM = 32.0
K_NORM = 4.0
RTOL = 1e-6  # 1e-5 let TF32 through on matmul+row-reduction problems (calibration table)
ATOL_FRAC = 1e-6
RTOL_NORM_LARGE = 2.5e-7
NORM_MIN_N = 1024
TAIL_FRAC = 1e-6
TAIL_FACTOR = 4.0
U32 = 2.0**-24
"""fp32's unit roundoff."""
U_TF32 = 2.0**-11
"""TF32's unit roundoff (10 explicit mantissa bits)."""
# Sequential fp32 sums measured (units U32 * sqrt(n), of rms(r64) or |r64|): random-signed terms
# mean 0.17, worst 0.9 at n = 65,536; positive heavy-tailed terms (exp(3z), an online softmax's
# sum) are biased, since terms under half an ulp of the running sum are lost: mean 2.5, worst 3.7
# at n = 32,768, 9.6 at n = 131,072 (growing like n there, not sqrt(n): see docs/precision.md).
C_SEQ = 8.0
C_SEQ_NORM = 8.0
C_TF32 = 8.0  # per element: ~4.5 sigma of TF32 rounding at 1e5-1e6 elements, 2x that of truncation
C_TF32_NORM = 4.0  # ~2x truncation's error norm (2.2 * U_TF32 * ||r64||); bf16 rounding is ~6.5


class BudgetUndefined(Exception):
    """No finite budget can grade this output fairly (its exact value is beyond its dtype's range)."""


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    """How wide the error budget of one evaluation is (decided by the judge, see `budget_for`)."""

    mode: Literal["strict", "fair"] = "strict"
    """strict: K x torch's own rounding; fair: plus the growth any fp32 summation order may have."""
    reduction_length: int = 1
    """n of the fair term: the longest reduction one output element depends on (`reduction_length`)."""
    tf32: bool = False
    """Also budget TF32 operand rounding (a tf32 problem whose reference did not use TF32)."""


STRICT = Budget()
"""Today's budget: what every caller gets unless the judge chooses otherwise."""


CHUNK = 1 << 24
"""Elements per pass when a reference is measured or an output compared: the temporaries of a
pass (fp64 errors, budgets, masks) stay ~0.5 GiB whatever the output's size."""


def _spans(n: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + CHUNK, n)) for lo in range(0, n, CHUNK)] or [(0, 0)]


def _respan(pieces: Iterable[torch.Tensor]) -> Iterator[torch.Tensor]:
    """The pieces' flat elements again, at most CHUNK at a time (each piece dropped once used)."""
    for piece in pieces:
        flat = piece.reshape(-1)
        for lo in range(0, flat.numel(), CHUNK):
            yield flat[lo:lo + CHUNK]
        del flat, piece


class NotFinitePieces(Exception):
    """A reference given in pieces holds NaN or inf: the judge computes r64 whole instead."""


class Reference:
    """Reference outputs of one input set for one output tensor, kept on the judge's device.

    Held: r, and r64 as its difference from r in fp32 (r64 = r + d to ~2^-47 relative: d is the
    reference's rounding error, and fp32 keeps 24 of its bits), or r64 whole where that does not
    hold (non-finite values, fp64 outputs). The reference's own error e_ref and the per-element
    budget are recomputed per CHUNK when an output is compared. So a set's references cost
    8 bytes an fp32 element, not 28 (a 4096 x 393216 relu: 12.9 GB a set, not 45)."""

    def __init__(self, r: torch.Tensor, r64: torch.Tensor | None, budget: Budget = STRICT, *,
                 pieces: Iterable[torch.Tensor] | None = None) -> None:
        """r64 whole, or (r64 None) as `pieces`: consecutive runs of its flat elements, each used
        once and dropped (the fp64 forward run in batch slices: the judge never holds r64 whole).
        Pieces of an output that is not finite everywhere raise NotFinitePieces (the careful
        measure needs r64 whole)."""
        self.r = r.contiguous()
        if r64 is None and self.r.dtype == torch.float64:  # nothing to save: r64 is held whole, as r is
            assert pieces is not None, "Reference needs r64 or its pieces"
            r64 = torch.cat([p.reshape(-1) for p in pieces]).reshape(r.shape)
        self.mode = budget
        self.shape = r.shape if r64 is None else r64.shape
        n = max(self.r.numel(), 1)
        self._r64: torch.Tensor | None = None
        self._d: torch.Tensor | None = None
        if r64 is not None:
            r64 = r64.contiguous()
            flat = r64.reshape(-1)
            self.finite = self._measure((flat[lo:hi] for lo, hi in _spans(flat.numel())), r64)
            """r and r64 hold finite values only (the comparisons then skip NaN/inf handling)."""
            if not self.finite:
                self._r64 = r64
                self._d = None
                self._measure_slowly()
        else:
            assert pieces is not None, "Reference needs r64 or its pieces"
            self.finite = self._measure(_respan(pieces), None)
            if not self.finite:
                raise NotFinitePieces("the fp64 reference holds non-finite values: it must be measured whole")
        self.rel, norm_rel = _widening(budget)
        # the floor of the norm budget (the rest is K_NORM * ||e_ref||)
        self.norm_floor = ((RTOL if n < NORM_MIN_N else RTOL_NORM_LARGE) + norm_rel) * self.scale * math.sqrt(n)
        self.norm_budget = K_NORM * self.e_ref_norm + self.norm_floor
        # e_ref's sum is finite iff every e_ref is (no term is negative), hence every budget
        if not (math.isfinite(self.norm_budget) and math.isfinite(self.e_ref_mean) and math.isfinite(self.rel)):
            raise BudgetUndefined(f"the error budget is not finite (scale {self.scale:.3g}): the reference"
                                  " holds values too large to grade")

    def _measure(self, chunks: Iterable[torch.Tensor], r64: torch.Tensor | None) -> bool:
        """One pass over r64's flat elements in order, at most CHUNK at a time (`chunks`): d (when
        r is not fp64), and e_ref's sum and norm and r64's norm; True when r, r64 and d are all
        finite (else the caller measures again the careful way). `r64`, when whole, is kept
        where r is fp64."""
        flat_r = self.r.reshape(-1)
        n = flat_r.numel()
        d = torch.empty(n, dtype=torch.float32, device=self.r.device) if self.r.dtype != torch.float64 and n else None
        stats = []
        lo = 0
        for r64c in chunks:
            hi = lo + r64c.numel()
            if hi > n:
                raise ValueError(f"the fp64 reference has more elements than the reference ({n})")
            diff = r64c - flat_r[lo:hi].double()
            if d is not None:
                d[lo:hi] = diff
            e = diff.abs()
            finite = torch.isfinite(r64c).all() & torch.isfinite(e).all()
            if d is not None:
                finite &= torch.isfinite(d[lo:hi]).all()
            stats.append(torch.stack([e.sum(), torch.linalg.vector_norm(e), torch.linalg.vector_norm(r64c),
                                      finite.double()]))
            lo = hi
        if lo != n:
            raise ValueError(f"the fp64 reference has {lo} elements, the reference {n}")
        rows = torch.stack(stats).tolist() if n else [[0.0, 0.0, 0.0, 1.0]]
        self._d, self._r64 = (d, None) if d is not None else (None, r64)
        self.e_ref_mean = sum(row[0] for row in rows) / max(n, 1)
        self.e_ref_norm = math.hypot(*(row[1] for row in rows))
        self.scale = math.hypot(*(row[2] for row in rows)) / math.sqrt(max(n, 1))
        return all(row[3] == 1.0 for row in rows)

    def _measure_slowly(self) -> None:
        """The same statistics where values are not finite: e_ref 0 where r64 is not finite, one
        rounding of r64 where r overflowed (raises BudgetUndefined where no answer can fit)."""
        e_sum = 0.0
        e_norms: list[float] = []
        r_norms: list[float] = []
        for lo, hi in _spans(self.r.numel()):
            r64c = self.r64_of(lo, hi)
            e = self._e_ref(lo, hi, r64c, raise_undefined=True)
            e_sum += float(e.sum())
            e_norms.append(float(torch.linalg.vector_norm(e)))
            r_norms.append(float(torch.linalg.vector_norm(torch.where(torch.isfinite(r64c), r64c, 0.0))))
        n = max(self.r.numel(), 1)
        self.e_ref_mean = e_sum / n
        self.e_ref_norm = math.hypot(*e_norms)
        self.scale = math.hypot(*r_norms) / math.sqrt(n)

    def r64_of(self, lo: int, hi: int) -> torch.Tensor:
        """r64 over flat elements [lo, hi), in fp64."""
        if self._r64 is not None:
            return self._r64.reshape(-1)[lo:hi]
        assert self._d is not None
        return self.r.reshape(-1)[lo:hi].double().add_(self._d[lo:hi])

    def r64_at(self, idx: torch.Tensor) -> torch.Tensor:
        """r64 at these flat indices, in fp64."""
        if self._r64 is not None:
            return self._r64.reshape(-1)[idx]
        assert self._d is not None
        return self.r.reshape(-1)[idx].double().add_(self._d[idx])

    def with_budget(self, budget: Budget) -> Reference:
        """The same reference under another budget (e_ref's statistics do not depend on it)."""
        other = copy.copy(self)
        other.mode = budget
        other.rel, norm_rel = _widening(budget)
        n = max(self.r.numel(), 1)
        other.norm_floor = ((RTOL if n < NORM_MIN_N else RTOL_NORM_LARGE) + norm_rel) * self.scale * math.sqrt(n)
        other.norm_budget = K_NORM * self.e_ref_norm + other.norm_floor
        return other

    @property
    def r64(self) -> torch.Tensor:
        """The fp64 reference, whole (a copy when kept as d; compare works per chunk)."""
        if self._r64 is not None:
            return self._r64
        return torch.cat([self.r64_of(lo, hi) for lo, hi in _spans(self.r.numel())]).reshape(self.shape)

    def _e_ref(self, lo: int, hi: int, r64: torch.Tensor, raise_undefined: bool = False) -> torch.Tensor:
        """|r - r64| over flat elements [lo, hi) (r64: their r64_of) where r64 is finite
        (overflow-safe), else 0."""
        r = self.r.reshape(-1)[lo:hi]
        if self.finite:
            return self._d[lo:hi].double().abs_() if self._d is not None else (r - r64).abs()
        finite = torch.isfinite(r64)
        e_ref = torch.where(finite, (r.double() - r64).abs(), torch.zeros_like(r64))
        if r.is_floating_point():
            e_ref = _overflow_safe(r, r64, finite, e_ref, raise_undefined)
        return e_ref

    def budget_of(self, lo: int, hi: int, r64: torch.Tensor | None = None) -> torch.Tensor:
        """The per-element budget over flat elements [lo, hi) (r64: their r64_of, if at hand)."""
        r64 = self.r64_of(lo, hi) if r64 is None else r64
        mag = r64.abs() if self.finite else r64.abs().nan_to_num(0.0, posinf=0.0, neginf=0.0)
        out = self._e_ref(lo, hi, r64).clamp_(min=self.e_ref_mean).mul_(K_ELEM)
        return out.add_(mag, alpha=RTOL + self.rel).add_((ATOL_FRAC + self.rel) * self.scale)

    @property
    def e_ref(self) -> torch.Tensor:
        """The reference's own error, whole (for reports and calibration; compare works per chunk)."""
        return torch.cat([self._e_ref(lo, hi, self.r64_of(lo, hi)) for lo, hi in _spans(self.r.numel())]).reshape(self.shape)

    @property
    def budget(self) -> torch.Tensor:
        """The per-element budget, whole (for reports and calibration; compare works per chunk)."""
        return torch.cat([self.budget_of(lo, hi) for lo, hi in _spans(self.r.numel())]).reshape(self.shape)


def _overflow_safe(r: torch.Tensor, r64: torch.Tensor, finite: torch.Tensor, e_ref: torch.Tensor,
                   raise_undefined: bool = True) -> torch.Tensor:
    """e_ref where the reference r is not finite but r64 is: one rounding of r64 in r's dtype (the
    budget from fp64 alone); raises BudgetUndefined where r64 is beyond r's range (no answer fits)."""
    lost = finite & ~torch.isfinite(r)
    if not bool(lost.any()):
        return e_ref
    info = torch.finfo(r.dtype)
    beyond = lost & (r64.abs() > info.max)
    if raise_undefined and bool(beyond.any()):
        worst = float(r64[beyond].abs().max())
        raise BudgetUndefined(f"{int(beyond.sum())} exact (fp64) output values lie beyond {r.dtype}'s range"
                              f" (|value| up to {worst:.3g} > {info.max:.3g}): no {r.dtype} answer can be"
                              " within a finite budget")
    return torch.where(lost, r64.abs() * (info.eps / 2), e_ref)


def _widening(budget: Budget) -> tuple[float, float]:
    """(per-element, norm) relative terms the budget adds to the strict one, times (|r64| + scale)."""
    rel = norm_rel = 0.0
    if budget.mode == "fair":
        g = math.sqrt(max(budget.reduction_length, 1))
        rel, norm_rel = C_SEQ * U32 * g, C_SEQ_NORM * U32 * g
    if budget.tf32:
        rel, norm_rel = rel + C_TF32 * U_TF32, norm_rel + C_TF32_NORM * U_TF32
    return rel, norm_rel


def _describe(value: object) -> tuple[list[int], str]:
    if isinstance(value, torch.Tensor):
        return list(value.shape), str(value.dtype).removeprefix("torch.")
    return [], type(value).__name__


def compare_output(index: int, cand: object, ref: Reference, kind: str | None = None) -> OutputError:
    """Error report of one candidate output against its reference (`kind` names what the candidate
    returned when it was not a tensor and only its description travelled)."""
    shape, dtype = _describe(cand)
    if kind is not None:
        dtype = kind
    want_shape, want_dtype = list(ref.r.shape), str(ref.r.dtype).removeprefix("torch.")

    def fail(msg: str) -> OutputError:
        return OutputError(index=index, ok=False, shape=shape, dtype=dtype, max_abs_err=None,
                           max_rel_err=None, err_ratio=None, bad_elements=ref.r.numel(), message=msg)

    if not isinstance(cand, torch.Tensor):
        return fail(f"output {index} is a {dtype}, expected a tensor of shape {want_shape}")
    if shape != want_shape:
        return fail(f"output {index} has shape {shape}, expected {want_shape}")
    if dtype != want_dtype:
        return fail(f"output {index} has dtype {dtype}, expected {want_dtype}")
    c_all = cand.to(ref.r.device).contiguous().reshape(-1)
    n = c_all.numel()
    bad = far = 0
    err_norms: list[float] = []
    max_abs = max_rel = max_used = 0.0
    worst = (-math.inf, 0)  # (excess over the budget, flat index) of the worst element over it
    floor = max(ref.scale, 1e-30)
    for lo, hi in _spans(n):
        c, r64 = c_all[lo:hi].double(), ref.r64_of(lo, hi)
        budget = ref.budget_of(lo, hi, r64)
        if ref.finite:  # a NaN or inf from the candidate reads as an infinite error
            err = (c - r64).abs_().nan_to_num_(math.inf)
            over = err > budget
            far_mask = err > TAIL_FACTOR * budget
        else:
            ref_nan = torch.isnan(r64)
            nan_mismatch = torch.isnan(c) != ref_nan
            same_inf = torch.isinf(r64) & (c == r64)
            err = torch.where(ref_nan | same_inf, torch.zeros_like(c), (c - r64).abs()).nan_to_num(math.inf)
            over = (err > budget) | nan_mismatch
            far_mask = (err > TAIL_FACTOR * budget) | nan_mismatch
        if not err.numel():
            continue
        rel = err / torch.clamp(r64.abs().nan_to_num(0.0), min=floor)
        used = torch.where(err > 0, err / budget, 0.0).max()  # 0/0 where a zero budget is met exactly
        b, f, norm, top, top_rel, top_used = torch.stack([
            over.sum().double(), far_mask.sum().double(), torch.linalg.vector_norm(err), err.max(), rel.max(),
            used]).tolist()
        err_norms.append(norm)
        max_abs, max_rel, max_used = max(max_abs, top), max(max_rel, top_rel), max(max_used, top_used)
        if b:
            bad += int(b)
            far += int(f)
            excess = torch.where(over, err - budget, -math.inf).nan_to_num(math.inf, neginf=-math.inf)
            j = int(torch.argmax(excess))
            if float(excess[j]) > worst[0] or worst[0] == -math.inf:
                worst = (float(excess[j]), lo + j)
    err_norm = math.hypot(*err_norms)
    ratio = err_norm / ref.e_ref_norm if ref.e_ref_norm > 0 else (0.0 if err_norm == 0 else math.inf)
    norm_ok = err_norm <= ref.norm_budget
    ok = norm_ok and (bad == 0 or (far == 0 and bad <= TAIL_FRAC * n))
    norm_used = err_norm / ref.norm_budget if ref.norm_budget > 0 else (0.0 if err_norm == 0 else math.inf)
    if ok:
        tail = f"; {bad} of {n} elements over their budget by < {TAIL_FACTOR:g}x, tolerated" if bad else ""
        room = (f"worst element at {max_used:.2g} of its budget, error norm at {norm_used:.2g} of its"
                if not bad else f"error norm at {norm_used:.2g} of its budget")
        msg = f"output {index}: ok (max abs err {max_abs:.3g}, error {ratio:.2g}x the eager reference's; {room}{tail})"
    else:
        msg = _failure_message(index, c_all, cand.shape, ref, bad, worst[1], norm_ok, err_norm)
    return OutputError(index=index, ok=ok, shape=shape, dtype=dtype, max_abs_err=max_abs,
                       max_rel_err=max_rel, err_ratio=ratio, bad_elements=bad, message=msg,
                       budget_used=max(max_used, norm_used))


def _failure_message(index: int, c: torch.Tensor, shape: torch.Size, ref: Reference, bad: int, flat: int,
                     norm_ok: bool, err_norm: float) -> str:
    n = max(c.numel(), 1)
    if bad:
        pos = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), shape)) if len(shape) else ()
        got, want = float(c[flat]), float(ref.r64_of(flat, flat + 1)[0])
        return (f"output {index}: {bad} of {n} elements ({100.0 * bad / n:.3g}%) outside the error budget;"
                f" worst at index {list(pos)}: got {got:.6g}, expected {want:.6g}")
    return (f"output {index}: error norm {err_norm:.3g} exceeds the budget {ref.norm_budget:.3g}"
            f" ({err_norm / max(ref.norm_budget, 1e-300):.3g}x); every element is close but the error is"
            " systematically larger than fp32 rounding (lower-precision arithmetic?)")


def budget_for(evidence_checked: bool, formats: Sequence[str], precision: str, reference_tf32: bool,
               reduction_length: Callable[[], int | None]) -> Budget:
    """The budget of one evaluation. fair only on an fp32/tf32 problem whose code was inspected and
    holds no reduced-precision instruction beyond what the problem allows (tf32 on a tf32
    problem); otherwise strict, exactly as before. `reduction_length` is called only for fair.
    `reference_tf32`: the reference itself ran on TF32 tensor cores (CUDA under set_precision)."""
    if precision not in ("fp32", "tf32"):
        return STRICT
    tf32 = precision == "tf32" and not reference_tf32
    allowed = {"tf32"} if precision == "tf32" else set()
    n = reduction_length() if evidence_checked and not set(formats) - allowed else None
    if n is None:
        return Budget(tf32=tf32)
    return Budget(mode="fair", reduction_length=n, tf32=tf32)


_MATMUL_K = {"mm": 0, "bmm": 0, "addmm": 1, "baddbmm": 1, "addbmm": 1, "addmv": 1, "mv": 0, "dot": 0,
             "vdot": 0, "matmul": 0, "linear": 0, "_cdist_forward": 0, "cdist": 0}
_SAME_SHAPE_DIM = {"_softmax", "_log_softmax", "_safe_softmax", "softmax", "log_softmax", "cumsum", "cumprod",
                   "logcumsumexp", "_logcumsumexp", "cummax", "cummin"}


_BATCH_NORM = {"native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
               "_batch_norm_with_update", "_batch_norm_impl_index"}
_REDUCING = {"sum", "mean", "nansum", "prod", "var", "std", "var_mean", "std_mean", "norm", "linalg_vector_norm",
             "frobenius_norm", "logsumexp", "trace", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
             "binary_cross_entropy", "binary_cross_entropy_with_logits",
             "kl_div", "soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss_forward",
             "adaptive_avg_pool1d", "_adaptive_avg_pool2d",
             "_adaptive_avg_pool3d", "embedding_bag", "_embedding_bag", "index_add", "scatter_add",
             "scatter_reduce", "segment_reduce", "histc", "renorm", "_fused_rms_norm", "rms_norm"}


def _prod(xs: Sequence[int]) -> int:
    out = 1
    for x in xs:
        out *= int(x)
    return out


def op_reduction_length(name: str, args: Sequence[Any], out: Any) -> int:
    """How many terms one output element of the aten op `name` sums (or multiplies): 1 for elementwise."""
    t = [a for a in args if isinstance(a, torch.Tensor)]
    if not t:
        return 1
    x = args[0] if isinstance(args[0], torch.Tensor) else t[0]
    if name in _MATMUL_K:
        a = args[_MATMUL_K[name]]
        return int(a.shape[-1]) if isinstance(a, torch.Tensor) and a.dim() else 1
    if name in ("convolution", "_convolution", "convolution_overrideable", "mkldnn_convolution",
                "_slow_conv2d_forward", "slow_conv3d_forward", "_nnpack_spatial_convolution"):
        w = args[1]
        transposed = len(args) > 6 and args[6] is True
        groups = int(args[8]) if len(args) > 8 and isinstance(args[8], int) else 1
        return int(w.shape[0]) // max(groups, 1) * _prod(w.shape[2:]) if transposed else w.numel() // max(int(w.shape[0]), 1)
    if name in _SAME_SHAPE_DIM and x.dim():
        return int(x.shape[int(args[1]) % x.dim()]) if len(args) > 1 and isinstance(args[1], int) else x.numel()
    if name == "native_layer_norm":
        return _prod(args[1])
    if name == "native_group_norm" and len(args) >= 7:
        return int(args[4]) // max(int(args[6]), 1) * int(args[5])
    if "scaled_dot_product" in name and len(t) >= 2:
        return max(int(t[0].shape[-1]), int(t[1].shape[-2]) if t[1].dim() >= 2 else 1)
    if name in ("nll_loss_forward", "nll_loss2d_forward"):  # picks one class per row, then averages
        return x.numel() // int(x.shape[1]) if x.dim() >= 2 else 1
    if name.startswith("avg_pool") and len(args) > 1 and isinstance(args[1], (list, tuple)):
        return max(_prod(args[1]), 1)
    if name in _BATCH_NORM and not (len(args) > 5 and args[5] is True):
        return 1  # eval mode: the running statistics, elementwise
    if name not in _REDUCING and name not in _BATCH_NORM:
        return 1
    # A reducing op: its input's size over its smallest (nonempty) output, e.g. the statistics
    # of a training-mode batch norm, a mean's result, a pooling window.
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out]) if isinstance(o, torch.Tensor) and o.numel()]
    smallest = min((o.numel() for o in outs), default=1)
    return max(1, max(a.numel() for a in t) // smallest)


class _ReductionProbe(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """The longest reduction over every op one forward dispatches."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.longest = 1

    def __torch_dispatch__(self, func: Any, types: Sequence[type], args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if not func.is_view:
            self.longest = max(self.longest, op_reduction_length(func.overloadpacket.__name__, args, out))
        return out


def reduction_length(make_model: Callable[[], Any], get_inputs: Callable[[], list[Any]]) -> int | None:
    """The longest reduction of one forward, run on meta tensors (no memory, no compute); None when
    the forward does not run there (the caller then keeps the strict budget)."""
    probe = _ReductionProbe()
    try:
        with torch.device("meta"), torch.no_grad():
            model = make_model()
            inputs = get_inputs()
            with probe:
                model(*inputs)
    except Exception:  # not meta-safe: the caller falls back to the strict budget
        return None
    return probe.longest
