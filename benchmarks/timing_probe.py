"""Where per-call timing noise comes from on a GPU: one memory-bound kernel (y = x * 2, 8192 x 8192
fp32: 256 MB read + 256 MB written, the traffic of the swish problem) timed as the harness times it,
with the parts of the harness's per-call preparation switched on and off.

    python benchmarks/timing_probe.py [--calls 200] [--allocs 5] [--out timing-probe-h200]

Variants (each: median, p10, p90 and CV of the per-call event time, per fresh allocation):
  harness      copy the input set into the work buffer, zero a 2x-L2 buffer (dirty L2), sync
  read_flush   copy, then *read* a 2x-L2 buffer (L2 left clean), sync
  dirty_clean  copy, zero the flush buffer, then read another 2x-L2 buffer, sync
  no_copy      zero flush only (the input is not rewritten before the call)
  no_flush     copy only
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import environment, table, write_result  # noqa: E402


def run(variant: str, calls: int, n: int, dev: torch.device, l2: int) -> list[float]:
    sets = [torch.randn(n, n, device=dev) for _ in range(3)]
    x = sets[0].clone()
    flush = torch.empty(2 * l2 // 4, device=dev)
    clean = torch.ones(2 * l2 // 4, device=dev)
    sink = torch.empty(1, device=dev)
    out: list[float] = []
    for i in range(calls + 20):
        if variant != "no_copy":
            x.copy_(sets[i % 3])
        if variant in ("harness", "no_copy", "dirty_clean"):
            flush.zero_()
        if variant in ("read_flush", "dirty_clean"):
            torch.sum(clean, dim=0, out=sink[0])
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        y = x * 2.0
        b.record()
        torch.cuda.synchronize()
        if i >= 20:
            out.append(a.elapsed_time(b) * 1e3)
        del y
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--allocs", type=int, default=5)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--out", default="timing-probe-h200")
    args = ap.parse_args()
    dev = torch.device("cuda")
    l2 = int(torch.cuda.get_device_properties(dev).L2_cache_size)
    # spin the GPU up first (an idle H200 sits at a low clock)
    w = torch.randn(8192, 8192, device=dev)
    for _ in range(200):
        w = w * 1.0
    torch.cuda.synchronize()
    rows, rec = [], {}
    keep: list[Any] = []
    for alloc in range(args.allocs):
        keep.append(torch.empty(int(64 * 2**20 * (alloc + 1)), dtype=torch.uint8, device=dev))  # shift placement
        for variant in ("harness", "read_flush", "dirty_clean", "no_copy", "no_flush"):
            t = run(variant, args.calls, args.n, dev, l2)
            q = statistics.quantiles(t, n=10)
            med = statistics.median(t)
            cv = statistics.pstdev(t) / statistics.fmean(t)
            rows.append([alloc, variant, med, q[0], q[-1], 100 * cv])
            rec.setdefault(variant, []).append({"alloc": alloc, "median_us": med, "p10": q[0], "p90": q[-1], "cv": cv,
                                                "samples_us": [round(v, 2) for v in t]})
            print(f"alloc {alloc} {variant}: median {med:.1f} us p10 {q[0]:.1f} p90 {q[-1]:.1f} cv {100 * cv:.2f}%", flush=True)
    print(table(["alloc", "variant", "median us", "p10", "p90", "cv %"], rows))
    for variant, rs in rec.items():
        meds = [r["median_us"] for r in rs]
        print(f"{variant}: medians over allocations {min(meds):.1f}-{max(meds):.1f} us,"
              f" cv {100 * statistics.pstdev(meds) / statistics.fmean(meds):.2f}%")
    write_result(args.out, {"variants": rec, "n": args.n, "calls": args.calls, "env": environment()})


if __name__ == "__main__":
    main()
