"""Evaluation benchmarks on the H200: reference solutions, skill latency, timing stability, ncu.

    python benchmarks/bench_eval.py solutions  [--backend cuda] [--out NAME]
    python benchmarks/bench_eval.py latency    [--problem level1/02_swish] [--repeats 3]
    python benchmarks/bench_eval.py stability  [--problem level1/02_swish] [--runs 10] [--compiles 8]
    python benchmarks/bench_eval.py ncu        [--problem level1/02_swish]
    python benchmarks/bench_eval.py repeatability [--problem level1/02_swish] [--runs 10] [--load cpu|compiles|none]

solutions: `final` evaluation of every reference solution (time per call as the caller sees it,
  summed kernel time, eager and torch.compile baselines, speedups with intervals, reward), and a
  second table of each one's memory against its baselines and the composite reward's limit.
latency:   wall time of the run_tests and profile paths with baselines cached (compile excluded:
  the build is a cache hit), process start included.
stability: the same kernel profiled in N separate evaluations; coefficient of variation of the
  medians, on a quiet GPU and while K cold nvcc builds run on the same machine.
ncu:       wall time of the ncu skill and the metrics it reports.
repeatability: the same solution graded (final mode, paired rounds) N times, quiet or under load
  (cpu: 2x the cores in busy processes; compiles: K cold nvcc builds); how often the most common
  reward came out, and each grading's paired rounds.
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
from typing import Any

import anyio
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import environment, table, write_result  # noqa: E402
from skills.evaluator.baselines import JsonBaselineCache  # noqa: E402
from skills.evaluator.build import BuildConfig  # noqa: E402
from skills.evaluator.config import EvalConfig  # noqa: E402
from skills.evaluator.evaluate import build_workspace, evaluate  # noqa: E402
from skills.evaluator.pool import WarmPool  # noqa: E402
from skills.evaluator.results import EvalResult, Mode, larger_baseline_bytes  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def solution_dirs(backend: str) -> list[tuple[Path, Path]]:
    base = ROOT / "problems/solutions" / backend
    pairs = []
    for ws in sorted(p.parent for p in base.glob("level*/*/model_new.py")):
        problem = ROOT / "problems" / ws.parent.name / f"{ws.name}.py"
        pairs.append((problem, ws))
    return pairs


def run(problem: Path, ws: Path, mode: Mode, cfg: EvalConfig, cache: JsonBaselineCache) -> tuple[EvalResult, float]:
    t = time.perf_counter()
    r = anyio.run(lambda: evaluate(problem, ws, mode=mode, config=cfg, baseline_cache=cache))
    return r, time.perf_counter() - t


def cmd_solutions(args: argparse.Namespace, cfg: EvalConfig, cache: JsonBaselineCache) -> dict[str, Any]:
    rows, records, memory = [], [], []
    for problem, ws in solution_dirs(args.backend):
        r, wall = run(problem, ws, "final", cfg, cache)
        sp = {s.baseline: s for s in r.speedups}
        c = r.candidate
        rows.append([r.problem, r.reward, c.per_call_us.median if c else None,
                     c.caller_us.median if c and c.caller_us else None, c.kernel_us if c else None,
                     c.window_us if c else None, c.between_us if c else None,
                     r.eager.per_call_us.median if r.eager else None,
                     r.compiled_baseline.per_call_us.median if r.compiled_baseline else None,
                     f"{sp['eager'].value:.2f} [{sp['eager'].low:.2f}]" if "eager" in sp else None,
                     f"{sp['compile'].value:.2f} [{sp['compile'].low:.2f}]" if "compile" in sp else None,
                     100 * c.cv if c else None, ",".join(f.name for f in r.flags) or (r.error or "")[:60], wall])
        records.append(msgspec.to_builtins(r))
        memory.append(_memory_row(r))
        write_result(args.out or "eval-solutions", {"results": records, "memory": memory, "partial": True,
                                                    "env": environment()})
    print(table(["problem", "reward", "us/call", "caller us", "kernel us", "marked us", "between us", "eager us", "compile us", "x eager [low]",
                 "x compile [low]", "cv %", "flags/error", "wall s"], rows))
    # The composite reward's memory term under its defaults (docs/reward.md, the table of defaults)
    print(table(["problem", "ModelNew MiB", "eager MiB", "compile MiB", "limit MiB", "x larger baseline",
                 "penalised", "composite"],
                [[m["problem"], m["candidate_mib"], m["eager_mib"], m["compile_mib"], m["limit_mib"], m["ratio"],
                  m["penalised"], m["composite"]] for m in memory]))
    return {"results": records, "memory": memory}


def _memory_row(r: EvalResult) -> dict[str, Any]:
    """One solution's footprints (MiB), its ratio to the larger baseline, and the composite reward
    with and without the memory term under DEFAULT_COMPOSITE."""
    from skills.evaluator.reward import DEFAULT_COMPOSITE, composite, memory_limit, over_memory

    m = r.memory

    def mib(b: float | None) -> float | None:
        return None if b is None else round(b / 2**20, 1)

    base = larger_baseline_bytes(m.eager_bytes, m.compile_bytes) if m else None
    used = m.candidate_call_bytes if m else None
    return {"problem": r.problem, "correct": r.correct, "candidate_mib": mib(used),
            "eager_mib": mib(m.eager_bytes if m else None), "compile_mib": mib(m.compile_bytes if m else None),
            "limit_mib": mib(memory_limit(r, DEFAULT_COMPOSITE)),
            "ratio": round(used / base, 2) if used is not None and base else None,
            "method": m.candidate_method if m else None, "penalised": over_memory(r, DEFAULT_COMPOSITE),
            "composite": round(composite(r, DEFAULT_COMPOSITE), 3)}


def cmd_latency(args: argparse.Namespace, cfg: EvalConfig, cache: JsonBaselineCache) -> dict[str, Any]:
    """run_tests / profile wall time with baselines and build cached: cold workers and a warm pool."""
    problem, ws = _one(args)
    run(problem, ws, "profile", cfg, cache)  # fills the baseline and build caches
    out: dict[str, list[float]] = {}
    stages: dict[str, Any] = {}
    for _ in range(args.repeats):
        for mode, key in (("test", "run_tests"), ("profile", "profile")):
            r, wall = run(problem, ws, mode, cfg, cache)  # type: ignore[arg-type]
            assert r.correct, r.error
            out.setdefault(f"{key}, cold workers", []).append(wall)
            stages[f"{key}, cold workers"] = msgspec.to_builtins(r.stages)
            print(f"{key}, cold workers: {wall:.2f} s  {_stages(r)}", flush=True)

    async def warm() -> None:
        async with WarmPool(cfg, size=1) as pool:
            for _ in range(args.repeats):
                for mode, key in (("test", "run_tests"), ("profile", "profile")):
                    await pool.wait_full()
                    t = time.perf_counter()
                    r = await evaluate(problem, ws, mode=mode, config=cfg, baseline_cache=cache, pool=pool)  # type: ignore[arg-type]
                    assert r.correct, r.error
                    out.setdefault(f"{key}, warm pool", []).append(time.perf_counter() - t)
                    stages[f"{key}, warm pool"] = msgspec.to_builtins(r.stages)
                    print(f"{key}, warm pool: {out[f'{key}, warm pool'][-1]:.2f} s  {_stages(r)}", flush=True)

    anyio.run(warm)
    rows = [[k, statistics.median(v), min(v), max(v)] for k, v in out.items()]
    print(table(["skill path", "median s", "min s", "max s"], rows))
    for k, v in stages.items():
        print(f"{k}: " + _fmt(v))
    return {"wall_s": out, "stages": stages, "problem": str(problem)}


def _stages(r: EvalResult) -> str:
    return _fmt(msgspec.to_builtins(r.stages))


def _fmt(stages: dict[str, Any]) -> str:
    """Stage seconds, then the workers' parts in brackets."""
    text = ", ".join(f"{k} {v:.2f}" for k, v in stages.items() if isinstance(v, float))
    parts = stages.get("parts") or {}
    return text + (" [" + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()) + "]" if parts else "")


