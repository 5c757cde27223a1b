"""GPU tests (run on an H200 with `pytest -m gpu`): the reference solutions, and CUDA bad input.

Each test runs real evaluations: judge and candidate workers, nvcc builds, the timing loop.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from skills.baselines import JsonBaselineCache
from skills.build import BuildConfig
from skills.evaluate import EvalConfig, evaluate
from skills.harness.protocol import TimingConfig
from skills.results import EvalResult, Mode

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted(p.parent for p in (ROOT / "problems/solutions/cuda").glob("level*/*/model_new.py"))
SWISH = ROOT / "problems/level1/02_swish.py"


def _cfg(tmp: Path, **kw: object) -> EvalConfig:
    return EvalConfig(backend="cuda", baselines=["eager"], build=BuildConfig(backend="cuda", cache_dir=str(tmp / "build")),
                      timing=TimingConfig(target_seconds=0.2), **kw)  # type: ignore[arg-type]


def _eval(problem: Path, ws: Path, tmp: Path, mode: Mode = "final", **kw: object) -> EvalResult:
    cache = JsonBaselineCache(tmp / "baselines.json")
    return anyio.run(lambda: evaluate(problem, ws, mode=mode, config=_cfg(tmp, **kw), baseline_cache=cache))


def _problem_of(ws: Path) -> Path:
    return ROOT / "problems" / ws.parent.name / f"{ws.name}.py"


@pytest.mark.parametrize("ws", SOLUTIONS, ids=[f"{p.parent.name}/{p.name}" for p in SOLUTIONS])
def test_reference_solution_passes_and_beats_eager(ws: Path, tmp_path: Path) -> None:
    r = _eval(_problem_of(ws), ws, tmp_path)
    assert r.error is None, r.error
    assert r.correct and not r.flags, (r.flags, [o.message for s in r.sets for o in s.outputs])
    assert r.candidate is not None and r.candidate.kernel_us is not None
    assert r.reward is not None and r.reward >= 2.0, r.speedups


def _ws(tmp: Path, cu: str, forward: str) -> Path:
    ws = tmp / "ws"
    (ws / "kernels").mkdir(parents=True)
    (ws / "kernels" / "k.cu").write_text('#include "kagent.h"\n' + cu)
    (ws / "model_new.py").write_text(
        "import torch\nfrom kagent_ext import ops\n\n"
        "class ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        "    def forward(self, x):\n" + "".join(f"        {line}\n" for line in forward.splitlines()))
    return ws


SWISH_FWD = "y = torch.empty_like(x)\nops.swish(x, y, x.numel())\nreturn y"
KERNEL_HEAD = "__global__ void k(const float* x, float* y, long n) {\n  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;\n"


def test_illegal_memory_access_is_a_structured_failure(tmp_path: Path) -> None:
    cu = KERNEL_HEAD + "  if (i < n) y[i + (1L << 40)] = x[i];\n}\n" \
        "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }\n"
    r = _eval(SWISH, _ws(tmp_path, cu, SWISH_FWD), tmp_path)
    assert not r.correct and r.reward == -1.0
    assert r.error is not None and "illegal memory access" in r.error.lower(), r.error


def test_endless_kernel_is_killed(tmp_path: Path) -> None:
    cu = KERNEL_HEAD + "  volatile int spin = 1; while (spin) {}\n  if (i < n) y[i] = x[i];\n}\n" \
        "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }\n"
    r = _eval(SWISH, _ws(tmp_path, cu, SWISH_FWD), tmp_path, timeout_run_s=20.0)
    assert r.reward == -1.0 and r.error is not None and "timed out" in r.error, r.error


FAIR_SWISH = KERNEL_HEAD + "  if (i < n) { float v = x[i]; y[i] = v * (1.0f / (1.0f + expf(-v))); }\n}\n"


def test_side_stream_is_flagged(tmp_path: Path) -> None:
    cu = FAIR_SWISH + (
        "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) {\n"
        "  static cudaStream_t s = nullptr;\n"
        "  if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n"
        "  for (int r = 0; r < 20; ++r) k<<<(n + 255) / 256, 256, 0, s>>>(x, y, n);\n}\n")
    r = _eval(SWISH, _ws(tmp_path, cu, SWISH_FWD), tmp_path)
    assert "unsynchronized_work" in {f.name for f in r.flags}, (r.flags, r.candidate)
    assert r.reward == -1.0


def test_fp16_downcast_fails_precision_parity(tmp_path: Path) -> None:
    cu = "#include <cuda_fp16.h>\n" + KERNEL_HEAD + (
        "  if (i < n) { __half v = __float2half(x[i]); float f = __half2float(v);\n"
        "    y[i] = __half2float(__float2half(f * (1.0f / (1.0f + expf(-f))))); }\n}\n"
        "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }\n")
    r = _eval(SWISH, _ws(tmp_path, cu, SWISH_FWD), tmp_path, mode="test")
    assert not r.correct, [o.message for s in r.sets for o in s.outputs]


def test_torch_fallback_with_decoy_kernel_is_flagged(tmp_path: Path) -> None:
    cu = FAIR_SWISH + "KAGENT_EXPORT void noop(const float* x, float* y, int64_t n) { k<<<1, 32>>>(x, y, 0); }\n"
    fwd = "y = torch.empty_like(x)\nops.noop(x, y, 0)\nreturn x * torch.sigmoid(x)"
    r = _eval(SWISH, _ws(tmp_path, cu, fwd), tmp_path)
    assert "torch_fallback" in {f.name for f in r.flags}, r.flags
    assert r.reward == -1.0


def test_fair_swish_fixture_passes(tmp_path: Path) -> None:
    """The fair kernel the cheats above imitate."""
    cu = FAIR_SWISH + "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }\n"
    r = _eval(SWISH, _ws(tmp_path, cu, SWISH_FWD), tmp_path)
    assert r.correct and not r.flags and r.reward is not None and r.reward >= 1.0, (r.error, r.flags)
