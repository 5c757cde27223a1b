"""Where a bundled CUDA solution spends its time: the solution built as the evaluator builds it,
its ModelNew and the problem's eager Model timed one call at a time (L2 flushed, CUDA events),
the largest output difference, and each side's kernels by GPU time (torch.profiler).

    python3 benchmarks/probe_solution_kernels.py PROBLEM [PROBLEM ...] [--out solution-kernels-<gpu>]

PROBLEM is a bundled problem name (level2/21_conv_relu_bias_add) with a solution under
problems/solutions/cuda/. Nothing here is graded: candidate and reference share one process, so this
is for finding the slow kernel of a losing solution, not for a reward (that is `kagent bench --reference`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")  # as in the candidate's environment
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import cuda_median_us, environment, table, write_result  # noqa: E402

TOP = 8


def _kernels(fn: Any) -> list[dict[str, Any]]:
    """The kernels of 5 calls of fn, by total GPU time, per call."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        us = float(getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0.0) or 0.0)
        if us > 0 and ev.count >= 5:
            rows.append({"kernel": ev.key[:90], "us_per_call": us / 5, "launches_per_call": ev.count / 5})
    rows.sort(key=lambda r: -r["us_per_call"])
    return rows[:TOP]


def _host_us(fn: Any, calls: int = 20) -> float:
    """Median host time of one call (the GPU idle before it): what the call costs the CPU, launches
    and library bookkeeping; when it exceeds the GPU work queued ahead, the GPU waits for it."""
    import statistics
    import time

    import torch

    out = []
    for _ in range(calls + 3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(out[3:])


def _b2b_us(fn: Any, calls: int = 20) -> float:
    """GPU time per call of `calls` calls back to back (no flush, host work hidden behind the GPU's)."""
    import torch

    fn()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(calls):
        fn()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1e3 / calls


def _probe(name: str) -> dict[str, Any]:
    import msgspec
    import torch

    from skills.evaluator.build import BuildConfig, build, detect_arch
    from skills.evaluator.harness.ncu_target import load_pair

    workspace = ROOT / "problems" / "solutions" / "cuda" / name
    built = build(workspace / "kernels", BuildConfig(backend="cuda", arch=detect_arch() or "sm_90"))
    if not built.ok:
        return {"problem": name, "error": "build failed: " + built.errors[:2000]}
    lib = {"lib_path": built.lib_path, "functions": [msgspec.to_builtins(f) for f in built.functions]}
    ref, new, inputs = load_pair(str(ROOT / "problems" / f"{name}.py"), str(workspace), lib, torch.device("cuda"))
    ref = ref.cuda()
    with torch.no_grad():
        want, got = ref(*inputs), new(*inputs)  # first calls: lazy init, algorithm choice
        torch.cuda.synchronize()
        err = (got - want).abs().max().item()
        scale = want.abs().max().item()
        eager_us = cuda_median_us(lambda: ref(*inputs), calls=30)
        new_us = cuda_median_us(lambda: new(*inputs), calls=30)
        timing = {"eager_host_us": _host_us(lambda: ref(*inputs)), "solution_host_us": _host_us(lambda: new(*inputs)),
                  "eager_b2b_us": _b2b_us(lambda: ref(*inputs)), "solution_b2b_us": _b2b_us(lambda: new(*inputs))}
        return {"problem": name, "eager_us": eager_us, "solution_us": new_us, "speedup": eager_us / new_us, **timing,
                "max_abs_err": err, "max_abs_ref": scale, "build_s": built.seconds,
                "solution_kernels": _kernels(lambda: new(*inputs)), "eager_kernels": _kernels(lambda: ref(*inputs))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--out", default=None, help="result name under benchmarks/results/ (default: solution-kernels-<gpu>,"
                                                   " e.g. solution-kernels-h100: timings compare within one card only)")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("no GPU here", file=sys.stderr)
        return 2
    out, rows = [], []
    for name in args.problems:
        try:
            r = _probe(name)
        except Exception as exc:  # one problem's failure is a row, not the end of the table
            r = {"problem": name, "error": f"{type(exc).__name__}: {exc}"}
        out.append(r)
        if "error" in r:
            rows.append([name, None, None, None, None, None, None, r["error"][:80]])
            print(f"{name}: {r['error']}", flush=True)
            continue
        rows.append([name, r["eager_us"], r["solution_us"], r["speedup"], r["solution_host_us"], r["solution_b2b_us"],
                     r["max_abs_err"], ""])
        print(f"\n{name}: eager {r['eager_us']:.0f} us, solution {r['solution_us']:.0f} us ({r['speedup']:.2f}x),"
              f" max |diff| {r['max_abs_err']:.2e} of max |ref| {r['max_abs_ref']:.2e};"
              f" host per call: eager {r['eager_host_us']:.0f} us, solution {r['solution_host_us']:.0f} us;"
              f" back to back: eager {r['eager_b2b_us']:.0f} us, solution {r['solution_b2b_us']:.0f} us")
        for side in ("solution_kernels", "eager_kernels"):
            print(f"  {side}:")
            for k in r[side]:
                print(f"    {k['us_per_call']:8.1f} us  x{k['launches_per_call']:<4g} {k['kernel']}")
    print(table(["problem", "eager us", "solution us", "speedup", "solution host us", "solution b2b us", "max |diff|",
                 "error"], rows))
    env = environment()
    card = next((w.lower() for w in str(env.get("gpu") or "").split() if any(c.isdigit() for c in w)), "gpu")
    print(f"wrote {write_result(args.out or f'solution-kernels-{card}', {**env, 'rows': out})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