def _compile_storm(k: int, tmp: Path, confined: bool = True) -> list[subprocess.Popen[bytes]]:
    """K processes that rebuild a kernel from a cold cache in a loop (nvcc load on the CPU).
    confined: nice 10 and off the timing cores (skills/evaluator/affinity.py, as with pin_cpus);
    otherwise neither, as before affinity.py existed."""
    src = ROOT / "problems/solutions/cuda/level2/03_layernorm_gelu/kernels"
    script = ("import sys,shutil,pathlib; sys.path.insert(0, sys.argv[1]);"
              "import skills.evaluator.build as b, skills.evaluator.affinity as a\n"
              + ("a.reserve_timing_cpus()\n" if confined else "b.confine_build = lambda pid: None\n") +
              "i=0\nwhile True:\n  c=pathlib.Path(sys.argv[2])/str(i); b.build(sys.argv[3], b.BuildConfig(backend='cuda', cache_dir=str(c)));"
              " shutil.rmtree(c); i+=1\n")
    return [subprocess.Popen([sys.executable, "-c", script, str(ROOT), str(tmp / f"storm{j}"), str(src)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for j in range(k)]


# before: one work buffer, workers not pinned, builds not confined (the first H200 measurement).
# after: 4 buffers, pinned (no steadier on the H200). Both with lead_us 0: the GPU idle when each
# timed call starts, as before the lead existed. "lead": the default TimingConfig (a spin kernel
# queued ahead of every timed call); "lead+pool": the same through a WarmPool, as the daemon runs.
VARIANTS: dict[str, dict[str, Any]] = {
    "before": {"pin_cpus": False, "work_buffers": 1, "warmup_seconds": 0.15, "lead_us": 0.0},
    "after": {"pin_cpus": True, "work_buffers": 4, "lead_us": 0.0},
    "after+0.5s warm-up": {"pin_cpus": True, "work_buffers": 4, "warmup_seconds": 0.5, "lead_us": 0.0},
    "after-no-l2-reset": {"pin_cpus": True, "work_buffers": 4, "reset_persisting_l2": False, "lead_us": 0.0},
    "lead": {},
    "lead+pool": {"pool": True},
    "lead-no-marks": {"clock_marks": False},
}
TIMING_KEYS = ("work_buffers", "warmup_seconds", "reset_persisting_l2", "lead_us")


def _variant(cfg: EvalConfig, name: str) -> EvalConfig:
    v = VARIANTS[name]
    timing = msgspec.structs.replace(cfg.timing, **{k: v[k] for k in TIMING_KEYS if k in v})
    return msgspec.structs.replace(cfg, timing=timing, pin_cpus=v.get("pin_cpus", cfg.pin_cpus),
                                   clock_marks=v.get("clock_marks", cfg.clock_marks))


def _profile(problem: Path, ws: Path, cfg: EvalConfig, cache: JsonBaselineCache, pool: bool) -> EvalResult:
    """One profile evaluation in fresh workers: cold, or taken warm from a pool (which refills
    behind it during the evaluation, as in the daemon)."""
    if not pool:
        return run(problem, ws, "profile", cfg, cache)[0]

    async def go() -> EvalResult:
        async with WarmPool(cfg, size=1) as p:
            await p.wait_full()
            return await evaluate(problem, ws, mode="profile", config=cfg, baseline_cache=cache, pool=p)

    return anyio.run(go)


_LAST_TIMED: list[Any] = []


def _keep_samples() -> None:
    """Keep each candidate's timed loop (the judge's report: raw per-call samples)."""
    import skills.evaluator.rounds as ev

    check = ev.checked_calls_flags

    def keep(timed: Any) -> Any:
        _LAST_TIMED.append(timed)
        return check(timed)

    ev.checked_calls_flags = keep


def _slowest(timed: Any, k: int = 3) -> list[dict[str, Any]]:
    """The k slowest timed calls: index in the loop, time (each call ran on a set of its own)."""
    times = timed.samples.per_call_us
    top = sorted(range(len(times)), key=lambda i: -times[i])[:k]
    return [{"call": i, "of": len(times), "us": round(times[i], 1)} for i in top]


def _calls(slowest: list[dict[str, Any]]) -> str:
    return ", ".join(f"#{x['call']}/{x['of']} {x['us']:.0f} us" for x in slowest)


def _quantiles(xs: list[float]) -> dict[str, float]:
    s = sorted(xs)
    return {q: s[min(len(s) - 1, int(f * len(s)))] for q, f in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9), ("p99", 0.99))} | {"max": s[-1]}


