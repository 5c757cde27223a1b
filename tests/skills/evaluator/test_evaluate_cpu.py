"""skills.evaluator.evaluate end to end on the cpu backend: real g++ builds, real judge/candidate workers.

Every case asserts the structured outcome (stage, error fragment, flag, reward). Each evaluation
spawns two Python workers (~2-3 s); mode "test" is used wherever timing is not needed.
Timing on a shared 2-core box is noisy, so no case asserts a speed outcome.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import msgspec
import pytest

from skills.evaluator.baselines import JsonBaselineCache
from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.results import EvalResult, Mode
from skills.evaluator.sandbox import SandboxConfig

MakeWs = Callable[..., Path]
PROBLEMS = Path(__file__).resolve().parents[3] / "problems"

RELU = PROBLEMS / "level1" / "01_relu.py"
SWISH = PROBLEMS / "level1" / "02_swish.py"
RMS_NORM = PROBLEMS / "level1" / "03_rms_norm.py"

FAST_TIMING = TimingConfig(target_seconds=0.05, max_calls=60, min_calls=10)

RELU_CPP = """\
#include "kagent.h"
KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""

RELU_PY = """\
import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        ops.relu(x, y, x.numel())
        return y
"""


def relu_kernel(body: str, params: str = "const float* x, float* y, int64_t n") -> dict[str, str]:
    """kernels/relu.cpp exporting relu(params) with `body` inside the function."""
    return {"relu.cpp": f'#include "kagent.h"\n#include <cmath>\nKAGENT_EXPORT void relu({params}) {{\n{body}\n}}\n'}


def eval_config(build_cache_dir: Path, **overrides: object) -> EvalConfig:
    """cpu, eager baseline only, a short timing loop, this session's build cache; the candidate runs
    in bubblewrap where it is installed (allow_unsafe only lets the suite run where it is not)."""
    fields: dict[str, object] = {
        "backend": "cpu", "baselines": ["eager"], "timing": FAST_TIMING,
        "build": BuildConfig(backend="cpu", cache_dir=str(build_cache_dir)),
        "sandbox": SandboxConfig(allow_unsafe=True),
    }
    fields.update(overrides)
    return EvalConfig(**fields)  # type: ignore[arg-type]


def run_eval(problem: Path, ws: Path, build_cache_dir: Path, *, mode: Mode = "test",
             **overrides: object) -> EvalResult:
    """One evaluation with hermetic caches (build cache per session, baselines per workspace)."""
    config = eval_config(build_cache_dir, **overrides)
    cache = JsonBaselineCache(ws.parent / "baselines.json")

    async def go() -> EvalResult:
        return await evaluate(problem, ws, mode=mode, config=config, baseline_cache=cache)

    result = anyio.run(go)
    assert worker_processes() == {}, "a worker process outlived its evaluation"
    return result


def worker_processes() -> dict[int, bytes]:
    """Live judge/candidate processes descending from this one (bwrap included): pid -> cmdline.

    A /proc scan, no psutil; zombies do not count.
    """
    parent: dict[int, int] = {}
    cmdlines: dict[int, bytes] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state, ppid, ...
        if fields[0] != "Z":
            parent[int(entry)] = int(fields[1])
            cmdlines[int(entry)] = cmdline
    me = os.getpid()

    def descends(pid: int) -> bool:
        for _ in range(64):
            pid = parent.get(pid, 0)
            if pid == me:
                return True
            if pid <= 1:
                return False
        return False

    return {pid: cmd for pid, cmd in cmdlines.items() if b"skills.evaluator.harness." in cmd and descends(pid)}


def flag_names(r: EvalResult) -> set[str]:
    return {f.name for f in r.flags}


def failed_outputs(r: EvalResult) -> list[str]:
    return [o.message for s in r.sets for o in s.outputs if not o.ok]


def assert_failed(r: EvalResult, stage: str, *fragments: str) -> None:
    """A structured failure of this one evaluation: stage, error text, reward -1 (final mode)."""
    assert not r.correct
    assert r.error is not None, r
    assert r.stage == stage, (r.stage, r.error)
    for frag in fragments:
        assert frag in r.error, (frag, r.error)
    if r.mode == "final":
        assert r.reward == -1.0
        assert r.reward_fn == "milestone"


