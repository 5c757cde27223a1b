"""Is every KernelBench problem gradable at its own sizes? Each file's own Model graded as the
solution (EvalConfig.torch_allowed: the torch-op rule off, marked in each row), final mode against
the eager baseline: a gradable problem scores reward 1 (correct, not faster than itself).

Per problem: gradable (correct, no flag, no error), reward, stage and error, wall seconds, and
peak GPU memory of the judge and of the candidate seen from outside (EvalResult.memory: NVML
sampled by the evaluator every 10 ms per worker process tree; None where NVML cannot be read),
beside the judge's memory plan (skills/evaluator/harness/memory.py) for comparison.

    python benchmarks/bench_kernelbench.py ../shared/kernelbench --out kernelbench-h200
    python benchmarks/bench_kernelbench.py ../shared/kernelbench/level1/9_Tall_skinny_matrix_multiplication_.py

Paths are files or folders (searched for level*/ *.py); nothing is copied into the project. With
--jobs N, N evaluations run at once (each on the one GPU; a problem that then fails for want of
memory is re-run alone at the end, and its row says so). --resume PATH skips problems already
in a previous JSON's rows. Writes benchmarks/results/OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, environment, table, write_result  # noqa: E402
from runtime.bench_sources import reference_model_source  # noqa: E402
from skills.evaluator.baselines import JsonBaselineCache  # noqa: E402
from skills.evaluator.build import BuildConfig  # noqa: E402
from skills.evaluator.config import EvalConfig  # noqa: E402
from skills.evaluator.evaluate import evaluate  # noqa: E402
from skills.evaluator.harness.protocol import TimingConfig  # noqa: E402
from skills.evaluator.paired import PairedConfig  # noqa: E402
from skills.evaluator.pool import WarmPool  # noqa: E402
from skills.evaluator.results import EvalResult, Mode  # noqa: E402

GIB = 1 << 30


def problem_files(paths: list[str]) -> list[Path]:
    """Every problem file under `paths`, in level then number order."""
    out: list[Path] = []
    for p in map(Path, paths):
        out += (sorted(p.glob("*.py")) or sorted(p.glob("level*/*.py"))) if p.is_dir() else [p]

    def key(f: Path) -> tuple[str, int, str]:
        m = re.match(r"(\d+)_", f.name)
        return f.parent.name, int(m.group(1)) if m else 0, f.name

    return sorted(out, key=key)


def name_of(f: Path) -> str:
    return f"{f.parent.name}/{f.stem}"


def plan_of(f: Path, n_sets: int) -> tuple[float | None, float | None]:
    """The judge's memory plan (GiB judge, candidate) at the file's own sizes, on meta tensors."""
    from skills.evaluator.harness.memory import plan
    from skills.evaluator.problem import load_problem

    try:
        p = plan(load_problem(f, sizes="default"), n_sets)
    except Exception:
        return None, None
    return (p.judge / GIB, p.candidate / GIB) if p else (None, None)


def config(args: argparse.Namespace) -> EvalConfig:
    timing = TimingConfig(warmup_calls=3, warmup_seconds=0.05, min_calls=10, max_calls=200,
                          target_seconds=0.1, loop_seconds=args.loop_seconds)
    return EvalConfig(backend=args.backend, baselines=["eager"], torch_allowed=True, timing=timing,
                      held_sets=args.held_sets,
                      paired=PairedConfig(min_rounds=args.rounds, max_rounds=args.rounds),
                      build=BuildConfig(backend=args.backend))


def _gib(n: int | None) -> float | None:
    return n / GIB if n is not None else None


def row_of(f: Path, r: EvalResult, wall: float, n_sets: int) -> dict[str, Any]:
    plan_judge, plan_cand = plan_of(f, n_sets)
    return {
        "problem": name_of(f), "mode": r.mode, "gradable": bool(r.correct and not r.flags and r.error is None),
        "reward": r.reward, "stage": r.stage, "torch_allowed": r.torch_allowed,
        "error": (r.error or "")[:300] or None, "environment_fault": (r.environment_fault or "")[:300] or None,
        "flags": [fl.name for fl in r.flags], "wall_s": round(wall, 2),
        "judge_gib": _gib(r.memory.judge_bytes) if r.memory else None,
        "candidate_gib": _gib(r.memory.candidate_bytes) if r.memory else None,
        "plan_judge_gib": plan_judge, "plan_candidate_gib": plan_cand,
        "speedup_eager": next((s.value for s in r.speedups if s.baseline == "eager"), None),
        "timed_calls": r.candidate.calls if r.candidate else None,
        "sandbox": r.sandbox,
        # why a correctness check failed: each failing set's first failing output, as the agent reads it
        "failed_sets": [f"set {s.set_index}: " + next(o.message for o in s.outputs if not o.ok)[:400]
                        for s in r.sets if not s.ok and any(not o.ok for o in s.outputs)][:4],
    }


def workspace(f: Path, tmp: Path) -> Path:
    """A workspace whose model_new.py is the problem's own Model."""
    ws = tmp / name_of(f).replace("/", "__")
    ws.mkdir(parents=True, exist_ok=True)
    source = f.read_text(encoding="utf-8")
    (ws / "model.py").write_text(source, encoding="utf-8")
    (ws / "model_new.py").write_text(reference_model_source(source), encoding="utf-8")
    return ws


