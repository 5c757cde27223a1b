"""CUDA libraries in kernels/ (skills/evaluator/libraries.py, skills/evaluator/build.py) and the optional-pointer ABI.

A library is selected by its include, found in an nvidia-* wheel folder or the toolkit, and linked
with an rpath. Most cases use a small stand-in "wheel" (real headers and a real shared library built
here by g++, laid out as nvidia-cublas lays out its files), so CI needs no 1 GB download; the cases
marked `real` use the genuine wheels when they are on sys.path (torch's CUDA build installs them)
and skip, saying so, when they are not. GPU cases run the kernels.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import torch

from skills.evaluator.build import (
    POINTEE_DTYPES,
    SCALAR_KINDS,
    BuildConfig,
    BuildResult,
    build,
    cuda_include_dir,
    detect_arch,
    ptx_command,
)
from skills.evaluator.libraries import FoundLibrary, link_flags, locate, wanted

SHIM = Path(__file__).resolve().parents[3] / "skills" / "evaluator" / "harness" / "shim"
if str(SHIM) not in sys.path:
    sys.path.insert(0, str(SHIM))
import kagent_ext  # noqa: E402

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")


def _toolkit_include() -> str | None:
    return cuda_include_dir("nvcc") if shutil.which("nvcc") else None


def _real(name: str) -> FoundLibrary | str:
    return locate(name, sys.path, _toolkit_include())  # type: ignore[arg-type]


def needs_real(*names: str) -> pytest.MarkDecorator:
    missing = [m for n in names if isinstance(m := _real(n), str)] if shutil.which("nvcc") else ["no nvcc"]
    return pytest.mark.skipif(bool(missing), reason="; ".join(missing))


@pytest.fixture(autouse=True)
def unbind() -> Iterator[None]:
    yield
    kagent_ext._reset()


def write(kdir: Path, files: dict[str, str]) -> Path:
    kdir.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (kdir / name).write_text(text)
    return kdir


def fake_cublas(site: Path, minor: int = 10) -> Path:
    """A stand-in nvidia-cublas wheel under `site`: cublas_v2.h / cublas_api.h with the version
    macros, a cuda_runtime.h that must not be used, and libcublas.so.13 + libcublasLt.so.13 (sonames as the wheel's) exporting
    `fakeblas_answer()`, which returns 40 + minor."""
    inc, lib = site / "nvidia" / "cu13" / "include", site / "nvidia" / "cu13" / "lib"
    inc.mkdir(parents=True, exist_ok=True)
    lib.mkdir(parents=True, exist_ok=True)
    (inc / "cublas_api.h").write_text(
        f"#pragma once\n#define CUBLAS_VER_MAJOR 13\n#define CUBLAS_VER_MINOR {minor}\n"
        "#define CUBLAS_VER_PATCH 0\nextern \"C\" int fakeblas_answer(void);\n")
    (inc / "cublas_v2.h").write_text('#pragma once\n#include "cublas_api.h"\n')
    # Other nvidia-* wheels share this folder (nvidia-cuda-runtime's cuda_runtime.h, ...): the build
    # must keep using the toolkit's own headers.
    (inc / "cuda_runtime.h").write_text('#error "the wheel folder shadowed the toolkit\'s cuda_runtime.h"\n')
    (inc / "cublasLt.h").write_text('#pragma once\n#include "cublas_api.h"\n')
    for soname, body in (("libcublasLt.so.13", "int fakeblas_lt(void) { return 1; }"),
                         ("libcublas.so.13", f"int fakeblas_answer(void) {{ return {40 + minor}; }}")):
        src = lib / (soname + ".c")
        src.write_text(body + "\n")
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", str(src), "-o", str(lib / soname)],
                       check=True, capture_output=True)
        src.unlink()
    return site


GEMM_CU = """\
#include "kagent.h"
#include <cublas_v2.h>   // selects cuBLAS: the build adds -I and links it

__global__ void fill_k(int* out, int v) { *out = v; }

KAGENT_EXPORT void answer(int* out) { *out = fakeblas_answer(); }
"""


def cuda_config(tmp_path: Path, roots: list[str] | None, **kw: object) -> BuildConfig:
    return BuildConfig(backend="cuda", cache_dir=str(tmp_path / "cache"), library_roots=roots,
                       arch=detect_arch() or "sm_90", **kw)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- detection


def test_wanted_reads_includes_not_comments() -> None:
    files = {
        "a.cu": b'#include "kagent.h"\n// #include <cudnn.h>\n/* #include <cublasLt.h> */\n#include <cublas_v2.h>\n',
        "b.cuh": b'#pragma once\n  #  include "cutlass/gemm/device/gemm.h"\n',
        "c.cpp": b'const char* s = "#include <cudnn.h>";\n#include <cute/tensor.hpp>\n',
    }
    assert wanted(files) == {
        "cublas": "kernels/a.cu:4: <cublas_v2.h>",
        "cutlass": "kernels/b.cuh:2: <cutlass/gemm/device/gemm.h>",
    }
    assert wanted({"d.cu": b"#include <cudnn_ops.h>\n#include <cublasLt.h>\n"}) == {
        "cublasLt": "kernels/d.cu:2: <cublasLt.h>", "cudnn": "kernels/d.cu:1: <cudnn_ops.h>"}
    assert wanted({"e.cu": b'#include "kagent.h"\n#include <cuda_fp16.h>\n'}) == {}


@needs_gxx
def test_locate_a_wheel_before_the_toolkit(tmp_path: Path) -> None:
    site = fake_cublas(tmp_path / "site")
    got = locate("cublas", [str(tmp_path / "elsewhere"), str(site)], None)
    assert isinstance(got, FoundLibrary), got
    assert (got.version, got.origin, got.libs) == ("13.10.0", "wheel", ["libcublasLt.so.13", "libcublas.so.13"])
    assert got.include_dirs == [str(site / "nvidia/cu13/include")]
    lt = locate("cublasLt", [str(site)], None)
    assert isinstance(lt, FoundLibrary) and lt.libs == ["libcublasLt.so.13"]
    # cuBLAS and cuBLASLt together link libcublasLt once, before libcublas, by path (no -L: the
    # folder also holds nvidia-cuda-runtime's libcudart_static.a), with an rpath.
    lib = str(site / "nvidia/cu13/lib")
    assert link_flags([got, lt]) == ["-Xlinker", "--no-as-needed", "-Xlinker", f"{lib}/libcublasLt.so.13",
                                     "-Xlinker", f"{lib}/libcublas.so.13", "-Xlinker", f"-rpath={lib}"]


def test_locate_says_where_it_looked(tmp_path: Path) -> None:
    msg = locate("cudnn", [str(tmp_path)], "/opt/cuda/include")
    assert msg == ("cuDNN was not found: the CUDA toolkit does not ship it; no nvidia-cudnn-cu13 wheel "
                   "(nvidia/cudnn/) under the interpreter's sys.path")
    (tmp_path / "nvidia/cu13/include").mkdir(parents=True)
    (tmp_path / "nvidia/cu13/include/cublas_v2.h").write_text("")
    msg = locate("cublas", [str(tmp_path)], str(tmp_path / "toolkit"))
    assert isinstance(msg, str)
    assert msg.startswith(f"cuBLAS was not found: cuBLAS headers at {tmp_path}/nvidia/cu13/include but no "
                          f"libcublasLt.so* in {tmp_path}/nvidia/cu13/lib; not in the CUDA toolkit")


# ----------------------------------------------------------------------------- build


@needs_nvcc
@needs_gxx
def test_build_links_the_wheel_and_loads(tmp_path: Path) -> None:
    site = fake_cublas(tmp_path / "site")
    kdir = write(tmp_path / "ws" / "kernels", {"gemm.cu": GEMM_CU})
    result = build(kdir, cuda_config(tmp_path, [str(site)]))
    assert result.ok, result.errors
    assert [(lib.name, lib.version, lib.origin) for lib in result.libraries] == [("cublas", "13.10.0", "wheel")]
    assert result.lib_path is not None
    dyn = subprocess.run(["readelf", "-d", result.lib_path], capture_output=True, text=True, check=True).stdout
    assert "[libcublasLt.so.13]" in dyn and "[libcublas.so.13]" in dyn
    assert f"[{site}/nvidia/cu13/lib]" in dyn  # RUNPATH: loads outside torch's process too
    # dlopen resolves the library through the rpath, and the exported function calls into it. In a
    # process of its own: the stand-in's sonames are the real ones, and a process loads one of each.
    probe = "import ctypes, sys; out = ctypes.c_int(0); ctypes.CDLL(sys.argv[1]).answer(ctypes.byref(out)); print(out.value)"
    proc = subprocess.run([sys.executable, "-c", probe, result.lib_path], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout.strip()) == (0, "50"), proc.stderr


@needs_nvcc
@needs_gxx
def test_library_version_is_in_the_cache_key(tmp_path: Path) -> None:
    site = fake_cublas(tmp_path / "site")
    kdir = write(tmp_path / "ws" / "kernels", {"gemm.cu": GEMM_CU})
    first = build(kdir, cuda_config(tmp_path, [str(site)]))
    assert first.ok, first.errors
    assert build(kdir, cuda_config(tmp_path, [str(site)])).cached
    fake_cublas(site, minor=11)  # the wheel upgraded in place: same paths, new version and files
    again = build(kdir, cuda_config(tmp_path, [str(site)]))
    assert again.ok and again.libraries[0].version == "13.11.0"
    assert {u.file: u.cached for u in again.units}["kernels/gemm.cu"] is False
    assert again.key != first.key


@needs_nvcc
def test_missing_library_is_a_clear_error(tmp_path: Path) -> None:
    kdir = write(tmp_path / "ws" / "kernels", {"conv.cu": '#include "kagent.h"\n\n#include <cudnn.h>\n'
                                               "KAGENT_EXPORT void f(float* y) {}\n"})
    result = build(kdir, cuda_config(tmp_path, [str(tmp_path)]))
    assert not result.ok and result.units == []  # refused before any compiler ran
    assert result.errors.startswith("kernels/conv.cu:3: <cudnn.h>: cuDNN was not found: ")
    assert "write that part of the computation in your own kernels" in result.errors
    assert "No such file" not in result.errors


def test_cpu_backend_refuses_library_includes(tmp_path: Path) -> None:
    kdir = write(tmp_path / "ws" / "kernels", {"k.cpp": '#include "kagent.h"\n#include <cublas_v2.h>\n'
                                               "KAGENT_EXPORT void f(float* y) {}\n"})
    result = build(kdir, BuildConfig(backend="cpu", cache_dir=str(tmp_path / "cache")))
    assert not result.ok
    assert result.errors.startswith("kernels/k.cpp:2: <cublas_v2.h>: the CUDA libraries (cuBLAS, cuBLASLt, "
                                    "cuDNN, CUTLASS) exist on the cuda backend only")


@needs_nvcc
@needs_gxx
def test_ptx_command_sees_the_libraries(tmp_path: Path) -> None:
    """skills/evaluator/precision_code.py recompiles .cu files to PTX; a source that includes cuBLAS must
    compile there too, or its precision evidence would be 'unchecked'."""
    site = fake_cublas(tmp_path / "site")
    cmd = ptx_command(cuda_config(tmp_path, [str(site)]), "kernels/gemm.cu")
    assert cmd[-2:] == ["-ptx", "kernels/gemm.cu"]
    views = [Path(a[2:]) for a in cmd if a.startswith("-I") and (Path(a[2:]) / "cublas_v2.h").exists()]
    assert len(views) == 2  # cuBLAS and cuBLASLt, found in the same wheel
    for view in views:
        assert (view / "cublas_v2.h").resolve() == site / "nvidia/cu13/include/cublas_v2.h"
        assert not (view / "cuda_runtime.h").exists()  # the library's own headers only
    write(tmp_path / "ws" / "kernels", {"gemm.cu": GEMM_CU})
    proc = subprocess.run([*cmd, "-o", "g.ptx"], cwd=tmp_path / "ws", capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "fill_k" in (tmp_path / "ws" / "g.ptx").read_text()


# ----------------------------------------------------------------------------- ABI: None, 0-dim

OPTIONAL_CPP = """\
#include "kagent.h"
// y[i] = x[i] * scale[0] + (bias ? bias[i] : 0): bias is optional, scale is a 0-dim tensor.
KAGENT_EXPORT void axpb(const float* x, const float* scale, const float* bias, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale[0] + (bias ? bias[i] : 0.f);
}
"""


def test_none_is_a_null_pointer_and_0dim_tensors_pass(tmp_path: Path) -> None:
    result = build(write(tmp_path / "kernels", {"o.cpp": OPTIONAL_CPP}),
                   BuildConfig(backend="cpu", cache_dir=str(tmp_path / "cache")))
    assert result.ok and result.lib_path, result.errors
    kagent_ext._bind(result.lib_path, msgspec.to_builtins(result.functions), "cpu")
    x, bias, y = torch.arange(5.0), torch.full((5,), 10.0), torch.empty(5)
    scale = torch.tensor(2.0)  # 0-dim
    kagent_ext.ops.axpb(x, scale, None, y, 5)
    assert y.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    kagent_ext.ops.axpb(x, scale, bias, y, 5)
    assert y.tolist() == [10.0, 12.0, 14.0, 16.0, 18.0]
    with pytest.raises(TypeError, match=r"argument 1 \('scale'.*float32.*float64"):
        kagent_ext.ops.axpb(x, torch.tensor(2.0, dtype=torch.float64), None, y, 5)
    with pytest.raises(TypeError, match=r"argument 2 \('bias'.*or None for a null pointer\), got float"):
        kagent_ext.ops.axpb(x, scale, 0.0, y, 5)


# ----------------------------------------------------------------------------- the real libraries

REAL_CU = """\
#include "kagent.h"
#include <cublas_v2.h>
#include <cublasLt.h>
#include <cudnn.h>
#include <cute/tensor.hpp>

__global__ void relu_k(float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(y[i], 0.f);
}

KAGENT_EXPORT void versions(int64_t* out) {
    out[0] = (int64_t)cublasLtGetVersion();
    out[1] = (int64_t)cudnnGetVersion();
    out[2] = (int64_t)cute::size(cute::make_shape(cute::Int<2>{}, cute::Int<3>{}));
}
"""


@needs_real("cublas", "cublasLt", "cudnn", "cutlass")
def test_real_libraries_build_link_and_load(tmp_path: Path) -> None:
    kdir = write(tmp_path / "ws" / "kernels", {"all.cu": REAL_CU})
    result = build(kdir, cuda_config(tmp_path, None))
    assert result.ok, result.errors
    assert [lib.name for lib in result.libraries] == ["cublas", "cublasLt", "cudnn", "cutlass"]
    assert all(lib.version for lib in result.libraries)
    assert result.lib_path is not None
    # Host-only calls: they need the libraries loaded, not a GPU.
    out = (ctypes.c_int64 * 3)()
    ctypes.CDLL(result.lib_path).versions(out)
    assert out[0] > 0 and out[1] > 0 and out[2] == 6


SGEMM_CU = """\
#include "kagent.h"
#include <cublas_v2.h>

// y = relu(x @ w^T + b) for row-major x (m, k), w (n, k): cuBLAS sees column-major y^T = w x^T.
__global__ void bias_relu_k(float* y, const float* b, int64_t m, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < m * n) y[i] = fmaxf(y[i] + (b ? b[i % n] : 0.f), 0.f);
}

