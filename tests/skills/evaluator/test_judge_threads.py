"""The judge times the baselines in the state a plain torch process has, the state the candidate's
process is in (issue: fair work is never punished; the candidate and its baselines are timed under
the same conditions).

The judge used to run its work between the candidate's calls under `torch.set_num_threads(1)` and
restore the count after. torch's set_num_threads also turns MKL's dynamic threading off, for good:
from the first checked call on, every MKL vector op in the judge (tanh, exp, log, ... through VML)
forked its OpenMP workers, even for 512 elements, and with OMP_WAIT_POLICY=PASSIVE (both workers'
setting on the cpu) each fork woke sleeping threads. The eager baseline of a model of many small
VML ops read 4-5x slower than the same code in the candidate's process (2026-12-07, this 2-core
box: a 60-layer tanh MLP at batch 8 read 5.5 ms in the judge, 1.3 ms in the candidate and in a
plain process), so the problem's own Model, graded as its solution, was paid reward 3 at 4.5x
eager. The judge no longer touches the thread count (its OpenMP workers sleep after each region
with PASSIVE, which is what the count of one was for)."""

from __future__ import annotations

from pathlib import Path

from tests.skills.evaluator.test_evaluate_cpu import MakeWs, run_eval

# 150 small tanh calls a forward: each one an MKL VML call of 512 elements (on x86 torch builds).
CHAIN = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        for _ in range(150):
            y = torch.tanh(y) + x
        return y


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return []
"""

MODEL_NEW = CHAIN.split("\n\n\ndef get_inputs")[0].replace("class Model(", "class ModelNew(")


def test_the_problems_own_model_reads_about_1x_eager_on_the_cpu(tmp_path: Path, new_workspace: MakeWs,
                                                               build_cache_dir: Path) -> None:
    """The same code as candidate and as eager baseline, timed in rounds: about 1x. Before, 19.6x
    (the baseline's VML calls forked threads each time); the bound leaves room for a loaded box,
    whose load slows both sides of a round alike."""
    problem = tmp_path / "tanh_chain.py"
    problem.write_text(CHAIN)
    ws = new_workspace(MODEL_NEW, None, problem=problem)
    r = run_eval(problem, ws, build_cache_dir, mode="final", torch_allowed=True, baselines=["eager"])
    assert r.error is None, r.error
    assert r.correct, r.error
    (sp,) = r.speedups
    assert sp.baseline == "eager"
    assert 0.3 < sp.value < 2.5, (sp.value, sp.round_values)