async def grade(f: Path, cfg: EvalConfig, tmp: Path, mode: Mode,
                pool: WarmPool | None = None) -> tuple[EvalResult, float]:
    """One evaluation and its wall seconds (its memory peaks are the evaluator's: EvalResult.memory)."""
    ws = workspace(f, tmp)
    t = time.perf_counter()
    r = await evaluate(f, ws, mode=mode, config=cfg, baseline_cache=JsonBaselineCache(ws / "baselines.json"),
                       pool=pool)
    return r, time.perf_counter() - t


def _memory_fault(row: dict[str, Any]) -> bool:
    text = f"{row['error'] or ''} {row['environment_fault'] or ''}".lower()
    return not row["gradable"] and ("memory" in text or "does not fit" in text)


async def run_all(files: list[Path], args: argparse.Namespace, rows: dict[str, dict[str, Any]], out: str) -> None:
    cfg = config(args)
    limiter = anyio.CapacityLimiter(args.jobs)

    async def one(f: Path, alone: bool) -> None:
        async with limiter:
            r, wall = await grade(f, cfg, tmp, args.mode, pool)
        row = row_of(f, r, wall, cfg.n_sets + 1)
        row["ran_alone"] = alone or args.jobs == 1
        rows[row["problem"]] = row
        status = "ok" if row["gradable"] else f"NOT GRADABLE ({row['stage']}: {(row['error'] or row['environment_fault'] or ','.join(row['flags']))[:120]})"
        print(f"{len(rows):4d}/{len(files) + len(done)}  {row['problem']:60s} {wall:6.1f} s  {status}", flush=True)
        write(rows, args, out)

    done = {n for n in rows}
    pool: WarmPool | None = None
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        async with AsyncExitStack() as stack:
            if args.pool:
                # The next problem's workers start (interpreter, torch import) while this one is graded;
                # their CUDA comes up only outside timed loops (WarmPool.quiet). Each slot serves one problem.
                pool = await stack.enter_async_context(WarmPool(cfg, size=args.jobs))
            async with anyio.create_task_group() as tg:
                for f in files:
                    tg.start_soon(one, f, False)
        pool = None  # closed: its warm slots no longer hold GPU memory
        if args.jobs > 1:  # what failed for memory beside others gets the GPU to itself
            for f in files:
                if _memory_fault(rows[name_of(f)]):
                    await one(f, True)


def _order(name: str) -> tuple[str, int, str]:
    level, _, stem = name.partition("/")
    m = re.match(r"(\d+)_", stem)
    return level, int(m.group(1)) if m else 0, stem


