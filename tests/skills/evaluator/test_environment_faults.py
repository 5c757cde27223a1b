"""An evaluation the environment could not finish is never the agent's failure (issue: fair work is
never punished): a problem too big for the machine is refused in seconds with what it needs and
what is free, a judge that dies or a sandbox that cannot start gives reward None, and the episode
that ends on such a final evaluation is stored not trainable, saying why. The candidate's own
faults stay -1."""

from __future__ import annotations

import time
from pathlib import Path

import anyio

from runtime.episode import run_episode
from runtime.fakes.scripted import scripted_server
from runtime.policy import make_policy
from runtime.settings import EpisodeLimits, PolicyConfig
from runtime.store import ProblemRow, Store
from skills import load_skills
from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.problem import source_id
from skills.evaluator.sandbox import SandboxConfig
from skills.local_evaluator import LocalEvaluator
from skills.workspace import WorkspaceConfig
from tests.conftest import PROBLEMS, MakeWs

HUGE = '''import torch
import torch.nn as nn

N = 1 << 22


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(N, 1 << 16)]  # 1 TiB of fp32


def get_init_inputs():
    return []
'''

DIES = '''import os
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        if os.environ.get("KAGENT_PREINIT") is not None:  # only in the judge's process
            os._exit(9)
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
'''

RELU_NEW = '''import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        ops.relu(x, y, x.numel())
        return y
'''
RELU_CPP = ('#include "kagent.h"\nKAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n'
            '  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n')


def _cfg(tmp_path: Path, **kw: object) -> EvalConfig:
    return EvalConfig(backend="cpu", baselines=["eager"], build=BuildConfig(backend="cpu", cache_dir=str(tmp_path / "b")),
                      timing=TimingConfig(target_seconds=0.05, max_calls=60, min_calls=10), **kw)  # type: ignore[arg-type]


def _problem(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return path


def test_a_problem_too_big_for_the_machine_is_refused_in_seconds(tmp_path: Path, new_workspace: MakeWs) -> None:
    problem = _problem(tmp_path, "huge_relu", HUGE)
    ws = new_workspace(RELU_NEW, {"relu.cpp": RELU_CPP}, problem=problem)
    began = time.monotonic()
    result = anyio.run(lambda: evaluate(problem, ws, mode="final", config=_cfg(tmp_path)))
    assert time.monotonic() - began < 60  # planned on meta tensors: nothing is allocated
    assert result.reward is None and result.stage == "problem"
    assert result.environment_fault is not None and "GiB of host memory" in result.environment_fault
    assert "is free" in result.environment_fault and "SMALL_SIZES" in result.environment_fault
    # the cpu backend asks for small sizes; a file without SMALL_SIZES is refused at its own
    assert "at its own sizes (it has no SMALL_SIZES)" in result.environment_fault
    assert result.error is not None and "environment fault" in result.error


def test_a_dying_judge_is_the_environments_fault(tmp_path: Path, new_workspace: MakeWs) -> None:
    problem = _problem(tmp_path, "dies", DIES)
    ws = new_workspace(RELU_NEW, {"relu.cpp": RELU_CPP}, problem=problem)
    result = anyio.run(lambda: evaluate(problem, ws, mode="final", config=_cfg(tmp_path)))
    assert result.reward is None
    assert result.environment_fault is not None and "judge" in result.environment_fault


def test_a_missing_sandbox_is_the_environments_fault(tmp_path: Path, new_workspace: MakeWs) -> None:
    ws = new_workspace(RELU_NEW, {"relu.cpp": RELU_CPP})
    problem = ws / "model.py"
    cfg = _cfg(tmp_path, sandbox=SandboxConfig(mode="bwrap", bwrap="no-such-bwrap", allow_unsafe=False))
    result = anyio.run(lambda: evaluate(problem, ws, mode="final", config=cfg))
    assert result.reward is None and result.environment_fault is not None
    assert "bubblewrap" in result.environment_fault


def test_the_candidates_own_crash_stays_minus_one(tmp_path: Path, new_workspace: MakeWs) -> None:
    crash = RELU_NEW.replace("ops.relu(x, y, x.numel())", "ops.relu(x, y, x.numel() * 1000000)")
    ws = new_workspace(crash, {"relu.cpp": RELU_CPP})
    result = anyio.run(lambda: evaluate(ws / "model.py", ws, mode="final", config=_cfg(tmp_path)))
    assert result.reward == -1.0 and result.environment_fault is None


def test_an_episode_graded_on_an_environment_fault_is_not_trainable(tmp_path: Path) -> None:
    load_skills()
    source = HUGE
    problem = ProblemRow(id=source_id(source), name="huge_relu", source="kagent", level=1, code=source)
    script = [{"content": "", "tool_calls": [{"name": "write_file", "arguments": {"path": "model_new.py", "content": RELU_NEW}},
                                             {"name": "write_file", "arguments": {"path": "kernels/relu.cpp", "content": RELU_CPP}}]},
              {"content": "", "tool_calls": [{"name": "submit"}]}]
    cfg = _cfg(tmp_path, sandbox=SandboxConfig(allow_unsafe=True))
    out: dict[str, object] = {}

    async def main() -> None:
        async with scripted_server(script) as url, Store.open(tmp_path / "k.db") as store:
            pol = make_policy(PolicyConfig(base_url=url, max_tokens=4096, backoff_s=0.01))
            await store.upsert_problem(problem)
            try:
                out["outcome"] = await run_episode(
                    store=store, policy=pol, problem=problem, source=source,
                    make_evaluator=lambda path: LocalEvaluator(path, cfg, cache=store.baseline_cache()),
                    limits=EpisodeLimits(), workspace=WorkspaceConfig(root=str(tmp_path / "ws")))
                out["detail"] = await store.get_episode(1)
            finally:
                await pol.aclose()

    anyio.run(main)
    outcome, detail = out["outcome"], out["detail"]
    ep = detail.episode  # type: ignore[attr-defined]
    assert outcome.status == "submitted" and outcome.reward is None  # type: ignore[attr-defined]
    assert ep.status == "submitted" and ep.reward is None and ep.trainable is False
    assert ep.error is not None and ep.error.startswith("not trainable: the final evaluation hit an environment fault")
    assert "GiB of host memory" in ep.error


NEAR_CONSTANT = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x * 1e-7, dim=-1)  # every row ~1/1024, sets differ by ulps


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return []
'''


def test_a_near_constant_output_is_refused_not_graded(tmp_path: Path, new_workspace: MakeWs) -> None:
    """Issue 13: outputs equal across sets up to rounding pass the old bit-equality rule, and a
    constant answer then scores as correct; such a problem is refused (reward None)."""
    problem = _problem(tmp_path, "near_constant", NEAR_CONSTANT)
    ws = new_workspace(RELU_NEW, {"relu.cpp": RELU_CPP}, problem=problem)
    result = anyio.run(lambda: evaluate(problem, ws, mode="final", config=_cfg(tmp_path)))
    assert result.reward is None and result.stage == "problem"
    assert result.error is not None and "(nearly) the same for different inputs" in result.error


RANDOM_STATE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """KernelBench level3/35_LSTM's pattern: a missing state drawn at random inside forward."""

    def forward(self, x):
        h0 = torch.randn(x.shape[1])
        return torch.relu(x + h0)


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return []
'''


