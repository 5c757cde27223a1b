"""The `Evaluator` Protocol: what the skills and the runtime call to build and grade an episode's
workspaces against its problem. skills/local_evaluator.py is the one that runs here; the runtime's
LeasedEvaluator (runtime/slots.py) and RayEvaluator (runtime/ray_executor.py) hold one of those
and route its work through their slots or actors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from skills.evaluator.build import BuildResult
    from skills.evaluator.config import EvalConfig
    from skills.evaluator.ncu import NcuReport
    from skills.evaluator.results import EvalResult, Mode


@runtime_checkable
class Evaluator(Protocol):
    """Grades workspaces against one problem; shared by the skills of one episode."""

    config: EvalConfig
    """How its evaluations run (the episode reads the backend from it, and grades an untouched workspace with it)."""

    async def compile(self, workspace: Path) -> BuildResult | None:
        """Build the workspace's kernels/; None when it holds no sources (model_new.py builds its own)."""

    async def evaluate(self, workspace: Path, mode: Mode) -> EvalResult:
        """Grade a frozen snapshot of the workspace in `mode` (test, profile or final)."""

    async def baselines(self) -> EvalResult:
        """The problem's baselines alone, timed by the judge (profile() on the untouched template)."""

    async def ncu(self, workspace: Path) -> NcuReport:
        """Nsight Compute on one call of the workspace's ModelNew."""