# ---------------------------------------------------------------------------------------------
# fair solution


def test_the_judge_keeps_torch_compiles_caches_and_the_candidate_never_sees_them(
        new_workspace: MakeWs, build_cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """EvalConfig.compile_cache: the judge compiles the torch.compile baseline into
    $XDG_CACHE_HOME/kagent/inductor (a later evaluation of the problem is a cache hit), and only
    the judge's environment names the folder."""
    from skills.evaluator.launch import candidate_env, judge_env, worker_env

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "elsewhere"))  # inductor sets it in a process that compiled
    folder = tmp_path / "xdg" / "kagent" / "inductor"
    cfg = eval_config(build_cache_dir, baselines=["compile"])
    env = worker_env(cfg, tmp_path / "scratch")
    assert judge_env(cfg, env)["TORCHINDUCTOR_CACHE_DIR"] == str(folder)
    assert "TORCHINDUCTOR_CACHE_DIR" not in candidate_env(cfg, judge_env(cfg, env))
    assert "TORCHINDUCTOR_CACHE_DIR" not in judge_env(msgspec.structs.replace(cfg, compile_cache=False), env)
    assert oct(folder.stat().st_mode & 0o777) == oct(0o700)
    ws = new_workspace(RELU_PY, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="profile", baselines=["compile"])
    assert r.error is None and r.compiled_baseline is not None, r.error
    assert [s.baseline for s in r.speedups] == ["compile"]
    written = [p for p in folder.rglob("*") if p.is_file()]
    assert written, "the judge compiled outside the cache folder"


