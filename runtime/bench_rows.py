"""The records of `kagent bench` and their files: one BenchRow per (problem, attempt) in results.json
(rewritten whole after every row, through a rename, so a crash keeps every finished row) and
results.csv (the same rows, flat)."""

from __future__ import annotations

import csv
import os
import platform
import subprocess
import threading
from pathlib import Path
from typing import Literal

import msgspec

from skills.evaluator import ext_cache, reward
from skills.evaluator.results import CandidateMemoryMethod, EvalResult, Speedup

SourceKind = Literal["solutions", "reference", "reference_model", "policy"]
"""Where the graded code came from: a solution folder, the bundled reference solutions, each
problem's own Model as its ModelNew (a check of the harness), or agent episodes against a policy."""
RESULTS = "results.json"
CSV = "results.csv"


class BenchInvocation(msgspec.Struct, kw_only=True):
    """One invocation of `kagent bench` on a results folder (a resumed run has several)."""

    started: float
    """Unix time it started."""
    slots: list[str]
    """Its evaluation slots (GPU ids on cuda, `cpu` per slot on cpu)."""
    jobs: int
    """Rows it had to grade (the rest were already there)."""
    graded: int | None = None
    """Rows it wrote (fewer than jobs when it was interrupted; None in results.json files written
    before invocations counted them)."""
    interrupted: bool = False
    """Stopped by SIGINT (Ctrl-C, or a step's deadline) before every job was graded; a rerun resumes."""
    seconds: float | None = None
    """Wall time from start to the last row (None while it runs, or when it was killed)."""
    prebuild_seconds: float | None = None
    """Wall time of building load_inline solutions ahead (None: there were none)."""
    driver: str | None = None
    """NVIDIA driver version (`nvidia-smi`; None on cpu or without it)."""
    kagent_commit: str | None = None
    """git commit of the kagent checkout that ran it (None outside a git checkout, or in a
    results.json written before invocations kept it: BenchRun.kagent_commit is the first's)."""


class BenchRun(msgspec.Struct, kw_only=True):
    """What a results folder was measured with (a resumed run must match it)."""

    source: SourceKind
    """Where the graded code came from."""
    backend: Literal["cuda", "cpu"]
    """Where kernels built and ran."""
    solutions: str | None
    """--solutions folder (None for other sources)."""
    policy_url: str | None
    """--policy-url endpoint (policy source only)."""
    model: str | None
    """Model name requested from the policy (policy source only)."""
    attempts: int
    """Attempts per problem (K)."""
    command: str
    """The command line that started the run (the first, when resumed)."""
    python: str
    """Python version of the bench process."""
    host: str
    """Host name."""
    kagent_commit: str | None
    """git commit of the kagent checkout (None outside a git checkout)."""
    invocations: list[BenchInvocation] = msgspec.field(default_factory=list)
    """Every invocation that added rows, first to last."""


