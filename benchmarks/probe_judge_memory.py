"""The judge's peak memory over one final evaluation on the cpu backend, beside its memory plan
(skills/evaluator/harness/memory.py): the evidence that the plan, counted by phase, stays above
what the judge really holds.

    python3 benchmarks/probe_judge_memory.py PROBLEM SOLUTION [--held-sets N] [--out judge-memory-cpu]

Grades SOLUTION (a workspace folder) against PROBLEM at its default sizes in final mode (eager the
only baseline) while a thread reads the judge process's VmHWM from /proc every 5 ms; prints the
peak beside the plan's judge figure for the sets the judge holds, with the evaluation's stage
times, and writes benchmarks/results/OUT.json. Host memory, not GPU memory: on the cpu backend the
judge's tensors are its resident set (large tensors are their own mappings, freed to the system).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import environment, table, write_result  # noqa: E402
from skills.evaluator.config import EvalConfig  # noqa: E402
from skills.evaluator.evaluate import evaluate  # noqa: E402
from skills.evaluator.harness import memory  # noqa: E402
from skills.evaluator.harness.judge import planned_sets  # noqa: E402
from skills.evaluator.problem import load_problem  # noqa: E402
from skills.evaluator.rss import status  # noqa: E402

GIB = 2**30
JUDGE = b"skills.evaluator.harness.judge"


class Watch:
    """The peak VmHWM of every judge process seen while it runs."""

    def __init__(self) -> None:
        self.peak: dict[int, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _judges(self) -> list[int]:
        out = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if JUDGE in (entry / "cmdline").read_bytes():
                        out.append(int(entry.name))
                except OSError:
                    continue
        return out

    def _run(self) -> None:
        live: list[int] = []
        while not self.stop.is_set():
            live = live or self._judges()  # /proc is scanned only while no judge is known
            for pid in list(live):
                st = status(pid)
                if not st:  # it exited: look for the next one
                    live.remove(pid)
                    continue
                self.peak[pid] = max(self.peak.get(pid, 0), st.get("VmHWM", 0))
            time.sleep(0.005)

    def __enter__(self) -> Watch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problem", type=Path)
    ap.add_argument("solution", type=Path, help="a workspace folder (model_new.py, kernels/)")
    ap.add_argument("--held-sets", type=int, default=None, help="EvalConfig.held_sets (default: the plan decides)")
    ap.add_argument("--out", default="judge-memory-cpu")
    args = ap.parse_args()
    cfg = EvalConfig(backend="cpu", sizes="default", baselines=["eager"], held_sets=args.held_sets)
    loaded = load_problem(args.problem, sizes="default")
    hold = max(1, min(args.held_sets or cfg.n_sets, cfg.n_sets))
    sets = planned_sets(loaded, hold, cfg.shape_check)
    plan = memory.plan(loaded, sets)
    if plan is None:
        raise SystemExit(f"{args.problem}: no memory plan (it does not run on meta tensors)")
    if (why := memory.too_big(loaded, sets, torch.device("cpu"))) is not None:
        # the judge would then stream its sets or slice r64 (Judge.__init__): not the plan compared here
        raise SystemExit(f"{args.problem}: {hold} held sets do not fit ({why}); pass --held-sets 1 or a smaller problem")
    began = time.monotonic()
    with Watch() as watch:
        result = anyio.run(lambda: evaluate(args.problem, args.solution, mode="final", config=cfg))
    wall = time.monotonic() - began
    peak = max(watch.peak.values(), default=0)
    parts = {k: round(v, 2) for k, v in result.stages.parts.items() if k.startswith("judge")}
    row: dict[str, Any] = {
        "problem": str(args.problem), "solution": str(args.solution), "held_sets": hold,
        "reward": result.reward, "stage": result.stage, "error": result.error, "wall_s": round(wall, 1),
        "judge_peak_bytes": peak, "plan_judge_bytes": plan.judge, "plan_judge_sliced_bytes": plan.judge_sliced,
        "plan_candidate_bytes": plan.candidate, "peak_over_plan": round(peak / plan.judge, 3) if plan.judge else None,
        "stages": msgspec.to_builtins(result.stages) | {"parts": parts},
    }
    print(table(["problem", "held sets", "reward", "judge peak GiB", "plan (judge) GiB", "peak / plan", "wall s"],
                [[args.problem.stem, hold, result.reward, f"{peak / GIB:.2f}", f"{plan.judge / GIB:.2f}",
                  row["peak_over_plan"], f"{wall:.0f}"]]))
    if result.error:
        print("error:", result.error[:300])
    print("judge parts (s):", ", ".join(f"{k} {v}" for k, v in parts.items()))
    path = write_result(args.out, {"env": environment(), "rows": [row]})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
