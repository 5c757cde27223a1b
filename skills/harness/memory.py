"""The judge's memory plan: how much an evaluation of a problem needs, decided before anything is
allocated, so a problem too big for the machine is refused in seconds with what it needs and
what is free (reward None: not the agent's doing) instead of being killed by the OOM killer.

The estimate runs the problem on meta tensors (no memory) and counts, for the judge: the model
three times (its weights, their fp64 copy, the state dict the candidate loads); per input set it
holds (the regular sets and the shape set) the inputs and the references (r and r64 kept as r's
fp32 difference: 2x the fp32 output, skills/harness/compare.py); a timed call's own set with its
references and the fp64 forward's inputs and output while the judge checks it (3x the inputs,
4x the output); the arena the candidate writes into (inputs and outputs once); a baseline's work
buffers and output; and the comparison's per-chunk passes. On the cpu backend the candidate's
process shares the machine's memory: its model and its outputs are added (its inputs are the
judge's arena). Intermediate activations are not known from the outside: the plan is a floor,
and `MARGIN` leaves room for them.
"""

from __future__ import annotations

from typing import Any

import msgspec
import torch

from skills.problem import LoadedProblem

MARGIN = 1.25
"""Headroom over the estimate for what it cannot see (activations, allocator slack, the interpreter)."""


class MemoryPlan(msgspec.Struct, frozen=True):
    """Bytes an evaluation needs, by process."""

    judge: int
    """The judge's inputs, references and model copies."""
    candidate: int
    """The candidate's model, inputs with their pristine copies, and outputs."""


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
    judge = (3 * params + n_sets * (ins + 2 * outs) + (3 * ins + 4 * outs) + (ins + outs) + (ins + outs)
             + COMPARE_BYTES)
    candidate = params + 2 * outs
    return MemoryPlan(judge=judge, candidate=candidate)


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


def too_big(loaded: LoadedProblem, n_sets: int, device: torch.device) -> str | None:
    """Why the problem cannot be evaluated on this machine at these sizes, or None when it fits
    (or cannot be planned: then it runs, and a crash is still reported as the environment's)."""
    need = plan(loaded, n_sets)
    free = available_bytes(device)
    if need is None or free is None:
        return None
    total = need.judge + (need.candidate if device.type == "cpu" else 0)
    if MARGIN * total <= free:
        return None
    where = "GPU" if device.type == "cuda" else "host"
    hint = " (on the cpu backend, give the problem SMALL_SIZES or grade it on a GPU)" if device.type == "cpu" else ""
    return (f"needs about {MARGIN * total / 2**30:.1f} GiB of {where} memory at {loaded.sizes} sizes"
            f" ({need.judge / 2**30:.1f} GiB for the judge's inputs and references"
            + (f", {need.candidate / 2**30:.1f} GiB for the candidate" if device.type == "cpu" else "")
            + f"), and {free / 2**30:.1f} GiB is free{hint}")
