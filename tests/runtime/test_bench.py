"""`kagent bench` end to end on the cpu backend: the real evaluator (g++ builds, judge and candidate
workers), the real CLI, a real scripted policy server over HTTP and a real store.

One solution set covers every kind of row: a passing workspace (level1/01_relu), a single-file
solution the static checks refuse (02_swish), a problem without a solution (03_rms_norm) and a
problem too big for the machine (an environment fault, counted apart). No case asserts a speed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import msgspec
import pytest

from runtime.bench_rows import (
    BenchInvocation,
    BenchRow,
    current_commit,
    read_results,
    resume_note,
    run_header,
)
from runtime.cli import main
from runtime.fakes.scripted import scripted_server
from runtime.store import Store
from skills.evaluator.reward import MIB
from skills.evaluator.sandbox import SandboxConfig
from skills.evaluator.sandbox import active as sandbox_active
from tests.runtime.test_bench_stats import MEMORY_FIELDS
from tests.skills.evaluator.test_environment_faults import HUGE, RELU_CPP, RELU_NEW

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "problems"
QUICK = ["--backend", "cpu", "--unsafe-no-sandbox", "--no-progress",
         "--set", 'scheduler.eval.baselines=["eager"]', "--set", "scheduler.eval.timing.target_seconds=0.05",
         "--set", "scheduler.eval.timing.max_calls=60", "--set", "scheduler.eval.timing.min_calls=10"]
SWISH_TORCH = '''import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)
'''


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Caches and config of this module's own (no user config, no shared build or baseline cache)."""
    root = tmp_path_factory.mktemp("bench")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
        mp.setenv("XDG_CONFIG_HOME", str(root / "config"))
        mp.setenv("XDG_STATE_HOME", str(root / "state"))
        mp.delenv("KAGENT_CONFIG", raising=False)
        yield root


@pytest.fixture(scope="module")
def solution_set(env: Path) -> tuple[Path, Path]:
    """problems/level1/{01_relu,02_swish,03_rms_norm,99_huge_relu}.py and their solutions."""
    problems, sol = env / "problems" / "level1", env / "sol"
    problems.mkdir(parents=True)
    for stem in ("01_relu", "02_swish", "03_rms_norm"):
        shutil.copyfile(PROBLEMS / "level1" / f"{stem}.py", problems / f"{stem}.py")
    (problems / "99_huge_relu.py").write_text(HUGE)
    shutil.copytree(PROBLEMS / "solutions" / "cpu" / "level1" / "01_relu", sol / "level1" / "01_relu")
    (sol / "02_swish.py").write_text(SWISH_TORCH)
    (sol / "level1" / "99_huge_relu" / "kernels").mkdir(parents=True)
    (sol / "level1" / "99_huge_relu" / "model_new.py").write_text(RELU_NEW)
    (sol / "level1" / "99_huge_relu" / "kernels" / "relu.cpp").write_text(RELU_CPP)
    return problems, sol


@pytest.fixture(scope="module")
def graded(solution_set: tuple[Path, Path], env: Path) -> Path:
    problems, sol = solution_set
    out = env / "out-solutions"
    assert main(["bench", str(problems), "--solutions", str(sol), "--out", str(out), *QUICK]) == 0
    return out


def _rows(out: Path) -> dict[str, dict[str, object]]:
    bench = read_results(out)
    assert bench is not None
    return {r.problem: msgspec.to_builtins(r) for r in bench.rows}