class BenchRow(msgspec.Struct, kw_only=True):
    """One graded attempt at one problem."""

    problem: str
    """Problem name (`level1/01_relu`, or the file stem outside a levelN folder)."""
    problem_id: str
    """Content hash of the problem source (a changed problem is graded again on resume)."""
    level: int | None
    """KernelBench level (None when the file is not in a levelN folder)."""
    attempt: int
    """0 .. K-1."""
    solution: str | None
    """The solution graded (a folder or file); None for episodes and missing solutions."""
    missing: bool = False
    """No solution was found for the problem: a failure, not a fault."""
    reward: float | None
    """Reward of the final evaluation (None: not graded, or an environment fault)."""
    passed: bool
    """Compiled, correct and unflagged (what counts for the pass rate)."""
    compiled: bool
    """The kernels built."""
    correct: bool
    """Every output on every input set within budget."""
    fault: str | None = None
    """Why the environment could not grade this attempt (a judge or worker failure, a policy
    server that never answered): counted apart, never as a failure."""
    error: str | None = None
    """First line of why the evaluation or episode stopped early."""
    flags: list[str] = msgspec.field(default_factory=list)
    """Names of the checks that fired."""
    speedup_eager: float | None = None
    """Eager time over the candidate's (None when not timed)."""
    speedup_eager_low: float | None = None
    """Conservative end of its 95% interval."""
    speedup_eager_high: float | None = None
    """Optimistic end of its 95% interval."""
    faster_eager: bool | None = None
    """Judged faster than eager on the interval (the reward's rule); None when not timed."""
    speedup_compile: float | None = None
    """torch.compile time over the candidate's (None when not timed)."""
    speedup_compile_low: float | None = None
    """Conservative end of its 95% interval."""
    speedup_compile_high: float | None = None
    """Optimistic end of its 95% interval."""
    faster_compile: bool | None = None
    """Judged faster than torch.compile on the interval; None when not timed."""
    reward_fn: str | None = None
    """The reward function that gave `reward` (scheduler.eval.reward_fn; None: no reward given)."""
    candidate_call_bytes: int | None = None
    """ModelNew's footprint during its calls, measured from outside its process
    (EvalResult.memory.candidate_call_bytes, docs/reward.md); None: not measured."""
    candidate_method: CandidateMemoryMethod | None = None
    """How candidate_call_bytes was measured (`nvml`, `peak_rss`, `lifetime_rss`); None: not measured."""
    eager_bytes: int | None = None
    """Eager Model's footprint over its timed loop, measured by the judge; None: not measured."""
    compile_bytes: int | None = None
    """torch.compile(Model)'s footprint, measured as eager's; None: not measured."""
    limit_bytes: int | None = None
    """The footprint ModelNew may reach before the composite reward's memory penalty, under the
    evaluation's settings (memory_factor x the larger baseline's + slack); None: no baseline measured."""
    over_memory: bool | None = None
    """candidate_call_bytes > limit_bytes (skills.evaluator.reward.over_memory); None: either was not measured."""
    memory_penalty: bool | None = None
    """The reward took the memory penalty off (reward_fn `composite`, passed and over_memory); False
    under another reward function; None: no reward given, or a row written before bench kept memory."""
    episode_id: int | None = None
    """Episode in the run's store (policy source only)."""
    episode_status: str | None = None
    """How the episode ended (policy source only)."""
    turns: int | None = None
    """LLM calls of the episode (policy source only)."""
    prompt_tokens: int | None = None
    """Prompt tokens over the episode's turns (policy source only)."""
    completion_tokens: int | None = None
    """Generated tokens over the episode's turns (policy source only)."""
    seconds: float
    """Wall time of the attempt (evaluation, or the whole episode); with --solutions, --reference
    and --reference-model, not counting `queued_seconds`."""
    queued_seconds: float | None = None
    """Time the evaluation waited for a free GPU slot (every job is in flight at once, one evaluation
    per slot): not the row's own. None: a policy row (its episode's waits are the episode's), or a
    row written before bench kept it (its `seconds` then includes the wait)."""
    workers_seconds: float | None = None
    """Starting the final evaluation's workers up to the candidate's import (a load_inline build
    counts here: a cold one is ~60 s, a seeded one seconds)."""
    correctness_seconds: float | None = None
    """The final evaluation's correctness stage (hand-over, the candidate's calls, comparisons)."""
    timing_seconds: float | None = None
    """Its candidate's timed rounds (the judge's draws and checks inside them included)."""
    baselines_seconds: float | None = None
    """Its baselines' timed loops, paired with the candidate's rounds (torch.compile's cold start
    included; 0 or None when cached): with the three above, where a row's time goes."""
    extension_cache_hit: bool = False
    """The final evaluation's load_inline build was seeded from the parent's cache (skills/evaluator/ext_cache.py)."""
    prebuild_seconds: float | None = None
    """The build-only prebuild of a load_inline solution into the extension cache, no GPU
    (skills/evaluator/prebuild.py; None: not built ahead)."""
    gpu: str | None = None
    """Device the evaluation ran on (None on cpu)."""
    torch_version: str | None = None
    """torch version of the evaluation's workers."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.problem_id, self.attempt)


class BenchFile(msgspec.Struct, kw_only=True):
    """results.json."""

    run: BenchRun
    """How the rows were measured."""
    rows: list[BenchRow]
    """One row per problem and attempt, in problem order."""


def _first_line(text: str | None) -> str | None:
    return text.strip().splitlines()[0][:300] if text and text.strip() else None


def _set_speedup(fields: dict[str, object], s: Speedup) -> None:
    name = "eager" if s.baseline == "eager" else "compile"
    fields |= {f"speedup_{name}": s.value, f"speedup_{name}_low": s.low, f"speedup_{name}_high": s.high,
               f"faster_{name}": s.faster}


def _memory_fields(result: EvalResult) -> dict[str, object]:
    """The row's memory figures, as the evaluation measured them (bytes; None where not measured)."""
    m = result.memory
    used, limit = (m.candidate_call_bytes, m.limit_bytes) if m is not None else (None, None)
    over = used > limit if used is not None and limit is not None else None
    # Judged on the result's own limit, so the composite reward's settings of that evaluation hold.
    penalised = result.reward_fn == "composite" and not reward.failed(result) and over is True
    fields: dict[str, object] = {"reward_fn": result.reward_fn, "over_memory": over,
                                 "memory_penalty": None if result.reward is None else penalised}
    if m is not None:
        fields |= {"candidate_call_bytes": used, "candidate_method": m.candidate_method,
                   "eager_bytes": m.eager_bytes, "compile_bytes": m.compile_bytes, "limit_bytes": limit}
    return fields


