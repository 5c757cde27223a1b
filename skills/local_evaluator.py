"""The evaluator an episode's skills call on this machine (skills/evaluator/api.py: `Evaluator`): the
evaluator's functions bound to one problem, each evaluation on a frozen snapshot of the workspace."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import anyio

from skills.evaluator.baselines import BaselineCache
from skills.evaluator.build import BuildConfig, BuildResult
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import build_workspace, evaluate, evaluate_baselines
from skills.evaluator.launch import (
    candidate_env,
    fill_scratch,
    make_scratch,
    sandbox_cmd,
    worker_env,
)
from skills.evaluator.ncu import NcuReport, find_ncu, ncu_command, run_ncu
from skills.evaluator.results import EvalResult, Mode
from skills.evaluator.sandbox import SandboxUnavailable
from skills.evaluator.static_check import check_workspace
from skills.workspace import Workspace


class LocalEvaluator:
    """Grades workspaces against one problem on this machine; shared by the skills of one episode."""

    def __init__(self, problem_path: str | Path, config: EvalConfig, *, cache: BaselineCache | None = None) -> None:
        self.problem_path = Path(problem_path).resolve()
        self.config = config
        self.cache = cache

    def build_config(self) -> BuildConfig:
        return self.config.build or BuildConfig(backend=self.config.backend)

    async def compile(self, workspace: Path) -> BuildResult | None:
        return await anyio.to_thread.run_sync(build_workspace, workspace, self.config)

    async def evaluate(self, workspace: Path, mode: Mode) -> EvalResult:
        with tempfile.TemporaryDirectory(prefix="kagent-snap-") as tmp:
            snap = await anyio.to_thread.run_sync(snapshot, workspace, Path(tmp) / "ws")
            return await evaluate(self.problem_path, snap, mode=mode, config=self.config, baseline_cache=self.cache)

    async def baselines(self) -> EvalResult:
        """The baselines alone, timed by the judge (profile() on the untouched template)."""
        return await evaluate_baselines(self.problem_path, config=self.config, baseline_cache=self.cache)

    async def ncu(self, workspace: Path) -> NcuReport:
        if self.config.backend != "cuda":
            return NcuReport(ok=False, kernels=[], error="ncu needs the cuda backend (this episode runs on the cpu)", seconds=0.0)
        exe = find_ncu()
        if exe is None:
            return NcuReport(ok=False, kernels=[], error="Nsight Compute (ncu) is not installed on this machine", seconds=0.0)
        flags = await anyio.to_thread.run_sync(check_workspace, workspace)
        if flags:
            why = "; ".join(f"{f.name}: {f.detail}" for f in flags)
            return NcuReport(ok=False, kernels=[], error=f"static checks failed: {why}", seconds=0.0)
        built = await self.compile(workspace)
        if built is not None and not built.ok:
            return NcuReport(ok=False, kernels=[], error="the kernels do not compile; run compile first", seconds=0.0)
        # ncu runs the candidate's code: the same sandbox as an evaluation's candidate worker.
        scratch = await anyio.to_thread.run_sync(make_scratch, self.config.sandbox)
        try:
            await anyio.to_thread.run_sync(fill_scratch, scratch, workspace, built)
            problem = scratch.root / "exchange" / "problem.py"
            await anyio.to_thread.run_sync(shutil.copyfile, self.problem_path, problem)
            try:
                cmd = sandbox_cmd(self.config, scratch, ncu_command(problem, scratch.workspace, scratch.lib, built, exe))
            except SandboxUnavailable as exc:
                return NcuReport(ok=False, kernels=[], error=str(exc), seconds=0.0)
            env = candidate_env(self.config, worker_env(self.config, scratch.root))
            return await run_ncu(cmd, env=env, run_as=scratch.run_as)
        finally:
            await anyio.to_thread.run_sync(shutil.rmtree, scratch.root, True)


def snapshot(workspace: Path, dest: Path) -> Path:
    """A frozen copy of the workspace in the empty folder `dest` (what an evaluation grades)."""
    return Workspace.open(workspace).snapshot(dest).path