KAGENT_EXPORT void linear_relu(const float* x, const float* w, const float* b, float* y, int m, int n, int k,
                               int tf32) {
    static cublasHandle_t h = [] { cublasHandle_t t; cublasCreate(&t); return t; }();
    cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    const float one = 1.f, zero = 0.f;
    cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, k, x, k, &zero, y, n);
    bias_relu_k<<<(unsigned)((int64_t(m) * n + 255) / 256), 256>>>(y, b, m, n);
}
"""


def _bind_cuda(result: BuildResult) -> None:
    assert result.ok and result.lib_path, result.errors
    kagent_ext._bind(result.lib_path, msgspec.to_builtins(result.functions), "cuda")


def skill_examples() -> dict[str, str]:
    """The library examples of the cuda SKILL.md, by the function they export."""
    from runtime.prompts import skill_prompt

    blocks = re.findall(r"```cuda\n(.*?)```", skill_prompt("cuda"), re.S)
    found = {}
    for code in blocks:
        if "<cublas_v2.h>" in code or "<cudnn.h>" in code:
            m = re.search(r"KAGENT_EXPORT void (\w+)", code)
            assert m is not None
            found[m.group(1)] = code
    return found


def test_skill_md_type_lists_match_the_build() -> None:
    from runtime.prompts import skill_prompt

    abi = " ".join((Path(__file__).resolve().parents[3] / "docs" / "kernel-abi.md").read_text().split())
    for backend, text in (("cuda", skill_prompt("cuda")), ("cpu", skill_prompt("cpu")), ("cuda", abi)):
        flat = " ".join(text.split())
        pointers = re.findall(r"`([^`]+)`", flat.split("with T one of ", 1)[1].split(";", 1)[0])
        scalars = re.findall(r"`([^`]+)`", flat.split("; scalars ", 1)[1].split(".", 1)[0])
        half = {"__half", "__nv_bfloat16"}
        assert set(pointers) == set(POINTEE_DTYPES) - (half if backend == "cpu" else set()), (backend, pointers)
        assert len(pointers) == len(set(pointers))
        assert sorted(scalars) == sorted(SCALAR_KINDS), (backend, scalars)


def test_skill_md_library_examples_exist() -> None:
    assert sorted(skill_examples()) == ["conv3x3", "linear_relu"]


@needs_real("cublas", "cudnn")
def test_skill_md_library_examples_build(tmp_path: Path) -> None:
    for name, code in skill_examples().items():
        result = build(write(tmp_path / name / "kernels", {f"{name}.cu": code}), cuda_config(tmp_path, None))
        assert result.ok, (name, result.errors)
        assert result.warnings == "", (name, result.warnings)
        assert result.libraries, name


@pytest.mark.gpu
@needs_real("cublas")
def test_gpu_skill_cublas_example(tmp_path: Path) -> None:
    code = skill_examples()["linear_relu"]
    _bind_cuda(build(write(tmp_path / "ws" / "kernels", {"g.cu": code}), cuda_config(tmp_path, None)))
    torch.manual_seed(0)
    x, w, b = (torch.randn(s, device="cuda") for s in ((300, 257), (129, 257), (129,)))
    y = torch.empty(300, 129, device="cuda")
    kagent_ext.ops.linear_relu(x, w, b, y, 300, 129, 257)
    torch.testing.assert_close(y, torch.relu(x.double() @ w.double().t() + b.double()).float(), rtol=1e-5, atol=1e-5)
    kagent_ext.ops.linear_relu(x, w, None, y, 300, 129, 257)  # optional bias
    torch.testing.assert_close(y, torch.relu(x.double() @ w.double().t()).float(), rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@needs_real("cudnn")
def test_gpu_skill_cudnn_example(tmp_path: Path) -> None:
    code = skill_examples()["conv3x3"]
    _bind_cuda(build(write(tmp_path / "ws" / "kernels", {"c.cu": code}), cuda_config(tmp_path, None)))
    torch.manual_seed(0)
    x, w = torch.randn(3, 5, 17, 19, device="cuda"), torch.randn(7, 5, 3, 3, device="cuda")
    y = torch.empty(3, 7, 17, 19, device="cuda")
    kagent_ext.ops.conv3x3(x, w, y, 3, 5, 17, 19, 7)
    ref = torch.nn.functional.conv2d(x.double(), w.double(), padding=1).float()
    torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- TF32 on an fp32 problem

TF32_CU = SGEMM_CU.replace("cublasSetMathMode(h, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);",
                           "if (tf32) cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);")


@needs_real("cublas")
def test_tf32_request_is_evidence_for_the_strict_budget(tmp_path: Path) -> None:
    """A kernel that asks cuBLAS for TF32 is graded on the strict budget (skills/evaluator/precision_code.py
    reads the library constants; its PTX compiles with the libraries' headers), the same kernel
    without the request on the fair one."""
    from skills.evaluator.precision_code import scan_build

    config = cuda_config(tmp_path, None)
    for source, formats in ((TF32_CU, ["tf32"]), (SGEMM_CU.replace("tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : ", ""), [])):
        kdir = write(tmp_path / f"ws{len(formats)}" / "kernels", {"g.cu": source})
        built = build(kdir, config)
        assert built.ok, built.errors
        evidence = scan_build(built, kdir, config)
        assert evidence.checked, evidence.how
        assert evidence.formats == formats, evidence


_TF32_PROBE = """\
import sys, msgspec, torch
sys.path.insert(0, sys.argv[3])
import kagent_ext
kagent_ext._bind(sys.argv[1], msgspec.json.decode(sys.argv[2]), "cuda")
torch.manual_seed(0)
x, w = torch.randn(512, 2048, device="cuda"), torch.randn(512, 2048, device="cuda")
y = torch.empty(512, 512, device="cuda")
kagent_ext.ops.linear_relu(x, w, None, y, 512, 512, 2048, 1)
ref = torch.relu(x.double() @ w.double().t())
print(float((y.double() - ref).abs().max() / ref.abs().max()))
"""


@pytest.mark.gpu
@needs_real("cublas")
def test_gpu_tf32_override_keeps_library_calls_in_fp32(tmp_path: Path) -> None:
    """The candidate runs with NVIDIA_TF32_OVERRIDE=0 (skills/evaluator/launch.py): a cuBLAS call that asks
    for TF32 still computes in fp32 there, while without the override it is TF32-accurate only."""
    import os

    built = build(write(tmp_path / "ws" / "kernels", {"g.cu": TF32_CU}), cuda_config(tmp_path, None))
    assert built.ok and built.lib_path, built.errors
    sigs = msgspec.json.encode(built.functions).decode()
    errors = {}
    for override in ("0", None):
        env = {k: v for k, v in os.environ.items() if k != "NVIDIA_TF32_OVERRIDE"}
        if override is not None:
            env["NVIDIA_TF32_OVERRIDE"] = override
        proc = subprocess.run([sys.executable, "-c", _TF32_PROBE, built.lib_path, sigs, str(SHIM)],
                              capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        errors[override] = float(proc.stdout.strip().splitlines()[-1])
    assert errors["0"] < 1e-5, errors  # fp32: ~1e-7 relative to the largest output
    assert errors[None] > 1e-4, errors  # TF32 keeps 10 mantissa bits: ~1e-3


# ----------------------------------------------------------------------------- launch accounting


def test_library_kernels_launched_by_the_kernels_count_as_theirs() -> None:
    """skills/evaluator/harness/launches.py: a cuBLAS kernel the agent's C++ launched (no torch op active, only
    the call window) is the agent's work; the same kernel launched under aten::mm is torch compute,
    and one whose launcher is unknown is not trusted either."""
    from skills.evaluator.harness.launches import Span, account

    windows = [Span(f"kagent_call_{i}", 100.0 * i, 100.0 * i + 50.0) for i in range(3)]
    sgemm = "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(Params)"

    direct = [Span(sgemm, 100.0 * i + 10, 100.0 * i + 30, f"kagent_call_{i}") for i in range(3)]
    # Only library kernels, launched from the call itself: neither a decoy nor a fallback.
    assert account(windows, direct, ["bias_relu_k"], "c_abi")[1] == []
    for launcher in ("aten::mm", "kagent_call_0", None):  # a torch op, another call, unknown
        kernels = [direct[0], direct[1]._replace(launcher=launcher), direct[2]]
        _, flags = account(windows, kernels, ["bias_relu_k"], "c_abi")
        assert [f.name for f in flags] == ["decoy_kernel", "torch_fallback"], (launcher, flags)
        assert "1 of 3 profiled calls" in flags[0].detail and "cutlass" in flags[1].detail
    # Launched from an unknown place (the profiler did not link it, as on torch 2.11): the agent's
    # when the build links cuBLAS, torch compute when it does not; an aten op's stays torch's.
    unknown = [k._replace(launcher=None) for k in direct]
    assert account(windows, unknown, ["bias_relu_k"], "c_abi", ["cublas"])[1] == []
    assert [f.name for f in account(windows, unknown, ["bias_relu_k"], "c_abi")[1]] == ["decoy_kernel", "torch_fallback"]
    under_mm = [k._replace(launcher="aten::mm") for k in direct]
    assert "torch_fallback" in {f.name for f in account(windows, under_mm, ["bias_relu_k"], "c_abi", ["cublas"])[1]}
    torch_own = [Span("void at::native::vectorized_elementwise_kernel<4>(int)", 100.0 * i + 10, 100.0 * i + 20)
                 for i in range(3)]
    assert "torch_fallback" in {f.name for f in account(windows, direct + torch_own, ["bias_relu_k"], "c_abi", ["cublas"])[1]}


# ----------------------------------------------------------------------------- graded end to end (GPU)

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.gpu
@needs_real("cublas", "cublasLt", "cudnn")
@pytest.mark.parametrize("solution", ["level2/19_pointwise_conv_hardswish_residual", "level2/06_linear_bias_relu",
                                      "level2/15_conv_gelu_global_avgpool", "level3/07_small_cnn"])
def test_gpu_library_workspaces_grade_correct(solution: str, tmp_path: Path) -> None:
    """cuBLAS, cuBLASLt and cuDNN workspaces through the whole evaluation (judge, sandboxed candidate,
    launch accounting): correct on every input set, no flag (their library kernels are theirs)."""
    import anyio

    from skills.evaluator.baselines import JsonBaselineCache
    from skills.evaluator.config import EvalConfig
    from skills.evaluator.evaluate import evaluate

    config = EvalConfig(backend="cuda", baselines=["eager"],
                        build=BuildConfig(backend="cuda", cache_dir=str(tmp_path / "build"), arch=detect_arch() or "sm_90"))
    cache = JsonBaselineCache(tmp_path / "baselines.json")
    result = anyio.run(lambda: evaluate(ROOT / "problems" / f"{solution}.py", ROOT / "problems/solutions/cuda" / solution,
                                        mode="profile", config=config, baseline_cache=cache))
    assert result.error is None, result.error
    assert result.build is not None and result.build.libraries, result.build
    assert result.correct and not result.flags, (result.flags, [o.message for s in result.sets for o in s.outputs])


TORCH_EXT_CU = """\
#include <torch/extension.h>
#include <cublas_v2.h>

