"""Shared helpers for benchmarks: environment facts, a table printer, JSON results."""

from __future__ import annotations

import datetime
import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def environment() -> dict[str, Any]:
    """Date, machine, GPU and torch version: what a result needs to be re-run and compared."""
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    try:
        nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=False).stdout.strip().splitlines()[-1]
    except OSError:
        nvcc = None
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "gpu": gpu,
        "torch": str(torch.__version__),
        "python": platform.python_version(),
        "cpus": __import__("os").cpu_count(),
        "nvcc": nvcc,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
    }


def cuda_median_us(fn: Any, calls: int = 20, warmup: int = 3) -> float:
    """Median us of `calls` single calls of `fn` between CUDA events, L2 flushed before each (256 MiB
    written), after `warmup` calls: the harness's way of timing one call, for probes."""
    import statistics

    import torch

    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    out = []
    for i in range(calls + warmup):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        if i >= warmup:
            out.append(a.elapsed_time(b) * 1e3)
    return statistics.median(out)


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))) for r in cells]
    return "\n".join(out)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
    return "-" if v is None else str(v)


def write_result(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1, default=str) + "\n")
    return path
