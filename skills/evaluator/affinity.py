"""CPU placement that keeps compiles from disturbing the timing loop.

The time per call includes host launch overhead, so a timing worker that shares its core with
nvcc can lose time to the scheduler. Compilers always run at lower priority (nice 10). With
`EvalConfig.pin_cpus` (off by default: it made no measurable difference on the H200), each GPU's
evaluation workers get two cores of their own (the candidate the last, the judge the one before),
counted from the top per GPU index, and compilers started by the same process keep off them. With
fewer than 8 cores nothing is reserved (there is nothing to spare).
"""

from __future__ import annotations

import os
from pathlib import Path

MIN_CPUS = 8
"""Reserve cores only on machines with at least this many."""
BUILD_NICE = 10
_reserved = False


def reserve_timing_cpus(on: bool = True) -> None:
    """Make compilers started by this process keep off the timing cores from now on."""
    global _reserved
    _reserved = on


def _cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def gpu_index(gpu: str | None) -> int:
    """The slot's GPU as an index (CUDA_VISIBLE_DEVICES "3" -> 3; anything else -> 0)."""
    first = (gpu or "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


def timing_cpus(gpu: str | None) -> tuple[int, int] | None:
    """(candidate core, judge core) for evaluations on this GPU; None where none are reserved."""
    cpus = _cpus()
    slot = gpu_index(gpu)
    if len(cpus) < MIN_CPUS or 2 * (slot + 1) > len(cpus) // 2:
        return None
    return cpus[-1 - 2 * slot], cpus[-2 - 2 * slot]


def n_gpus() -> int:
    """GPUs on this machine, from the device nodes (no CUDA initialisation, no torch import)."""
    return sum(1 for p in Path("/dev").glob("nvidia*") if p.name[len("nvidia"):].isdigit())


def build_cpus() -> list[int]:
    """Cores compilers may use: all, or with reserved timing cores all but those reserved for the
    machine's GPUs (at most half)."""
    cpus = _cpus()
    if len(cpus) < MIN_CPUS or not _reserved:
        return cpus
    reserved = min(2 * n_gpus(), len(cpus) // 2)
    return cpus[: len(cpus) - reserved]


def confine_build(pid: int) -> None:
    """Lower a compiler process's priority and keep it off the timing cores (best effort: the
    process may already have exited)."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, BUILD_NICE)
        os.sched_setaffinity(pid, build_cpus())
    except (AttributeError, OSError):
        pass


def pin_self(spec: str | None) -> None:
    """Called by a worker at start with KAGENT_CPUS ("7"): run on that core only."""
    if not spec:
        return
    try:
        os.sched_setaffinity(0, {int(c) for c in spec.split(",") if c.strip().isdigit()})
    except (AttributeError, OSError, ValueError):
        pass