def row_from_result(result: EvalResult, *, problem: str, problem_id: str, level: int | None, attempt: int,
                    solution: str | None, seconds: float) -> BenchRow:
    """The row of one final evaluation (the result's own name is the file stem; `problem` is the full name)."""
    fields: dict[str, object] = {}
    for s in result.speedups:
        _set_speedup(fields, s)
    fields |= _memory_fields(result)
    fault = result.environment_fault
    return BenchRow(
        problem=problem, problem_id=problem_id, level=level, attempt=attempt, solution=solution,
        reward=result.reward, passed=fault is None and not reward.failed(result), compiled=result.compiled,
        correct=result.correct, fault=fault, error=_first_line(result.error), flags=[f.name for f in result.flags],
        seconds=seconds, gpu=result.gpu, torch_version=result.torch_version or None,
        workers_seconds=result.stages.workers_ready, correctness_seconds=result.stages.correctness,
        timing_seconds=result.stages.timing, baselines_seconds=result.stages.baselines,
        extension_cache_hit=ext_cache.SEED_PART in result.stages.parts,
        **fields)  # type: ignore[arg-type]


def missing_row(*, problem: str, problem_id: str, level: int | None, attempt: int) -> BenchRow:
    return BenchRow(problem=problem, problem_id=problem_id, level=level, attempt=attempt, solution=None, missing=True,
                    reward=None, passed=False, compiled=False, correct=False, error="no solution found", seconds=0.0)


def fault_row(*, problem: str, problem_id: str, level: int | None, attempt: int, fault: str,
              seconds: float, solution: str | None = None) -> BenchRow:
    """An attempt the environment could not grade at all (no evaluation result exists)."""
    return BenchRow(problem=problem, problem_id=problem_id, level=level, attempt=attempt, solution=solution,
                    reward=None, passed=False, compiled=False, correct=False, fault=fault, seconds=seconds)


def read_results(out: Path) -> BenchFile | None:
    path = out / RESULTS
    if not path.is_file():
        return None
    try:
        return msgspec.json.decode(path.read_bytes(), type=BenchFile)
    except msgspec.DecodeError as exc:
        raise ValueError(f"{path} is not a kagent bench results file: {exc}") from None


def write_results(out: Path, bench: BenchFile) -> None:
    """results.json and results.csv, each written to a temporary file and renamed over the old one."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{RESULTS}.{os.getpid()}.{threading.get_ident()}.tmp"
    tmp.write_bytes(msgspec.json.format(msgspec.json.encode(bench), indent=1))
    os.replace(tmp, out / RESULTS)
    tmp = out / f".{CSV}.{os.getpid()}.{threading.get_ident()}.tmp"
    with tmp.open("w", newline="", encoding="utf-8") as f:
        names = list(BenchRow.__struct_fields__)
        writer = csv.DictWriter(f, fieldnames=names)
        writer.writeheader()
        for row in bench.rows:
            data = msgspec.to_builtins(row)
            data["flags"] = ";".join(row.flags)
            writer.writerow({k: "" if data.get(k) is None else data[k] for k in names})
    os.replace(tmp, out / CSV)


def run_header(*, source: SourceKind, backend: Literal["cuda", "cpu"], solutions: str | None,
               policy_url: str | None, model: str | None, attempts: int, command: str) -> BenchRun:
    return BenchRun(source=source, backend=backend, solutions=solutions, policy_url=policy_url, model=model,
                    attempts=attempts, command=command, python=platform.python_version(),
                    host=platform.node(), kagent_commit=current_commit())


def current_commit() -> str | None:
    """git commit of this kagent checkout (None outside a git checkout)."""
    root = Path(__file__).resolve().parent.parent
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def same_run(old: BenchRun, new: BenchRun) -> str | None:
    """Why the rows in `old` cannot be resumed by `new` (None when they can)."""
    for name in ("source", "backend", "solutions", "policy_url", "model"):
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            return f"{name} was {a!r}, now {b!r}"
    return None


def resume_note(old: BenchRun, commit: str | None) -> str | None:
    """One line when the rows of `old` were graded by another kagent commit than `commit` (this
    checkout's): a note, not a refusal (rows are kept; grading may have changed between the two).
    None when they match or either is unknown."""
    seen = [old.kagent_commit, *(i.kagent_commit for i in old.invocations)]
    others = list(dict.fromkeys(c for c in seen if c is not None and c != commit))
    if commit is None or not others:
        return None
    return (f"note: rows here were graded by kagent {', '.join(c[:12] for c in others)}, this is kagent"
            f" {commit[:12]}; they are kept, not graded again (--retry-faults regrades faults only)")
