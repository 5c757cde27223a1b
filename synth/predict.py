"""Predict a problem's eager time per call on an H200 without a GPU.

The forward runs on meta tensors under a dispatch mode that records every ATen op that launches
a kernel (views and allocations are skipped, as in ``skills.evaluator.problem``). Each op costs

    max(flops / rate[precision], bytes_in_and_out / HBM_BPS) + LAUNCH_US

and the prediction is the sum. Unlike ``skills.evaluator.problem.estimate_h200_us`` (the manifest's
``est_h200_us``), intermediates count: eager mode writes every op's output to memory and reads it
back. ``HBM_BPS`` and ``LAUNCH_US`` were fitted (``python -m synth calibrate``) to the measured
eager times (``baselines.eager_us_h200``) of the 79 bundled problems: see ``CALIBRATION``.
This is a prediction from FLOP and byte counts, not a measurement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import flop_registry

from skills.evaluator.problem import (
    H200_FLOPS_PER_S,
    NO_KERNEL_OPS,
    LoadedProblem,
    estimate_h200_us,
    read_manifest,
)

HBM_BPS = 3.0e12
"""Effective H200 bandwidth of eager ops (fitted; the HBM peak is 4.8e12)."""
LAUNCH_US = 4.0
"""Per-kernel launch and eager overhead in microseconds (fitted)."""
CALIBRATION = (
    "fit on 79 bundled problems (H200, torch 2.11, eager_us_h200 in problems/manifest.jsonl): "
    "measured/predicted geometric mean 1.14, log-sd 0.46; worst over-prediction 0.43x (LSTM/GRU "
    "classifiers, per-step kernels that cuDNN fuses), 0.64x for everything else"
)
"""Summary of the last calibration (regenerate with ``python -m synth calibrate``)."""
WORST_RATIO = 0.43
"""Smallest measured/predicted ratio seen in the calibration: a prediction of ``p`` us means at
least about ``WORST_RATIO * p`` us measured."""


class Prediction(msgspec.Struct, frozen=True):
    """Cost of one eager forward, predicted from meta tensors."""

    us: float
    """Predicted H200 eager time per call, microseconds."""
    flops: int
    """Matmul/convolution FLOPs (``torch.utils.flop_counter``)."""
    bytes: int
    """Bytes read and written by all kernels (intermediates included)."""
    kernels: int
    """Kernel-launching ATen ops."""
    peak_bytes: int
    """Upper bound on memory: inputs + parameters + every op's outputs."""
    est_us: float
    """``skills.evaluator.problem.estimate_h200_us`` (the manifest's ``est_h200_us``): minimal bytes only."""


