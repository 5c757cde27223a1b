"""Where the timed calls' CPU time goes, sampled from outside the candidate (cpu backend): the
evidence for skills/evaluator/cpu_samples.py's thresholds.

    python3 benchmarks/cpu_sample_shares.py [--repeats N] [--out cpu-sample-shares]

Grades, in final mode with the default cpu config, every bundled cpu reference solution, the
load_inline relu fixture, and two cheats behind the static checks: torch's clamp whenever nothing
in the process watches (`when_watched`), and the same with the kernel also run on a twentieth of
every call's elements (`decoy_slice`: the flag's ratio of the agent's share to torch's is set
between the fair rows and this one). Prints agent / torch / python / openmp / other shares
per evaluation and writes benchmarks/results/OUT.json.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import environment, table, write_result  # noqa: E402
from skills.evaluator.baselines import JsonBaselineCache  # noqa: E402
from skills.evaluator.build import BuildConfig  # noqa: E402
from skills.evaluator.config import EvalConfig  # noqa: E402
from skills.evaluator.cpu_samples import AGENT_PER_TORCH, TORCH_SHARE  # noqa: E402
from skills.evaluator.evaluate import evaluate  # noqa: E402

RELU = ROOT / "problems" / "level1" / "01_relu.py"
HEAD = "import torch\nfrom kagent_ext import ops\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
WATCHED = HEAD + (
    '        C = getattr(torch, "_C")\n'
    "        if C._len_torch_dispatch_stack() > 0 or C._autograd._profiler_enabled():\n"
    "            y = torch.empty_like(x)\n            ops.relu(x, y, x.numel())\n            return y\n"
    "        return x.clamp(min=0)\n")
DECOY_SLICE = HEAD + (
    '        C = getattr(torch, "_C")\n'
    "        y = torch.empty_like(x)\n"
    "        if C._len_torch_dispatch_stack() > 0 or C._autograd._profiler_enabled():\n"
    "            ops.relu(x, y, x.numel())\n            return y\n"
    "        ops.relu(x, y, x.numel() // 20)\n        return x.clamp(min=0)\n")


def cases(base: Path) -> list[tuple[str, Path, Path | str, dict[str, Any]]]:
    """(name, problem, workspace folder or model_new.py source for the relu kernels, config overrides);
    problems made for the run are written under `base`."""
    tiny_relu = base / "tiny_relu.py"
    tiny_relu.write_text(RELU.read_text().replace("M = 8192", "M = 64").replace("N = 8192", "N = 256")
                         .split("SMALL_SIZES")[0])
    out: list[tuple[str, Path, Path | str, dict[str, Any]]] = []
    for ws in sorted((ROOT / "problems" / "solutions" / "cpu").glob("level*/*")):
        out.append((f"{ws.parent.name}/{ws.name}", ROOT / "problems" / ws.parent.name / f"{ws.name}.py", ws, {}))
    out.append(("load_inline relu", RELU, ROOT / "tests" / "fixtures" / "load_inline_relu.py", {}))
    out.append(("cheat when_watched", RELU, WATCHED, {"static_checks": False}))
    out.append(("cheat decoy_slice", RELU, DECOY_SLICE, {"static_checks": False}))
    # a problem whose calls are all dispatch: the fair kernel's few us are lost among torch's and
    # Python's (0% agent by share), so the share rule alone cannot tell it from torch's compute
    out.append(("tiny relu", tiny_relu, ROOT / "problems" / "solutions" / "cpu" / "level1" / "01_relu", {}))
    out.append(("cheat when_watched (tiny relu)", tiny_relu, WATCHED, {"static_checks": False}))
    return out


def workspace(src: Path | str, dest: Path) -> Path:
    if isinstance(src, Path) and src.is_dir():
        shutil.copytree(src, dest)
        return dest
    dest.mkdir(parents=True)
    if isinstance(src, Path):  # a single-file solution
        shutil.copyfile(src, dest / "model_new.py")
        return dest
    (dest / "model_new.py").write_text(src)
    shutil.copytree(ROOT / "problems" / "solutions" / "cpu" / "level1" / "01_relu" / "kernels", dest / "kernels")
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default="cpu-sample-shares")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kagent-shares-") as tmp:
        base = Path(tmp)
        for name, problem, src, overrides in cases(base):
            for rep in range(args.repeats):
                ws = workspace(src, base / f"{len(rows)}")
                cfg = EvalConfig(backend="cpu", build=BuildConfig(backend="cpu", cache_dir=str(base / "build")),
                                 extension_cache_dir=str(base / "ext"), **overrides)
                cache = JsonBaselineCache(base / "baselines.json")
                r = anyio.run(functools.partial(evaluate, problem, ws, mode="final", config=cfg, baseline_cache=cache))
                s = r.cpu_samples
                row = {"case": name, "repeat": rep, "reward": r.reward, "flags": [f.name for f in r.flags],
                       "samples": s.total if s else 0, "calls": s.calls if s else 0, "note": r.cpu_samples_note,
                       "torch_us_per_call": round(s.us_per_call("torch") or 0, 1) if s else None,
                       "agent_us_per_call": round(s.us_per_call("agent") or 0, 1) if s else None,
                       "median_call_us": round(r.candidate.per_call_us.median, 1) if r.candidate else None,
                       "eager_call_us": round(r.eager.per_call_us.median, 1) if r.eager else None,
                       **{p: round(100 * s.share(p), 1) if s else None
                          for p in ("agent", "torch", "python", "openmp", "other")}}
                rows.append(row)
                print(name, rep, row, flush=True)
    print(table(["case", "reward", "flags", "samples", "calls", "agent %", "torch %", "python %", "openmp %", "other %",
                 "torch us/call", "agent us/call", "call us"],
                [[r["case"], r["reward"], ",".join(r["flags"]) or "-", r["samples"], r["calls"], r["agent"], r["torch"],
                  r["python"], r["openmp"], r["other"], r["torch_us_per_call"], r["agent_us_per_call"],
                  r["median_call_us"]] for r in rows]))
    fair = [round(r["agent"] / max(r["torch"], 0.1), 2) for r in rows
            if not r["case"].startswith("cheat") and r["agent"] is not None]
    print(f"lowest fair agent/torch {min(fair) if fair else None} (flagged below {AGENT_PER_TORCH:g} with torch at"
          f" {100 * TORCH_SHARE:g}% or more)")
    path = write_result(args.out, {"environment": environment(), "agent_per_torch": AGENT_PER_TORCH,
                                   "torch_share": TORCH_SHARE, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