def test_solutions_give_a_row_of_each_kind(graded: Path) -> None:
    rows = _rows(graded)
    assert list(rows) == ["level1/01_relu", "level1/02_swish", "level1/03_rms_norm", "level1/99_huge_relu"]
    relu, swish, rms, huge = rows.values()
    assert relu["passed"] and relu["reward"] is not None and relu["reward"] >= 1  # type: ignore[operator]
    assert relu["speedup_eager"] is not None and relu["speedup_compile"] is None  # only eager was timed
    low, high, value = relu["speedup_eager_low"], relu["speedup_eager_high"], relu["speedup_eager"]
    assert low <= value <= high  # type: ignore[operator]
    assert relu["torch_version"] and relu["fault"] is None and relu["solution"].endswith("level1/01_relu")  # type: ignore[union-attr]
    assert not swish["passed"] and swish["reward"] == -1.0 and swish["flags"] and swish["fault"] is None
    assert rms["missing"] and not rms["passed"] and rms["fault"] is None
    assert huge["fault"] is not None and "GiB" in huge["fault"] and huge["reward"] is None  # type: ignore[operator]
    # each graded row keeps its wait for the one cpu slot apart from its own seconds; a missing one never waited
    assert all(isinstance(r["queued_seconds"], float) and r["queued_seconds"] >= 0 for r in (relu, swish, huge))
    assert rms["queued_seconds"] is None
    # where a row's time went: the final evaluation's stages, each within the row's own seconds
    stages = [relu[k] for k in ("workers_seconds", "correctness_seconds", "timing_seconds", "baselines_seconds")]
    assert all(isinstance(t, float) and t >= 0 for t in stages), stages
    assert sum(stages) <= relu["seconds"]  # type: ignore[operator]
    assert swish["timing_seconds"] is None  # flagged at its static checks: no stage past them ran
    line = next(x for x in (graded / "table.md").read_text().splitlines() if x.startswith("- time by stage"))
    assert "(median over the 1 timed rows that record it): workers " in line and ", baselines " in line, line
    # Memory: ModelNew's footprint and eager's, measured outside the candidate (compile was not timed).
    used, eager, limit = relu["candidate_call_bytes"], relu["eager_bytes"], relu["limit_bytes"]
    assert isinstance(used, int) and isinstance(eager, int) and eager > 0 and relu["compile_bytes"] is None, relu
    assert relu["candidate_method"] in ("peak_rss", "lifetime_rss") and limit == int(2 * eager + 128 * MIB), relu
    assert relu["over_memory"] is (used > limit) and relu["memory_penalty"] is False  # milestone takes none off
    assert relu["reward_fn"] == "milestone"
    assert swish["candidate_call_bytes"] is None and swish["over_memory"] is None  # refused before it ran
    assert swish["memory_penalty"] is False and rms["memory_penalty"] is None and huge["memory_penalty"] is None
    table = (graded / "table.md").read_text()
    assert f"| level1/01_relu | 0 | passed | {relu['reward']:g} |" in table and f"| {used / MIB:.1f} |" in table
    assert "| level1/02_swish | 0 | failed | -1 | — | — | — | — | — | — | — |" in table
    # 4 problems, 1 fault (not graded), 1 missing; 1 of the 3 graded passed.
    assert "| level 1 | 4 | 4 | 1 | 1 | 33.3% |" in table
    assert "Environment faults (1, not counted as failures)" in table and "99_huge_relu" in table
    csv_lines = (graded / "results.csv").read_text().splitlines()
    assert len(csv_lines) == 5 and csv_lines[0].startswith("problem,problem_id,level,attempt")
    assert ",candidate_call_bytes,candidate_method,eager_bytes,compile_bytes,limit_bytes,over_memory," in csv_lines[0]
    assert (graded / "speedup.png").read_bytes()[:4] == b"\x89PNG"


def test_reference_model_rows_grade_torch_as_the_solution(env: Path) -> None:
    """--reference-model: each problem's own Model as ModelNew, graded with the torch-op rule off
    (EvalConfig.torch_allowed): correct, unflagged, reward 1 or more (it is itself: about 1x
    eager); the same torch code as an agent's solution is flagged (the swish row above)."""
    problems = env / "reference-model" / "level1"
    problems.mkdir(parents=True)
    shutil.copyfile(PROBLEMS / "level1" / "02_swish.py", problems / "02_swish.py")
    out = env / "out-reference-model"
    assert main(["bench", str(problems), "--reference-model", "--out", str(out), *QUICK]) == 0
    (row,) = _rows(out).values()
    assert row["passed"] and not row["flags"] and row["fault"] is None, row
    assert row["reward"] is not None and row["reward"] >= 1, row  # type: ignore[operator]