def _cv(xs: list[float]) -> float:
    return statistics.pstdev(xs) / statistics.fmean(xs) if len(xs) > 1 else 0.0


def cmd_stability(args: argparse.Namespace, cfg: EvalConfig, cache: JsonBaselineCache) -> dict[str, Any]:
    """Per variant and condition: the medians of N separate profile evaluations and their CV, for
    the judged time per call, the waiting caller's time and the profiler's kernel time. Quiet: the
    variants interleaved run by run (drift hits all alike). Loaded: K compiles run, unconfined for
    `before`, confined (nice, off the timing cores) for the others."""
    problem, ws = _one(args)
    run(problem, ws, "profile", cfg, cache)
    _keep_samples()
    result: dict[str, Any] = {"problem": str(problem), "variants": VARIANTS}
    rows = []
    names = [n for n in args.variants.split(",") if n]
    loaded = [] if args.loaded == "none" else [n for n in (args.loaded.split(",") if args.loaded else names[:2]) if n]
    plans = [("quiet", 0, names)] + [(f"{args.compiles} compiles running", args.compiles, [n]) for n in loaded]
    for label, storm, group in plans:
        with tempfile.TemporaryDirectory() as tmp:
            procs = _compile_storm(storm, Path(tmp), confined=group != ["before"])
            try:
                got: dict[str, list[dict[str, Any]]] = {n: [] for n in group}
                for i in range(args.runs):
                    for name in group:
                        _LAST_TIMED.clear()
                        r = _profile(problem, ws, _variant(cfg, name), cache, bool(VARIANTS[name].get("pool")))
                        assert r.candidate is not None, r.error
                        timed = _LAST_TIMED[0] if _LAST_TIMED else None
                        spread = _quantiles(timed.samples.per_call_us) if timed else {}
                        slowest = _slowest(timed) if timed else []
                        c = r.candidate
                        got[name].append({"median_us": c.per_call_us.median, "cv": c.cv,
                                          "caller_us": c.caller_us.median if c.caller_us else None,
                                          "kernel_us": c.kernel_us, "lead_us": c.lead_us, "window_us": c.window_us,
                                          "spread_us": spread, "slowest": slowest, "flags": [f.name for f in r.flags],
                                          "timing_s": r.stages.timing, "parts": r.stages.parts})
                        x = got[name][-1]
                        print(f"{label} / {name}: run {i + 1} median {x['median_us']:.2f} us (within-run cv"
                              f" {100 * c.cv:.2f}%), waiting caller {x['caller_us'] or 0:.2f} us, kernels"
                              f" {x['kernel_us'] or 0:.2f} us, lead held {x['lead_us'] or 0:.1f} us, marked {x['window_us'] or 0:.1f} us, timing {r.stages.timing or 0:.2f} s"
                              f" calls {' '.join(f'{k} {v:.0f}' for k, v in spread.items())}; slowest {_calls(slowest)}"
                              f"{' flags ' + ','.join(x['flags']) if x['flags'] else ''}", flush=True)
                        result[f"{label} / {name}"] = {"runs": got[name], "partial": True}
                        write_result(args.out or "eval-stability", {**result, "env": environment()})
            finally:
                for p in procs:
                    p.kill()
        for name, runs in got.items():
            medians = [x["median_us"] for x in runs]
            callers = [x["caller_us"] for x in runs if x["caller_us"] is not None]
            kernels = [x["kernel_us"] for x in runs if x["kernel_us"] is not None]
            rows.append([label, name, statistics.fmean(medians), min(medians), max(medians), 100 * _cv(medians),
                         100 * _cv(callers) if callers else None, 100 * _cv(kernels) if kernels else None])
            result[f"{label} / {name}"] = {"runs": runs, "medians_us": medians, "cv": _cv(medians),
                                           "caller_cv": _cv(callers) if callers else None,
                                           "kernel_cv": _cv(kernels) if kernels else None}
    print(table(["condition", "variant", "mean of medians us", "min", "max", "cv %", "caller cv %", "kernel cv %"], rows))
    return result


