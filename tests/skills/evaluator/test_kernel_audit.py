"""The kernel audit (skills/evaluator/kernel_audit.py) on the CPU: the verdict on what Nsight Compute
lists, the audited run through a stand-in `ncu` (a script that prints ncu's raw CSV), and when the
evaluation runs it and what it does with the answer. The real ncu on a real GPU:
tests/skills/evaluator/test_gpu_eval.py (the reference solutions pass it; a kernel that runs only
while watched is caught)."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from skills.evaluator import evaluate as evaluate_mod
from skills.evaluator import kernel_audit
from skills.evaluator.build import BuildResult, KernelResources
from skills.evaluator.config import EvalConfig
from skills.evaluator.kernel_audit import AUDIT_FACTOR, AUDIT_SLACK_US, classify, owner, run_audit
from skills.evaluator.launch import make_scratch
from skills.evaluator.libraries import FoundLibrary
from skills.evaluator.ncu import NcuKernel
from skills.evaluator.report import audit_line, format_result
from skills.evaluator.results import Interval, KernelAudit, TimingResult
from skills.evaluator.sandbox import SandboxConfig
from skills.evaluator.state import EvalState, finish


def built(kernels: list[str], libraries: list[str] = (), flavour: str = "c_abi") -> BuildResult:  # type: ignore[assignment]
    return BuildResult(
        ok=True, backend="cuda", flavour=flavour, lib_path="/x/lib.so", functions=[], errors="", warnings="",  # type: ignore[arg-type]
        resources=[KernelResources(kernel=k, registers=32, shared_bytes=0, stack_bytes=0, spill_store_bytes=0,
                                   spill_load_bytes=0) for k in kernels],
        units=[], cached=False, seconds=0.1, key="k",
        libraries=[FoundLibrary(name=lib, version="1", origin="wheel", include_dirs=[], lib_dir="/lib",  # type: ignore[arg-type]
                                libs=[lib], fingerprint="f") for lib in libraries])


def k(name: str, us: float) -> NcuKernel:
    return NcuKernel(name=name, duration_us=us, occupancy_pct=None, sm_pct=None, dram_pct=None, registers=None,
                     shared_bytes=None, block=None, grid=None, top_stalls=[])


SWISH = built(["swish_kernel"])
OWN = "void swish_kernel<256>(const float *, float *, long)"
TORCH = "void at::native::vectorized_elementwise_kernel<4, at::native::sigmoid_kernel_cuda>(int, T1, T2)"
GEMM = "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel"


def names(audit: KernelAudit) -> set[str]:
    return {f.name for f in audit.flags}


# ---- the verdict on what ncu listed

def test_a_fair_kernel_with_a_memset_passes() -> None:
    a = classify([k("Memset (Device)", 1.0), k(OWN, 40.0)], SWISH, judged_us=45.0)
    assert [x.owner for x in a.kernels] == ["copy", "agent"] and not a.flags
    assert a.profiled_us == 41.0 and a.judged_us == 45.0


def test_torch_kernels_in_the_audited_call_are_a_decoy_and_a_fallback() -> None:
    """The cheat: the built kernel runs only while the in-process profiler is on."""
    a = classify([k(TORCH, 20.0)], SWISH, judged_us=25.0)
    assert names(a) == {"decoy_kernel", "torch_fallback"}
    assert "at::native" in next(f.detail for f in a.flags if f.name == "torch_fallback")


def test_a_call_that_launched_nothing_is_a_decoy() -> None:
    """The cheat: cached outputs served whenever nothing watches (ncu exits 0 and lists no kernel)."""
    a = classify([], SWISH, judged_us=3.0)
    assert names(a) == {"decoy_kernel"} and "no kernel at all" in a.flags[0].detail


def test_a_kernel_of_a_linked_library_is_the_agents_and_of_another_library_is_torchs() -> None:
    lib = built(["bias_relu"], libraries=["cublas"])
    a = classify([k(GEMM, 30.0), k("void bias_relu(float *, const float *, int)", 5.0)], lib, judged_us=40.0)
    assert [x.owner for x in a.kernels] == ["library", "agent"] and not a.flags
    # the same gemm where the build links no cuBLAS: torch's matmul
    a = classify([k(GEMM, 30.0), k("void bias_relu(float *, const float *, int)", 5.0)], built(["bias_relu"]), 40.0)
    assert names(a) == {"torch_fallback"}


def test_load_inline_and_torch_flavour_kernels_are_the_agents_unless_named_like_a_library() -> None:
    assert owner("void my_fused_kernel(float*)", None) == "agent"
    assert owner(TORCH, None) == "torch"
    assert owner("void my_fused_kernel(float*)", built([], flavour="torch")) == "agent"


@pytest.mark.parametrize(("profiled", "judged", "flagged"), [
    (40.0, 45.0, False),  # a fair kernel: about the judged time
    (AUDIT_FACTOR * 100 + AUDIT_SLACK_US - 1, 100.0, False),  # a cold single call, within the factor
    (AUDIT_FACTOR * 100 + AUDIT_SLACK_US + 1, 100.0, True),  # the cheat: real work only while watched
    (5000.0, None, False),  # other sizes were timed: no comparison
])
def test_profile_mismatch(profiled: float, judged: float | None, flagged: bool) -> None:
    a = classify([k(OWN, profiled)], SWISH, judged_us=judged)
    assert ("profile_mismatch" in names(a)) is flagged


# ---- the audited run, through a stand-in ncu

FAKE_NCU = '''#!{python}
import sys
with open({log!r}, "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
rows = {probe_rows!r} if "--probe" in sys.argv else {rows!r}
print("==PROF== Connected to process")
print({before!r}, end="")
if not rows and "--probe" not in sys.argv:
    print("==WARNING== No kernels were profiled.")
    sys.exit({code})
print('"ID","Kernel Name","gpu__time_duration.sum"')
print('"","","nsecond"')
for i, (name, ns) in enumerate(rows):
    print(f'"{{i}}","{{name}}","{{ns}}"')
sys.exit(0 if "--probe" in sys.argv else {code})
'''


@pytest.fixture
def fake_ncu(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """make(rows, code, probe_rows) puts an `ncu` on PATH (readable by the sandbox's user) and
    returns its log of command lines."""
    folder = Path(tempfile.mkdtemp(prefix="kagent-fake-ncu-"))
    folder.chmod(0o755)
    monkeypatch.setattr(kernel_audit, "_USABLE", {})

    def make(rows: list[tuple[str, int]], code: int = 0, probe_rows: list[tuple[str, int]] | None = None,
             before: str = "") -> Path:
        log = folder / "calls.log"
        log.touch()
        log.chmod(0o666)
        exe = folder / "ncu"
        exe.write_text(FAKE_NCU.format(python=shutil.which("python3") or "/usr/bin/python3", log=str(log),
                                       rows=rows, code=code, before=before, probe_rows=[("void at::native::mul_kernel", 1500)]
                                       if probe_rows is None else probe_rows))
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH | stat.S_IROTH)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
        return log

    yield make
    shutil.rmtree(folder, ignore_errors=True)


def _audit(judged: float | None = 45.0) -> tuple[KernelAudit | None, str | None]:
    cfg = EvalConfig(backend="cuda", sandbox=SandboxConfig(mode="none", allow_unsafe=True), kernel_audit_timeout_s=60)
    scratch = make_scratch(cfg.sandbox)
    try:
        scratch.workspace.mkdir(parents=True, exist_ok=True)
        return anyio.run(run_audit, scratch.root / "exchange" / "problem.py", scratch, SWISH, cfg, judged)
    finally:
        shutil.rmtree(scratch.root, ignore_errors=True)


def test_the_audited_run_lists_the_kernels_of_the_call(fake_ncu: Any) -> None:
    log = fake_ncu([("Memset (Device)", 800), (OWN, 40000)])
    audit, note = _audit()
    assert note is None and audit is not None and not audit.flags, (audit, note)
    assert audit.profiled_us == pytest.approx(40.8) and audit.seconds > 0
    probe, target = log.read_text().splitlines()
    assert probe.endswith("skills.evaluator.harness.ncu_target --probe")
    for option in ("--cache-control none", "--print-kernel-base demangled", "--metrics gpu__time_duration.sum",
                   "--nvtx-include kagent/"):
        assert option in target, target
    assert "ncu_target" in target and "problem.py" in target and '"flavour": "c_abi"' in target


def test_the_probe_is_asked_once_per_process(fake_ncu: Any) -> None:
    log = fake_ncu([(OWN, 40000)])
    _audit()
    _audit()
    assert sum("--probe" in line for line in log.read_text().splitlines()) == 1


def test_an_exit_0_without_kernels_is_a_decoy(fake_ncu: Any) -> None:
    fake_ncu([])
    audit, note = _audit()
    assert audit is not None and names(audit) == {"decoy_kernel"} and note is None


FORGED = '"ID","Kernel Name","gpu__time_duration.sum"\n"","","nsecond"\n"0","void swish_kernel<256>(const float *, float *, long)","40000"\n'


def test_a_report_the_audited_process_printed_beside_ncus_is_tampering(fake_ncu: Any) -> None:
    """The cheat: torch's kernels in the audited call, and a raw CSV naming the built kernel written
    into ncu's output (reopened through /proc: the process's own stdout is /dev/null). ncu's own
    report follows it; the verdict reads ncu's and flags the second report."""
    fake_ncu([(TORCH, 40000)], before=FORGED)
    audit, note = _audit()
    assert audit is not None and note is None
    assert names(audit) == {"decoy_kernel", "torch_fallback", "harness_tampering"}, audit.flags
    assert "2 Nsight Compute reports" in next(f.detail for f in audit.flags if f.name == "harness_tampering")


