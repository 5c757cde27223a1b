"""A KernelBench-style load_inline solution for every problem file: what `kagent bench --solutions`
must build ahead and grade to measure "250 load_inline files in under an hour" (issue 19).

    python benchmarks/make_inline_set.py KERNELBENCH_ROOT_OR_FILES... --out DIR [--backend cuda|cpu]
    kagent bench KERNELBENCH_ROOT --solutions DIR --set scheduler.eval.torch_allowed=true --out RESULTS

Each DIR/levelN/STEM.py is the problem's own source (its Model and sizes) followed by a ModelNew that
runs Model's forward and passes each fp32 output through an extension of its own, built with
`torch.utils.cpp_extension.load_inline`: a CUDA copy kernel (`--backend cuda`) or an OpenMP C++ copy
(`--backend cpu`). Every file's extension has its own name and source, so the parent's content-hash
cache builds each one once, as 250 different agent files would be. The torch forward needs the
torch-op rule off (`scheduler.eval.torch_allowed=true`); every other check stays, so each row
should be correct at a speed near 1x eager, and the run measures the build-ahead pool and the
grading, not kernels.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime.bench_sources import collect_problems  # noqa: E402

CUDA = r'''
#include <torch/extension.h>
// @NAME@
__global__ void copy_kernel(const float* a, float* b, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i];
}
torch::Tensor kcopy(torch::Tensor x) {
  auto y = torch::empty_like(x);
  long n = x.numel();
  if (n) copy_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
'''

CPU = r'''
#include <torch/extension.h>
// @NAME@
torch::Tensor kcopy(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const float* a = x.data_ptr<float>();
  float* b = y.data_ptr<float>();
  long n = x.numel();
#pragma omp parallel for
  for (long i = 0; i < n; ++i) b[i] = a[i];
  return y;
}
'''

TAIL = '''

# ---- the solution: Model's forward, each fp32 output copied by an extension of this file's own
import torch as _torch
from torch.utils.cpp_extension import load_inline as _load_inline

_ext = _load_inline(name="@NAME@", cpp_sources=@CPP@, @SOURCES@, functions=["kcopy"]@FLAGS@)


def _copied(out):
    if isinstance(out, _torch.Tensor) and out.dtype == _torch.float32 and out.is_contiguous():
        return _ext.kcopy(out)
    if isinstance(out, (tuple, list)):
        return type(out)(_copied(o) for o in out)
    return out


class ModelNew(Model):
    def forward(self, *args):
        return _copied(super().forward(*args))
'''


def solution(source: str, name: str, backend: str) -> str:
    """The problem's source with a load_inline ModelNew appended (extension `name`)."""
    if backend == "cuda":
        cpp, sources, flags = ('"torch::Tensor kcopy(torch::Tensor x);"',
                               f"cuda_sources={CUDA.replace('@NAME@', name)!r}", "")
    else:
        cpp, sources, flags = (repr(CPU.replace("@NAME@", name)), "with_cuda=False",
                               ', extra_cflags=["-O2", "-fopenmp"], extra_ldflags=["-fopenmp"]')
    tail = TAIL.replace("@NAME@", name).replace("@CPP@", cpp).replace("@SOURCES@", sources).replace("@FLAGS@", flags)
    return source.rstrip() + "\n" + tail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", type=Path, help="problem files, levelN folders or a KernelBench root")
    ap.add_argument("--out", type=Path, required=True, help="the solutions folder (DIR/levelN/STEM.py)")
    ap.add_argument("--backend", choices=["cuda", "cpu"], default="cuda")
    args = ap.parse_args(argv)
    try:
        problems = collect_problems(args.paths)  # the files kagent bench grades, found its way
    except ValueError as exc:
        print(f"make_inline_set: {exc}", file=sys.stderr)
        return 2
    for problem in problems:
        path = Path(problem.path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
        name = "kb_" + "".join(c if c.isalnum() else "_" for c in f"{path.parent.name}_{path.stem}")[:60] + f"_{digest}"
        dest = args.out / path.parent.name / path.name  # DIR/levelN/STEM.py, where kagent bench looks first
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(solution(path.read_text(), name, args.backend))
    print(f"wrote {len(problems)} load_inline solutions under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