def write(rows: dict[str, dict[str, Any]], args: argparse.Namespace, out: str) -> None:
    ordered = [rows[k] for k in sorted(rows, key=_order)]
    gradable = sum(r["gradable"] for r in ordered)
    summary = {"problems": len(ordered), "gradable": gradable,
               "reward_1": sum(r["reward"] == 1.0 for r in ordered),
               "by_level": {lvl: f"{sum(r['gradable'] for r in ordered if r['problem'].startswith(lvl))}/"
                                 f"{sum(r['problem'].startswith(lvl) for r in ordered)}"
                            for lvl in sorted({r['problem'].split('/')[0] for r in ordered})}}
    payload = {"summary": summary, "rows": ordered, "args": vars(args), "env": environment()}
    write_result(out, payload)
    headers = ["problem", "gradable", "reward", "wall s", "judge GiB", "cand GiB", "plan judge GiB", "speedup", "why not"]
    lines = [[r["problem"], "yes" if r["gradable"] else "NO", r["reward"], r["wall_s"], r["judge_gib"], r["candidate_gib"],
              r["plan_judge_gib"], r["speedup_eager"],
              ((r["error"] or r["environment_fault"] or ",".join(r["flags"])) or "")[:80].replace("\n", " ")]
             for r in ordered]
    md = [f"# KernelBench at its own sizes: {gradable}/{len(ordered)} gradable", "",
          f"Each problem's own Model as the solution (torch-op rule off), {args.mode} mode vs eager, {args.jobs} at once;"
          f" {payload['env']['gpu']},"
          f" torch {payload['env']['torch']}, {payload['env']['date']}.", "", f"`{payload['env']['command']}`", "",
          f"By level: {summary['by_level']}; reward 1: {summary['reward_1']}.", "", "```", table(headers, lines), "```", ""]
    (RESULTS / f"{out}.md").write_text("\n".join(md))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="KernelBench files or folders holding level*/")
    ap.add_argument("--backend", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--mode", choices=["final", "test"], default="final",
                    help="final: timed against eager, with a reward; test: correctness and memory only")
    ap.add_argument("--jobs", type=int, default=1,
                    help="evaluations at once, test mode only: timed loops sharing one GPU read each other's kernels"
                         " (on the H200 with 3 at once: timer_tampering on fair cuBLAS calls, and memory refusals)")
    ap.add_argument("--rounds", type=int, default=1, help="paired rounds per evaluation")
    ap.add_argument("--loop-seconds", type=float, default=0.3, help="wall budget of each timed loop")
    ap.add_argument("--held-sets", type=int, default=None,
                    help="regular sets the judge holds (EvalConfig.held_sets; 1: stream the rest): a probe of whether"
                         " the judge's own memory changes how its eager baseline times")
    ap.add_argument("--no-pool", dest="pool", action="store_false",
                    help="start each problem's workers cold (default: a warm pool starts the next problem's workers"
                         " while one is graded; each slot still serves one problem)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N problems (0: all)")
    ap.add_argument("--resume", type=Path, default=None, help="a previous JSON: its rows are kept, its problems skipped")
    ap.add_argument("--out", default="kernelbench")
    args = ap.parse_args()
    if args.jobs > 1 and args.mode == "final":
        ap.error("--jobs > 1 needs --mode test: timed loops on one GPU at once are not a fair measurement")
    files = problem_files(args.paths)
    if args.limit:
        files = files[:args.limit]
    rows: dict[str, dict[str, Any]] = {}
    if args.resume is not None:
        rows = {r["problem"]: r for r in json.loads(args.resume.read_text())["rows"]}
        files = [f for f in files if name_of(f) not in rows]
    if not files and not rows:
        ap.error(f"no problem files under {args.paths}")
    anyio.run(run_all, files, args, rows, args.out)
    print(f"wrote {RESULTS / args.out}.json and .md")


if __name__ == "__main__":
    main()