def test_a_rerun_keeps_every_row_and_grades_only_what_is_new(graded: Path, solution_set: tuple[Path, Path],
                                                            env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    problems, sol = solution_set
    before = _rows(graded)
    extra = env / "extra" / "level1"
    extra.mkdir(parents=True)
    shutil.copyfile(PROBLEMS / "level1" / "05_reverse_cumsum.py", extra / "05_reverse_cumsum.py")
    # As if another kagent commit had graded the rows: the resume says so, and goes on.
    data = json.loads((graded / "results.json").read_text())
    data["run"]["kagent_commit"] = "0" * 40
    (graded / "results.json").write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["bench", str(problems), str(extra), "--solutions", str(sol), "--out", str(graded), *QUICK]) == 0
    printed = capsys.readouterr()
    assert "resuming" in printed.err and "| memory × baseline | over memory limit |" in printed.out
    assert "rows here were graded by kagent 000000000000, this is kagent" in printed.err
    after = _rows(graded)
    assert {k: after[k] for k in before} == before  # same rows, same seconds: nothing was graded again
    assert after["level1/05_reverse_cumsum"]["missing"]
    bench = read_results(graded)
    assert bench is not None and [(s.jobs, s.graded) for s in bench.run.invocations] == [(4, 4), (1, 1)]
    assert bench.run.invocations[-1].kagent_commit == current_commit()
    table = (graded / "table.md").read_text()
    assert "- in all: 5 rows graded in" in table
    if (commit := current_commit()) is not None:  # the later rows' kagent, beside the header's
        assert "kagent " + "0" * 40 in table and f"[cpu], kagent {commit[:12]} in " in table
    # --retry-faults grades the fault row again, and only it.
    assert main(["bench", str(problems), str(extra), "--solutions", str(sol), "--out", str(graded), "--retry-faults",
                 *QUICK]) == 0
    bench = read_results(graded)
    assert bench is not None and [s.jobs for s in bench.run.invocations] == [4, 1, 1]
    assert {k: v for k, v in _rows(graded).items() if k != "level1/99_huge_relu"} == \
        {k: v for k, v in after.items() if k != "level1/99_huge_relu"}
    # Another source cannot be resumed into the same folder.
    assert main(["bench", str(problems), "--reference", "--out", str(graded), *QUICK]) == 2


