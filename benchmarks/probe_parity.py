"""Does the same torch code time the same as the candidate and as the eager baseline?

Each problem's own Model graded as its solution (EvalConfig.torch_allowed) should read about 1x its
eager baseline; on the H200 some KernelBench problems read 0.48-0.87x (kernelbench-h200.json,
2026-12-02). This probe separates the suspects, per problem:

- `alone`: the Model timed by CUDA events in a plain process (no harness), with and without
  NVIDIA_TF32_OVERRIDE=0 (the candidate's environment has it);
- `plain`: the Model as ModelNew through the evaluator (profile mode vs eager): the judged
  candidate time, its kernel time (profiler), window, lead, and the eager baseline;
- `self`: the same, with the candidate timing its own Model call by CUDA events inside forward,
  once on the judge's shared (IPC) input slots and once on private copies of them, a cache flush
  between: the kernel's own time in the candidate's process, with the harness's window left out;
- `self-env`: `self` with NVIDIA_TF32_OVERRIDE removed from the candidate's environment at import;
- `self-nocap`: `self` with the candidate's allocator cap lifted to 0.95 of the GPU;
- `plain-judge-noenv`, `host`, `nolead`, `gc`, `nosandbox`: see VARIANTS;
- `--alone-conditions`: the plain process in the conditions a candidate's timed call differs by (the lead,
  asleep between calls, after a dispatch mode, after the profiler), one after another in one process.

    python benchmarks/probe_parity.py ../shared/kernelbench --problems level1/4_ level2/10_ --out parity-h200

Writes benchmarks/results/OUT.json and prints a table (times in us, medians).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import environment, table, write_result  # noqa: E402

SELF_TIMING = '''

import os as _os
import statistics as _st
import time as _time

import torch as _torch

_ENV = {env!r}
_NOCAP = {nocap!r}
if _ENV:
    _os.environ.pop("NVIDIA_TF32_OVERRIDE", None)


class ModelNew(Model):
    """The reference itself, timing its own call by CUDA events (a probe, not a solution)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if _NOCAP:
            _torch.cuda.set_per_process_memory_fraction(0.95)
        self._priv = None
        self._flush = None
        self._pending = []
        self._ipc = []
        self._own = []
        self._host = []

    def forward(self, *args):
        for e in self._pending:
            self._ipc.append(e[0].elapsed_time(e[1]) * 1e3)
            self._own.append(e[2].elapsed_time(e[3]) * 1e3)
        self._pending = []
        if self._priv is None:
            self._priv = [a.clone() if isinstance(a, _torch.Tensor) else a for a in args]
            self._flush = _torch.empty(64 << 20, dtype=_torch.uint8, device="cuda")
        e = [_torch.cuda.Event(enable_timing=True) for _ in range(4)]
        e[0].record()
        _t = _time.perf_counter()
        out = super().forward(*args)
        self._host.append((_time.perf_counter() - _t) * 1e6)
        e[1].record()
        self._flush.zero_()
        e[2].record()
        super().forward(*self._priv)
        e[3].record()
        self._pending.append(e)
        if self._ipc:
            print(f"PARITY n={{len(self._ipc)}} ipc={{_st.median(self._ipc):.2f}} own={{_st.median(self._own):.2f}}"
                  f" host={{_st.median(self._host):.2f}}", flush=True)
        return out
'''

ALONE = r'''
import json, statistics, sys, time, torch
sys.path.insert(0, sys.argv[2])
from skills.evaluator.problem import load_problem
from skills.evaluator.harness.judge import set_precision
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.harness.timing import Loop
p = load_problem(sys.argv[1], sizes="default")
set_precision(p.problem.precision)
torch.manual_seed(0)
conditions = sys.argv[3].split(",") if len(sys.argv) > 3 else ["plain"]


def timed(n=25, lead=False, sleep_s=0.0):
    flush = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    times, host = [], []
    for i in range(n):
        flush.zero_()
        torch.cuda.synchronize()
        if sleep_s:
            time.sleep(sleep_s)  # as the candidate waits on the link while the judge puts the next set
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if lead:
            lead_loop.lead()
        a.record(); t = time.perf_counter(); out = model(*inputs); h = time.perf_counter() - t
        b.record(); torch.cuda.synchronize()
        if i >= 5:
            times.append(a.elapsed_time(b) * 1e3)
            host.append(h * 1e6)
        del out
    return {"median_us": statistics.median(times), "min_us": min(times), "host_us": statistics.median(host)}


