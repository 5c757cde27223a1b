"""What travels between the judge and the candidate besides the arena: input sets are drawn by the
judge alone (the problem's `get_inputs()` under the set's seed, factories on the device), and an
output that did not fit its arena slot is described by its type, shape and dtype only.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import torch

from skills.evaluator.harness.protocol import OutputMeta

DTYPES: dict[str, torch.dtype] = {
    str(dt).removeprefix("torch."): dt
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16,
               torch.int32, torch.int64, torch.uint8, torch.bool, torch.complex64, torch.complex128)
}


def to_device(args: list[Any], device: torch.device, double: bool = False) -> list[Any]:
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            a = a.to(device)
            if double and a.is_floating_point():
                a = a.double()
        out.append(a)
    return out


def draw_inputs(get_inputs: Any, seed: int, device: torch.device) -> list[Any]:
    """One input set: `get_inputs()` with the set's seed (torch, Python's `random` and numpy's
    global generators), tensor factories on `device`."""
    torch.manual_seed(seed)
    random.seed(seed)
    if (np := sys.modules.get("numpy")) is not None:
        np.random.seed(seed % 2**32)
    with device:
        inputs = list(get_inputs())
    return to_device(inputs, device)


def meta_tensor(meta: OutputMeta) -> torch.Tensor | None:
    """A stand-in with the output's shape and dtype (no data) for shape and dtype messages;
    None when the output was not a plain tensor of a known dtype."""
    if meta.kind != "Tensor" or meta.dtype not in DTYPES:
        return None
    if not all(isinstance(n, int) and n >= 0 for n in meta.shape) or len(meta.shape) > 16:
        return None
    return torch.empty(meta.shape, dtype=DTYPES[meta.dtype], device="meta")
