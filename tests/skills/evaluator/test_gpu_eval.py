"""GPU tests (run on an H200 with `pytest -m gpu`): the reference solutions, and CUDA bad input.

Each test runs real evaluations: judge and candidate workers, nvcc builds, the timing loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from skills.evaluator.baselines import JsonBaselineCache
from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.results import EvalResult, Mode
from tests.conftest import SYS_MODULES, moved_work_patch

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[3]
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


SLOWER_THAN_EAGER = {
    # Library solutions (cuBLAS/cuDNN calls plus our own epilogue kernels): correct and unflagged on
    # the H200 (2026-12-02), but not faster than eager's fused library calls there (speedup vs
    # eager, 3 paired rounds): what they prove is that library kernels are graded as the agent's.
    "level2/06_linear_bias_relu": 1.00, "level2/09_softmax_matmul": 0.62,
}

NARROW_MARGIN = {
    # cuDNN solutions whose conv is most of eager's time too: `kagent bench --reference` on the H200
    # (2026-12-04) read 1.00x (level2/07), 1.06-1.14x (level2/21) and 1.03-1.09x (level3/06) over
    # three runs, so "beats eager on the interval's low end" is the benchmark's claim, not this test's.
    "level2/07_conv_batchnorm_relu", "level2/21_conv_relu_bias_add", "level3/06_resnet_basic_block",
}
# (level2/14_bmm_scale_softmax left this list once its fused kernel read 1.58x eager, interval
# 1.582-1.584, on the H100: benchmarks/results/h100-2026-12-06/audit_ratios.log.)


LAUNCH_BOUND = {
    # 64 rows, ~58 us a call against eager's ~85 us of host-bound dispatch: its paired rounds spread
    # 0.63-1.37x on the H200 (2026-12-03 17:50, eager interval low 0.91) though `kagent bench
    # --reference` read 1.49x (reward 3) 15 minutes before. Correct and unflagged is this test's
    # claim; how much faster is the benchmark's (benchmarks/results/bench-reference-h200/).
    "level3/03_mlp_block",
}


@pytest.mark.parametrize("ws", SOLUTIONS, ids=[f"{p.parent.name}/{p.name}" for p in SOLUTIONS])
def test_reference_solution_passes_and_beats_eager(ws: Path, tmp_path: Path, record_property: Any) -> None:
    r = _eval(_problem_of(ws), ws, tmp_path)
    assert r.error is None, r.error
    assert r.correct and not r.flags, (r.flags, [o.message for s in r.sets for o in s.outputs])
    # The kernel audit ran outside the process and found the solution's own (or its libraries') kernels;
    # its profiled/judged ratio is recorded to justify kernel_audit.AUDIT_FACTOR (JUnit properties).
    assert r.audit is not None, r.audit_note
    record_property("audit_profiled_us", round(r.audit.profiled_us, 2))
    record_property("audit_judged_us", None if r.audit.judged_us is None else round(r.audit.judged_us, 2))
    record_property("audit_owners", ",".join(sorted({k.owner for k in r.audit.kernels})))
    c = r.candidate
    assert c is not None and c.kernel_us is not None and c.caller_us is not None
    # The judged time starts when the call's work could start (the lead hid its launch); a caller
    # waiting for each call also waits for the launch, and the kernels are part of the call.
    assert c.caller_us.median > 0.97 * c.per_call_us.median, (c.caller_us, c.per_call_us)
    assert c.kernel_us < 1.05 * c.per_call_us.median, (c.kernel_us, c.per_call_us)
    eager = next(sp for sp in r.speedups if sp.baseline == "eager")
    record_property("reward", r.reward)
    record_property("speedup_eager", f"{eager.value:.3f} [{eager.low:.3f}, {eager.high:.3f}]")
    record_property("per_call_us", round(c.per_call_us.median, 2))
    if f"{ws.parent.name}/{ws.name}" in SLOWER_THAN_EAGER:
        assert r.reward == 1.0, (r.reward, r.speedups)  # correct, not faster: no more, no less
        return
    if f"{ws.parent.name}/{ws.name}" in LAUNCH_BOUND | NARROW_MARGIN:
        assert r.reward is not None and r.reward >= 1.0, (r.reward, r.speedups)  # its speed: the benchmark's
        return
    # "Beats eager" on the conservative end of the interval; the benchmark table shows each speedup.
    assert eager.low > 1.0 and r.reward is not None and r.reward >= 1.0, r.speedups


def _ws(tmp: Path, cu: str, forward: str, params: str = "x") -> Path:
    """A workspace: kernels/k.cu (`cu` after the kagent.h include) and a ModelNew whose
    forward(self, `params`) has the body `forward`."""
    ws = tmp / "ws"
    (ws / "kernels").mkdir(parents=True)
    (ws / "kernels" / "k.cu").write_text('#include "kagent.h"\n' + cu)
    (ws / "model_new.py").write_text(
        "import torch\nfrom kagent_ext import ops\n\n"
        "class ModelNew(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        f"    def forward(self, {params}):\n" + "".join(f"        {line}\n" for line in forward.splitlines()))
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
    # clock64() is opaque to the compiler (a `volatile int` flag was optimised away by nvcc).
    cu = KERNEL_HEAD + "  while (clock64() > 0) { asm volatile(\"\"); }\n  if (i < n) y[i] = x[i];\n}\n" \
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
    r = _eval(SWISH, _ws(tmp_path / "static", cu, SWISH_FWD), tmp_path / "static")
    assert "stream_creation" in {f.name for f in r.flags} and r.reward == -1.0, r.flags
    # Behind the static check: the wall clock against the events catches the escaped work.
    r = _eval(SWISH, _ws(tmp_path / "runtime", cu, SWISH_FWD), tmp_path / "runtime", static_checks=False)
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
    assert r.audit is not None and {k.owner for k in r.audit.kernels} <= {"agent", "copy"}, (r.audit, r.audit_note)
    assert any(k.owner == "agent" for k in r.audit.kernels) and r.audit.judged_us is not None


def test_kernel_only_while_watched_is_caught_by_the_audit(tmp_path: Path) -> None:
    """Issue 13: a forward that calls its kernel while torch's profiler (launch accounting) or a
    dispatch mode (the op recorder) is on in its own process, and torch otherwise. Behind the static checks only the kernel audit, which
    lists the kernels from outside the process, sees the torch kernels of the unwatched call."""
    cu = FAIR_SWISH + "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }\n"
    fwd = ("from torch.utils._python_dispatch import _get_current_dispatch_mode\n"
           "if torch.autograd.profiler._is_profiler_enabled or _get_current_dispatch_mode() is not None:\n"
           "    y = torch.empty_like(x)\n    ops.swish(x, y, x.numel())\n    return y\n"
           "return x * torch.sigmoid(x)")
    r = _eval(SWISH, _ws(tmp_path, cu, fwd), tmp_path, static_checks=False)
    assert r.audit is not None, r.audit_note
    assert {"decoy_kernel", "torch_fallback"} <= {f.name for f in r.flags}, (r.flags, r.audit)
    assert r.reward == -1.0


FORGE_NCU_REPORT = (
    "import os, sys\n"
    "if 'ncu_target' in sys.argv[0] and not getattr(sys, 'forged', False):\n"
    "    sys.forged = True\n"
    "    row = '\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\\n\"\",\"\",\"nsecond\"\\n' \\\n"
    "          '\"0\",\"void k(const float *, float *, long)\",\"20000\"\\n'\n"
    "    print(row, end='')\n"
    "    pid = os.getpid()\n"
    "    while pid > 1:\n"
    "        try:\n"
    "            with open(f'/proc/{pid}/fd/1', 'w') as f:\n"
    "                f.write(row)\n"
    "        except OSError:\n"
    "            pass\n"
    "        with open(f'/proc/{pid}/stat') as f:\n"
    "            pid = int(f.read().rsplit(')', 1)[1].split()[1])\n")


def test_a_report_forged_into_ncus_output_is_caught(tmp_path: Path, record_property: Any) -> None:
    """Issue 13, past the audit's first form: the watched-only cheat above, which in the audited
    process (harness/ncu_target.py) also prints a raw CSV naming its own kernel and writes it into
    the stdout of every ancestor it can open through /proc (ncu's among them). The parser reads ncu's
    own report, the last: torch's kernels (decoy, fallback); a second report is harness_tampering.
    Records whether the forged rows reached ncu's output at all (forged_reached_ncu)."""
    cu = FAIR_SWISH + "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }\n"
    fwd = (FORGE_NCU_REPORT + "from torch.utils._python_dispatch import _get_current_dispatch_mode\n"
           "if torch.autograd.profiler._is_profiler_enabled or _get_current_dispatch_mode() is not None:\n"
           "    y = torch.empty_like(x)\n    ops.swish(x, y, x.numel())\n    return y\n"
           "return x * torch.sigmoid(x)")
    r = _eval(SWISH, _ws(tmp_path, cu, fwd), tmp_path, static_checks=False)
    assert r.audit is not None, r.audit_note
    flags = {f.name for f in r.flags}
    record_property("forged_reached_ncu", "harness_tampering" in flags)
    assert {"decoy_kernel", "torch_fallback"} <= flags and r.reward == -1.0, (r.flags, r.audit)
    assert all(k.owner != "agent" for k in r.audit.kernels), r.audit


def test_lead_hides_at_most_its_length(tmp_path: Path) -> None:
    """A launch-bound forward (the kernel, then 300 more launches from Python) keeps its host
    time in the judged time: the lead queued ahead of each call hides at most lead_us of it. The
    yardstick is the wall time of the same calls on the kernel-stamped marks (window_us): it may
    exceed the judged time by the lead and a little more. (The waiting caller's time, from 50 other
    calls after the loop, is not the yardstick: for this forward it ran 520 and 746 us above the
    judged time in two of three H200 runs, its host launch path slower in those calls.)"""
    cu = FAIR_SWISH + "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }\n"
    fwd = SWISH_FWD.replace("return y", "for _ in range(300):\n    ops.swish(x, y, 1)\nreturn y")
    r = _eval(SWISH, _ws(tmp_path, cu, fwd), tmp_path, mode="profile")
    assert r.correct and not r.flags, (r.error, r.flags)
    c = r.candidate
    assert c is not None and c.caller_us is not None and c.window_us is not None
    lead = TimingConfig().lead_us
    # The spin counts cycles; the warm-up corrects it to the clock between these calls.
    assert c.lead_us is not None and 0.5 * lead <= c.lead_us <= 2 * lead, c.lead_us
    hidden = c.window_us - c.per_call_us.median
    assert hidden < c.lead_us + 50.0 + 0.05 * c.window_us, (hidden, c.lead_us, c.window_us, c.per_call_us, c.caller_us)
    fair = _eval(SWISH, _ws(tmp_path / "fair", cu, SWISH_FWD), tmp_path / "fair", mode="profile")
    assert fair.candidate is not None
    # 300 launches through Python take far longer than the lead: they must show.
    assert c.per_call_us.median > fair.candidate.per_call_us.median + 300.0, (c.per_call_us, fair.candidate.per_call_us)


def test_hard_coded_shape_fails_the_shape_check(tmp_path: Path) -> None:
    """Row 14: the kernel runs over the default sizes' element count whatever it is given; the
    shape check's set at the problem's SMALL_SIZES (run first) makes it fail."""
    cu = FAIR_SWISH + ("KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) {\n"
                       "  (void)n; const long N = 8192L * 8192L;  // hard-coded timed shape\n"
                       "  k<<<(N + 255) / 256, 256>>>(x, y, N);\n}\n")
    r = _eval(SWISH, _ws(tmp_path, cu, SWISH_FWD), tmp_path)
    assert not r.correct and r.reward == -1.0, (r.error, [(s.sizes, s.ok) for s in r.sets])


MATMUL = ROOT / "problems/level1/27_square_matmul.py"
MATMUL_FWD = "C = torch.empty(A.shape[0], B.shape[1], device=A.device)\nops.mm(A, B, C, A.shape[0])\nreturn C"


def _mm_ws(tmp: Path, load: str) -> Path:
    """A naive fp32 matmul; `load` turns the loaded value `v` into what the product uses."""
    cu = ("__global__ void mm(const float* A, const float* B, float* C, int n) {\n"
          "  int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n"
          "  if (r >= n || c >= n) return;\n  float acc = 0.f;\n"
          "  for (int k = 0; k < n; ++k) { float a = A[(long)r * n + k], b = B[(long)k * n + c];\n"
          f"    a = {load.replace('v', 'a')}; b = {load.replace('v', 'b')}; acc = fmaf(a, b, acc); }}\n"
          "  C[(long)r * n + c] = acc;\n}\n"
          "KAGENT_EXPORT void mm(const float* A, const float* B, float* C, int64_t n) {\n"
          "  mm<<<dim3((n + 15) / 16, (n + 15) / 16), dim3(16, 16)>>>(A, B, C, (int)n);\n}\n")
    return _ws(tmp, cu, MATMUL_FWD, params="A, B")


def test_tf32_rounding_fails_fp32_matmul(tmp_path: Path) -> None:
    """Row 11: operands cut to TF32's 10-bit mantissa inside an fp32 problem."""
    r = _eval(MATMUL, _mm_ws(tmp_path, "__uint_as_float(__float_as_uint(v) & 0xffffe000u)"), tmp_path,
              mode="test", sizes="small")
    assert r.error is None and r.compiled, r.error
    assert not r.correct, [o.message for s in r.sets for o in s.outputs]
    assert any("outside the error budget" in (o.message or "") for s in r.sets for o in s.outputs)


def test_fair_naive_fp32_matmul_passes(tmp_path: Path) -> None:
    """The fair kernel the TF32 cheat imitates: same loop, full fp32 operands."""
    r = _eval(MATMUL, _mm_ws(tmp_path, "v"), tmp_path, mode="test", sizes="small")
    assert r.correct and not r.flags, (r.error, r.flags, [o.message for s in r.sets for o in s.outputs])


def test_uninitialised_half_output_fails(tmp_path: Path) -> None:
    """Row 12: the kernel writes half the output and leaves the rest as torch.empty found it."""
    cu = FAIR_SWISH + "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) { k<<<(n / 2 + 255) / 256, 256>>>(x, y, n / 2); }\n"
    r = _eval(SWISH, _ws(tmp_path, cu, SWISH_FWD), tmp_path)
    assert r.error is None and r.compiled, r.error
    assert not r.correct and r.reward == -1.0


def test_empty_output_hoping_for_freed_reference_fails(tmp_path: Path) -> None:
    """Row 5: return torch.empty and hope the allocator hands back the reference's answer."""
    cu = FAIR_SWISH + "KAGENT_EXPORT void noop(const float* x, float* y, int64_t n) { k<<<1, 32>>>(x, y, 0); }\n"
    r = _eval(SWISH, _ws(tmp_path, cu, "y = torch.empty_like(x)\nops.noop(x, y, 0)\nreturn y"), tmp_path)
    assert r.compiled and not r.correct and r.reward == -1.0, r.error


L2_PERSIST = FAIR_SWISH + (
    "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) {\n"
    # as much persisting L2 as the card allows, up to 32 MiB (the H100 allows less: a 32 MiB limit
    # was an invalid argument there, which the launch then reported)
    "  int most = 0; cudaDeviceGetAttribute(&most, cudaDevAttrMaxPersistingL2CacheSize, 0);\n"
    "  size_t lim = (size_t)most < ((size_t)32 << 20) ? (size_t)most : ((size_t)32 << 20);\n"
    "  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, lim);\n"
    "  cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3((n + 255) / 256); cfg.blockDim = dim3(256);\n"
    "  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeAccessPolicyWindow;\n"
    "  at[0].val.accessPolicyWindow.base_ptr = (void*)x;\n"
    "  at[0].val.accessPolicyWindow.num_bytes = n * sizeof(float) < lim ? n * sizeof(float) : lim;\n"
    "  at[0].val.accessPolicyWindow.hitRatio = 1.0f;\n"
    "  at[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;\n"
    "  at[0].val.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;\n"
    "  cfg.attrs = at; cfg.numAttrs = 1;\n  cudaLaunchKernelEx(&cfg, k, x, y, (long)n);\n}\n")


def test_l2_persistence_is_flagged(tmp_path: Path) -> None:
    """Row 17: a persisting L2 access window, so the flush between timed calls would not evict x."""
    r = _eval(SWISH, _ws(tmp_path, L2_PERSIST, SWISH_FWD), tmp_path)
    assert "l2_persistence" in {f.name for f in r.flags}, r.flags
    assert not r.correct and r.reward == -1.0


def test_l2_persistence_runtime_reset_keeps_timing_honest(tmp_path: Path) -> None:
    """Behind the static check: with it off, the harness resets persisting L2 before every timed
    call, so the cheat (1 MiB input, small sizes: it would sit in L2 whole) is correct and gains no
    more than timing noise over the fair kernel."""
    fair_cu = FAIR_SWISH + "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }\n"
    fair = _eval(SWISH, _ws(tmp_path / "fair", fair_cu, SWISH_FWD), tmp_path / "fair", mode="profile", sizes="small")
    cheat = _eval(SWISH, _ws(tmp_path / "cheat", L2_PERSIST, SWISH_FWD), tmp_path / "cheat", mode="profile",
                  sizes="small", static_checks=False)
    assert fair.correct and cheat.correct, (fair.error, cheat.error)
    assert fair.candidate is not None and cheat.candidate is not None
    f_us, c_us = fair.candidate.per_call_us.median, cheat.candidate.per_call_us.median
    assert c_us >= 0.9 * f_us, (c_us, f_us)


# Row 4 behind the static checks (static_checks=False): the harness's clock in the candidate's
# process replaced through getattr (os.path's sys), as in tests/skills/evaluator/test_exploits_cpu.py.
_TIMING_MODULE = f'{SYS_MODULES}["skills.evaluator.harness.timing"]'
FAKE_CLOCK_HEADER = f"""import os

_timing = {_TIMING_MODULE}
_defaults = getattr(getattr(_timing.Loop, "call"), "__kwdefaults__")
_defaults["_elapsed_ms"] = lambda a, b: 0.01  # every event pair "measures" 10 us
_ticks = iter(range(0, 2**62, 10_000))
_defaults["_perf"] = lambda: next(_ticks)  # and so does the wall clock
"""
MOVED_WORK_HEADER = moved_work_patch("torch.cuda.synchronize()")
SWISH_EXPORT = "KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) { k<<<(n + 255) / 256, 256>>>(x, y, n); }\n"
SLOW_SWISH_FWD = "y = torch.empty_like(x)\nfor _ in range(40):\n    ops.swish(x, y, x.numel())\nreturn y"


def _with_header(ws: Path, header: str) -> Path:
    path = ws / "model_new.py"
    path.write_text(header + "\n" + path.read_text())
    return ws


def test_fake_clock_in_the_candidate_is_flagged(tmp_path: Path) -> None:
    """The events and the wall clock in the candidate's process both say 10 us per call; the
    kernel-stamped marks around each call saw the real time (skills/evaluator/marks.py, clock_check)."""
    ws = _with_header(_ws(tmp_path, FAIR_SWISH + SWISH_EXPORT, SWISH_FWD), FAKE_CLOCK_HEADER)
    r = _eval(SWISH, ws, tmp_path, static_checks=False)
    assert r.correct and "timer_tampering" in {f.name for f in r.flags}, (r.error, r.flags)
    assert r.reward == -1.0


def test_work_moved_before_the_start_mark_is_flagged(tmp_path: Path) -> None:
    """Each call's work (40 swish passes) runs, synchronised, before the call's start mark; the timed
    call returns the stored answer. The time between calls then exceeds the judge's own time for
    the loop's work there. The same forward without the patch passes."""
    cu = FAIR_SWISH + SWISH_EXPORT
    r = _eval(SWISH, _with_header(_ws(tmp_path, cu, SLOW_SWISH_FWD), MOVED_WORK_HEADER), tmp_path, static_checks=False)
    assert r.correct and "timer_tampering" in {f.name for f in r.flags}, (r.error, r.flags)
    fair = _eval(SWISH, _ws(tmp_path / "fair", cu, SLOW_SWISH_FWD), tmp_path / "fair")
    assert fair.correct and not fair.flags and fair.reward is not None and fair.reward >= 0.0, (fair.error, fair.flags)