with torch.no_grad(), torch.device("cuda"):
    model = p.Model(*p.get_init_inputs()).eval()
    inputs = list(p.get_inputs())
    lead_loop = Loop(model, [inputs], torch.device("cuda"), TimingConfig(flush_l2=False), external=True)
    lead_loop.calibrate_lead()  # the harness's lead (TimingConfig.lead_us) at this clock
    result = {}
    for c in conditions:
        if c == "plain":
            result.update(timed())
        elif c == "lead":  # the 100 us spin ahead of the start event, as every timed call has
            result.update({f"lead_{k}": v for k, v in timed(lead=True).items()})
        elif c == "sleep":  # 2 ms asleep before each call: the core may idle between calls
            result.update({f"sleep_{k}": v for k, v in timed(lead=True, sleep_s=0.002).items()})
        elif c == "ops":  # after one call under the op recorder, as the candidate's correctness calls run
            from skills.evaluator.harness.candidate import OpRecorder

            with OpRecorder():
                model(*inputs)
            result.update({f"ops_{k}": v for k, v in timed(lead=True).items()})
        elif c == "profiler":  # after one call under the profiler with CUDA activity (final mode: after round 0)
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
                model(*inputs)
                torch.cuda.synchronize()
            result.update({f"prof_{k}": v for k, v in timed(lead=True).items()})
print(json.dumps(result))
'''

HOST_TIMING = '''

import gc as _gc
import json as _json
import time as _time