// y = x @ w^T through the extension's own cuBLAS handle (torch-flavour build: the library is linked too).
void mm_t(torch::Tensor x, torch::Tensor w, torch::Tensor y) {
    static cublasHandle_t h = [] { cublasHandle_t t; cublasCreate(&t); return t; }();
    const int m = x.size(0), k = x.size(1), n = w.size(0);
    const float one = 1.f, zero = 0.f;
    cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w.data_ptr<float>(), k, x.data_ptr<float>(), k, &zero,
                y.data_ptr<float>(), n);
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("mm_t", &mm_t); }
"""


@pytest.mark.gpu
@needs_real("cublas")
def test_gpu_torch_flavour_links_the_library(tmp_path: Path) -> None:
    import importlib.util

    result = build(write(tmp_path / "ws" / "kernels", {"ext.cu": TORCH_EXT_CU}), cuda_config(tmp_path, None))
    assert result.ok and result.lib_path, result.errors
    assert result.flavour == "torch" and [lib.name for lib in result.libraries] == ["cublas"]
    spec = importlib.util.spec_from_file_location(Path(result.lib_path).name.split(".")[0], result.lib_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x, w = torch.randn(33, 65, device="cuda"), torch.randn(17, 65, device="cuda")
    y = torch.empty(33, 17, device="cuda")
    module.mm_t(x, w, y)
    torch.testing.assert_close(y, (x.double() @ w.double().t()).float(), rtol=1e-5, atol=1e-5)
