"""skills/evaluator/build.py and the kagent_ext shim, with the real compilers (no mocks)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import torch

from skills.evaluator.build import (
    BuildConfig,
    BuildResult,
    build,
    detect_arch,
    parse_ptxas,
    parse_signatures,
    trim_diagnostics,
)

SHIM = Path(__file__).resolve().parents[3] / "skills" / "evaluator" / "harness" / "shim"
if str(SHIM) not in sys.path:
    sys.path.insert(0, str(SHIM))
import kagent_ext  # noqa: E402

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

CPU_SRC = """\
#include "kagent.h"
// scale: y = a * x (KAGENT_EXPORT void in_a_comment(int) is ignored)
KAGENT_EXPORT void scale(const float* __restrict__ x, float* y, float a, int64_t n) {
    #pragma omp parallel for if (n > 100000)
    for (int64_t i = 0; i < n; ++i) y[i] = a * x[i];
}

KAGENT_EXPORT void iota(int32_t* out, int n, bool reverse) {
    for (int i = 0; i < n; ++i) out[i] = reverse ? n - 1 - i : i;
}
"""

CU_SRC = """\
#include "kagent.h"

template <int BLOCK>
__global__ void block_sum_k(const float* __restrict__ x, float* out, int64_t n) {
    __shared__ float buf[BLOCK];
    int64_t i = blockIdx.x * (int64_t)BLOCK + threadIdx.x;
    buf[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = buf[0];
}

// threads lets the test request an invalid launch (2048 threads per block).
KAGENT_EXPORT void block_sum(const float* x, float* out, int64_t n, int threads) {
    int64_t blocks = (n + 255) / 256;
    if (threads == 256) block_sum_k<256><<<blocks, 256>>>(x, out, n);
    else block_sum_k<256><<<blocks, threads>>>(x, out, n);
}

KAGENT_EXPORT void to_half(const float* x, half* y, int64_t n) {}
"""


def write(kdir: Path, files: dict[str, str]) -> Path:
    kdir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (kdir / name).write_text(text)
    return kdir


def cpu_config(tmp_path: Path, **kw: object) -> BuildConfig:
    return BuildConfig(backend="cpu", cache_dir=str(tmp_path / "cache"), **kw)  # type: ignore[arg-type]


def bind(result: BuildResult, device: str) -> None:
    assert result.ok and result.lib_path, result.errors
    kagent_ext._bind(result.lib_path, msgspec.to_builtins(result.functions), device)


@pytest.fixture(autouse=True)
def unbind() -> Iterator[None]:
    yield
    kagent_ext._reset()


# ----------------------------------------------------------------------------- cpu backend


def test_cpu_build_call_and_cache(tmp_path: Path) -> None:
    kdir = write(tmp_path / "kernels", {"ops.cpp": CPU_SRC, "notes.txt": "ignored"})
    first = build(kdir, cpu_config(tmp_path))
    assert first.ok, first.errors
    assert (first.flavour, first.cached, first.errors) == ("c_abi", False, "")
    assert [f.name for f in first.functions] == ["scale", "iota"]
    assert [(p.name, p.ctype, p.kind, p.dtype) for p in first.functions[0].params] == [
        ("x", "const float*", "ptr", "float32"), ("y", "float*", "ptr", "float32"),
        ("a", "float", "scalar", "float"), ("n", "int64_t", "scalar", "int"),
    ]
    assert [u.file for u in first.units] == ["kernels/ops.cpp"]

    bind(first, "cpu")
    x = torch.arange(1000, dtype=torch.float32)
    y = torch.empty_like(x)
    kagent_ext.ops.scale(x, y, 2.5, x.numel())
    torch.testing.assert_close(y, x * 2.5)
    kagent_ext.ops.scale(x, y, 3, x.numel())  # an int fills a float parameter
    torch.testing.assert_close(y, x * 3)
    out = torch.empty(5, dtype=torch.int32)
    kagent_ext.ops.iota(out, 5, True)
    assert out.tolist() == [4, 3, 2, 1, 0]

    second = build(kdir, cpu_config(tmp_path))
    assert second.ok and second.cached and all(u.cached for u in second.units)
    assert second.lib_path == first.lib_path and second.key == first.key
    assert second.seconds < first.seconds / 5


def test_cpu_edit_one_of_two_recompiles_only_it(tmp_path: Path) -> None:
    a = '#include "kagent.h"\nKAGENT_EXPORT void fa(float* y) { y[0] = 1.f; }\n'
    b = '#include "kagent.h"\nKAGENT_EXPORT void fb(float* y) { y[0] = 2.f; }\n'
    kdir = write(tmp_path / "kernels", {"a.cpp": a, "b.cpp": b})
    assert build(kdir, cpu_config(tmp_path)).ok
    write(kdir, {"b.cpp": b.replace("2.f", "3.f")})
    again = build(kdir, cpu_config(tmp_path))
    assert again.ok and not again.cached
    assert {u.file: u.cached for u in again.units} == {"kernels/a.cpp": True, "kernels/b.cpp": False}

    bind(again, "cpu")
    y = torch.zeros(1)
    kagent_ext.ops.fb(y)
    assert y.item() == 3.0


def test_header_change_invalidates_units(tmp_path: Path) -> None:
    src = '#include "kagent.h"\n#include "k.h"\nKAGENT_EXPORT void f(float* y) { y[0] = K; }\n'
    kdir = write(tmp_path / "kernels", {"a.cpp": src, "k.h": "#define K 1.f\n"})
    assert build(kdir, cpu_config(tmp_path)).ok
    write(kdir, {"k.h": "#define K 7.f\n"})
    again = build(kdir, cpu_config(tmp_path))
    assert again.ok and not again.units[0].cached
    bind(again, "cpu")
    y = torch.zeros(1)
    kagent_ext.ops.f(y)
    assert y.item() == 7.0


def test_ops_argument_errors(tmp_path: Path) -> None:
    result = build(write(tmp_path / "kernels", {"ops.cpp": CPU_SRC}), cpu_config(tmp_path))
    bind(result, "cpu")
    ops = kagent_ext.ops
    x = torch.zeros(8)
    y = torch.zeros(8)
    cases = [
        ((x.double(), y, 1.0, 8), r"scale: argument 0 \('x'.*float32.*float64"),
        ((x, torch.zeros(8, 2).t(), 1.0, 8), r"argument 1 \('y'.*contiguous"),
        ((x, torch.empty(8, device="meta"), 1.0, 8), r"argument 1 \('y'.*on cpu.*meta"),
        ((3, y, 1.0, 8), r"argument 0 \('x'.*tensor \(or None for a null pointer\), got int"),
        ((x, y, 1.0), r"ops.scale\(x, y, a, n\) takes 4 arguments, got 3"),
        ((x, y, torch.tensor(1.0), 8), r"argument 2 \('a'.*got a tensor"),
        ((x, y, 1.0, 8.0), r"argument 3 \('n'.*expected a Python int, got float"),
        ((x.tolist(), y, 1.0, 8), r"argument 0 \('x'.*got list"),
    ]
    for args, pattern in cases:
        with pytest.raises(TypeError, match=pattern):
            ops.scale(*args)
    with pytest.raises(OverflowError, match="argument 1 \\('n'"):
        ops.iota(torch.zeros(1, dtype=torch.int32), 2**40, False)
    with pytest.raises(AttributeError, match="available: iota, scale"):
        _ = ops.nope


def test_unbound_ops_raise(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="no kernels are loaded: build kernels/ first"):
        kagent_ext.ops.scale()


def test_ops_call_overhead(tmp_path: Path) -> None:
    src = '#include "kagent.h"\nKAGENT_EXPORT void noop(const float* x, float* y, int64_t n) {}\n'
    bind(build(write(tmp_path / "kernels", {"n.cpp": src}), cpu_config(tmp_path)), "cpu")
    x, y, noop = torch.zeros(4), torch.zeros(4), kagent_ext.ops.noop
    n = 20_000
    t0 = time.perf_counter()
    for _ in range(n):
        noop(x, y, 4)
    per_call_us = (time.perf_counter() - t0) / n * 1e6
    # Target is < 5 us; the bound is loose so a busy CI machine does not flake.
    assert per_call_us < 25, per_call_us


def test_syntax_error_is_trimmed(tmp_path: Path) -> None:
    src = CPU_SRC.replace("y[i] = a * x[i];", "y[i] = a * x[i]")
    kdir = write(tmp_path / "kernels", {"x.cpp": src})
    result = build(kdir, cpu_config(tmp_path))
    assert not result.ok and result.lib_path is None
    assert "kernels/x.cpp:5:" in result.errors and "error" in result.errors
    assert str(tmp_path) not in result.errors
    assert result.units[0].ok is False
    assert len(result.errors) <= 4000


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"a.cpp": '#include "kagent.h"\nKAGENT_EXPORT void f(float** p) {}\n'},
         r"kernels/a.cpp:2: function 'f' parameter 0 \('float\*\* p'\) has an unsupported type"),
        ({"a.cpp": '#include "kagent.h"\nKAGENT_EXPORT void f(std::string s) {}\n'},
         r"parameter 0 .* unsupported type; allowed: pointers"),
        ({"a.cpp": '#include "kagent.h"\nKAGENT_EXPORT int f(int n) { return n; }\n'},
         r"kernels/a.cpp:2: KAGENT_EXPORT must be followed by `void NAME\(PARAMS\)`"),
        ({"a.cpp": '#include "kagent.h"\nextern "C" void f(float* y) {}\n'},
         "no KAGENT_EXPORT function found"),
        ({"a.cpp": '#include "kagent.h"\nKAGENT_EXPORT void f(float* y) {}\n',
          "b.cpp": '#include "kagent.h"\nKAGENT_EXPORT void f(int* y) {}\n'},
         "'f' is defined twice"),
        ({"a.cu": "__global__ void k() {}\n"}, "the cpu backend builds .cpp files only"),
        ({"readme.md": "nothing"}, "no sources"),
    ],
)
def test_source_errors(tmp_path: Path, files: dict[str, str], message: str) -> None:
    result = build(write(tmp_path / "kernels", files), cpu_config(tmp_path))
    assert not result.ok and result.lib_path is None
    assert re.search(message, result.errors), result.errors


def test_compiler_timeout_is_a_clear_error(tmp_path: Path) -> None:
    kdir = write(tmp_path / "kernels", {"ops.cpp": CPU_SRC})
    result = build(kdir, cpu_config(tmp_path, timeout_s=0.001))
    assert not result.ok
    assert "kernels/ops.cpp: error: the compiler timed out after 0.001 s" in result.errors
    assert not any((tmp_path / "cache" / "obj").rglob("*.o"))  # a timeout is never cached


def test_missing_compiler_is_a_clear_error(tmp_path: Path) -> None:
    kdir = write(tmp_path / "kernels", {"ops.cpp": CPU_SRC})
    result = build(kdir, cpu_config(tmp_path, cxx="/nonexistent/g++"))
    assert not result.ok and "compiler not found: /nonexistent/g++" in result.errors


def test_link_error_names_the_source(tmp_path: Path) -> None:
    src = '#include "kagent.h"\nextern "C" void missing();\nKAGENT_EXPORT void f() { missing(); }\n'
    result = build(write(tmp_path / "kernels", {"m.cpp": src}), cpu_config(tmp_path))
    assert not result.ok and result.units[0].ok
    assert "undefined reference to `missing'" in result.errors
    assert "kernels/m.cpp" in result.errors and "cache" not in result.errors


# ----------------------------------------------------------------------------- pure parsers


def test_parse_signatures_variants() -> None:
    src = b"""
    /* KAGENT_EXPORT void commented_out(int x) */
    KAGENT_EXPORT void f(const half * __restrict__ a, float const* b, __nv_bfloat16 *c,
                         long long d, size_t e, const int n, double, std::int64_t* g);
    KAGENT_EXPORT void f(const half * __restrict__ a, float const* b, __nv_bfloat16 *c,
                         long long d, size_t e, const int n, double, std::int64_t* g) {}
    KAGENT_EXPORT void g(void) {}
    const char* s = "KAGENT_EXPORT // not a comment";
    """
    sigs = parse_signatures({"a.cu": src})
    assert [s.name for s in sigs] == ["f", "g"]
    assert [(p.name, p.ctype, p.dtype) for p in sigs[0].params] == [
        ("a", "const __half*", "float16"), ("b", "const float*", "float32"),
        ("c", "__nv_bfloat16*", "bfloat16"), ("d", "long long", "int"),
        ("e", "size_t", "int"), ("n", "int", "int"), ("arg6", "double", "float"),
        ("g", "int64_t*", "int64"),
    ]
    assert sigs[1].params == []


def test_trim_caps_and_deduplicates() -> None:
    one = "kernels/a.cu(3): error: identifier \"x\" is undefined\n  int y = x;\n          ^\n"
    many = "".join(one.replace("(3)", f"({i})") for i in range(200)) + one
    out = trim_diagnostics(many + "200 errors detected in the compilation of \"a.cu\".\n",
                           "error", 1000)
    assert len(out) < 1100
    assert out.startswith('kernels/a.cu(0): error: identifier "x" is undefined\n  int y = x;')
    assert out.rstrip().endswith("more errors]") and "detected in the compilation" not in out
    gcc = (
        "In file included from kernels/h.cuh:1,\n                 from kernels/a.cpp:2:\n"
        "kernels/h2.cuh: In function 'int g()':\n"
        "kernels/h2.cuh:1:25: error: 'u' was not declared in this scope\n"
        "    1 | inline int g() { return u; }\n      |                         ^\n"
    )
    assert trim_diagnostics(gcc, "error", 4000) == (
        "In file included from kernels/h.cuh:1\n"
        "kernels/h2.cuh:1:25: error: 'u' was not declared in this scope\n"
        "    1 | inline int g() { return u; }\n      |                         ^"
    )
    assert trim_diagnostics(gcc, "warning", 4000) == ""


def test_parse_ptxas() -> None:
    text = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z6relu_kPKfPfl' for 'sm_90'
ptxas info    : Function properties for _Z6relu_kPKfPfl
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers, 16 bytes cumulative stack size
ptxas info    : Compiling entry function 'plain' for 'sm_90'
ptxas info    : Function properties for plain
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 1 barriers, 2048 bytes smem, 368 bytes cmem[0]
"""
    got = [msgspec.structs.astuple(r) for r in parse_ptxas(text)]
    assert got == [("_Z6relu_kPKfPfl", 40, 0, 16, 8, 4), ("plain", 8, 2048, 0, 0, 0)]


def test_detect_arch_without_gpu() -> None:
    arch = detect_arch()
    assert arch is None or arch.startswith("sm_")


# ----------------------------------------------------------------------------- cuda backend


def cuda_config(tmp_path: Path) -> BuildConfig:
    return BuildConfig(backend="cuda", cache_dir=str(tmp_path / "cache"),
                       arch=detect_arch() or "sm_90")


@needs_nvcc
def test_cuda_build_resources_and_exports(tmp_path: Path) -> None:
    host = (
        '#include "kagent.h"\n'
        "KAGENT_EXPORT void zero_half(__half* y, int64_t n) { cudaMemset(y, 0, n * 2); }\n"
    )
    kdir = write(tmp_path / "kernels", {"sum.cu": CU_SRC, "host.cpp": host})
    result = build(kdir, cuda_config(tmp_path))
    assert result.ok, result.errors
    assert [f.name for f in result.functions] == ["zero_half", "block_sum", "to_half"]
    assert [u.file for u in result.units] == ["kernels/host.cpp", "kernels/sum.cu",
                                              "kagent_runtime.cu"]
    (kernel,) = result.resources
    assert kernel.kernel == "void block_sum_k<256>(float const*, float*, long)"
    assert kernel.registers > 0 and kernel.shared_bytes == 1024
    assert result.lib_path is not None
    nm = subprocess.run(["nm", "-D", "--defined-only", result.lib_path], capture_output=True,
                        text=True, check=True).stdout
    exported = {line.split()[-1] for line in nm.splitlines()}
    assert {"block_sum", "to_half", "zero_half", "kagent_last_error",
            "kagent_error_string"} <= exported

    again = build(kdir, cuda_config(tmp_path))
    assert again.cached and again.resources == result.resources


@needs_nvcc
def test_cuda_syntax_error_is_trimmed(tmp_path: Path) -> None:
    kdir = write(tmp_path / "kernels", {"sum.cu": CU_SRC.replace("buf[0];", "buf[0]")})
    result = build(kdir, cuda_config(tmp_path))
    assert not result.ok
    assert result.errors.startswith("kernels/sum.cu(14): error: expected a \";\"")
    assert "detected in the compilation" not in result.errors
    assert str(tmp_path) not in result.errors


@pytest.mark.gpu
def test_gpu_run_and_launch_error(tmp_path: Path) -> None:
    kdir = write(tmp_path / "kernels", {"sum.cu": CU_SRC})
    result = build(kdir, cuda_config(tmp_path))
    bind(result, "cuda")
    x = torch.randn(1000, device="cuda")
    out = torch.empty(4, device="cuda")
    kagent_ext.ops.block_sum(x, out, x.numel(), 256)
    expected = torch.nn.functional.pad(x, (0, 24)).view(4, 256).sum(dim=1)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)
    with pytest.raises(TypeError, match="on cuda"):
        kagent_ext.ops.block_sum(x.cpu(), out, x.numel(), 256)
    # CUDA 13 reports 2048 threads per block as "invalid argument", older runtimes as
    # "invalid configuration argument".
    with pytest.raises(RuntimeError, match="kernel block_sum failed: invalid (argument|config)"):
        kagent_ext.ops.block_sum(x, out, x.numel(), 2048)
    # A launch-configuration error is not sticky: the next good call works.
    kagent_ext.ops.block_sum(x, out, x.numel(), 256)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-4)


# ----------------------------------------------------------------------------- torch flavour


@pytest.mark.slow
def test_torch_flavour_cpu(tmp_path: Path) -> None:
    src = """\
#include <torch/extension.h>
torch::Tensor add_one(torch::Tensor x) { return x + 1; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("add_one", &add_one); }
"""
    kdir = write(tmp_path / "kernels", {"ext.cpp": src})
    result = build(kdir, cpu_config(tmp_path))
    assert result.ok, result.errors
    assert result.flavour == "torch" and result.functions == [] and result.lib_path
    name = Path(result.lib_path).name.split(".")[0]
    spec = importlib.util.spec_from_file_location(name, result.lib_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kagent_ext._bind_module(module)
    torch.testing.assert_close(kagent_ext.ops.add_one(torch.zeros(3)), torch.ones(3))
    assert build(kdir, cpu_config(tmp_path)).cached
