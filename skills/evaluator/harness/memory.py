"""The judge's memory plan: how much an evaluation of a problem needs, decided before anything is
allocated, so a problem too big for the machine is refused in seconds with what it needs and
what is free (reward None: not the agent's doing) instead of being killed by the OOM killer.

The estimate runs the problem on meta tensors (no memory) and counts, for the judge, what it holds
all along: the model three times (its weights, their fp64 copy, the state dict the candidate
loads); per input set it holds (the regular sets and the shape set) the inputs and the references
(r and r64 kept as r's fp32 difference: 2x the fp32 output, skills/evaluator/harness/compare.py);
the arena the candidate's calls read and write (inputs and outputs once); the comparison's
per-chunk passes. On top of that, one phase at a time, never two together: a checked call's own
set with its references and the fp64 forward's inputs and output (3x the inputs, 4x the output),
or a baseline's timed loop (its work buffers and output, taken as one set's inputs and output).
The timed loop holds one drawn set at a time (the judge lets go of each before drawing the next).
Where that does not fit and the problem has a batch dimension, the judge runs the fp64 forward in
batch slices (`batch_rows`): a checked call then holds its set, r and d whole and one slice's fp64
forward (SLICE_TERM) instead of the fp64 inputs, output and intermediates whole. The candidate's
process needs memory on the same device: on the cuda backend its weights and its answer (its
inputs are the judge's arena), on the cpu backend its model and its outputs twice. Intermediate
activations are not known from the outside: the plan is a floor, and `MARGIN` leaves room for them.

On an 80 GB H100 the plan refused 21 of the first 55 KernelBench level-1 files at their own sizes
(2026-12-07), with the baseline's buffers counted beside a checked call's and the first timed
set held through the whole loop; the 1.6G-element activations read 65.0 GiB for the judge, x1.25
= 81.2 GiB against 78.7 free. Counted by phase they need 53 GiB and the candidate's answer 6.
"""

from __future__ import annotations

from typing import Any

import msgspec
import torch

from skills.evaluator.problem import LoadedProblem

MARGIN = 1.25
"""Headroom over the estimate for what it cannot see (activations, allocator slack, the interpreter)."""


SLICE_BYTES = 1 << 30
"""fp64 input bytes per batch slice when the judge computes r64 in slices (`batch_rows`)."""
SLICE_TERM = 4 * SLICE_BYTES
"""What one slice's fp64 forward holds: its inputs, output and intermediates, as much again each."""


class MemoryPlan(msgspec.Struct, frozen=True):
    """Bytes an evaluation needs, by process."""

    judge: int
    """The judge's inputs, references and model copies."""
    candidate: int
    """The candidate's process on the cpu backend: its model and its outputs twice."""
    judge_sliced: int | None = None
    """The judge's need with each fp64 reference computed in batch slices (None: the inputs and
    outputs share no leading batch dimension to slice)."""
    candidate_gpu: int = 0
    """The candidate's process on the cuda backend: its weights and its answer (its inputs are the
    judge's arena; what else it allocates is under its own cap, skills/evaluator/harness/candidate.py)."""


def _nbytes(values: Any) -> int:
    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, list | tuple):
        return sum(_nbytes(v) for v in values)
    if isinstance(values, dict):
        return sum(_nbytes(v) for v in values.values())
    return 0


COMPARE_BYTES = 64 << 24
"""The comparison's temporaries: ~64 bytes an element over one CHUNK (compare.py) of 2^24."""


