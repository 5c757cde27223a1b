"""profile's A/B and repeated forms on the cpu backend (skills/ab.py): a variant doing the work 200
times is slower beyond doubt, two copies of one solution show no clear difference, a failing
variant gets no ratio, and bad `against` values, out-of-range `repeats` and a `last_passing` before
any pass are refused with a message that says why. Each evaluation here costs ~12 s on 2 cores."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import msgspec
import pytest

from skills import load_skills
from skills.ab import ProfileRuns, compare, format_runs, typical
from skills.base import SkillContext, SkillResult, call_skill, get_skill, tool_schema
from skills.evaluator.baselines import JsonBaselineCache
from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.results import EvalResult, Flag, Interval, StageTimes, TimingResult
from skills.evaluator.sandbox import SandboxConfig
from skills.local_evaluator import LocalEvaluator
from skills.workspace import Workspace, WorkspaceConfig

ROOT = Path(__file__).resolve().parents[2]
RELU = ROOT / "problems" / "level1" / "01_relu.py"
SOLUTION = ROOT / "problems" / "solutions" / "cpu" / "level1" / "01_relu"
KERNEL = (SOLUTION / "kernels" / "relu.cpp").read_text()
# The same relu, its whole pass done 200 times per call: ~20x the solution's time at SMALL_SIZES,
# far beyond what load on a 2-core box moves a run (each pass is its own parallel region, so the
# compiler cannot fold the passes).
SLOW_KERNEL = KERNEL.replace("KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n",
                             "KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n"
                             "  for (int pass = 0; pass < 200; ++pass)\n")
assert SLOW_KERNEL != KERNEL


@pytest.fixture
def ctx(tmp_path: Path, build_cache_dir: Path) -> Iterator[SkillContext]:
    """A workspace holding the relu solution, graded by a cpu Evaluator."""
    load_skills()
    cfg = EvalConfig(backend="cpu", baselines=["eager"], timing=TimingConfig(target_seconds=0.05, max_calls=60, min_calls=10),
                     build=BuildConfig(backend="cpu", cache_dir=str(build_cache_dir)),
                     sandbox=SandboxConfig(allow_unsafe=True))
    evaluator = LocalEvaluator(RELU, cfg, cache=JsonBaselineCache(tmp_path / "baselines.json"))
    with Workspace.create(RELU.read_text(), config=WorkspaceConfig(root=str(tmp_path / "ws"))) as ws:
        ws.write_text("model_new.py", (SOLUTION / "model_new.py").read_text())
        ws.write_text("kernels/relu.cpp", KERNEL)
        context = SkillContext(workspace=ws, evaluator=evaluator)
        yield context
        context.snapshots.cleanup()


def variant(ws: Workspace, name: str, kernel: str) -> str:
    """A variant folder in the workspace (written past the skills, which write only the graded files)."""
    folder = ws.path / "variants" / name
    (folder / "kernels").mkdir(parents=True)
    (folder / "model_new.py").write_text((SOLUTION / "model_new.py").read_text())
    (folder / "kernels" / "relu.cpp").write_text(kernel)
    return f"variants/{name}"


def profile(ctx: SkillContext, **args: object) -> SkillResult:
    return anyio.run(call_skill, "profile", args, ctx)


@pytest.mark.slow  # six evaluations: ~65 s on 2 cores
def test_a_slower_variant_then_the_same_solution_twice(ctx: SkillContext) -> None:
    r = profile(ctx, against="last_passing")
    assert not r.ok and "no version has passed yet in this episode" in r.text and r.record is None

    slow = profile(ctx, against=variant(ctx.workspace, "slow", SLOW_KERNEL))
    rec = slow.record
    assert isinstance(rec, ProfileRuns) and slow.ok and rec.order == ["A", "B"], slow.text
    assert rec.ratio is not None and rec.verdict == "a_faster" and rec.ratio.low > 1.0, slow.text
    assert "A is faster; B takes" in slow.text and "B = the folder variants/slow/" in slow.text
    assert not rec.same_files and rec.runs[0].speedups and rec.against_runs[0].speedups
    assert "speedup vs eager" in slow.text and typical(rec) is rec.runs[0]
    kept = ctx.snapshots.last_passing  # every run of A passed: A is the last passing version
    assert kept is not None and ctx.snapshots.kept_by == "profile"

    # B is that copy: the same files, so no verdict but "no clear difference", whatever a load that
    # changed during the series did to the interval (on the loaded box it once read 0.71-0.99).
    same = profile(ctx, against="last_passing", repeats=2)
    rec = same.record
    assert isinstance(rec, ProfileRuns), same.text
    assert same.ok and rec.same_files and rec.order == ["A", "B", "B", "A"] and rec.stopped is None, same.text
    assert rec.ratio is not None and rec.verdict == "no_clear_difference", same.text
    assert len(rec.ratio.pairs) == 2
    assert "the same files as A" in same.text and "no clear difference" in same.text
    assert "B = the last passing version (kept by profile, evaluating call 2" in same.text
    assert not kept.exists() and ctx.snapshots.last_passing is not None  # the new A replaced it
    assert typical(rec) in rec.runs


def test_a_failing_variant_gets_no_ratio(ctx: SkillContext) -> None:
    """A that does not compile: reported with its compiler errors, B is not run, no ratio."""
    good = variant(ctx.workspace, "good", KERNEL)
    ctx.workspace.write_text("kernels/relu.cpp", KERNEL.replace("const float v = x[i];", "const float v = x[i]"))
    r = profile(ctx, against=good)
    rec = r.record
    assert isinstance(rec, ProfileRuns) and not r.ok, r.text
    assert rec.ratio is None and rec.verdict == "failed" and rec.order == ["A"] and not rec.against_runs
    assert "A: run 1: compile failed; no ratio is claimed" in r.text and "B: not run" in r.text
    assert "kernels/relu.cpp:" in r.text and "stopped after evaluation 1 of 2" in r.text
    assert ctx.snapshots.last_passing is None


def test_bad_against_and_repeats_are_refused(ctx: SkillContext, tmp_path: Path) -> None:
    ws = ctx.workspace
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "model_new.py").write_text("x = 1\n")
    os.symlink(tmp_path / "outside", ws.path / "link")
    (ws.path / "empty").mkdir()
    for against, message in [
        ("/etc", "absolute path"),
        ("../outside", "'..'"),
        ("link", "link is a symbolic link"),
        ("nowhere", "folder nowhere does not exist in the workspace"),
        ("empty", "empty holds no model_new.py"),
        ("model.py", "model.py is not a folder"),
        (".", "names the workspace itself"),
    ]:
        r = profile(ctx, against=against)
        assert not r.ok and r.record is None and r.text.startswith(f"profile: against={against!r}: "), r.text
        assert message in r.text, (against, r.text)
    for repeats in (0, 11):
        r = profile(ctx, repeats=repeats)
        assert not r.ok and "invalid arguments" in r.text and "repeats" in r.text, r.text
    params = tool_schema(get_skill("profile"))["function"]["parameters"]
    assert params["properties"]["repeats"]["minimum"] == 1 and params["properties"]["repeats"]["maximum"] == 10
    assert "last_passing" in params["properties"]["against"]["description"] and params["required"] == []


# -- the verdict, from made-up runs (no evaluation) ------------------------------------------


def run(median: float, *, flags: list[Flag] | None = None, fault: str | None = None) -> EvalResult:
    t = TimingResult(per_call_us=Interval(median=median, low=0.97 * median, high=1.03 * median, n=50),
                     kernel_us=None, calls=50, cv=0.01)
    return EvalResult(problem="level1/01_relu", problem_id="x", backend="cpu", mode="profile", compiled=True,
                      correct=fault is None, stage="done" if fault is None else "baseline",
                      error=fault, build=None, sets=[], flags=flags or [], candidate=t if fault is None else None,
                      eager=t, compiled_baseline=None, speedups=[], reward=None, reward_fn=None, precision="fp32",
                      gpu=None, torch_version="2", stages=StageTimes(), log="", environment_fault=fault)


def series(a: list[EvalResult], b: list[EvalResult], stopped: str | None = None, same: bool = False) -> ProfileRuns:
    ratio, verdict = compare(a, b, same)
    return ProfileRuns(against="variants/b", against_what="the folder variants/b/", same_files=same, planned=4,
                       order=(["A", "B", "B", "A"])[: len(a) + len(b)], runs=a, against_runs=b, ratio=ratio,
                       verdict=verdict, stopped=stopped)


def test_verdicts_from_pairs() -> None:
    faster = series([run(100.0), run(104.0)], [run(50.0), run(51.0)])
    assert faster.verdict == "b_faster" and faster.ratio is not None and faster.ratio.high < 1.0
    assert "B is faster" in format_runs(faster)
    # One pair says B is slower beyond its runs' noise, the other does not: no claim.
    mixed = series([run(100.0), run(100.0)], [run(120.0), run(101.0)])
    assert mixed.verdict == "no_clear_difference" and "interval holds 1" in format_runs(mixed)
    # The same files read faster under a load that changed during the series: still no claim.
    drift = series([run(140.0), run(100.0)], [run(100.0), run(90.0)], same=True)
    assert drift.verdict == "no_clear_difference" and drift.ratio is not None and drift.ratio.high < 1.0
    assert "the same files, so the interval's missing 1 is this machine's noise" in format_runs(drift)
    flagged = series([run(100.0)], [run(50.0, flags=[Flag(name="input_mutation", detail="wrote x")])], "B run 1")
    assert flagged.ratio is None and flagged.verdict == "failed"
    assert "B: run 1: flagged; no ratio is claimed" in format_runs(flagged)
    fault = series([run(100.0)], [run(0.0, fault="the judge ran out of memory")], "B run 1")
    text = format_runs(fault)
    assert fault.ratio is None and fault.verdict == "environment_fault"
    assert "environment fault, the machine's and not B's: the judge ran out of memory" in text
    repeated = msgspec.structs.replace(series([run(100.0), run(110.0)], []), against="", against_what="",
                                       same_files=None, planned=2, order=["A", "A"], ratio=None, verdict=None)
    text = format_runs(repeated)
    assert "2 passing runs of profile" in text and "100.0, 110.0 us, spread 10.0%" in text