def test_a_forward_that_draws_random_numbers_is_refused_not_graded(tmp_path: Path, new_workspace: MakeWs) -> None:
    """Its output is not a function of its inputs (the candidate's draws are its own), so no answer
    can be checked: refused with that reason (reward None), where the fp64 reference crashed on
    the H200 (fp32 h0 beside fp64 inputs) and, had it not, any kernel would have failed."""
    problem = _problem(tmp_path, "random_state", RANDOM_STATE)
    ws = new_workspace(RELU_NEW, {"relu.cpp": RELU_CPP}, problem=problem)
    result = anyio.run(lambda: evaluate(problem, ws, mode="test", config=_cfg(tmp_path)))
    assert result.reward is None and result.stage == "problem", (result.stage, result.error)
    assert result.error is not None and "draws random numbers" in result.error, result.error


def test_the_memory_plan_counts_a_shape_set_only_where_the_problem_has_one(tmp_path: Path) -> None:
    """A KernelBench file has no SMALL_SIZES, so no shape set is drawn: the plan must not count one
    (it refused InstanceNorm at 150 GiB planned with 139 free; 124 without it)."""
    from skills.evaluator.harness.judge import planned_sets
    from skills.evaluator.problem import load_problem

    plain = _problem(tmp_path, "no_small_sizes", HUGE)
    loaded = load_problem(plain, sizes="default")
    assert getattr(loaded.module, "SMALL_SIZES", None) is None
    assert planned_sets(loaded, 1, shape_check=True) == 1
    assert planned_sets(loaded, 3, shape_check=True) == 3
    bundled = load_problem(PROBLEMS / "level1" / "01_relu.py", sizes="default")
    assert getattr(bundled.module, "SMALL_SIZES", None)
    assert planned_sets(bundled, 1, shape_check=True) == 2
    assert planned_sets(bundled, 1, shape_check=False) == 1