class _Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.ops: list[tuple[int, int]] = []
        self.out_bytes = 0
        self.raw_flops = 0  # flop_counter's count alone, as skills.evaluator.problem's manifest uses

    def __torch_dispatch__(self, func: Any, types: Sequence[type], args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.is_view or func.overloadpacket.__name__ in NO_KERNEL_OPS:
            return out
        ins = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
        outs = [a for a in tree_flatten(out)[0] if isinstance(a, torch.Tensor)]
        nbytes = sum(t.numel() * t.element_size() for t in ins + outs)
        self.out_bytes += sum(t.numel() * t.element_size() for t in outs)
        flops = 0
        formula = flop_registry.get(func.overloadpacket)
        if formula is not None:
            flops = int(formula(*args, **kwargs, out_val=out))
        self.raw_flops += flops
        flops, nbytes = _corrected(func.overloadpacket.__name__, args, outs, flops, nbytes)
        self.ops.append((flops, nbytes))
        return out


def _corrected(name: str, args: Sequence[Any], outs: list[torch.Tensor], flops: int, nbytes: int) -> tuple[int, int]:
    """Costs the generic rule gets wrong: gathers read rows, not whole tables; a few compute-bound
    ops have no formula in ``torch.utils.flop_counter``."""
    def size(t: torch.Tensor) -> int:
        return t.numel() * t.element_size()

    if name == "embedding":  # (weight, indices): read one row per index, write it
        weight, idx = args[0], args[1]
        return 0, size(idx) + 2 * idx.numel() * weight.shape[-1] * weight.element_size()
    if name.startswith("_embedding_bag"):  # (weight, indices, offsets): read one row per index
        weight, idx = args[0], args[1]
        return 0, size(idx) + idx.numel() * weight.shape[-1] * weight.element_size() + sum(size(o) for o in outs)
    if name == "_cdist_forward":  # (x1 [.., P, M], x2 [.., R, M]): 3 flops per pair and coordinate
        x1, x2 = args[0], args[1]
        return 3 * x1.numel() * x2.shape[-2], nbytes
    if name == "_pdist_forward":  # (x [N, M])
        n, m = args[0].shape
        return 3 * m * n * (n - 1) // 2, nbytes
    if name == "_trilinear":  # nn.Bilinear: (x1 [B, I], w [O, I, J], x2 [B, J])
        return 2 * args[0].shape[0] * args[1].numel(), nbytes
    return flops, nbytes


def _nbytes(values: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tree_flatten(values)[0] if isinstance(t, torch.Tensor))


def _record(lp: LoadedProblem) -> tuple[_Recorder, int, int]:
    """Recorded ops, bytes of inputs + state, and bytes of the outputs."""
    with torch.device("meta"):
        model = lp.make_model()
        inputs = lp.get_inputs()
        with torch.no_grad(), _Recorder() as rec:
            out = model(*inputs)
    fixed = _nbytes([*model.parameters(), *model.buffers()]) + _nbytes(inputs)
    return rec, fixed, _nbytes(out)


def _us(ops: list[tuple[int, int]], rate: float, bw: float, launch_us: float) -> float:
    return round(sum(max(f / rate, b / bw) * 1e6 + launch_us for f, b in ops), 1)


def predict(lp: LoadedProblem, *, bw: float = HBM_BPS, launch_us: float = LAUNCH_US) -> Prediction:
    """Predict one eager forward of a loaded problem (at the sizes it was loaded with)."""
    rec, fixed, out_bytes = _record(lp)
    us = _us(rec.ops, H200_FLOPS_PER_S[lp.problem.precision], bw, launch_us)
    flops = sum(f for f, _ in rec.ops)
    est = estimate_h200_us(rec.raw_flops, fixed + out_bytes, len(rec.ops), lp.problem.precision)
    return Prediction(us=us, flops=flops, bytes=sum(b for _, b in rec.ops), kernels=len(rec.ops),
                      peak_bytes=fixed + rec.out_bytes, est_us=est)


class CalibrationRow(msgspec.Struct, frozen=True):
    """One bundled problem in the calibration."""

    name: str
    """``levelN/stem``."""
    measured_us: float
    """``baselines.eager_us_h200`` from the manifest."""
    predicted_us: float
    """``predict`` with the fitted constants."""


class Calibration(msgspec.Struct, frozen=True):
    """Fit of ``HBM_BPS`` and ``LAUNCH_US`` to measured H200 eager times."""

    bw: float
    """Fitted bandwidth, bytes/s."""
    launch_us: float
    """Fitted per-kernel overhead, microseconds."""
    geomean_ratio: float
    """Geometric mean of measured/predicted."""
    log_sd: float
    """Standard deviation of log(measured/predicted)."""
    worst_ratio: float
    """Smallest measured/predicted (the most over-predicted problem)."""
    rows: list[CalibrationRow]
    """Per problem."""


def calibrate(root: Path) -> Calibration:
    """Grid-search bandwidth and launch cost minimising the spread of log(measured/predicted)."""
    from skills.evaluator.problem import iter_problems, load_problem

    measured = {r.name: (r.baselines or {}).get("eager_us_h200") for r in read_manifest(root / "manifest.jsonl")}
    loaded = [load_problem(p) for p in iter_problems(root)]
    loaded = [lp for lp in loaded if measured.get(lp.problem.name)]
    recorded = [(_record(lp)[0].ops, H200_FLOPS_PER_S[lp.problem.precision]) for lp in loaded]
    best: tuple[float, float, float, list[float]] | None = None
    for bw in (2.0e12, 2.5e12, 3.0e12, 3.5e12, 4.0e12):
        for launch in (2.0, 3.0, 4.0, 6.0, 8.0):
            preds = [_us(ops, rate, bw, launch) for ops, rate in recorded]
            logs = [math.log(measured[lp.problem.name] / p) for lp, p in zip(loaded, preds, strict=True)]  # type: ignore[operator]
            mu = sum(logs) / len(logs)
            sd = math.sqrt(sum((x - mu) ** 2 for x in logs) / len(logs))
            if best is None or sd < best[0]:
                best = (sd, bw, launch, preds)
    assert best is not None
    sd, bw, launch, preds = best
    rows = [CalibrationRow(lp.problem.name, float(measured[lp.problem.name] or 0), p) for lp, p in zip(loaded, preds, strict=True)]
    ratios = [r.measured_us / r.predicted_us for r in rows]
    geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    return Calibration(bw=bw, launch_us=launch, geomean_ratio=round(geo, 3), log_sd=round(sd, 3),
                       worst_ratio=round(min(ratios), 3), rows=sorted(rows, key=lambda r: r.name))
