"""GPU test (run on an H200 with `pytest -m gpu`): the composite reward's memory penalty on cuda.

ModelNew's footprint is the NVML figure of the candidate's process tree during its calls, less a
CUDA context's (the parent's reading, from outside the candidate's process); the eager baseline's
is the judge's own allocator peak over its timed loop, plus the weights. ReLU on 8192 x 8192
floats: eager takes its 256 MiB output; a kernel that writes a scratch tensor of 4x that in forward
(1 GiB) is far past 2x eager's + 256 MiB, the fair kernel (its output, the harness's kernels
loaded into its context) well inside it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from skills.evaluator.baselines import JsonBaselineCache
from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.paired import PairedConfig
from skills.evaluator.report import format_result
from skills.evaluator.results import EvalResult
from skills.evaluator.reward import MIB, CompositeConfig, composite, over_memory

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[3]
RELU = ROOT / "problems/level1/01_relu.py"
OUTPUT = 8192 * 8192 * 4

KERNEL = """#include "kagent.h"
__global__ void k(const float* x, float* y, float* s, long n, int copies) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i] > 0.f ? x[i] : 0.f;
  for (int c = 0; c < copies; ++c) s[c * n + i] = v;  // the scratch, written
  y[i] = v;
}
KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) { k<<<(n + 255) / 256, 256>>>(x, y, y, n, 0); }
KAGENT_EXPORT void relu_scratch(const float* x, float* y, float* s, int64_t n) {
  k<<<(n + 255) / 256, 256>>>(x, y, s, n, 4);
}
"""
LEAN = "y = torch.empty_like(x)\nops.relu(x, y, x.numel())\nreturn y"
SCRATCH = "y = torch.empty_like(x)\ns = torch.empty(4 * x.numel(), device=x.device)\nops.relu_scratch(x, y, s, x.numel())\nreturn y"


def _ws(tmp: Path, forward: str) -> Path:
    ws = tmp / "ws"
    (ws / "kernels").mkdir(parents=True)
    (ws / "kernels" / "k.cu").write_text(KERNEL)
    (ws / "model_new.py").write_text(
        "import torch\nfrom kagent_ext import ops\n\n"
        "class ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        "    def forward(self, x):\n" + "".join(f"        {line}\n" for line in forward.splitlines()))
    return ws


def _eval(ws: Path, tmp: Path) -> EvalResult:
    cfg = EvalConfig(backend="cuda", baselines=["eager"], reward_fn="composite", paired=PairedConfig(min_rounds=0),
                     build=BuildConfig(backend="cuda", cache_dir=str(tmp / "build")), timing=TimingConfig(target_seconds=0.2))
    cache = JsonBaselineCache(tmp / "baselines.json")
    return anyio.run(lambda: evaluate(RELU, ws, mode="final", config=cfg, baseline_cache=cache))


@pytest.mark.parametrize(("forward", "penalised"), [(LEAN, False), (SCRATCH, True)], ids=["lean", "scratch_4x"])
def test_memory_penalty_on_cuda(forward: str, penalised: bool, tmp_path: Path) -> None:
    r = _eval(_ws(tmp_path, forward), tmp_path)
    sys.stdout.write(format_result(r) + f"\n{r.memory}\n")  # the figures, for docs/reward.md (pytest -rA)
    assert r.error is None and r.correct and not r.flags, (r.error, r.flags)
    m = r.memory
    assert m is not None and m.candidate_method == "nvml" and m.baseline_method == "allocator", m
    assert m.candidate_call_bytes is not None and m.eager_bytes is not None and m.limit_bytes is not None, m
    assert m.eager_bytes >= OUTPUT, m  # eager's output counts
    assert m.candidate_call_bytes >= (5 if penalised else 1) * OUTPUT, m  # ModelNew's output (and scratch) count
    assert m.limit_bytes == int(2 * m.eager_bytes + 256 * MIB), m
    assert over_memory(r) is penalised, (m, format_result(r))
    unpenalised = composite(r, CompositeConfig(memory_slack_cuda_mib=1e9))
    assert r.reward == pytest.approx(unpenalised - 0.5 if penalised else unpenalised), (r.reward, m)
    assert ("memory penalty" in format_result(r)) is penalised
