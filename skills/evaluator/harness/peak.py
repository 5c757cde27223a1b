"""The judge's own baselines' footprints (trusted: the judge measures itself), for the composite
reward's memory penalty (docs/reward.md).

A baseline's footprint is what its calls took beyond what the judge held before its timed loop
(the sets, the references, the loop's buffers), plus the model's parameters and buffers (which the
candidate's figure counts too: it loads its weights after the point its figure starts from).

- cuda: torch's allocator statistics: the peak allocated bytes over the loop less the bytes
  allocated at its start;
- cpu: the kernel's peak resident set of the judge's process (VmHWM, reset at the loop's start by
  writing "5" to /proc/self/clear_refs), less the resident set then. Memory glibc keeps after a
  free would hide a call's allocations (the warm-up's outputs, reused), so free heap pages are
  handed back first (malloc_trim): each timed call's allocations are then faulted in and counted.
"""

from __future__ import annotations

import ctypes
import gc
import os
from typing import Any

import torch

from skills.evaluator.rss import reset_peak, status

try:
    _malloc_trim: Any = ctypes.CDLL("libc.so.6").malloc_trim
except (OSError, AttributeError):  # not glibc: freed heap pages may then hide a call's reuse of them
    _malloc_trim = None


def model_bytes(model: Any) -> int:
    """Bytes of the model's parameters and buffers (each storage once)."""
    seen: dict[int, int] = {}
    for t in [*model.parameters(), *model.buffers()]:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


class Peak:
    """`start()` before a loop, `stop()` after it: bytes its calls took beyond what was held at
    start (None where the cpu's reset was refused)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.base = 0
        self.ok = True

    def start(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.base = torch.cuda.memory_allocated(self.device)
            return
        gc.collect()
        if _malloc_trim is not None:
            _malloc_trim(0)
        self.ok = reset_peak(os.getpid())
        self.base = status(os.getpid()).get("VmRSS", 0)

    def stop(self) -> int | None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            return max(0, torch.cuda.max_memory_allocated(self.device) - self.base)
        peak = status(os.getpid()).get("VmHWM")
        return max(0, peak - self.base) if self.ok and peak is not None else None
