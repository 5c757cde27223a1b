"""Whose kernel is it, by name: the rules launch accounting (launches.py, in the candidate worker)
and the kernel audit (skills/evaluator/kernel_audit.py, in the trusted parent) share. No torch here:
the parent classifies what Nsight Compute listed without importing it."""

from __future__ import annotations

import re
from collections.abc import Sequence

LIBRARY_KERNEL = re.compile(
    r"at::native|at::cuda|c10::|cublas|cudnn|xmma|cutlass|cub::|thrust::|triton_|"
    r"^(void )?(gemv|gemm|sgemm|dgemm|ampere_|sm\d+_|nchw|implicit_convolve)"
)
"""Kernels that come from torch, cuBLAS, cuDNN or Triton rather than the agent's sources."""

# What each linked library's kernels are called (seen on the H200: cuBLAS's sm80_xmma_gemm_* and
# cutlass::Kernel2<cutlass_80_simt_sgemm_*>, cuDNN's sm80_xmma_fprop_implicit_gemm_*).
LIBRARY_NAMES = {
    "cublas": re.compile(r"cublas|gemm|gemv|cutlass|xmma|ampere_|sm\d+_"),
    "cublasLt": re.compile(r"cublas|gemm|gemv|cutlass|xmma|ampere_|sm\d+_|splitKreduce|epilogue"),
    "cudnn": re.compile(r"cudnn|conv|fprop|xmma|nchw|nhwc|implicit|cutlass|gemm|sm\d+_"),
}
TORCH_OWN = re.compile(r"at::native|at::cuda|c10::|triton_")
"""Kernels only torch launches: never the agent's, whatever it links."""


def base_name(kernel: str) -> str:
    """`void ns::k<128>(float*, int)` -> `ns::k`: profiler and ptxas spell signatures differently."""
    name = kernel.removeprefix("void ").replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    name = name.split("(")[0]
    return name.split("<")[0].strip()


def is_custom(name: str, kernel_names: Sequence[str], flavour: str) -> bool:
    """Built from the agent's kernels/: by ptxas's names (c_abi), or not named like a library's (torch flavour)."""
    if flavour == "c_abi":
        return base_name(name) in {base_name(k) for k in kernel_names}
    return LIBRARY_KERNEL.search(name) is None


def is_copy(name: str) -> bool:
    """Copies, memsets and torch's fill (zeros/zeros_like for outputs) are not compute."""
    return name.startswith(("Memcpy", "Memset")) or "FillFunctor" in name


def linked_library_kernel(name: str, libraries: Sequence[str]) -> bool:
    """A kernel named like one of a library the build linked (and not one of torch's own)."""
    if TORCH_OWN.search(name):
        return False
    return any(lib in LIBRARY_NAMES and LIBRARY_NAMES[lib].search(name) for lib in libraries)