def plan(loaded: LoadedProblem, n_sets: int) -> MemoryPlan | None:
    """The memory plan of `loaded` with `n_sets` input sets held (regular + shape)."""
    try:
        with torch.device("meta"), torch.no_grad():
            model = loaded.make_model()
            inputs = loaded.get_inputs()
            out = model(*inputs)
    except Exception:  # not meta-safe (data-dependent shapes, numpy in get_inputs): no plan
        return None
    params = _nbytes(list(model.parameters())) + _nbytes(list(model.buffers()))
    ins, outs = _nbytes(inputs), _nbytes(out)
    # all along: the models, the held sets with r and d, the arena, the comparison's passes
    held = 3 * params + n_sets * (ins + 2 * outs) + (ins + outs) + COMPARE_BYTES
    baseline = ins + outs  # a baseline's timed loop: its work buffers and output
    judge = held + max(3 * ins + 4 * outs, baseline)
    # sliced: a checked call's own set, r and d whole, and one slice's fp64 forward
    sliced = (held + max(ins + 2 * outs + SLICE_TERM, baseline)
              if batch_rows(inputs, _as_list(out)) is not None else None)
    return MemoryPlan(judge=judge, candidate=params + 2 * outs, judge_sliced=sliced, candidate_gpu=params + outs)


def _as_list(out: Any) -> list[Any]:
    return list(out) if isinstance(out, list | tuple) else [out]


def batch_rows(inputs: list[Any], outputs: list[Any]) -> int | None:
    """The leading dimension every tensor input and output shares (B >= 2), or None: then the fp64
    forward cannot be run in batch slices. Whether row b of each output depends on row b of the
    inputs alone is checked on real values by the judge before it slices (`Judge._separable`)."""
    tensors = [a for a in [*inputs, *outputs] if isinstance(a, torch.Tensor)]
    if not outputs or any(not isinstance(o, torch.Tensor) or o.dim() == 0 for o in outputs) or \
            any(a.dim() == 0 for a in tensors):
        return None
    rows = {a.shape[0] for a in tensors}
    if len(rows) != 1:
        return None
    b = int(next(iter(rows)))
    return b if b >= 2 else None


def slice_rows(inputs: list[Any], outputs: list[Any]) -> int:
    """Rows per slice: SLICE_BYTES of fp64 inputs and outputs (at least one row)."""
    b = batch_rows(inputs, outputs) or 1
    per_row = sum(a.numel() * 8 for a in [*inputs, *outputs] if isinstance(a, torch.Tensor)) / b
    return max(1, int(SLICE_BYTES // max(per_row, 1)))


def available_bytes(device: torch.device) -> int | None:
    """Free memory where the judge allocates: the GPU's free bytes, or the host's MemAvailable."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def too_big(loaded: LoadedProblem, n_sets: int, device: torch.device, sliced: bool = False) -> str | None:
    """Why the problem cannot be evaluated on this machine at these sizes, or None when it fits
    (or cannot be planned: then it runs, and a crash is still reported as the environment's).
    `sliced`: with each fp64 reference computed in batch slices (where the problem has a batch
    dimension to slice)."""
    need = plan(loaded, n_sets)
    free = available_bytes(device)
    if need is None or free is None:
        return None
    judge = need.judge_sliced if sliced and need.judge_sliced is not None else need.judge
    candidate = need.candidate if device.type == "cpu" else need.candidate_gpu
    total = judge + candidate
    if MARGIN * total <= free:
        return None
    where = "GPU" if device.type == "cuda" else "host"
    hint = " (on the cpu backend, give the problem SMALL_SIZES or grade it on a GPU)" if device.type == "cpu" else ""
    # small sizes asked of a file without SMALL_SIZES are its own sizes (a KernelBench file on the cpu)
    sizes = ("its own sizes (it has no SMALL_SIZES)" if loaded.sizes == "small"
             and not getattr(loaded.module, "SMALL_SIZES", None) else f"{loaded.sizes} sizes")
    return (f"needs about {MARGIN * total / 2**30:.1f} GiB of {where} memory at {sizes}"
            f" ({judge / 2**30:.1f} GiB for the judge's inputs and references"
            + f", {candidate / 2**30:.1f} GiB for the candidate"
            + f"), and {free / 2**30:.1f} GiB is free{hint}")
