"""Precision parity by evidence (skills/evaluator/precision_code.py, skills/evaluator/harness/compare.py), on the CPU.

Fair fp32 kernels whose rounding differs from torch's (a left-to-right row sum over 65,536
columns, an online softmax) pass; the same kernels with _Float16/bf16 conversion instructions
get the strict budget and fail; rounding by bit-masking, which no instruction scan sees, still
fails where its error is far above fp32 rounding (elementwise, a matmul); a tf32 problem admits
TF32 operand rounding on the CPU; an fp32 reference that overflows never makes the budget
infinite. Real g++ builds and real judge/candidate workers (~3 s an evaluation); unit tests of
the scanner on tiny compiled libraries and on PTX text.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest
import torch

from skills.evaluator.build import BuildConfig, build
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.compare import (
    STRICT,
    Budget,
    BudgetUndefined,
    Reference,
    budget_for,
    compare_output,
    reduction_length,
)
from skills.evaluator.precision_code import ptx_reduced, scan_build, scan_library, x86_reduced
from skills.evaluator.problem import PROBLEMS_ROOT, load_problem
from skills.evaluator.results import EvalResult
from skills.evaluator.sandbox import SandboxConfig

CPU_FLAGS = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
needs_f16c = pytest.mark.skipif(" f16c" not in CPU_FLAGS, reason="the CPU has no F16C conversions")
needs_bf16 = pytest.mark.skipif(" avx512_bf16" not in CPU_FLAGS, reason="the CPU has no AVX512-BF16")

ROWSUM = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"Sum of each row of a wide matrix.\"\"\"

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1)


rows = 64
cols = 65536


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""

SOFTMAX = ROWSUM.replace("x.sum(dim=1)", "torch.softmax(x, dim=1)").replace(
    "Sum of each row of a wide matrix.", "Softmax of each row.").replace(
    "rows = 64\ncols = 65536", "rows = 32\ncols = 32768").replace("torch.randn(rows, cols)", "3 * torch.randn(rows, cols)")

MATMUL = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


M, K, N = 128, 512, 128
{precision}


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
"""

OVERFLOW = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"{doc}\"\"\"

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return {expr}


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
"""

ROWS_PY = """\
import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty({shape}, dtype=x.dtype)
        ops.{fn}(x, y, x.shape[0], x.shape[1])
        return y
"""

ROWSUM_SEQ = """\
#include "kagent.h"
// Left to right, one fp32 accumulator per row: the textbook loop.
KAGENT_EXPORT void rowsum(const float* x, float* y, int64_t rows, int64_t cols) {
#pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) {
    float acc = 0.f;
    for (int64_t c = 0; c < cols; ++c) acc += x[r * cols + c];
    y[r] = acc;
  }
}
"""

# The same loop with every term rounded through _Float16 (F16C vcvtps2ph/vcvtph2ps with -march=native).
ROWSUM_F16 = ROWSUM_SEQ.replace("acc += x[r * cols + c];", "acc += (float)(_Float16)x[r * cols + c];")

# The fair loop, plus an exported helper that converts to fp16: the library holds F16C instructions,
# so the strict budget applies even though the row sum itself is fp32.
ROWSUM_SEQ_WITH_F16 = ROWSUM_SEQ + """\
KAGENT_EXPORT void to_half(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (float)(_Float16)x[i];
}
"""

SOFTMAX_ONLINE = """\
#include "kagent.h"
#include <cmath>
// One pass for the max and the sum (the sum rescaled whenever the max grows), one for the output.
KAGENT_EXPORT void softmax(const float* x, float* y, int64_t rows, int64_t cols) {
#pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float m = -INFINITY, s = 0.f;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = LOAD(xr[c]);
      if (v > m) { s = s * expf(m - v) + 1.f; m = v; }
      else s += expf(v - m);
    }
    const float inv = 1.f / s;
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = expf(LOAD(xr[c]) - m) * inv;
  }
}
"""
SOFTMAX_FP32 = SOFTMAX_ONLINE.replace('#include "kagent.h"', '#include "kagent.h"\n#define LOAD(v) (v)')
SOFTMAX_F16 = SOFTMAX_ONLINE.replace('#include "kagent.h"', '#include "kagent.h"\n#define LOAD(v) ((float)(_Float16)(v))')
SOFTMAX_BF16 = SOFTMAX_ONLINE.replace(
    '#include "kagent.h"',
    '#include "kagent.h"\n#include <immintrin.h>\n#define LOAD(v) _mm_cvtsbh_ss(_mm_cvtness_sbh(v))')

MM_PY = """\
import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        c = torch.empty(a.shape[0], b.shape[1])
        ops.mm(a, b, c, a.shape[0], a.shape[1], b.shape[1])
        return c
