"""Sandbox overhead per evaluation worker: the same worker start with and without bubblewrap.

    python benchmarks/bench_sandbox.py [--repeats 20] [--out NAME]

Measures the wall time of starting a Python process that imports torch and exits, bare and inside
the exact sandbox the evaluator builds (skills.evaluator.sandbox.wrap, as `nobody` when run as root), and
reports the difference. Target (issue 3): <= 100 ms per evaluation.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import environment, table, write_result  # noqa: E402
from skills.evaluator.config import EvalConfig  # noqa: E402
from skills.evaluator.launch import candidate_command, make_scratch, worker_env  # noqa: E402
from skills.evaluator.sandbox import clean_env, process_ids  # noqa: E402


def _time(cmd: list[str], env: dict[str, str], run_as: int | None, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True, **process_ids(run_as))  # type: ignore[call-overload]
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--backend", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--out", default="sandbox-overhead-cpu")
    args = ap.parse_args()
    cfg = EvalConfig(backend=args.backend)
    scratch = make_scratch(cfg.sandbox)
    code = "import torch" + ("; torch.empty(1, device='cuda')" if args.backend == "cuda" else "")
    try:
        env = clean_env(worker_env(cfg, scratch.root))
        sandboxed = candidate_command(cfg, scratch)
        python_at = sandboxed.index(cfg.python)
        wrapped = [*sandboxed[:python_at], cfg.python, "-c", code]
        bare = [cfg.python, "-c", code]
        with tempfile.TemporaryDirectory():
            _time(bare, env, None, 2)  # warm the page cache for both
            _time(wrapped, env, scratch.run_as, 1)
            b, s = [], []
            for _ in range(args.repeats):  # interleaved, so drifting load hits both alike
                b += _time(bare, env, None, 1)
                s += _time(wrapped, env, scratch.run_as, 1)
    finally:
        subprocess.run(["rm", "-rf", str(scratch.root)], check=False)
    mb, ms = statistics.median(b), statistics.median(s)
    paired = statistics.median(y - x for x, y in zip(b, s, strict=True))
    print(table(["worker start", "median s", "min s", "max s"],
                [["bare python + torch", mb, min(b), max(b)], ["in the sandbox", ms, min(s), max(s)]]))
    print(f"\nsandbox overhead per worker: {1e3 * (ms - mb):.1f} ms (difference of medians), "
          f"{1e3 * paired:.1f} ms (median of paired differences), run as uid {scratch.run_as or os.getuid()}")
    print(write_result(args.out, {"env": environment(), "bare_s": b, "sandboxed_s": s,
                                  "overhead_ms": 1e3 * (ms - mb), "paired_overhead_ms": 1e3 * paired,
                                  "run_as": scratch.run_as}))


if __name__ == "__main__":
    main()