def test_a_report_where_ncu_profiled_nothing_is_tampering(fake_ncu: Any) -> None:
    """The cheat: serve cached outputs (no kernel at all in the audited call) and write the only
    report; ncu's warning that it profiled nothing gives it away."""
    fake_ncu([], before=FORGED)
    audit, note = _audit()
    assert audit is not None and note is None
    assert names(audit) == {"harness_tampering"} and [k.owner for k in audit.kernels] == ["agent"], audit


def test_the_audited_process_cannot_print_into_ncus_stdout() -> None:
    """harness/ncu_target.py points fd 1 at /dev/null before any candidate code loads: print() and
    writes to fd 1 reach nothing; stderr still carries the candidate's messages."""
    code = ("import os, sys\nfrom skills.evaluator.harness.ncu_target import _mute_stdout\nprint('before')\n"
            "_mute_stdout()\nprint('forged')\nos.write(1, b'raw')\nsys.__stdout__.write('dunder')\n")
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=Path(__file__).resolve().parents[3], check=True)
    assert r.stdout == "before\n" and "forged" in r.stderr, (r.stdout, r.stderr)


def test_ncu_that_sees_no_kernel_of_the_probe_skips_the_audit(fake_ncu: Any) -> None:
    """Not the candidate's fault (e.g. no permission for the GPU's counters): skipped, noted."""
    fake_ncu([], probe_rows=[])
    audit, note = _audit()
    assert audit is None and note is not None and note.startswith("skipped: ncu cannot list kernels"), note