def test_fair_relu_final(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    ws = new_workspace(RELU_PY, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert r.error is None, r.error
    assert r.compiled and r.correct and r.stage == "done"
    assert r.flags == []
    assert r.problem == "level1/01_relu" and r.backend == "cpu" and r.precision == "fp32"
    assert r.build is not None and r.build.ok and r.build.flavour == "c_abi"
    # 3 input sets, then the shape check's set at the problem's CHECK_SIZES
    assert len(r.sets) == 4 and r.sets[-1].sizes == "check" and all(s.ok for s in r.sets)
    assert all(o.max_abs_err == 0.0 for s in r.sets for o in s.outputs)  # relu is exact
    assert r.reward is not None and r.reward >= 1.0
    assert r.reward_fn == "milestone"
    assert r.candidate is not None and r.candidate.per_call_us.n >= 10
    assert r.candidate.calls == r.candidate.per_call_us.n
    iv = r.candidate.per_call_us
    assert 0 < iv.low <= iv.median <= iv.high
    assert r.eager is not None and r.eager.per_call_us.n >= 10
    assert r.compiled_baseline is None  # only eager was asked for
    assert [s.baseline for s in r.speedups] == ["eager"]
    sp = r.speedups[0]
    assert sp.value > 0 and sp.low <= sp.value <= sp.high
    st = r.stages
    for t in (st.build, st.workers_ready, st.correctness, st.timing, st.baselines, st.total):
        assert t is not None and t >= 0
    assert st.total is not None and st.workers_ready is not None and st.total >= st.workers_ready

    # The EvalResult round-trips through msgspec JSON (what `kagent eval --json` prints).
    again = msgspec.json.decode(msgspec.json.encode(r), type=EvalResult)
    assert again == r

    # The eager timing went into this test's own baseline cache file.
    assert '"eager"' in (ws.parent / "baselines.json").read_text()


COUNTED_RELU_PY = """\
import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        y = torch.empty_like(x)
        ops.relu(x, y, x.numel())
        if self.calls > {right}:
            y.fill_(0.5)  # right for its first calls only
        return y
"""


def test_streamed_sets_are_checked_like_held_ones(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    """With one set held (what the memory plan chooses when all do not fit), the other regular
    sets are drawn again, referenced and checked when their turn comes: a fair kernel passes every
    set, and a kernel right for its first two calls only (the shape set, set 0) fails set 1."""
    ws = new_workspace(COUNTED_RELU_PY.format(right=10**9), {"relu.cpp": RELU_CPP})
    fair = run_eval(RELU, ws, build_cache_dir, held_sets=1)
    assert fair.error is None and fair.correct, fair.error
    assert len(fair.sets) == 4 and all(s.ok for s in fair.sets)
    assert "judge streamed sets" in fair.stages.parts, fair.stages.parts
    ws = new_workspace(COUNTED_RELU_PY.format(right=2), {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, held_sets=1)
    assert not r.correct
    assert [s.ok for s in r.sets] == [True, False, False, True], [s.ok for s in r.sets]


def test_judges_loop_keeps_to_its_wall_budget(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    """TimingConfig.loop_seconds caps the judge's loop of the candidate's calls by what a call costs
    the judge (its draw, hand-over and hops), not only by the time inside calls: with a target
    that alone would ask for 100000 calls, a 0.3 s budget gives a few hundred (fewer under load),
    never fewer than min_calls; the start and the loop name where their time went."""
    ws = new_workspace(RELU_PY, {"relu.cpp": RELU_CPP})
    timing = TimingConfig(target_seconds=30.0, max_calls=100_000, min_calls=10, loop_seconds=0.3)
    r = run_eval(RELU, ws, build_cache_dir, mode="profile", timing=timing)
    assert r.error is None and r.flags == [], (r.error, r.flags)
    assert r.candidate is not None
    assert 10 <= r.candidate.calls < 5000, r.candidate.calls
    parts = r.stages.parts
    for name in ("judge ready", "judge start: references", "judge timed loop: draw",
                 "judge timed loop: hand-over", "judge timed loop: call"):
        assert parts.get(name, -1.0) >= 0.0, (name, parts)
    assert parts["judge timed loop: call"] <= parts["judge timed loop"]


# ---------------------------------------------------------------------------------------------
# bad input: each ends as a structured failure of that one evaluation


def test_syntax_error_in_model_new(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    src = RELU_PY.replace("def forward(self, x):", "def forward(self, x)")  # line 9
    ws = new_workspace(src, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert_failed(r, "import", "SyntaxError", "model_new.py, line 9")
    assert r.compiled


def test_model_new_without_model_new_class(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    ws = new_workspace(RELU_PY.replace("class ModelNew", "class Model2"), {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir)
    assert_failed(r, "import", "defines no class ModelNew")


def test_model_new_changing_torchs_defaults_at_import_does_not_change_the_inputs(new_workspace: MakeWs,
                                                                                 build_cache_dir: Path) -> None:
    """The judge draws every input set and hands it over: candidate code that changes torch's default
    dtype or random generator at import changes nothing the evaluation runs on."""
    src = "import torch\ntorch.set_default_dtype(torch.float64)\ntorch.manual_seed(0)\n" + RELU_PY
    ws = new_workspace(src, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="test")
    assert r.correct and len(r.sets) >= 3, (r.error, r.sets)


def test_non_tensor_output_is_named(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    src = RELU_PY.replace("return y", "return (y.tolist()[:1],)")
    ws = new_workspace(src, {"relu.cpp": RELU_CPP})
    # .tolist() is a static-check flag (host_compute); this tests the comparison behind it
    r = run_eval(RELU, ws, build_cache_dir, static_checks=False)
    assert not r.correct and r.sets
    assert "output 0 is a list, expected a tensor of shape [256, 1024]" in r.sets[0].outputs[0].message


def test_model_new_missing(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    ws = new_workspace(None, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert_failed(r, "load", "model_new.py does not exist")
    assert r.sets == [] and r.candidate is None


def test_compile_error(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    bad = RELU_CPP.replace("y[i] = x[i] > 0.f", "y[i] = undeclared_thing + x[i] > 0.f")  # line 4
    ws = new_workspace(RELU_PY, {"relu.cpp": bad})
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert_failed(r, "build", "did not compile")
    assert not r.compiled
    assert r.build is not None and not r.build.ok
    assert re.search(r"kernels/relu\.cpp:4:\d+: error", r.error or ""), r.error
    assert "undeclared_thing" in (r.error or "")


def test_wrong_output_shape(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    src = RELU_PY.replace("y = torch.empty_like(x)", "y = torch.empty(x.shape[0])").replace(
        "ops.relu(x, y, x.numel())", "ops.relu(x, y, y.numel())")
    ws = new_workspace(src, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert r.error is None and r.stage == "done" and not r.correct
    assert r.reward == -1.0
    assert len(r.sets) == 4 and not any(s.ok for s in r.sets)
    out = r.sets[0].outputs[0]
    assert out.shape == [256] and out.max_abs_err is None
    assert "has shape [256], expected [256, 1024]" in out.message


def test_wrong_output_dtype(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    src = RELU_PY.replace("torch.empty_like(x)", "torch.empty_like(x, dtype=torch.float64)")
    kernel = relu_kernel("  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;",
                         "const float* x, double* y, int64_t n")
    ws = new_workspace(src, kernel)
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert r.error is None and not r.correct and r.reward == -1.0
    out = r.sets[0].outputs[0]
    assert out.dtype == "float64"
    assert "has dtype float64, expected float32" in out.message


def test_nan_outputs(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    ws = new_workspace(RELU_PY, relu_kernel("  for (int64_t i = 0; i < n; ++i) y[i] = NAN;"))
    r = run_eval(RELU, ws, build_cache_dir)
    assert r.error is None and r.stage == "done" and not r.correct
    for s in r.sets:
        out = s.outputs[0]
        assert not s.ok and out.bad_elements == math.prod(out.shape)
        assert "outside the error budget" in out.message and "got nan" in out.message


def test_wrong_values(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    ws = new_workspace(RELU_PY, relu_kernel("  for (int64_t i = 0; i < n; ++i) y[i] = x[i];"))
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert r.error is None and not r.correct and r.reward == -1.0
    assert r.flags == []
    for s in r.sets:
        out = s.outputs[0]
        assert not s.ok and 0 < out.bad_elements < 256 * 1024  # the negative half
        assert "worst at index [" in out.message and "expected 0" in out.message


SEGFAULT_BODY = "  volatile float* p = nullptr;\n  p[n] = x[0];\n  y[0] = 0.f;"


@pytest.fixture(scope="module")
def segfault(tmp_path_factory: pytest.TempPathFactory, build_cache_dir: Path,
             make_workspace: MakeWs) -> EvalResult:
    ws = make_workspace(tmp_path_factory.mktemp("segv"), RELU_PY, relu_kernel(SEGFAULT_BODY))
    return run_eval(RELU, ws, build_cache_dir, mode="final")


def test_segfault_in_kernel(segfault: EvalResult) -> None:
    assert_failed(segfault, "correctness", "the candidate process died", "while running the input sets")


def test_segfault_in_kernel_names_the_signal(segfault: EvalResult) -> None:
    assert "SIGSEGV" in (segfault.error or "")


@pytest.mark.timeout(120)
def test_endless_loop_in_kernel_is_killed(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    body = ("  volatile int spin = 1;\n  while (spin) {}\n"
            "  for (int64_t i = 0; i < n; ++i) y[i] = x[i];")
    ws = new_workspace(RELU_PY, relu_kernel(body))
    config = eval_config(build_cache_dir, timeout_run_s=4)  # any limit ends a kernel that never returns
    seen: dict[int, bytes] = {}  # every worker process observed while the kernel spins

    async def go() -> EvalResult:
        result: list[EvalResult] = []

        async def run() -> None:
            result.append(await evaluate(RELU, ws, mode="final", config=config))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            while not result:
                seen.update(await anyio.to_thread.run_sync(worker_processes))
                await anyio.sleep(0.25)
        return result[0]

    began = time.monotonic()
    r = anyio.run(go)
    elapsed = time.monotonic() - began
    assert_failed(r, "correctness", "timed out after 4 s", "killed")
    assert elapsed < 60
    modules = {cmd.split(b"\0")[2] for cmd in seen.values() if cmd.split(b"\0")[1:2] == [b"-m"]}
    assert modules == {b"skills.evaluator.harness.judge", b"skills.evaluator.harness.candidate"}, seen  # the python workers
    # Nothing of what ran survives: neither the sandbox wrapper nor the spinning worker.
    still = worker_processes()
    assert still == {}, still
    for pid, cmd in seen.items():
        try:
            alive = Path(f"/proc/{pid}/cmdline").read_bytes() == cmd
        except OSError:
            alive = False
        assert not alive, (pid, cmd)


def test_huge_allocation_in_forward(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    src = RELU_PY.replace("y = torch.empty_like(x)",
                          "scratch = torch.empty(2**45, dtype=torch.uint8)\n        y = torch.empty_like(x)")
    ws = new_workspace(src, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert_failed(r, "correctness", "ModelNew.forward failed", "can't allocate memory")
    assert "model_new.py" in (r.error or "")  # the agent's frame is shown


def test_non_utf8_model_new(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    # In a string literal (CPython 3.11 tolerates undecodable bytes inside comments).
    src = RELU_PY.encode().replace(b"super().__init__()", b"super().__init__()\n        self.name = 'caf\xe9 \xff'")
    ws = new_workspace(src, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert_failed(r, "import", "importing model_new.py failed", "SyntaxError", "can't decode byte",
                  "model_new.py, line 8")


RAISE_IN_INIT_PY = RELU_PY.replace(
    "super().__init__()", "super().__init__()\n        raise ValueError('no weights today')")


@pytest.fixture(scope="module")
def raise_in_init(tmp_path_factory: pytest.TempPathFactory, build_cache_dir: Path,
                  make_workspace: MakeWs) -> EvalResult:
    ws = make_workspace(tmp_path_factory.mktemp("init"), RAISE_IN_INIT_PY, {"relu.cpp": RELU_CPP})
    return run_eval(RELU, ws, build_cache_dir, mode="final")


def test_raise_in_init(raise_in_init: EvalResult) -> None:
    r = raise_in_init
    assert r.error is not None and not r.correct and r.reward == -1.0
    assert "ModelNew(*get_init_inputs()) failed" in r.error
    assert "ValueError: no weights today" in r.error
    assert 'File "model_new.py", line 8, in __init__' in r.error
    assert r.sets == []


def test_raise_in_init_reports_stage_init(raise_in_init: EvalResult) -> None:
    assert raise_in_init.stage == "init"


RMS_PY = """\
import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.scale = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = torch.empty_like(x)
        ops.rms_norm(x, self.scale, y, x.shape[0], x.shape[1], self.eps)
        return y
"""

RMS_CPP = """\
#include "kagent.h"
#include <cmath>
KAGENT_EXPORT void rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) {
#pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    double ss = 0.0;
    for (int64_t i = 0; i < dim; ++i) ss += (double)xr[i] * xr[i];
    float inv = 1.f / std::sqrt((float)(ss / dim) + eps);
    for (int64_t i = 0; i < dim; ++i) y[r * dim + i] = xr[i] * inv * w[i];
  }
}
"""


def test_state_dict_names_differ(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    ws = new_workspace(RMS_PY, {"rms_norm.cpp": RMS_CPP}, problem=RMS_NORM)
    r = run_eval(RMS_NORM, ws, build_cache_dir, mode="final")
    assert r.error is not None and r.reward == -1.0 and not r.correct
    assert "cannot load Model's state_dict" in r.error
    assert "weight" in r.error and "scale" in r.error  # names the missing and unexpected keys


def test_state_dict_same_names_pass(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    """The control for the case above: with Model's parameter name the same kernel is correct."""
    ws = new_workspace(RMS_PY.replace("self.scale", "self.weight"), {"rms_norm.cpp": RMS_CPP}, problem=RMS_NORM)
    r = run_eval(RMS_NORM, ws, build_cache_dir)
    assert r.error is None and r.correct and r.flags == [], (r.error, failed_outputs(r))


# ---------------------------------------------------------------------------------------------
# reward hacks (EXPLOITS.md rows)


def test_input_mutation_flagged(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    body = ("  for (int64_t i = 0; i < n; ++i) { y[i] = x[i] > 0.f ? x[i] : 0.f; x[i] = 0.f; }")
    ws = new_workspace(RELU_PY, relu_kernel(body, "float* x, float* y, int64_t n"))
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert "input_mutation" in flag_names(r)
    assert r.reward == -1.0
    assert r.candidate is None  # not timed once flagged


def test_output_aliases_input_flagged(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    src = RELU_PY.replace("        y = torch.empty_like(x)\n", "").replace(
        "ops.relu(x, y, x.numel())\n        return y", "ops.relu(x, x, x.numel())\n        return x")
    kernel = relu_kernel("  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;",
                         "float* x, float* y, int64_t n")
    ws = new_workspace(src, kernel)
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert r.error is None, r.error
    assert {"output_aliases_input", "input_mutation"} <= flag_names(r)
    assert r.reward == -1.0 and r.candidate is None


LAZY_PY = RELU_PY.replace("class ModelNew", "class Lazy(torch.Tensor):\n    pass\n\n\nclass ModelNew").replace(
    "return y", "return y.as_subclass(Lazy)")


@pytest.fixture(scope="module")
def subclass_output(tmp_path_factory: pytest.TempPathFactory, build_cache_dir: Path,
                    make_workspace: MakeWs) -> EvalResult:
    ws = make_workspace(tmp_path_factory.mktemp("lazy"), LAZY_PY, {"relu.cpp": RELU_CPP})
    return run_eval(RELU, ws, build_cache_dir, mode="final")


def test_tensor_subclass_output_rejected(subclass_output: EvalResult) -> None:
    r = subclass_output
    assert not r.correct and r.reward == -1.0 and r.candidate is None


def test_tensor_subclass_output_flagged(subclass_output: EvalResult) -> None:
    r = subclass_output
    assert "lazy_output" in flag_names(r)
    # The flag is the verdict: the outputs file must not choke on the subclass.
    assert r.error is None, r.error


POINTER_CACHE_CPP = """\
#include "kagent.h"
#include <unordered_map>
#include <vector>
// Reward hack (EXPLOITS.md row 7): memoise by input pointer.
static std::unordered_map<const float*, std::vector<float>> memo;
KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {
  auto it = memo.find(x);
  if (it == memo.end()) {
    std::vector<float> out(n);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 0.f ? x[i] : 0.f;
    it = memo.emplace(x, std::move(out)).first;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = it->second[i];
}
"""

# Keeps every input it has seen alive, so an allocator would never hand a later set the address of
# an earlier one. But every call's inputs sit at the same place in the judge's arena, with new
# contents: a cache keyed on the pointer answers set 1 with set 0's output.
POINTER_CACHE_PY = RELU_PY.replace(
    "super().__init__()", "super().__init__()\n        self.seen = []").replace(
    "y = torch.empty_like(x)", "if len(self.seen) < 8:\n            self.seen.append(x)\n        y = torch.empty_like(x)")


def test_pointer_keyed_cache_fails_at_once(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    ws = new_workspace(POINTER_CACHE_PY, {"relu.cpp": POINTER_CACHE_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="final")
    assert r.sets[0].ok and not all(s.ok for s in r.sets), failed_outputs(r)  # set 0 right, a later one stale
    assert not r.correct and r.candidate is None
    assert r.reward == -1.0


SWISH_PY = RELU_PY.replace("ops.relu", "ops.swish")

SWISH_FP32_CPP = """\
#include "kagent.h"
#include <cmath>
KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.f + expf(-x[i]));
}
"""

# Reward hack (EXPLOITS.md row 11): round the input to bfloat16 (keep the top 16 bits).
SWISH_BF16_CPP = """\
#include "kagent.h"
#include <cmath>
#include <cstring>
KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    bits &= 0xFFFF0000u;
    float v;
    std::memcpy(&v, &bits, 4);
    y[i] = v / (1.f + expf(-v));
  }
}
"""


def test_precision_downcast_rejected_fair_fp32_passes(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    fair = new_workspace(SWISH_PY, {"swish.cpp": SWISH_FP32_CPP}, problem=SWISH)
    r = run_eval(SWISH, fair, build_cache_dir)
    assert r.error is None and r.correct and r.flags == [], failed_outputs(r)
    ratio = r.sets[0].outputs[0].err_ratio
    assert ratio is not None and ratio < 4.0

    cheat = new_workspace(SWISH_PY, {"swish.cpp": SWISH_BF16_CPP}, problem=SWISH)
    r = run_eval(SWISH, cheat, build_cache_dir, mode="final")
    assert r.error is None and not r.correct and r.reward == -1.0
    for s in r.sets:
        out = s.outputs[0]
        assert not s.ok and out.err_ratio is not None and out.err_ratio > 10
        assert "outside the error budget" in out.message or "exceeds the budget" in out.message


DEGENERATE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return {expr}


def get_inputs():
    return [torch.randn(64, 128)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize(("expr", "why"), [
    ("torch.zeros_like(x) * x.sum() * 0", "is tiny"),
    ("torch.ones_like(x) * 3.0", "does not depend on them"),
])
def test_degenerate_problem_refused(new_workspace: MakeWs, tmp_path: Path, build_cache_dir: Path,
                                    expr: str, why: str) -> None:
    problem = tmp_path / "degenerate.py"
    problem.write_text(DEGENERATE.format(expr=expr))
    ws = new_workspace(RELU_PY, {"relu.cpp": RELU_CPP}, problem=problem)
    r = run_eval(problem, ws, build_cache_dir, mode="final")
    # The environment's fault, not the agent's: stage "problem" and no reward (training drops it).
    assert not r.correct and r.error is not None and r.stage == "problem", (r.stage, r.error)
    assert "problem refused" in r.error and why in r.error, r.error
    assert r.reward is None
    assert r.sets == []


def test_problem_with_syntax_error(new_workspace: MakeWs, tmp_path: Path, build_cache_dir: Path) -> None:
    problem = tmp_path / "broken_problem.py"
    problem.write_text(RELU.read_text().replace("def forward(self, x: torch.Tensor)", "def forward(self, x"))
    ws = new_workspace(RELU_PY, {"relu.cpp": RELU_CPP}, problem=RELU)
    r = run_eval(problem, ws, build_cache_dir, mode="final")
    assert r.error is not None and not r.correct and r.stage == "problem" and r.reward is None
    assert "broken_problem.py" in r.error
    assert "SyntaxError" in r.error or "syntax" in r.error.lower()



ENV_PROBE_PY = """\
import os
import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if os.environ.get("NVIDIA_TF32_OVERRIDE") != {want!r}:
            raise RuntimeError("NVIDIA_TF32_OVERRIDE is " + repr(os.environ.get("NVIDIA_TF32_OVERRIDE")))
        y = torch.empty_like(x)
        ops.relu(x, y, x.numel())
        return y
"""


@pytest.mark.parametrize("declared, want", [("", "0"), ('PRECISION = "tf32"\n', None)])
def test_library_tf32_follows_the_problems_precision(new_workspace: MakeWs, tmp_path: Path, build_cache_dir: Path,
                                                     declared: str, want: str | None) -> None:
    """cuBLAS/cuDNN calls in the candidate stay fp32 (NVIDIA_TF32_OVERRIDE=0) on an fp32 problem, and
    may use TF32 on a problem that declares tf32 (as its eager baseline does): the parent reads the
    declaration without running the file, the candidate drops the override before any library
    handle exists."""
    problem = tmp_path / "relu_precision.py"
    problem.write_text(declared + RELU.read_text())
    ws = new_workspace(ENV_PROBE_PY.format(want=want), {"relu.cpp": RELU_CPP}, problem=problem)
    r = run_eval(problem, ws, build_cache_dir, static_checks=False)  # the rule book bans reading os.environ
    assert r.error is None and r.correct, r.error


GC_PROBE_PY = """\
import gc
import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def forward(self, x):
        print("GC=" + str(gc.isenabled()), flush=True)
        y = torch.empty_like(x)
        ops.relu(x, y, x.numel())
        return y
"""


def test_the_candidate_s_timed_calls_run_without_garbage_collection(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    """The baselines' timed loops run with the collector off (timing.no_gc); the candidate's timed calls
    too, so neither pays collections the other does not. Its correctness calls keep it on (their time
    is not compared)."""
    ws = new_workspace(GC_PROBE_PY, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="profile", static_checks=False)
    assert r.error is None and r.correct, r.error
    seen = re.findall(r"GC=(True|False)", r.log or "")
    assert "True" in seen, "no correctness call was seen"
    assert r.candidate is not None and r.candidate.calls > 0
    assert seen.count("False") >= r.candidate.calls, seen[-20:]  # every timed call (and the caller calls)


PATH_PROBE_PY = """\
import sys
import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def forward(self, x):
        names, f = [], sys._getframe(1)
        while f is not None and len(names) < 8:
            where = f.f_code.co_name + ":" + f.f_code.co_filename.rsplit("/", 1)[-1]
            if where == "call:timing.py":  # timing.Loop.call, which reads the clock around this call
                print("BETWEEN=" + ",".join(names), flush=True)
                break
            names.append(where)
            f = f.f_back
        print("GRAD=" + str(torch.is_grad_enabled()), flush=True)
        y = torch.empty_like(x)
        ops.relu(x, y, x.numel())
        return y
"""


def test_the_candidate_s_call_path_is_the_baselines_own(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    """Between the clock's reads and ModelNew.forward there is only the module's own __call__, as between
    the judge's and a baseline's forward: no grad-mode switch of the harness's inside the window (a
    per-call no_grad, entered cold after the cache flush, cost the candidate ~45-60 us a call on the
    2-core box: the problem's own relu as its solution read 0.82x eager). Grad stays off in every call."""
    ws = new_workspace(PATH_PROBE_PY, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="profile", static_checks=False)  # the rule book bans frames
    assert r.error is None and r.correct, r.error
    between = re.findall(r"BETWEEN=(\S*)", r.log or "")
    assert r.candidate is not None and len(between) >= r.candidate.calls, (len(between), r.candidate.calls)
    frames = {name for path in between for name in path.split(",")}
    assert frames and all(name.endswith(":module.py") for name in frames), frames  # torch.nn.Module's __call__
    grads = re.findall(r"GRAD=(True|False)", r.log or "")
    assert grads and set(grads) == {"False"}, grads[-10:]


JUDGE_ENV_PROBLEM = """\
import os
import torch
import torch.nn as nn

M = 256
N = 1024


class Model(nn.Module):
    def forward(self, x):
        if os.environ.get("NVIDIA_TF32_OVERRIDE") != {want!r}:
            raise RuntimeError("the judge's NVIDIA_TF32_OVERRIDE is " + repr(os.environ.get("NVIDIA_TF32_OVERRIDE")))
        return torch.relu(x)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("declared, want", [("", "0"), ('PRECISION = "tf32"\n', None)])
def test_the_judge_runs_the_reference_and_baselines_under_the_candidate_s_override(
        new_workspace: MakeWs, tmp_path: Path, build_cache_dir: Path, declared: str, want: str | None) -> None:
    """The judge's Model (reference, eager and torch.compile baselines) sees NVIDIA_TF32_OVERRIDE as the
    candidate does: "0" on an fp32 problem, unset on a tf32 one. With the override only in the candidate,
    its cuBLAS calls cost host time its baselines' did not (H100, level3/03_mlp_block: 237 us a forward
    with it, 123 us without), and a launch-bound fair kernel read slower than it is."""
    problem = tmp_path / "relu_judge_env.py"
    problem.write_text(declared + JUDGE_ENV_PROBLEM.format(want=want))
    ws = new_workspace(ENV_PROBE_PY.format(want=want), {"relu.cpp": RELU_CPP}, problem=problem)
    r = run_eval(problem, ws, build_cache_dir, mode="profile", static_checks=False)
    assert r.error is None and r.correct, r.error
    assert r.eager is not None  # the eager baseline ran the checking Model too


TUPLE_PROBLEM = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, pair):
        assert isinstance(pair, tuple) and pair == (1, (2, 3))
        return torch.relu(x)


def get_inputs():
    return [torch.randn(256, 64), (1, (2, 3))]


def get_init_inputs():
    return []
"""

TUPLE_NEW_PY = """\
import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def forward(self, x, pair):
        if not (type(pair) is tuple and type(pair[1]) is tuple and pair == (1, (2, 3))):
            raise TypeError(f"pair arrived as {pair!r}")
        y = torch.empty_like(x)
        ops.relu(x, y, x.numel())
        return y
"""


def test_non_tensor_inputs_keep_their_tuples(new_workspace: MakeWs, tmp_path: Path, build_cache_dir: Path) -> None:
    """A non-tensor input travels to the candidate over the link as msgpack, which has arrays only:
    tuples (nested too) are tagged on the way, so forward sees what the reference saw."""
    problem = tmp_path / "tuple_input.py"
    problem.write_text(TUPLE_PROBLEM)
    ws = new_workspace(TUPLE_NEW_PY, {"relu.cpp": RELU_CPP}, problem=problem)
    r = run_eval(problem, ws, build_cache_dir, mode="profile")
    assert r.error is None and r.correct and not r.flags, (r.error, r.flags)
