"""GPU tests of the trust boundary (docs/trust-boundary.md), run on an H200 with `pytest -m gpu`:
the frame-replay and partial-output cheats of tests/skills/evaluator/test_trust_boundary.py on CUDA (the judge's
arena is a cuMemAlloc block shared by IPC handle), and the parent's load_inline cache on CUDA."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from skills.evaluator.baselines import JsonBaselineCache
from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.results import EvalResult, Mode
from tests.skills.evaluator.test_trust_boundary import PARTIAL_PY, REPLAY_PY

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[3]
SWISH = ROOT / "problems/level1/02_swish.py"
SWISH_CU = """#include "kagent.h"
__global__ void k(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; y[i] = v * (1.0f / (1.0f + expf(-v))); }
}
KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }
"""
# The cheats call ops.relu(x, y, n); this kernel computes swish under that name.


def _eval(tmp: Path, model_new: str, mode: Mode = "final", kernels: bool = True, **kw: object) -> EvalResult:
    ws = tmp / "ws"
    (ws / "kernels").mkdir(parents=True)
    if kernels:
        (ws / "kernels" / "k.cu").write_text(SWISH_CU)
    (ws / "model_new.py").write_text(model_new)
    cfg = EvalConfig(backend="cuda", baselines=["eager"], build=BuildConfig(backend="cuda", cache_dir=str(tmp / "build")),
                     timing=TimingConfig(target_seconds=0.2), **kw)  # type: ignore[arg-type]
    cache = JsonBaselineCache(tmp / "baselines.json")
    return anyio.run(lambda: evaluate(SWISH, ws, mode=mode, config=cfg, baseline_cache=cache))


def test_frame_and_gc_replay_finds_nothing_on_cuda(tmp_path: Path) -> None:
    r = _eval(tmp_path, REPLAY_PY, static_checks=False)
    assert r.error is None or "forward failed" not in r.error, r.error
    assert r.sets and not any(s.ok for s in r.sets) and r.reward == -1.0, (r.error, r.sets)


def test_partial_output_after_correctness_is_caught_on_cuda(tmp_path: Path) -> None:
    r = _eval(tmp_path, PARTIAL_PY, static_checks=False)
    assert r.error is None, r.error
    assert r.sets and all(s.ok for s in r.sets)
    assert "timed_output_mismatch" in {f.name for f in r.flags} and r.reward == -1.0, r.flags


INLINE_SWISH = '''import torch
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
__global__ void k(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i]; y[i] = v * (1.0f / (1.0f + expf(-v))); }
}
torch::Tensor swish(torch::Tensor x) {
  auto y = torch::empty_like(x);
  long n = x.numel();
  k<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
ext = load_inline(name="kagent_gpu_swish_inline", cpp_sources="torch::Tensor swish(torch::Tensor x);",
                  cuda_sources=CUDA_SRC, functions=["swish"])


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return ext.swish(x)
'''


def test_load_inline_cache_on_cuda(tmp_path: Path) -> None:
    """A CUDA load_inline solution builds in its evaluation's own folder, passes, is kept by the
    parent; the next evaluation of the same code imports it from the cache."""
    cache = tmp_path / "ext-cache"
    first = _eval(tmp_path / "a", INLINE_SWISH, mode="test", kernels=False, extension_cache_dir=str(cache))
    again = _eval(tmp_path / "b", INLINE_SWISH, mode="test", kernels=False, extension_cache_dir=str(cache))
    assert first.correct and again.correct, (first.error, again.error)
    assert first.stages.workers_ready is not None and again.stages.workers_ready is not None
    print(f"cuda load_inline import: cold {first.stages.workers_ready:.1f} s, cached {again.stages.workers_ready:.1f} s")
    assert again.stages.workers_ready < 0.5 * first.stages.workers_ready
