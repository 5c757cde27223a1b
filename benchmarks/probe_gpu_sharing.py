"""What NVML's per-process utilisation samples show when another process shares the GPU: their
period, the SM share of a process that runs kernels (saturating or duty-cycled), of one that only
holds a context, and of this process itself.

    python3 benchmarks/probe_gpu_sharing.py [--out gpu-sharing-probe-h200]   (a GPU; writes benchmarks/results/OUT.json)

The evaluator turns a timed evaluation into an environment fault when a process outside the
evaluation used the SMs during its timed calls (skills/evaluator/sharing.py); this probe is the
evidence for the threshold and the sampling period it assumes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import environment, table, write_result  # noqa: E402

_CHILD = r"""
import sys, time, torch
mode, seconds = sys.argv[1], float(sys.argv[2])
x = torch.randn(4096, 4096, device="cuda")
torch.cuda.synchronize()
print("ready", flush=True)
end = time.time() + seconds
while time.time() < end:
    if mode == "saturate":
        for _ in range(8):
            x = torch.tanh(x @ x * 1e-4)
        torch.cuda.synchronize()
    elif mode == "duty":  # kernels about a fifth of the time
        t = time.perf_counter()
        while time.perf_counter() - t < 0.02:
            x = torch.tanh(x @ x * 1e-4)
            torch.cuda.synchronize()
        time.sleep(0.08)
    else:  # "idle": a context and nothing else
        time.sleep(0.05)
"""


def _phase(nvml: Any, name: str, child_mode: str | None, own_work: bool, seconds: float) -> dict[str, Any]:
    import torch

    proc = None
    if child_mode is not None:
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, child_mode, str(seconds + 1.0)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        proc.stdout.readline()  # its context is up
    since = time.time_ns() // 1000
    start = since
    polls: list[list[tuple[int, int, int]]] = []
    y = torch.randn(4096, 4096, device="cuda")
    end = time.time() + seconds
    while time.time() < end:
        if own_work:
            for _ in range(4):
                y = torch.tanh(y @ y * 1e-4)
            torch.cuda.synchronize()
        else:
            time.sleep(0.05)
        got = nvml.utilization(since)
        if got:
            polls.append(got)
            since = max(ts for _, ts, _ in got)
    if proc is not None:
        proc.wait(timeout=30)
    me, other = os.getpid(), proc.pid if proc is not None else None
    samples = [s for poll in polls for s in poll]
    by_pid: dict[str, list[int]] = {}
    stamps: dict[str, list[int]] = {}
    for pid, ts, sm in samples:
        who = "this process" if pid == me else "the child" if pid == other else f"pid {pid}"
        by_pid.setdefault(who, []).append(sm)
        stamps.setdefault(who, []).append(ts)
    periods = {who: [round((b - a) / 1000, 1) for a, b in zip(sorted(ts), sorted(ts)[1:], strict=False)]
               for who, ts in stamps.items()}
    return {
        "phase": name, "child": child_mode, "own_work": own_work, "seconds": seconds,
        "first_sample_after_ms": {who: round((min(ts) - start) / 1000, 1) for who, ts in stamps.items()},
        "sm_percent": by_pid,
        "period_ms_median": {who: statistics.median(p) if p else None for who, p in periods.items()},
        "polls": len(polls),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="gpu-sharing-probe-h200")
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args(argv)
    import torch

    from skills.evaluator.nvml import Nvml

    nvml = Nvml.open(0)
    if nvml is None or not torch.cuda.is_available():
        print("no GPU or no NVML here", file=sys.stderr)
        return 2
    torch.zeros(1, device="cuda")
    if nvml.utilization(time.time_ns() // 1000) is None:
        print("this driver reports no per-process utilisation", file=sys.stderr)
        return 2
    phases = [
        _phase(nvml, "quiet: this process holds a context, nothing runs", None, False, args.seconds),
        _phase(nvml, "this process runs kernels, nothing else", None, True, args.seconds),
        _phase(nvml, "a child holds a context, this process runs kernels", "idle", True, args.seconds),
        _phase(nvml, "a child saturates the GPU, this process idles", "saturate", False, args.seconds),
        _phase(nvml, "a child saturates the GPU, this process runs kernels", "saturate", True, args.seconds),
        _phase(nvml, "a child runs kernels ~20% of the time, this process runs kernels", "duty", True, args.seconds),
    ]
    rows = []
    for ph in phases:
        for who, sms in ph["sm_percent"].items():
            rows.append([ph["phase"], who, len(sms), min(sms), statistics.median(sms), max(sms),
                         ph["period_ms_median"].get(who), ph["first_sample_after_ms"].get(who)])
        if not ph["sm_percent"]:
            rows.append([ph["phase"], "(no samples)", 0, None, None, None, None, None])
    print(table(["phase", "process", "samples", "min SM%", "median SM%", "max SM%", "period ms", "first after ms"], rows))
    path = write_result(args.out, {**environment(), "phases": phases})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