def cmd_ncu(args: argparse.Namespace, cfg: EvalConfig, cache: JsonBaselineCache) -> dict[str, Any]:
    from skills.evaluator.ncu import format_report
    from skills.local_evaluator import LocalEvaluator

    problem, ws = _one(args)
    ev = LocalEvaluator(problem, cfg, cache=cache)
    walls, rep = [], None
    for _ in range(2):
        t = time.perf_counter()
        rep = anyio.run(ev.ncu, ws)
        walls.append(time.perf_counter() - t)
    assert rep is not None
    print(format_report(rep))
    print(f"ncu skill wall seconds: {walls}")
    return {"wall_s": walls, "report": msgspec.to_builtins(rep)}


def _cpu_hogs(factor: int = 2) -> list[subprocess.Popen[bytes]]:
    """factor x the cores in processes that spin (killed by the caller)."""
    spin = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(factor * (os.cpu_count() or 1))]


def cmd_repeatability(args: argparse.Namespace, cfg: EvalConfig, cache: JsonBaselineCache) -> dict[str, Any]:
    """The same solution graded `runs` times in final mode under `--load`: the reward's mode share."""
    problem, ws = _one(args)
    rows, records = [], []
    with tempfile.TemporaryDirectory() as tmp:
        load = (_cpu_hogs() if args.load == "cpu" else _compile_storm(args.compiles, Path(tmp))
                if args.load == "compiles" else [])
        try:
            for i in range(args.runs):
                r, wall = run(problem, ws, "final", cfg, cache)
                sp = {s.baseline: s for s in r.speedups}
                rows.append([i, r.reward] + [f"{sp[b].value:.2f} [{sp[b].low:.2f}, {sp[b].high:.2f}] x{sp[b].rounds}"
                                            if b in sp else None for b in ("eager", "compile")]
                            + [" ".join(f"{v:.2f}" for v in sp["eager"].round_values) if "eager" in sp else "",
                               ",".join(f.name for f in r.flags) or (r.error or "")[:60], wall])
                records.append(msgspec.to_builtins(r))
        finally:
            for p in load:
                p.kill()
                p.wait()
    rewards = [rec["reward"] for rec in records]
    common = max(set(rewards), key=rewards.count) if rewards else None
    share = rewards.count(common) if rewards else 0
    print(table(["run", "reward", "x eager [interval] rounds", "x compile [interval] rounds", "eager rounds",
                 "flags/error", "wall s"], rows))
    print(f"most common reward {common}: {share} of {len(rewards)} (load: {args.load})")
    return {"results": records, "load": args.load, "reward_mode": common, "mode_share": share, "runs": len(rewards)}


