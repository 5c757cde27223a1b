"""Throughput of ``python -m synth generate`` on the CPU: accepted problems per minute.

    python benchmarks/bench_synth.py [--n 300] [--workers 2] [--seed 0] [--out DIR] [--name synth-cpu]

Target (issue 5): 6,000 accepted in <= 60 minutes on 2 cores with the default filters, i.e.
>= 100 accepted/min. The catalogue probe (once per output folder) is timed separately; the
generation loop is timed from the first worker start to the n-th commit. The machine may be
shared: the 1-minute load average is sampled during the run and reported, so a contended run
can be told apart. Prints a table and writes benchmarks/results/NAME.json.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgspec  # noqa: E402
import torch  # noqa: E402

from benchmarks.common import environment, table, write_result  # noqa: E402
from synth.filters import FilterConfig  # noqa: E402
from synth.generate import code_fingerprint, generate, probed_catalogue  # noqa: E402
from synth.store import MANIFEST, REJECTED, Rejection, RunConfig, SynthRow, check_writable, read_log  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300, help="problems to accept")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compile", default="trace", choices=["trace", "inductor", "none"])
    ap.add_argument("--out", type=Path, default=None, help="output folder (default: a temporary one, removed)")
    ap.add_argument("--name", default="synth-cpu", help="results file name")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-synth-"))
    try:
        check_writable(out)
        t = time.monotonic()
        probed_catalogue(out)
        probe_s = time.monotonic() - t
        loads: list[float] = []

        def sample(_run: object, _elapsed: float) -> None:
            if not loads or time.monotonic() - sample.last > 5:  # type: ignore[attr-defined]
                loads.append(os.getloadavg()[0])
                sample.last = time.monotonic()  # type: ignore[attr-defined]

        sample.last = 0.0  # type: ignore[attr-defined]
        cfg = RunConfig(seed=args.seed, filters=FilterConfig(compile=args.compile), held_out="bundled",
                        torch=str(torch.__version__), code=code_fingerprint())
        t = time.monotonic()
        run = generate(out, args.n, cfg, workers=args.workers, on_progress=sample)
        loop_s = time.monotonic() - t
        rows: list[SynthRow] = read_log(out / MANIFEST, SynthRow)
        rej: list[Rejection] = read_log(out / REJECTED, Rejection)
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)
    rate = 60 * run.accepted / loop_s
    minutes_6000 = 6000 / rate + probe_s / 60
    reasons = collections.Counter(r.reason for r in rej)
    worker_s = sum(r.synth.features.cpu_ms_small for r in rows) / 1e3
    result = {
        "env": environment(), "n": args.n, "workers": args.workers, "seed": args.seed, "compile": args.compile,
        "accepted": run.accepted, "rejected": run.rejected, "candidates": run.accepted + run.rejected,
        "probe_s": round(probe_s, 1), "loop_s": round(loop_s, 1), "accepted_per_min": round(rate, 1),
        "candidates_per_min": round(60 * (run.accepted + run.rejected) / loop_s, 1),
        "minutes_for_6000": round(minutes_6000, 1), "target_minutes": 60, "rejected_by_reason": dict(reasons),
        "load_avg_1min": {"min": min(loads, default=None), "max": max(loads, default=None),
                          "mean": round(sum(loads) / len(loads), 2) if loads else None},
        "cpus": os.cpu_count(), "eager_cpu_s_accepted": round(worker_s, 1),
    }
    rows_t = [
        ["accepted / candidates", f"{run.accepted} / {run.accepted + run.rejected}"],
        ["catalogue probe (once per folder)", f"{probe_s:.1f} s"],
        ["generation loop", f"{loop_s:.1f} s"],
        ["accepted per minute", f"{rate:.1f}"],
        ["extrapolated: 6,000 accepted", f"{minutes_6000:.1f} min (target <= 60)"],
        ["1-min load average during the run", f"{result['load_avg_1min']['mean']} (max {result['load_avg_1min']['max']}) on {os.cpu_count()} CPUs"],
        ["rejected by reason", ", ".join(f"{k} {v}" for k, v in reasons.most_common()) or "-"],
    ]
    print(table(["measure", "value"], rows_t))
    print(write_result(args.name, msgspec.to_builtins(result)))


if __name__ == "__main__":
    main()