def test_compare_two_result_sets(graded: Path, env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = read_results(graded)
    assert bench is not None
    faster = msgspec.structs.replace(bench, rows=[
        msgspec.structs.replace(r, speedup_eager=r.speedup_eager * 2) if r.speedup_eager else r for r in bench.rows])
    other = env / "out-twice-as-fast"
    other.mkdir()
    (other / "results.json").write_bytes(msgspec.json.encode(faster))
    capsys.readouterr()
    assert main(["bench", "compare", str(graded), str(other), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    relu = next(r for r in bench.rows if r.passed)
    assert relu.speedup_eager is not None
    assert f"B - A = {relu.speedup_eager:+.3f}" in out  # one paired problem: B's geomean is twice A's
    assert "geomean speedup over compile: no problem passed and timed in both sets" in out
    assert main(["bench", "compare", str(graded)]) == 2


def test_a_results_folder_written_before_memory_resumes_and_compares(graded: Path, solution_set: tuple[Path, Path],
                                                                     env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """results.json without the memory fields (as bench wrote it before it kept memory): a resume
    keeps its rows as they were, and compare shows memory only where both sets hold it."""
    problems, sol = solution_set
    data = json.loads((graded / "results.json").read_text())
    for r in data["rows"]:
        for name in MEMORY_FIELDS:
            del r[name]
    old = env / "out-before-memory"
    old.mkdir()
    (old / "results.json").write_text(json.dumps(data))
    assert main(["bench", str(problems), "--solutions", str(sol), "--out", str(old), *QUICK]) == 0
    rows = _rows_list(old)
    assert len(rows) == len(data["rows"]) and all(r.candidate_call_bytes is None for r in rows)
    assert all(r.memory_penalty is None and r.over_memory is None for r in rows)
    capsys.readouterr()
    assert main(["bench", "compare", str(old), str(graded), "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "memory: not compared (no memory figures in A)" in out and "B - A = +0.000" in out


def test_the_composite_reward_s_memory_penalty_shows_in_the_row_and_the_table(env: Path) -> None:
    """A limit of 0 bytes (no factor, no slack): the reference ReLU is past it, and under composite its
    reward takes the penalty; the row, the table and the list of rows over the limit say so."""
    out = env / "out-memory-penalty"
    tight = ["--set", "scheduler.eval.reward_fn=composite", "--set", "scheduler.eval.composite.memory_factor=0",
             "--set", "scheduler.eval.composite.memory_slack_cpu_mib=0"]
    assert main(["bench", str(PROBLEMS / "level1" / "01_relu.py"), "--reference", "--out", str(out), *QUICK,
                 *tight]) == 0
    (row,) = _rows_list(out)
    assert row.passed and row.reward_fn == "composite" and row.limit_bytes == 0, (row.error, row.flags, row.fault, row)
    assert row.candidate_call_bytes is not None and row.candidate_call_bytes > 0, row
    assert row.over_memory is True and row.memory_penalty is True, row
    assert row.reward is not None and row.reward <= 1.5, row  # correct + at most 1 for speed - 0.5
    table = (out / "table.md").read_text()
    assert "| 1 of 1 |" in table and "| 0.0 | yes, penalised |" in table
    assert "Over the memory limit (1 row(s), 1 problem(s)):" in table


INLINE_RELU = '''import torch
from torch.utils.cpp_extension import load_inline

SOURCE = """
#include <torch/extension.h>
torch::Tensor relu(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const float* a = x.data_ptr<float>();
  float* b = y.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) b[i] = a[i] > 0.f ? a[i] : 0.f;
  return y;
}
"""
ext = load_inline(name="bench_relu_inline", cpp_sources=SOURCE, functions=["relu"])


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return ext.relu(x)
'''


@pytest.mark.skipif(not sandbox_active(SandboxConfig()), reason="the extension cache pays off inside bubblewrap only")
def test_a_load_inline_file_is_built_ahead_and_its_final_evaluation_reuses_the_build(env: Path) -> None:
    """KernelBench-style: the build-only prebuild compiles each file into the parent's cache, two at
    once; each final evaluation starts from that copy. The prebuild grades nothing: a file that
    builds but is wrong (ReLU for swish) is built ahead too, and fails its final evaluation."""
    sol = env / "sol-inline"
    sol.mkdir()
    (sol / "01_relu.py").write_text(INLINE_RELU)
    (sol / "02_swish.py").write_text(INLINE_RELU.replace("bench_relu_inline", "bench_wrong_swish_inline"))
    out = env / "out-inline"
    quick = [a for a in QUICK if a != "--unsafe-no-sandbox"]
    assert main([
        "bench", str(PROBLEMS / "level1" / "01_relu.py"), str(PROBLEMS / "level1" / "02_swish.py"),
        "--solutions", str(sol), "--out", str(out), "--compile-jobs", "2", *quick]) == 0
    relu, swish = _rows_list(out)
    # Correct and built (a timing check on a loaded 2-core box is not what this is about).
    assert relu.compiled and relu.correct and relu.fault is None, relu
    assert swish.compiled and not swish.correct and swish.reward == -1.0 and swish.fault is None, swish
    for row in (relu, swish):
        assert row.prebuild_seconds is not None and row.extension_cache_hit, row
    bench = read_results(out)
    assert bench is not None and bench.run.invocations[-1].prebuild_seconds is not None


def test_resume_note_names_the_other_commits() -> None:
    old = run_header(source="solutions", backend="cpu", solutions="s", policy_url=None, model=None, attempts=1,
                     command="kagent bench")
    old.kagent_commit = "a" * 40
    assert resume_note(old, "a" * 40) is None
    assert resume_note(old, None) is None  # this checkout's commit unknown: nothing to compare
    old.invocations = [BenchInvocation(started=0.0, slots=["cpu"], jobs=1, kagent_commit="a" * 40),
                       BenchInvocation(started=1.0, slots=["cpu"], jobs=1, kagent_commit="b" * 40)]
    note = resume_note(old, "a" * 40)
    assert note is not None and "b" * 12 in note and "this is kagent " + "a" * 12 in note and "\n" not in note
    old.kagent_commit, old.invocations = None, []  # written before invocations kept it
    assert resume_note(old, "a" * 40) is None


SCRIPT = [json.loads((ROOT / "runtime" / "fakes" / "scripts" / "cpu_relu.json").read_text())["turns"][1],
          {"content": "", "tool_calls": [{"name": "submit", "arguments": {}}]}]
"""Write the relu kernel and model_new.py, then submit: right for relu, wrong for swish."""


def test_policy_episodes_are_logged_and_tabled(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = env / "out-policy"
    problems = [str(PROBLEMS / "level1" / "01_relu.py"), str(PROBLEMS / "level1" / "02_swish.py")]

    async def go() -> int:
        async with scripted_server(SCRIPT) as url:
            return await anyio.to_thread.run_sync(lambda: main(
                ["bench", *problems, "--policy-url", url, "--model", "policy", "--attempts", "2", "--out", str(out),
                 *QUICK]))
    assert anyio.run(go) == 0
    rows = _rows_list(out)
    assert [(r.problem, r.attempt) for r in rows] == [("level1/01_relu", 0), ("level1/01_relu", 1),
                                                      ("level1/02_swish", 0), ("level1/02_swish", 1)]
    assert all(r.episode_id is not None and r.turns == 2 and r.episode_status == "submitted" for r in rows)
    assert all(r.prompt_tokens and r.completion_tokens for r in rows)
    assert [r.passed for r in rows] == [True, True, False, False]
    assert rows[2].reward == -1.0 and rows[2].fault is None
    table = (out / "table.md").read_text()
    assert "| pass@1 | pass@2 |" in table and "| **all** | 50.0% | 50.0% |" in table
    assert "agent episodes against `policy`" in table

    async def stored() -> list[tuple[int, str]]:
        async with Store.open(out / "episodes.db", readonly=True) as store:
            return [(e.id, e.status) for e in await store.list_episodes()]
    episodes = anyio.run(stored)
    assert sorted(e for e, _ in episodes) == sorted(r.episode_id for r in rows if r.episode_id is not None)
    assert {s for _, s in episodes} == {"submitted"}


def _rows_list(out: Path) -> list[BenchRow]:
    bench = read_results(out)
    assert bench is not None
    return list(bench.rows)


def test_daemon_runs_the_episodes_and_the_rows_come_from_its_store(tmp_path: Path) -> None:
    from tests.kagentd_harness import RELU, SUBMIT, Kagentd, Scripted, write_relu_turn

    scripted = Scripted(tmp_path, [write_relu_turn(), SUBMIT])
    d = Kagentd(tmp_path, scripted.base_url)
    d.start()
    out = tmp_path / "out-daemon"
    try:
        done = d.kagent("bench", str(RELU), "--daemon", d.url, "--out", str(out), "--backend", "cpu",
                        "--no-progress", timeout=280)
        assert done.returncode == 0, done.stdout + done.stderr
        (row,) = _rows_list(out)
        assert row.problem == "level1/01_relu" and row.passed and row.fault is None
        assert row.episode_status == "submitted" and row.turns == 2 and row.completion_tokens
        assert d.sql("SELECT status FROM episodes WHERE id = ?", (row.episode_id,)) == [("submitted",)]
        bench = read_results(out)
        assert bench is not None and bench.run.policy_url == f"kagentd at {d.url}"
    finally:
        d.kill()
        scripted.stop()


def test_a_rows_seconds_leave_out_its_wait_for_a_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every job of a bench run is in flight at once and waits for a slot: on the H100 the 15th
    matmul row read 243.5 s, the time since the run began. The wait is measured where the slot is
    asked for (LeasedEvaluator.slot_wait_s) and kept apart (queued_seconds); `seconds` is the row's own.
    The lower bound is the time the test held the slot after the evaluation asked for it: load only
    makes the wait longer."""
    from runtime.bench import Grader, Job
    from runtime.bench_sources import collect_problems
    from runtime.slots import EvalSlots, LeasedEvaluator
    from skills.evaluator.config import EvalConfig
    from tests.skills.test_profile_ab import run as eval_result

    slots = EvalSlots([None])
    monkeypatch.setattr(LeasedEvaluator, "compile", lambda self, ws: _none())
    monkeypatch.setattr(LeasedEvaluator, "_run", lambda self, ws, mode, cfg, pool: _result(eval_result(100.0)))
    grader = Grader(config=EvalConfig(), slots=slots, cache=None, compile_limiter=anyio.CapacityLimiter(1), compile_jobs=1)
    (problem,) = collect_problems([PROBLEMS / "level1" / "01_relu.py"])
    job = Job(problem=problem, attempt=0, solution=str(PROBLEMS / "solutions" / "cpu" / "level1" / "01_relu"))
    held: list[float] = []
    rows = []
    hold, asked = slots.lease, anyio.Event()

    @asynccontextmanager
    async def lease() -> AsyncIterator[int]:  # the grade's ask for the slot
        asked.set()
        async with hold() as index:
            yield index

    monkeypatch.setattr(slots, "lease", lease)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            async with hold():
                tg.start_soon(lambda: _append(rows, grader.grade(job)))
                await asked.wait()
                began = anyio.current_time()
                await anyio.sleep(0.3)
                held.append(anyio.current_time() - began)

    anyio.run(main)
    (row,) = rows
    assert row.queued_seconds is not None and row.queued_seconds >= held[0], (row.queued_seconds, held)
    assert 0 <= row.seconds < row.queued_seconds, row  # its own time: a workspace copy and a fake evaluation


async def _none() -> None:
    return None


async def _result(result: object) -> object:
    return result


async def _append(rows: list[object], aw: object) -> None:
    rows.append(await aw)  # type: ignore[misc]
