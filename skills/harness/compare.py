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
TF32, fp16 and bf16 shortcuts on an fp32 problem land 10-1000x over (calibration in README).
Runs in the judge process only: the candidate's process never holds r or r64.
"""

from __future__ import annotations

import math

import torch

from skills.results import OutputError

K_ELEM = 32.0
K_NORM = 4.0
RTOL = 1e-6  # 1e-5 let TF32 through on matmul+row-reduction problems (calibration table)
ATOL_FRAC = 1e-6
RTOL_NORM_LARGE = 2.5e-7
NORM_MIN_N = 1024
TAIL_FRAC = 1e-6
TAIL_FACTOR = 4.0


class Reference:
    """Reference outputs of one input set for one output tensor, kept on the judge's device."""

    def __init__(self, r: torch.Tensor, r64: torch.Tensor) -> None:
        self.r = r
        self.r64 = r64
        finite = torch.isfinite(r64)
        e_ref = torch.where(finite, (r.double() - r64).abs(), torch.zeros_like(r64))
        self.e_ref = e_ref
        n = max(r64.numel(), 1)
        self.scale = float(torch.linalg.vector_norm(torch.where(finite, r64, 0.0)) / math.sqrt(n))
        self.e_ref_mean = float(e_ref.sum() / n)
        self.budget = (
            K_ELEM * torch.clamp(e_ref, min=self.e_ref_mean)
            + RTOL * r64.abs().nan_to_num(0.0, posinf=0.0, neginf=0.0)
            + ATOL_FRAC * self.scale
        )
        # the floor of the norm budget (the rest is K_NORM * ||e_ref||)
        self.norm_floor = (RTOL if n < NORM_MIN_N else RTOL_NORM_LARGE) * self.scale * math.sqrt(n)
        self.norm_budget = K_NORM * float(torch.linalg.vector_norm(e_ref)) + self.norm_floor


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
    c = cand.to(ref.r64.device).double()
    ref_nan = torch.isnan(ref.r64)
    nan_mismatch = torch.isnan(c) != ref_nan
    same_inf = torch.isinf(ref.r64) & (c == ref.r64)
    err = torch.where(ref_nan | same_inf, torch.zeros_like(c), (c - ref.r64).abs()).nan_to_num(math.inf)
    over = (err > ref.budget) | nan_mismatch
    bad = int(over.sum())
    far = int(((err > TAIL_FACTOR * ref.budget) | nan_mismatch).sum()) if bad else 0
    err_norm = float(torch.linalg.vector_norm(err))
    ref_norm = float(torch.linalg.vector_norm(ref.e_ref))
    ratio = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else math.inf)
    max_abs = float(err.max()) if err.numel() else 0.0
    denom = torch.clamp(ref.r64.abs().nan_to_num(0.0), min=max(ref.scale, 1e-30))
    max_rel = float((err / denom).max()) if err.numel() else 0.0
    norm_ok = err_norm <= ref.norm_budget
    ok = norm_ok and (bad == 0 or (far == 0 and bad <= TAIL_FRAC * c.numel()))
    if ok:
        tail = f"; {bad} of {c.numel()} elements over their budget by < {TAIL_FACTOR:g}x, tolerated" if bad else ""
        msg = f"output {index}: ok (max abs err {max_abs:.3g}, error {ratio:.2g}x the eager reference's{tail})"
    else:
        msg = _failure_message(index, c, ref, err, over, bad, norm_ok, err_norm)
    return OutputError(index=index, ok=ok, shape=shape, dtype=dtype, max_abs_err=max_abs,
                       max_rel_err=max_rel, err_ratio=ratio, bad_elements=bad, message=msg)


def _failure_message(index: int, c: torch.Tensor, ref: Reference, err: torch.Tensor,
                     over: torch.Tensor, bad: int, norm_ok: bool, err_norm: float) -> str:
    n = max(c.numel(), 1)
    if bad:
        flat = int(torch.argmax(torch.where(over, err - ref.budget, -math.inf).reshape(-1)))
        pos = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), c.shape)) if c.dim() else ()
        got, want = float(c.reshape(-1)[flat]), float(ref.r64.reshape(-1)[flat])
        return (f"output {index}: {bad} of {n} elements ({100.0 * bad / n:.3g}%) outside the error budget;"
                f" worst at index {list(pos)}: got {got:.6g}, expected {want:.6g}")
    return (f"output {index}: error norm {err_norm:.3g} exceeds the budget {ref.norm_budget:.3g}"
            f" ({err_norm / max(ref.norm_budget, 1e-300):.3g}x); every element is close but the error is"
            " systematically larger than fp32 rounding (lower-precision arithmetic?)")
