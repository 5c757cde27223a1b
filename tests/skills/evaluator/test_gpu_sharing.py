"""The shared-GPU check on the H200 (`pytest -m gpu`; skills/evaluator/sharing.py): another job's
kernels during the timed calls make the evaluation an environment fault (reward None) instead of
flags against a fair kernel; the candidate's own GPU process, double-forked, is not taken for one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from skills.evaluator.baselines import JsonBaselineCache
from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.results import EvalResult
from tests.skills.evaluator.test_gpu_trust import SWISH, SWISH_CU

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[3]
SPIN = ("import time, torch\nx = torch.randn(4096, 4096, device='cuda')\ntorch.cuda.synchronize()\nprint('ready', flush=True)\n"
        "end = time.time() + {seconds}\nwhile time.time() < end:\n    x = torch.tanh(x @ x * 1e-4)\n    torch.cuda.synchronize()\n")
FAIR = """import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        ops.relu(x, y, x.numel())
        return y
"""
# The same kernel, and a double-forked GPU spinner started from __init__ (static checks off: the
# rule book would refuse subprocess): its work must count as the candidate's, never as a co-tenant's.
FORKS_A_SPINNER = """import subprocess
import sys
import torch
from kagent_ext import ops

SPIN = {spin!r}


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        launcher = "import os, subprocess, sys; subprocess.Popen([sys.executable, '-c', %r], start_new_session=True); os._exit(0)"
        subprocess.run([sys.executable, "-c", launcher % SPIN], check=True)

    def forward(self, x):
        y = torch.empty_like(x)
        ops.relu(x, y, x.numel())
        return y
"""


def _eval(tmp: Path, model_new: str, **kw: object) -> EvalResult:
    ws = tmp / "ws"
    (ws / "kernels").mkdir(parents=True)
    (ws / "kernels" / "k.cu").write_text(SWISH_CU)
    (ws / "model_new.py").write_text(model_new)
    cfg = EvalConfig(backend="cuda", baselines=["eager"], build=BuildConfig(backend="cuda", cache_dir=str(tmp / "build")),
                     timing=TimingConfig(target_seconds=0.5), **kw)  # type: ignore[arg-type]
    return anyio.run(lambda: evaluate(SWISH, ws, mode="final", config=cfg,
                                      baseline_cache=JsonBaselineCache(tmp / "baselines.json")))


@pytest.fixture
def cotenant() -> Iterator[int]:
    """Another job on the same GPU: a process of its own (not the evaluation's) saturating the SMs."""
    proc = subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=240)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()  # else its pipe is closed by the collector: an unraisable ResourceWarning


def test_a_cotenant_makes_an_environment_fault_not_a_flag(tmp_path: Path, cotenant: int) -> None:
    r = _eval(tmp_path, FAIR)
    assert r.environment_fault is not None, (r.reward, r.flags, r.error)
    assert "shared" in r.environment_fault and f"pid {cotenant}" in r.environment_fault, r.environment_fault
    assert r.reward is None and not r.flags, (r.reward, r.flags)


def test_the_check_off_leaves_the_skewed_result(tmp_path: Path, cotenant: int) -> None:
    """What the check prevents (measured, not required): with it off the same fair kernel is graded
    under the co-tenant's load; the result is recorded either way, a fault never."""
    r = _eval(tmp_path, FAIR, shared_gpu_check=False)
    assert r.environment_fault is None, r.environment_fault
    print(f"check off: reward {r.reward}, flags {[f.name for f in r.flags]}, speedups "
          f"{[(s.baseline, round(s.value, 2)) for s in r.speedups]}")


def test_the_candidates_own_spinner_is_not_a_cotenant(tmp_path: Path) -> None:
    r = _eval(tmp_path, FORKS_A_SPINNER.format(spin=SPIN.format(seconds=30)), static_checks=False)
    assert r.environment_fault is None, r.environment_fault  # a -1 cannot be turned into None this way
    assert r.flags or (r.reward is not None and r.reward <= 1.0), (r.reward, r.flags, r.error)
