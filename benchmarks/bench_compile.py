"""Compile latency of a typical level-1 workspace: our build vs load_inline, measured in one run.

    python benchmarks/bench_compile.py [--backend cuda] [--skip-load-inline] [--out NAME]

Rows:
- load_inline (fresh build dir): a fresh process that imports torch and builds the same kernel
  KernelBench-style (torch/extension.h + pybind) -- the reference point of the issue.
- build cold, in process: skills.evaluator.build with an empty cache (what the compile skill waits for; the
  daemon does not start a process to build).
- build cold, fresh process: the same from a new Python process (process start included).
- edit one kernel, in process / fresh process: one .cu of two changed, rebuilt with a warm cache.
- no change: a full cache hit.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import environment, table, write_result  # noqa: E402
from skills.evaluator.build import BuildConfig, build  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SWISH = ROOT / "problems/solutions/cuda/level1/02_swish/kernels/swish.cu"

HELPER_CU = textwrap.dedent("""\
    #include "kagent.h"
    // A second translation unit, as a typical workspace grows one: a small scale kernel.
    __global__ void scale_kernel(float* y, float a, int64_t n) {
      int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] *= a;
    }
    KAGENT_EXPORT void scale(float* y, float a, int64_t n) {
      scale_kernel<<<(unsigned)((n + 255) / 256), 256>>>(y, a, n);
    }
    """)

LOAD_INLINE = textwrap.dedent('''\
    import sys, time
    t0 = time.perf_counter()
    import torch
    from torch.utils.cpp_extension import load_inline
    cuda_src = r"""
    #include <torch/extension.h>
    __global__ void swish_kernel(const float* x, float* y, int64_t n) {
      int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) { float v = x[i]; y[i] = v / (1.0f + expf(-v)); }
    }
    torch::Tensor swish(torch::Tensor x) {
      auto y = torch::empty_like(x);
      int64_t n = x.numel();
      swish_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
      return y;
    }
    """
    cpp_src = "torch::Tensor swish(torch::Tensor x);"
    mod = load_inline(name="swish_bench", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["swish"],
                      build_directory=sys.argv[1], extra_cuda_cflags=["-O3"], verbose=False)
    print(time.perf_counter() - t0)
    ''')

FRESH_BUILD = textwrap.dedent("""\
    import sys, time
    t0 = time.perf_counter()
    sys.path.insert(0, sys.argv[3])
    from skills.evaluator.build import BuildConfig, build
    r = build(sys.argv[1], BuildConfig(backend="cuda", cache_dir=sys.argv[2], arch=sys.argv[4]))
    assert r.ok, r.errors
    print(time.perf_counter() - t0)
    """)


def _workspace(tmp: Path) -> Path:
    kdir = tmp / "kernels"
    kdir.mkdir(parents=True)
    shutil.copyfile(SWISH, kdir / "swish.cu")
    (kdir / "scale.cu").write_text(HELPER_CU)
    return kdir


def _edit(kdir: Path, i: int) -> None:
    path = kdir / "swish.cu"
    path.write_text(path.read_text() + f"\n// edit {i}\n")


def _fresh(kdir: Path, cache: Path, arch: str) -> float:
    out = subprocess.run([sys.executable, "-c", FRESH_BUILD, str(kdir), str(cache), str(ROOT), arch],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--skip-load-inline", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="compile")
    args = ap.parse_args()
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        kdir = _workspace(tmp / "ws")
        li = None
        if not args.skip_load_inline:
            (tmp / "li_build").mkdir()  # load_inline wants an existing build_directory
            li = _wall([sys.executable, "-c", LOAD_INLINE, str(tmp / "li_build")])
            rows.append(["load_inline, fresh build dir (process start incl.)", li])
        cold, cold_fresh, edit, edit_fresh, hit = [], [], [], [], []
        for i in range(args.repeats):
            cache = tmp / f"cache{i}"
            cfg = BuildConfig(backend="cuda", cache_dir=str(cache), arch=args.arch)
            r = build(kdir, cfg)
            assert r.ok, r.errors
            cold.append(r.seconds)
            cold_fresh.append(_fresh(kdir, tmp / f"cachef{i}", args.arch))
            _edit(kdir, 2 * i)
            r = build(kdir, cfg)
            assert r.ok and sum(not u.cached for u in r.units) == 1, r
            edit.append(r.seconds)
            _edit(kdir, 2 * i + 1)
            edit_fresh.append(_fresh(kdir, cache, args.arch))
            r = build(kdir, cfg)
            hit.append(r.seconds)
        med = {k: sorted(v)[len(v) // 2] for k, v in
               {"cold": cold, "cold_fresh": cold_fresh, "edit": edit, "edit_fresh": edit_fresh, "hit": hit}.items()}
        for label, key in (("build cold, in process", "cold"), ("build cold, fresh process", "cold_fresh"),
                           ("edit one of two .cu, in process", "edit"), ("edit one of two .cu, fresh process", "edit_fresh"),
                           ("no change (cache hit)", "hit")):
            rows.append([label, med[key]])
    ratio = {k: (li / v if li else None) for k, v in med.items()}
    print(table(["step", "seconds"], rows))
    if li:
        print(f"\nload_inline / cold build = {ratio['cold']:.1f}x (target >= 10x);"
              f" load_inline / edit (fresh process) = {ratio['edit_fresh']:.1f}x (target >= 25x)")
    path = write_result(args.out, {"env": environment(), "load_inline_s": li, "median_s": med,
                                   "samples_s": {"cold": cold, "cold_fresh": cold_fresh, "edit": edit,
                                                 "edit_fresh": edit_fresh, "hit": hit},
                                   "speedup_vs_load_inline": ratio})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