"""

# Operands rounded to TF32 (10 mantissa bits, to nearest) with integer ops, products summed in fp32.
MM_TF32 = """\
#include "kagent.h"
#include <cstring>
static inline float tf32(float v) {
  uint32_t u; std::memcpy(&u, &v, 4); u = (u + 0x1000u) & 0xFFFFE000u; std::memcpy(&v, &u, 4); return v;
}
KAGENT_EXPORT void mm(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.f;
      for (int64_t p = 0; p < k; ++p) acc += tf32(a[i * k + p]) * tf32(b[p * n + j]);
      c[i * n + j] = acc;
    }
}
"""

COPY_PY = """\
import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        ops.ident(x, y, x.numel())
        return y
"""
IDENT = """\
#include "kagent.h"
KAGENT_EXPORT void ident(const float* x, float* y, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = x[i]; }
"""
# What torch's fp32 evaluation gives: inf for every x != 0 (x * 1e30 * 1e30 overflows).
LIKE_TORCH = IDENT.replace("y[i] = x[i];", "y[i] = x[i] * 1e30f * 1e30f / 1e30f / 1e30f;")

# Swish with its input rounded to bf16 by masking the low 16 bits: no conversion instruction.
SWISH_MASK = """\
#include "kagent.h"
#include <cmath>
#include <cstring>
KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits; std::memcpy(&bits, &x[i], 4); bits &= 0xFFFF0000u;
    float v; std::memcpy(&v, &bits, 4);
    y[i] = v / (1.f + expf(-v));
  }
}
"""
SWISH_PY = COPY_PY.replace("ops.ident", "ops.swish")


def _eval(tmp: Path, cache: Path, problem_src: str, model_new: str, kernels: dict[str, str],
          mode: str = "test") -> EvalResult:
    n = len(list(tmp.glob("ws*")))
    ws = tmp / f"ws{n}"
    (ws / "kernels").mkdir(parents=True)
    problem = tmp / f"problem{n}.py"
    problem.write_text(problem_src)
    shutil.copyfile(problem, ws / "model.py")
    (ws / "model_new.py").write_text(model_new)
    for name, text in kernels.items():
        (ws / "kernels" / name).write_text(text)
    config = EvalConfig(backend="cpu", baselines=["eager"], build=BuildConfig(backend="cpu", cache_dir=str(cache)),
                        sandbox=SandboxConfig(allow_unsafe=True))

    async def go() -> EvalResult:
        return await evaluate(problem, ws, mode=mode, config=config)  # type: ignore[arg-type]

    return anyio.run(go)


def _messages(r: EvalResult) -> list[str]:
    return [o.message for s in r.sets for o in s.outputs]


def _passes(r: EvalResult) -> None:
    assert r.error is None and r.correct and r.flags == [], (r.error, _messages(r))


def _fails(r: EvalResult, min_ratio: float = 4.0) -> None:
    assert r.error is None and not r.correct, (r.error, _messages(r))
    ratios = [o.err_ratio for s in r.sets for o in s.outputs]
    assert all(x is not None and x > min_ratio for x in ratios), _messages(r)


def test_sequential_rowsum_passes(tmp_path: Path, build_cache_dir: Path) -> None:
    _passes(_eval(tmp_path, build_cache_dir, ROWSUM, ROWS_PY.format(shape="x.shape[0]", fn="rowsum"),
                  {"rowsum.cpp": ROWSUM_SEQ}))


@needs_f16c
def test_rowsum_with_f16_instructions_gets_the_strict_budget(tmp_path: Path, build_cache_dir: Path) -> None:
    """The fair loop fails once the library holds an fp16 conversion (today's strict budget)."""
    r = _eval(tmp_path, build_cache_dir, ROWSUM, ROWS_PY.format(shape="x.shape[0]", fn="rowsum"),
              {"rowsum.cpp": ROWSUM_SEQ_WITH_F16})
    assert not r.correct and any("outside the error budget" in m or "exceeds the budget" in m for m in _messages(r))
    _fails(_eval(tmp_path, build_cache_dir, ROWSUM, ROWS_PY.format(shape="x.shape[0]", fn="rowsum"),
                 {"rowsum.cpp": ROWSUM_F16}))


def test_online_softmax_passes(tmp_path: Path, build_cache_dir: Path) -> None:
    _passes(_eval(tmp_path, build_cache_dir, SOFTMAX, ROWS_PY.format(shape="x.shape", fn="softmax"),
                  {"softmax.cpp": SOFTMAX_FP32}))


@needs_f16c
def test_online_softmax_through_f16_fails(tmp_path: Path, build_cache_dir: Path) -> None:
    _fails(_eval(tmp_path, build_cache_dir, SOFTMAX, ROWS_PY.format(shape="x.shape", fn="softmax"),
                 {"softmax.cpp": SOFTMAX_F16}))


@needs_bf16
def test_online_softmax_through_bf16_fails(tmp_path: Path, build_cache_dir: Path) -> None:
    _fails(_eval(tmp_path, build_cache_dir, SOFTMAX, ROWS_PY.format(shape="x.shape", fn="softmax"),
                 {"softmax.cpp": SOFTMAX_BF16}))


def test_bitmasked_bf16_elementwise_still_fails(tmp_path: Path, build_cache_dir: Path) -> None:
    """No conversion instruction, so the budget is fair; an elementwise op has n = 1 and bf16's
    rounding is ~1000x over fp32's."""
    src = (PROBLEMS_ROOT / "level1" / "02_swish.py").read_text()
    r = _eval(tmp_path, build_cache_dir, src, SWISH_PY, {"swish.cpp": SWISH_MASK}, mode="final")
    _fails(r, min_ratio=10.0)
    assert r.reward == -1.0


def test_tf32_problem_admits_tf32_rounding_on_the_cpu(tmp_path: Path, build_cache_dir: Path) -> None:
    """PRECISION = "tf32" allows operands rounded to TF32; on an fp32 problem the same kernel fails
    (bit-masked, so the fair budget, which is still ~100x below TF32's error at K = 512)."""
    _passes(_eval(tmp_path, build_cache_dir, MATMUL.format(precision='PRECISION = "tf32"'), MM_PY, {"mm.cpp": MM_TF32}))
    _fails(_eval(tmp_path, build_cache_dir, MATMUL.format(precision=""), MM_PY, {"mm.cpp": MM_TF32}), min_ratio=10.0)


def test_fp32_overflow_where_fp64_is_finite(tmp_path: Path, build_cache_dir: Path) -> None:
    """torch's fp32 answer is inf where fp64's is x: the budget comes from fp64 alone (finite),
    so the exact answer passes and torch's own inf fails."""
    problem = OVERFLOW.format(doc="x, through an fp32 overflow", expr="x * 1e30 * 1e30 / 1e30 / 1e30")
    _passes(_eval(tmp_path, build_cache_dir, problem, COPY_PY, {"ident.cpp": IDENT}))
    r = _eval(tmp_path, build_cache_dir, problem, COPY_PY, {"ident.cpp": LIKE_TORCH})
    assert r.error is None and not r.correct, _messages(r)


def test_exact_value_beyond_fp32_range_is_refused(tmp_path: Path, build_cache_dir: Path) -> None:
    """exp(x + 100) is ~1e43 in fp64: no fp32 answer is within a finite budget; refused, reward None."""
    problem = OVERFLOW.format(doc="beyond fp32's range", expr="torch.exp(x + 100.0)")
    r = _eval(tmp_path, build_cache_dir, problem, COPY_PY, {"ident.cpp": IDENT}, mode="final")
    assert r.reward is None and r.environment_fault is not None and r.stage == "problem", (r.error, r.stage)
    assert "problem refused" in (r.error or "") and "beyond" in (r.error or "")


# --------------------------------------------------------------------------- the budget alone


def test_budget_is_never_infinite() -> None:
    r64 = torch.randn(1000, dtype=torch.float64)
    r = r64.float()
    r[:10] = math.inf  # the fp32 reference overflowed there
    for budget in (STRICT, Budget(mode="fair", reduction_length=4096), Budget(tf32=True)):
        ref = Reference(r, r64, budget)
        assert bool(torch.isfinite(ref.budget).all()) and math.isfinite(ref.norm_budget)
        assert compare_output(0, r64.float(), ref).ok
        assert not compare_output(0, r, ref).ok
    with pytest.raises(BudgetUndefined, match="beyond"):
        Reference(r, torch.where(torch.isinf(r), 1e300, r64))


def test_fair_budget_grows_with_the_reduction_length() -> None:
    x = torch.randn(64, 65536)
    r64 = x.double().sum(1)
    seq = torch.from_numpy(x.numpy().cumsum(1, dtype="float32")[:, -1].copy())  # numpy: left to right in fp32
    assert not compare_output(0, seq, Reference(x.sum(1), r64)).ok
    assert compare_output(0, seq, Reference(x.sum(1), r64, Budget(mode="fair", reduction_length=65536))).ok


def test_budget_for() -> None:
    n = lambda: 512  # noqa: E731
    assert budget_for(True, [], "fp32", False, n) == Budget(mode="fair", reduction_length=512)
    assert budget_for(False, [], "fp32", False, n) == STRICT
    assert budget_for(True, ["fp16"], "fp32", False, n) == STRICT
    assert budget_for(True, ["tf32"], "fp32", False, n) == STRICT
    assert budget_for(True, ["tf32"], "tf32", False, n) == Budget(mode="fair", reduction_length=512, tf32=True)
    assert budget_for(True, ["bf16"], "tf32", True, n) == STRICT
    assert budget_for(True, [], "bf16", False, n) == STRICT
    assert budget_for(True, [], "fp32", False, lambda: None) == STRICT


@pytest.mark.parametrize(("name", "n"), [("level1/02_swish", 1), ("level1/15_sum_dim", 512),
                                         ("level1/27_square_matmul", 512), ("level1/35_conv2d_3x3", 144),
                                         ("level1/24_layer_norm", 2048), ("level1/06_softmax_temperature", 512)])
def test_reduction_length(name: str, n: int) -> None:
    lp = load_problem(PROBLEMS_ROOT / f"{name}.py", sizes="small")
    assert reduction_length(lambda: lp.Model(*lp.get_init_inputs()), lp.get_inputs) == n


# --------------------------------------------------------------------------- the scanner


def _lib(tmp: Path, cache: Path, source: str) -> Path:
    kdir = tmp / "kernels"
    kdir.mkdir(exist_ok=True)
    (kdir / "k.cpp").write_text(source)
    built = build(kdir, BuildConfig(backend="cpu", cache_dir=str(cache)))
    assert built.ok and built.lib_path, built.errors
    return Path(built.lib_path)


def test_scan_fp32_library_is_clean(tmp_path: Path, build_cache_dir: Path) -> None:
    lib = _lib(tmp_path, build_cache_dir, SOFTMAX_FP32)
    ev = scan_library(lib)
    assert ev.checked and ev.reduced == [] and ev.formats == [], ev


@needs_f16c
def test_scan_finds_f16c(tmp_path: Path, build_cache_dir: Path) -> None:
    ev = scan_library(_lib(tmp_path, build_cache_dir, ROWSUM_F16))
    # F16C's packed vcvtph2ps, or on a host with AVX512-FP16 the scalar vcvtsh2ss/vcvtss2sh the
    # compiler picks there for the same source (-march=native)
    assert ev.checked and ev.formats == ["fp16"], ev
    assert any(e.split()[0] in {"vcvtph2ps", "vcvtps2ph", "vcvtsh2ss", "vcvtss2sh"} for e in ev.reduced), ev


@needs_bf16
def test_scan_finds_bf16(tmp_path: Path, build_cache_dir: Path) -> None:
    ev = scan_library(_lib(tmp_path, build_cache_dir, SOFTMAX_BF16))
    assert ev.checked and "bf16" in ev.formats and any("bf16" in e for e in ev.reduced), ev


def test_scan_without_a_library_is_unchecked(tmp_path: Path) -> None:
    assert not scan_build(None, tmp_path, BuildConfig(backend="cpu")).checked


def test_x86_patterns() -> None:
    text = "\n".join(f"  {i:x}:\t{op} xmm0,xmm1" for i, op in enumerate([
        "vaddps", "vfmadd231ps", "vpshufb", "vphaddw", "vmovshdup", "vcvtps2pd", "vcvtps2ph", "vdpbf16ps",
        "vfmadd231ph", "vaddsh", "tdpbf16ps", "vpdpbusd", "vcvtne2ps2bf16", "vmovsh"]))
    found, formats = x86_reduced(text)
    assert set(found) == {"vcvtps2ph", "vdpbf16ps", "vfmadd231ph", "vaddsh", "tdpbf16ps", "vpdpbusd",
                          "vcvtne2ps2bf16", "vmovsh"}
    assert formats == {"fp16", "bf16", "int8"}


PTX = """\
.version 8.8
.target sm_90
.visible .entry k(.param .u64 k_param_0) {
	.reg .b16 	%rs<3>;
	.reg .f32 	%f<18>;
	ld.global.f32 	%f1, [%rd1];
	ld.global.u8 	%rs1, [%rd2];
	cvt.u32.u8 	%r1, %rs1;
	fma.rn.f32 	%f2, %f1, %f1, %f1;
	wmma.mma.sync.aligned.row.col.m16n16k8.f32.tf32.tf32.f32 {%f10}, {%r13}, {%r6}, {%f9};
	mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1}, {%r1}, {%r2}, {%f1};
	wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%f1}, %rd1, %rd2, 1, 1, 1, 0, 0;
	{ cvt.rn.bf16.f32 %rs1, %f1;}
	@%p1 cvt.rna.tf32.f32 %r3, %f2;
	cvt.rn.f16x2.f32 %r4, %f1, %f2;
	dp4a.s32.s32 %r5, %r1, %r2, %r3;
	mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r1}, {%r2}, {%r3}, {%r1};
	// cvt.rn.f16.f32 in a comment
	st.global.f32 	[%rd3], %f2;
}
"""


def test_ptx_patterns() -> None:
    found, formats = ptx_reduced(PTX)
    assert set(found) == {"wmma.mma.sync.aligned.row.col.m16n16k8.f32.tf32.tf32.f32",
                          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                          "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", "cvt.rn.bf16.f32",
                          "cvt.rna.tf32.f32", "cvt.rn.f16x2.f32", "dp4a.s32.s32",
                          "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"}
    assert formats == {"tf32", "bf16", "fp16", "int8"}
    assert ptx_reduced("\tfma.rn.f32 %f1, %f2, %f3, %f4;\n\tld.global.nc.f32 %f1, [%rd1];\n") == ({}, set())


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_nvcc_ptx_of_a_plain_kernel_is_clean(tmp_path: Path) -> None:
    """kagent.h pulls in cuda_fp16.h/cuda_bf16.h: their inline functions must not show up unused."""
    from skills.evaluator.precision_code import scan_cuda_sources

    kdir = tmp_path / "kernels"
    kdir.mkdir()
    (kdir / "k.cu").write_text('#include "kagent.h"\n__global__ void f(const float* a, float* c)'
                               ' { c[threadIdx.x] = a[threadIdx.x] * 2.f + 1.f; }\n'
                               'KAGENT_EXPORT void run(const float* a, float* c) { f<<<1, 32>>>(a, c); }\n')
    cfg = BuildConfig(backend="cuda", cache_dir=str(tmp_path / "cache"))
    ev = scan_cuda_sources(kdir, cfg)
    assert ev.checked and ev.reduced == [], ev
    (kdir / "k.cu").write_text((kdir / "k.cu").read_text().replace(
        "a[threadIdx.x] * 2.f", "__bfloat162float(__float2bfloat16(a[threadIdx.x]))"))
    ev = scan_cuda_sources(kdir, cfg)
    assert ev.checked and "bf16" in ev.formats, ev
    assert subprocess.run(["nvcc", "--version"], capture_output=True, check=False).returncode == 0


BIG_MEAN = '''import torch
import torch.nn as nn

N = 1 << 23


class Model(nn.Module):
    def forward(self, a, b):
        return torch.mean((a - b) ** 2)


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return []
'''
MEAN_NEW = '''import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        out = torch.empty((), dtype=a.dtype)
        ops.mse(a, b, out, a.numel())
        return out
'''
MEAN_CPP = """#include "kagent.h"
KAGENT_EXPORT void mse(const float* a, const float* b, float* out, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) { double d = (double)a[i] - (double)b[i]; s += d * d; }
  *out = (float)(s / (double)n);
}
"""
CONSTANT_CPP = """#include "kagent.h"
KAGENT_EXPORT void mse(const float* a, const float* b, float* out, int64_t n) { *out = 2.0f; }
"""


def test_a_long_mean_falls_back_to_the_strict_budget(tmp_path: Path) -> None:
    """An 8M-term mean varies across input sets by ~5e-4, less than the fair budget's room
    (8 u32 sqrt(n) ~ 1.4e-3): graded on the fair budget, the constant 2.0 would pass (seen on the
    H200 with level1/04_mse_loss). The judge then grades on the strict budget: the honest kernel
    passes, the constant fails, and the problem is not refused."""
    problem = tmp_path / "big_mse.py"
    problem.write_text(BIG_MEAN)
    cfg = EvalConfig(backend="cpu", baselines=["eager"], build=BuildConfig(backend="cpu", cache_dir=str(tmp_path / "b")))
    results = {}
    for name, cpp in (("honest", MEAN_CPP), ("constant", CONSTANT_CPP)):
        ws = tmp_path / name
        (ws / "kernels").mkdir(parents=True)
        shutil.copyfile(problem, ws / "model.py")
        (ws / "model_new.py").write_text(MEAN_NEW)
        (ws / "kernels" / "mse.cpp").write_text(cpp)
        results[name] = anyio.run(lambda ws=ws: evaluate(problem, ws, mode="test", config=cfg))
    assert results["honest"].correct, results["honest"].error or [o.message for s in results["honest"].sets for o in s.outputs]
    constant = results["constant"]
    assert constant.stage != "problem" and not constant.correct, constant.error