class ModelNew(Model):
    """The reference itself, timing how long its call takes the host to queue (a probe, not a solution).
    Each call's host us and whether the collector was on: off in the harness's timed calls (warm-up, timed
    loop, then the caller calls), on in its correctness calls."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._host = []
        self._printed = 0

    def forward(self, *args):
        _t = _time.perf_counter()
        out = super().forward(*args)
        on = _gc.isenabled()
        self._host.append([round((_time.perf_counter() - _t) * 1e6, 1), int(on)])
        # the calls since the last line: every tenth call, and at every correctness call (untimed), so the
        # caller calls are all out by the op recorder's calls that follow them
        if on or len(self._host) - self._printed >= 10:
            print("HOSTS " + _json.dumps(self._host[self._printed:]), flush=True)
            self._printed = len(self._host)
        return out
'''

GC_ON = '''

import gc as _gc


class ModelNew(Model):
    """The reference itself, with garbage collection on inside its timed calls (as before the candidate's
    timed calls ran with it off, as the baselines' do)."""

    def forward(self, *args):
        _gc.enable()
        return super().forward(*args)
'''

VARIANTS = ("plain", "self", "self-env", "self-nocap", "plain-judge-noenv", "host", "nolead", "gc", "nosandbox", "spin")
"""plain-judge-noenv: the judge without NVIDIA_TF32_OVERRIDE=0 (as before the judge ran under the candidate's
override); host: the candidate's host time to queue a call; nolead: plain with the lead off for both;
gc: garbage collection on in the candidate's timed calls; nosandbox: plain with the candidate outside bubblewrap
(its namespaces and limits); spin: plain with the candidate's worker polling the link for 20 ms after each timed
call before it blocks (TimingConfig.candidate_spin_us), its core awake when the next call comes."""


ALONE_CONDITIONS = ("plain", "lead", "sleep", "ops", "profiler")
"""The plain process's conditions, in this order in one process (--alone-conditions): plain; lead (the
100 us spin ahead of the start event); sleep (and 2 ms asleep before each call); ops (after one call
under the op recorder, a dispatch mode); profiler (after one call under the profiler with CUDA activity)."""


def alone(f: Path, tf32_off: bool, conditions: tuple[str, ...] = ("plain",)) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("NVIDIA_TF32_OVERRIDE", None)
    if tf32_off:
        env["NVIDIA_TF32_OVERRIDE"] = "0"
    root = str(Path(__file__).resolve().parents[1])
    r = subprocess.run([sys.executable, "-c", ALONE, str(f), root, ",".join(conditions)], env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    if r.returncode != 0:
        return {"error": r.stderr[-400:]}
    out: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    return out


def model_new(source: str, variant: str) -> str:
    if variant == "gc":
        return source.rstrip() + GC_ON
    if variant in ("plain", "plain-judge-noenv", "nolead", "nosandbox", "spin"):
        return source.rstrip() + "\n\n\nclass ModelNew(Model):\n    \"\"\"The reference itself.\"\"\"\n"
    if variant == "host":
        return source.rstrip() + HOST_TIMING
    return source.rstrip() + SELF_TIMING.format(env=variant == "self-env", nocap=variant == "self-nocap")


def _median(iv: Any) -> float | None:
    return round(iv.median, 2) if iv is not None else None


def workspace(f: Path, variant: str, tmp: Path) -> Path:
    ws = tmp / f"{f.parent.name}__{f.stem}__{variant}"
    ws.mkdir(parents=True)
    source = f.read_text(encoding="utf-8")
    (ws / "model.py").write_text(source, encoding="utf-8")
    (ws / "model_new.py").write_text(model_new(source, variant), encoding="utf-8")
    return ws


@contextlib.contextmanager
def _judge_without_override(on: bool) -> Iterator[None]:
    """The judge's environment without NVIDIA_TF32_OVERRIDE (how it ran before it shared the candidate's)."""
    from skills.evaluator import launch

    if not on:
        yield
        return
    real = launch.judge_env

    def judge_env(config: Any, env: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in real(config, env).items() if k != "NVIDIA_TF32_OVERRIDE"}

    launch.judge_env = judge_env
    try:
        yield
    finally:
        launch.judge_env = real


async def graded(f: Path, variant: str, tmp: Path, loop_seconds: float, backend: str = "cuda",
                 mode: str = "profile") -> dict[str, Any]:
    from skills.evaluator.baselines import JsonBaselineCache
    from skills.evaluator.build import BuildConfig
    from skills.evaluator.config import EvalConfig
    from skills.evaluator.evaluate import evaluate
    from skills.evaluator.harness.protocol import TimingConfig
    from skills.evaluator.sandbox import SandboxConfig

    ws = workspace(f, variant, tmp)
    timing = TimingConfig(warmup_calls=3, warmup_seconds=0.05, min_calls=10, max_calls=200, target_seconds=0.1,
                          loop_seconds=loop_seconds, lead_us=0.0 if variant == "nolead" else TimingConfig().lead_us,
                          candidate_spin_us=20_000.0 if variant == "spin" else 0.0)
    cfg = EvalConfig(backend=backend, baselines=["eager"], torch_allowed=True, timing=timing,  # type: ignore[arg-type]
                     build=BuildConfig(backend=backend), log_chars=1 << 20)  # type: ignore[arg-type]  # HOSTS: every call
    if variant == "nosandbox":
        cfg = msgspec.structs.replace(cfg, sandbox=SandboxConfig(mode="none", allow_unsafe=True))
    t = time.perf_counter()
    with _judge_without_override(variant == "plain-judge-noenv"):
        r = await evaluate(f, ws, mode="final" if mode == "final" else "profile", config=cfg,
                           baseline_cache=JsonBaselineCache(tmp / f"{ws.name}.json"))
    row: dict[str, Any] = {"wall_s": round(time.perf_counter() - t, 1), "correct": r.correct,
                           "flags": [fl.name for fl in r.flags], "error": (r.error or "")[:200] or None}
    c, e = r.candidate, r.eager
    if c is not None:
        row |= {"cand_us": _median(c.per_call_us), "cand_kernel_us": c.kernel_us, "cand_window_us": c.window_us,
                "cand_lead_us": c.lead_us, "cand_cv": round(c.cv, 4), "cand_calls": c.calls,
                "cand_caller_us": _median(c.caller_us)}
    if e is not None:
        row |= {"eager_us": _median(e.per_call_us), "eager_cv": round(e.cv, 4), "eager_calls": e.calls,
                "eager_caller_us": _median(e.caller_us), "eager_kernel_us": e.kernel_us}
    row["speedup_eager"] = next((round(s.value, 3) for s in r.speedups if s.baseline == "eager"), None)
    calls = [c for line in (r.log or "").splitlines() if line.startswith("HOSTS ")
             for c in json.loads(line.removeprefix("HOSTS "))]  # the calls since the line before, in order
    if calls:
        off = [h for h, on in calls if not on]  # warm-up and timed calls, then the caller calls
        n_caller = timing.caller_calls if len(off) > timing.caller_calls else 0
        timed, caller = off[:len(off) - n_caller], off[len(off) - n_caller:]
        row |= {"host_us": statistics.median(timed) if timed else None,
                "host_caller_us": statistics.median(caller) if caller else None,
                "host_checked_us": statistics.median([h for h, on in calls if on] or [0.0]), "host_calls": len(calls)}
    found = list(re.finditer(r"PARITY n=(\d+) ipc=([\d.]+) own=([\d.]+) host=([\d.]+)", r.log or ""))
    if found:
        m = found[-1]
        row |= {"self_n": int(m.group(1)), "self_ipc_us": float(m.group(2)), "self_own_us": float(m.group(3)),
                "self_host_us": float(m.group(4))}
    return row


async def run(files: list[Path], variants: list[str], loop_seconds: float, out: str, with_alone: bool = True,
              mode: str = "profile", conditions: tuple[str, ...] = ()) -> None:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as d:
        for f in files:
            name = f"{f.parent.name}/{f.stem}"
            base = {"problem": name}
            if with_alone and conditions:  # one process under the override, each condition in turn
                rows.append(base | {"variant": "alone"} | alone(f, True, conditions))
                print(json.dumps(rows[-1]), flush=True)
            elif with_alone:
                # each twice, in the order with, without, without, with (a drift over time shows as a split)
                first, second, third, fourth = alone(f, True), alone(f, False), alone(f, False), alone(f, True)
                rows.append(base | {"variant": "alone"} | {f"tf32env_{k}": v for k, v in first.items()}
                            | {f"noenv_{k}": v for k, v in second.items()} | {f"noenv2_{k}": v for k, v in third.items()}
                            | {f"tf32env2_{k}": v for k, v in fourth.items()})
                print(json.dumps(rows[-1]), flush=True)
            for v in variants:
                try:
                    row = await graded(f, v, Path(d), loop_seconds, mode=mode)
                except Exception as exc:  # a probe: say what failed and go on
                    row = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                rows.append(base | {"variant": v} | row)
                print(json.dumps(rows[-1]), flush=True)
                write_result(out, {"rows": rows, "env": environment()})
    cols = ["problem", "variant", "cand_us", "cand_kernel_us", "cand_caller_us", "host_us", "host_caller_us", "host_checked_us", "self_ipc_us", "self_own_us", "self_host_us",
            "eager_us", "speedup_eager", "tf32env_median_us", "tf32env2_median_us", "tf32env_host_us", "noenv_median_us",
            "noenv2_median_us", "noenv_host_us", "median_us", "lead_median_us", "sleep_median_us", "sleep_host_us",
            "ops_median_us", "prof_median_us", "prof_host_us"]
    print(table(cols, [[r.get(c) for c in cols] for r in rows]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="a KernelBench checkout (holds level1/ ...)")
    ap.add_argument("--problems", nargs="+", required=True, help="level/prefix of each file, e.g. level1/4_")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--loop-seconds", type=float, default=0.3)
    ap.add_argument("--no-alone", dest="alone", action="store_false", help="skip the plain-process timings")
    ap.add_argument("--mode", default="profile", choices=("profile", "final"),
                    help="final: the paired rounds that decide a reward (the profiler runs after round 0)")
    ap.add_argument("--alone-conditions", nargs="+", default=[], choices=ALONE_CONDITIONS,
                    help="the plain process once, under the override, in these conditions (default: the override's"
                         " four runs, with and without it)")
    ap.add_argument("--out", default="parity")
    args = ap.parse_args()
    files = []
    for p in args.problems:
        if p.endswith(".py") and Path(p).is_file():  # a file by path (a bundled problem)
            files.append(Path(p))
            continue
        level, _, prefix = p.partition("/")
        hits = sorted(Path(args.root, level).glob(f"{prefix}*.py"))
        if not hits:
            ap.error(f"no file {p}* under {args.root}")
        files.append(hits[0])
    anyio.run(run, files, args.variants, args.loop_seconds, args.out, args.alone, args.mode, tuple(args.alone_conditions))


if __name__ == "__main__":
    main()
