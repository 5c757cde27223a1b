"""Launch accounting under the profiler (cuda): summed kernel time per call, decoy kernels, torch fallbacks.

Rows 15-16 of EXPLOITS.md: every call must launch at least one of the agent's own kernels, and no
kernel of torch's may run inside `ModelNew.forward`. A vendor library's kernel (cuBLAS, cuDNN) is the
agent's when the agent's C++ launched it: the profiler links each kernel to the torch op that was
active on the host when it was launched, and a kernel launched with no op active but the call
window itself came from the kernels' own code (docs/kernel-abi.md, "Libraries"); one launched
under an aten op is torch compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch.autograd import DeviceType  # type: ignore[attr-defined]
from torch.profiler import ProfilerActivity, profile, record_function

from skills.evaluator.harness.kernel_names import (
    base_name,
    is_copy,
    is_custom,
    linked_library_kernel,
)
from skills.evaluator.harness.timing import SPIN_KERNEL, Loop
from skills.evaluator.results import Flag


def _is_lead(name: str) -> bool:
    """torch's spin kernel, which the harness queues ahead of every call (timing.Loop.lead)."""
    return SPIN_KERNEL in base_name(name)


class Span(NamedTuple):
    """One profiler event reduced to what launch accounting needs (microseconds)."""

    name: str
    start: float
    end: float
    launcher: str | None = None
    """A kernel's: the torch op or call window active on the host at its launch (None: unknown)."""


def profile_launches(loop: Loop, calls: int, kernel_names: list[str], flavour: str,
                     libraries: Sequence[str] = ()) -> tuple[float | None, list[Flag]]:
    """Run `calls` calls under the profiler; returns (kernel us per call, flags)."""
    n_sets = len(loop.sets)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            loop.prepare(i % n_sets)
            loop.lead()  # as in a timed call (its spin kernel is left out below)
            with record_function(f"kagent_call_{i}"):
                loop.fn(*loop.work)
                torch.cuda.synchronize()
    events = prof.events()
    # Kineto reports each record_function twice (host range and a GPU-side annotation): the host
    # ranges are the call windows; CUDA events not named like a window are the kernels.
    windows = [Span(e.name, e.time_range.start, e.time_range.end) for e in events
               if e.name.startswith("kagent_call_") and e.device_type == DeviceType.CPU]
    # Host ops (correlation 0 of their own) by id; a kernel's linked correlation names the innermost.
    ops = {e.id: e.name for e in events
           if e.device_type == DeviceType.CPU and getattr(e, "linked_correlation_id", None) == 0}
    kernels = [Span(e.name, e.time_range.start, e.time_range.end, ops.get(getattr(e, "linked_correlation_id", 0) or -1))
               for e in events
               if e.device_type == DeviceType.CUDA and not e.name.startswith("kagent_call_")
               and not _is_lead(e.name)]
    return account(windows, kernels, kernel_names, flavour, libraries)


def account(windows: list[Span], kernels: list[Span], kernel_names: list[str], flavour: str,
            libraries: Sequence[str] = ()) -> tuple[float | None, list[Flag]]:
    """Attribute kernels to the call windows they started in; flag calls without a built kernel or
    a library kernel the kernels' C++ launched (decoy), and torch/library kernels launched under a
    torch op or from an unknown place (torch fallback). A kernel from an unknown place named like a
    library the build links (`libraries`) is the agent's: on torch 2.11 the profiler left every
    library kernel's launcher unknown (H200, 2026-12-02), so without this every cuBLAS or cuDNN
    solution read as torch compute. Returns (kernel us per call, flags)."""
    windows = sorted(windows, key=lambda w: w.start)
    per_call_custom = [0] * len(windows)
    foreign: set[str] = set()
    kernel_total = 0.0
    for k in kernels:
        for w, win in enumerate(windows):
            if win.start <= k.start <= win.end:
                kernel_total += k.end - k.start
                if is_copy(k.name):
                    pass
                elif is_custom(k.name, kernel_names, flavour) or k.launcher == win.name or (
                        k.launcher is None and linked_library_kernel(k.name, libraries)):
                    per_call_custom[w] += 1  # built from kernels/, or a library call of their C++
                else:
                    foreign.add(k.name)  # launched under a torch op (or from where is unknown)
                break
    flags: list[Flag] = []
    missing = sum(1 for c in per_call_custom if c == 0)
    if windows and missing:
        flags.append(Flag(name="decoy_kernel", detail=f"{missing} of {len(windows)} profiled calls launched none of the built kernels; the kernels must do the work in every call"))
    if foreign:
        names = ", ".join(sorted(n[:80] for n in foreign)[:4])
        flags.append(Flag(name="torch_fallback", detail=f"forward launched torch/library kernels: {names}; compute must happen in your own kernels"))
    return (kernel_total / len(windows) if windows else None), flags
