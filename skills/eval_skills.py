"""The skills that build and grade: compile, run_tests, profile, ncu, submit.

They reach the evaluator through `SkillContext.evaluator`, an `Evaluator` (skills/evaluator/api.py)
bound to the episode's problem. Every evaluation grades a frozen snapshot of the workspace, so edits
the agent makes in the same turn cannot race the grader.
"""

from __future__ import annotations

from typing import Annotated

import anyio
import msgspec

from skills.ab import format_runs, passed_all, profile_runs
from skills.base import SkillArgs, SkillContext, SkillResult, register
from skills.evaluator.api import Evaluator
from skills.evaluator.ncu import format_report
from skills.evaluator.report import format_baselines, format_build, format_result
from skills.evaluator.results import Mode
from skills.workspace import MODEL_NEW_TEMPLATE, Workspace, WorkspaceError


def is_template(ws: Workspace) -> bool:
    """model_new.py is still the workspace's template: there is no ModelNew to run yet."""
    try:
        return ws.read_text("model_new.py") == MODEL_NEW_TEMPLATE
    except WorkspaceError:  # missing or unreadable: the evaluation says so
        return False


def _evaluator(ctx: SkillContext) -> Evaluator:
    if not isinstance(ctx.evaluator, Evaluator):
        raise RuntimeError("this skill needs an Evaluator in SkillContext.evaluator")
    return ctx.evaluator


class NoArgs(SkillArgs):
    """No arguments."""


class SubmitArgs(SkillArgs):
    summary: Annotated[str, msgspec.Meta(description="One or two sentences: what the kernels do and why they are fast.", max_length=2000)] = ""


class SubmitRecord(msgspec.Struct):
    """The agent's closing words; the final evaluation is stored separately."""

    summary: str
    """What the agent says it submitted."""


class Compile:
    name = "compile"
    description = ("Build kernels/ into the extension model_new.py imports. Returns compiler errors, or per kernel"
                   " registers, shared memory and spills. Cached by content: unchanged files do not recompile.")
    Args = NoArgs

    async def run(self, args: NoArgs, ctx: SkillContext) -> SkillResult:
        built = await _evaluator(ctx).compile(ctx.workspace.path)
        if built is None:
            return SkillResult(text="kernels/ holds no .cu or .cpp source: nothing to build", ok=False)
        return SkillResult(text=format_build(built), ok=built.ok, record=built)


class _Evaluate:
    name: str
    mode: Mode = "test"

    async def run(self, args: SkillArgs, ctx: SkillContext) -> SkillResult:
        # The copy graded is the copy kept: a pass makes it profile(against="last_passing")'s B.
        snaps = ctx.snapshots
        snaps.calls += 1
        copy = await anyio.to_thread.run_sync(snaps.take, ctx.workspace)
        result = await _evaluator(ctx).evaluate(copy, self.mode)
        ok = result.compiled and result.correct and not result.flags
        if ok and result.environment_fault is None:
            await anyio.to_thread.run_sync(snaps.keep, copy, self.name)
        else:
            await anyio.to_thread.run_sync(snaps.drop, copy)
        return SkillResult(text=format_result(result), ok=ok, record=result)


class RunTests(_Evaluate):
    name = "run_tests"
    description = ("Check ModelNew against Model on several fresh random input sets (compiles first)."
                   " Reports, per output, the error against an fp64 reference and whether it is within budget.")
    Args = NoArgs
    mode: Mode = "test"


class ProfileArgs(SkillArgs):
    against: Annotated[str, msgspec.Meta(
        description=('"" (default): profile the workspace alone. "last_passing": time the workspace (A)'
                     " against the last version of it that passed run_tests or profile (B), in turn"
                     " (A B B A ...). Or a folder of the workspace holding its own model_new.py and"
                     " optional kernels/: that variant is B. Says which is faster only when it is clear."),
        max_length=256)] = ""
    repeats: Annotated[int, msgspec.Meta(
        description=("Evaluations of the workspace (with against: A/B pairs), 1 to 10; each run is reported,"
                     " with the spread of the runs."), ge=1, le=10)] = 1


class Profile(_Evaluate):
    name = "profile"
    description = ("Time ModelNew (after a correctness check) against eager PyTorch and torch.compile:"
                   " median time per call with a 95% interval, and speedups. On the untouched template"
                   " it times the baselines alone: the times to beat. With against, it compares two"
                   " variants run in turn; with repeats, it runs several times.")
    Args = ProfileArgs
    mode: Mode = "profile"

    async def run(self, args: SkillArgs, ctx: SkillContext) -> SkillResult:
        assert isinstance(args, ProfileArgs)
        template = await anyio.to_thread.run_sync(is_template, ctx.workspace)
        if args.against and template:
            return SkillResult(text="profile: model_new.py is still the template: write ModelNew before"
                               " comparing it against another variant", ok=False)
        if args.against or (args.repeats > 1 and not template):
            ctx.snapshots.calls += 1
            rec = await profile_runs(_evaluator(ctx).evaluate, ctx.workspace, ctx.snapshots,
                                     against=args.against, repeats=args.repeats)
            return SkillResult(text=format_runs(rec), ok=passed_all(rec), record=rec)
        # The workflow's first step: the template's ModelNew would only fail at init (tens of
        # seconds, a FAILED call); the baselines it came for are timed without it.
        if not template:
            return await super().run(args, ctx)
        result = await _evaluator(ctx).baselines()
        text = format_baselines(result)
        if args.repeats > 1:
            text += "\n(repeats applies to ModelNew, which the template does not have: the baselines were timed once.)"
        return SkillResult(text=text, ok=result.environment_fault is None, record=result)


class Ncu:
    name = "ncu"
    description = ("Nsight Compute on one ModelNew call: per kernel duration, achieved occupancy, SM and DRAM"
                   " throughput, registers, shared memory and the top warp-stall reasons.")
    Args = NoArgs
    backends = ("cuda",)
    """Not offered on the cpu backend (skills.base.offered): there is no CPU profiler to run."""

    async def run(self, args: NoArgs, ctx: SkillContext) -> SkillResult:
        rep = await _evaluator(ctx).ncu(ctx.workspace.path)
        return SkillResult(text=format_report(rep), ok=rep.ok, record=rep)


class Submit:
    name = "submit"
    description = "End the episode. The final evaluation of the workspace as it is now decides the reward."
    Args = SubmitArgs

    async def run(self, args: SubmitArgs, ctx: SkillContext) -> SkillResult:
        return SkillResult(text="submitted; the final evaluation runs now", ok=True,
                           record=SubmitRecord(summary=args.summary), ends_episode=True)


COMPILE = register(Compile())
RUN_TESTS = register(RunTests())
PROFILE = register(Profile())
NCU = register(Ncu())
SUBMIT = register(Submit())