def test_a_failed_audited_run_is_reported_as_failed(fake_ncu: Any) -> None:
    fake_ncu([(OWN, 40000)], code=3)
    audit, note = _audit()
    assert audit is None and note is not None and note.startswith("failed:") and "exited 3" in note, note


def test_no_ncu_skips_the_audit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel_audit, "find_ncu", lambda: None)
    audit, note = _audit()
    assert audit is None and note == "skipped: Nsight Compute (ncu) is not installed on this machine"


# ---- when the evaluation audits, and what it does with the answer

def _state(mode: str = "final", **cfg: Any) -> EvalState:
    state = EvalState("p.py", EvalConfig(backend="cuda", **cfg), mode)  # type: ignore[arg-type]
    state.candidate = TimingResult(per_call_us=Interval(median=45.0, low=44.0, high=46.0, n=30), kernel_us=None,
                                   calls=30, cv=0.01)
    return state


def _hook(monkeypatch: pytest.MonkeyPatch, state: EvalState,
          answer: tuple[KernelAudit | None, str | None]) -> list[float | None]:
    judged: list[float | None] = []

    async def fake_run_audit(problem: Path, scratch: Any, built_: Any, cfg: EvalConfig,
                             judged_us: float | None) -> tuple[KernelAudit | None, str | None]:
        judged.append(judged_us)
        return answer

    monkeypatch.setattr(evaluate_mod, "run_audit", fake_run_audit)
    monkeypatch.setattr(evaluate_mod, "is_correct", lambda s: True)
    scratch = make_scratch(SandboxConfig(mode="none", allow_unsafe=True))
    try:
        anyio.run(evaluate_mod._audit, SWISH, scratch, state)
    finally:
        shutil.rmtree(scratch.root, ignore_errors=True)
    return judged


def test_the_audits_flags_join_the_evaluations(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state()
    audit = classify([k(TORCH, 20.0)], SWISH, judged_us=45.0)
    assert _hook(monkeypatch, state, (audit, None)) == [45.0]
    assert {f.name for f in state.flags} == {"decoy_kernel", "torch_fallback"}
    monkeypatch.setattr(evaluate_mod, "is_correct", lambda s: True)
    result = finish(state)
    assert result.audit == audit and "kernel audit (Nsight Compute, outside your process): one call ran 1 torch" \
        in format_result(result)


def test_a_skipped_audit_is_noted_and_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state()
    _hook(monkeypatch, state, (None, "skipped: Nsight Compute (ncu) is not installed on this machine"))
    assert not state.flags and state.error is None and state.environment_fault is None
    result = finish(state)
    assert audit_line(result) == ("kernel audit (Nsight Compute, outside your process): skipped: Nsight Compute"
                                  " (ncu) is not installed on this machine")


def test_a_failed_audited_run_is_an_environment_fault(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not scored: it may be ncu's fault, and a workspace that crashes only when watched is not paid either."""
    state = _state()
    _hook(monkeypatch, state, (None, "failed: the audited run under Nsight Compute ncu exited 1: boom"))
    assert state.environment_fault is not None and "ncu exited 1" in state.environment_fault
    assert finish(state).reward is None


@pytest.mark.parametrize(("mode", "cfg", "flagged"), [
    ("test", {}, False), ("profile", {}, False), ("final", {"kernel_audit": False}, False),
    ("final", {"torch_allowed": True}, False), ("final", {}, True),
])
def test_the_audit_runs_only_on_a_final_evaluation_that_passed_everything(
        monkeypatch: pytest.MonkeyPatch, mode: str, cfg: dict[str, Any], flagged: bool) -> None:
    state = _state(mode, **cfg)
    if flagged:
        from skills.evaluator.results import Flag
        state.flags.append(Flag(name="timer_tampering", detail="x"))
    assert _hook(monkeypatch, state, (None, None)) == []


def test_the_judged_time_is_compared_only_at_the_problems_own_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _hook(monkeypatch, _state(), (None, None)) == [45.0]
    assert _hook(monkeypatch, _state(sizes="small"), (None, None)) == [None]
