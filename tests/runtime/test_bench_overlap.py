"""`kagent bench`'s load_inline builds run beside the grading, and Ctrl-C keeps what was graded.

The builds and evaluations here are stand-ins (no compiler, no worker): what is under test is the
order: a job's final evaluation starts only after its own build, and while later builds still run.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
import pytest

import runtime.bench as bench_mod
import runtime.bench_cli as bench_cli
from runtime.bench import Grader, Job, run_jobs
from runtime.bench_rows import BenchInvocation, BenchRow, read_results
from runtime.bench_sources import BenchProblem
from runtime.cli import main
from runtime.slots import EvalSlots
from skills.evaluator.config import EvalConfig
from skills.evaluator.prebuild import Prebuilt

ROOT = Path(__file__).resolve().parents[2]
INLINE = "from torch.utils.cpp_extension import load_inline\n_ext = load_inline(name='x', cpp_sources='')\n"


def _jobs(tmp_path: Path, n: int) -> list[Job]:
    jobs = []
    for i in range(n):
        sol = tmp_path / f"p{i}.py"
        sol.write_text(INLINE)
        problem = BenchProblem(path=str(sol), name=f"level1/p{i}", level=1, id=f"id{i}")
        jobs.append(Job(problem=problem, attempt=0, solution=str(sol)))
    return jobs


def test_each_evaluation_waits_for_its_own_build_and_runs_beside_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Job 0's build ends first and its evaluation runs while job 1's build is still held open;
    job 1's evaluation starts only once its build has ended."""
    release = {0: threading.Event(), 1: threading.Event()}
    events: list[str] = []

    def build_ahead(job: Job, config: EvalConfig) -> Prebuilt:
        i = int(job.problem.name[-1])
        assert release[i].wait(30), f"build {i} never released"
        events.append(f"built {i}")
        return Prebuilt(ok=True, seconds=0.5, detail="")

    async def evaluate(self: Grader, job: Job) -> tuple[str, float]:
        i = int(job.problem.name[-1])
        events.append(f"graded {i}")
        if i == 0:
            release[1].set()  # job 1's build may end only after job 0 was graded: they overlap
        return job.problem.name, 0.0  # the result, and no wait for a slot

    def row(result: str, **fields: object) -> BenchRow:
        return BenchRow(**fields, reward=1.0, passed=True, compiled=True, correct=True)  # type: ignore[arg-type]

    monkeypatch.setattr(bench_mod, "build_ahead", build_ahead)
    monkeypatch.setattr(bench_mod, "row_from_result", row)
    monkeypatch.setattr(Grader, "_evaluate", evaluate)
    config = EvalConfig(backend="cpu", extension_cache_dir=str(tmp_path / "ext"))
    grader = Grader(config=config, slots=EvalSlots([None]), cache=None,
                    compile_limiter=anyio.CapacityLimiter(2), compile_jobs=2)
    jobs = _jobs(tmp_path, 2)
    assert grader.expect_builds(jobs) == jobs
    rows: list[BenchRow] = []

    class Sink:
        async def add(self, row: BenchRow) -> None:
            rows.append(row)

    async def on(_: object) -> None:
        return None

    async def main_() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(grader.prebuild, jobs, on)
            release[0].set()
            await run_jobs(jobs, grade=grader.grade, results=Sink(), on_row=on, limit=2)  # type: ignore[arg-type]

    anyio.run(main_)
    assert events == ["built 0", "graded 0", "built 1", "graded 1"], events
    assert sorted(r.problem for r in rows) == ["level1/p0", "level1/p1"]
    assert all(r.prebuild_seconds == 0.5 for r in rows), rows


def test_grade_waits_for_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Grader.grade itself holds the final evaluation until the job's build has ended."""
    started: list[bool] = []

    async def evaluate(self: Grader, job: Job) -> object:
        started.append(True)
        raise RuntimeError("stop here")

    monkeypatch.setattr(Grader, "_evaluate", evaluate)
    config = EvalConfig(backend="cpu", extension_cache_dir=str(tmp_path / "ext"))
    grader = Grader(config=config, slots=EvalSlots([None]), cache=None,
                    compile_limiter=anyio.CapacityLimiter(1), compile_jobs=1)
    [job] = _jobs(tmp_path, 1)
    grader.expect_builds([job])

    async def main_() -> None:
        async with anyio.create_task_group() as tg:
            async def grade() -> None:
                with pytest.raises(RuntimeError):
                    await grader.grade(job)
            tg.start_soon(grade)
            await anyio.sleep(0.2)
            assert not started  # still waiting for the build
            grader.built[(job.problem.id, 0)].set()
    anyio.run(main_)
    assert started == [True]


def test_ctrl_c_keeps_the_rows_writes_the_table_and_says_how_to_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """An interrupt after one row: exit 130, that row in results.json and table.md, a line on how to
    go on (the traceback of the interrupted task group is not shown)."""
    async def execute(args: object, config: object, source: object, jobs: list[Job], results: bench_mod.Results) -> None:
        results.start(BenchInvocation(started=time.time(), slots=["cpu"], jobs=len(jobs)))
        job = jobs[0]
        await results.add(_passed(job))
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_cli, "_execute", execute)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("KAGENT_CONFIG", raising=False)
    out = tmp_path / "out"
    argv = ["bench", str(ROOT / "problems" / "level1"), "--reference", "--backend", "cpu", "--no-progress",
            "--out", str(out)]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "interrupted: 1 row(s)" in err and "run the same command again to resume" in err, err
    assert "Traceback" not in err
    bench = read_results(out)
    assert bench is not None and len(bench.rows) == 1
    [inv] = bench.run.invocations
    assert inv.graded == 1 and inv.jobs > 1 and inv.interrupted and inv.seconds is not None
    table = (out / "table.md").read_text()
    assert "level 1" in table and f"1 of {inv.jobs} rows" in table and "interrupted (a rerun resumes)" in table
    # The resumed call grades the rest; the table sums the rows and wall time of both calls.
    monkeypatch.setattr(bench_cli, "_execute", finish)
    assert main(argv) == 0
    bench = read_results(out)
    assert bench is not None and [(s.graded, s.interrupted) for s in bench.run.invocations] == \
        [(1, True), (inv.jobs - 1, False)]
    seconds = sum(s.seconds or 0.0 for s in bench.run.invocations)
    assert f"in all: {inv.jobs} rows graded in {seconds:.0f} s of wall time over 2 invocations" in \
        (out / "table.md").read_text()


def _passed(job: Job) -> BenchRow:
    """A passed row for the job, graded in 1 s."""
    return BenchRow(problem=job.problem.name, problem_id=job.problem.id, level=job.problem.level, attempt=0,
                    solution=job.solution, reward=1.0, passed=True, compiled=True, correct=True, seconds=1.0)


async def finish(args: object, config: object, source: object, jobs: list[Job], results: bench_mod.Results) -> None:
    """`_execute` that grades every job at once (a row each, 1 s)."""
    results.start(BenchInvocation(started=time.time(), slots=["cpu"], jobs=len(jobs)))
    for job in jobs:
        await results.add(_passed(job))