def _one(args: argparse.Namespace) -> tuple[Path, Path]:
    problem = ROOT / "problems" / f"{args.problem}.py"
    ws = ROOT / "problems/solutions" / args.backend / args.problem
    built = build_workspace(ws, EvalConfig(backend=args.backend))
    assert built is None or built.ok, built.errors if built else ""
    return problem, ws


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["solutions", "latency", "stability", "ncu", "repeatability"])
    ap.add_argument("--load", choices=["none", "cpu", "compiles"], default="none", help="repeatability: load beside")
    ap.add_argument("--backend", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--problem", default="level1/02_swish")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--compiles", type=int, default=8)
    ap.add_argument("--variants", default="before,lead,lead+pool", help=f"stability variants, of {list(VARIANTS)}")
    ap.add_argument("--loaded", default="", help="variants to run under the compile load (default: the first two; none: skip the load)")
    ap.add_argument("--baselines", default="eager,compile")
    ap.add_argument("--cache", type=Path, default=None, help="baseline cache JSON (default: a fresh temp file)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    cfg = EvalConfig(backend=args.backend, baselines=[b for b in args.baselines.split(",") if b],  # type: ignore[misc]
                     build=BuildConfig(backend=args.backend))
    with tempfile.TemporaryDirectory() as tmp:
        cache = JsonBaselineCache(args.cache or Path(tmp) / "baselines.json")
        payload = {"cuda": cmd_solutions, "solutions": cmd_solutions, "latency": cmd_latency,
                   "stability": cmd_stability, "ncu": cmd_ncu, "repeatability": cmd_repeatability}[args.command](args, cfg, cache)
    payload["env"] = environment()
    path = write_result(args.out or f"eval-{args.command}-{args.backend}", payload)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
