"""The shared-GPU check (skills/evaluator/sharing.py) on the CPU, NVML faked: a process outside the
evaluation that used the SMs during the timed calls makes an environment fault and voids the clock
flags raised meanwhile, unless another flag was raised then too (the -1 stands); the evaluation's
own processes, idle contexts, gone pids and drivers without per-process samples do not count; with
neither a sandbox nor a pids cgroup the check is off. The real thing, on the H200:
tests/skills/evaluator/test_gpu_sharing.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skills.evaluator import sharing
from skills.evaluator.config import EvalConfig
from skills.evaluator.pids import PidsGroup
from skills.evaluator.results import Flag
from skills.evaluator.sandbox import SandboxConfig
from skills.evaluator.sharing import (
    CLOCK_FLAGS,
    NO_BOUNDARY,
    SM_PERCENT,
    SharingWatch,
    check_sharing,
    off_without_boundary,
)
from skills.evaluator.state import EvalState, finish


class FakeNvml:
    def __init__(self, samples: list[tuple[int, int, int]] | None) -> None:
        self.samples = samples
        self.asked: list[int] = []

    def utilization(self, since_us: int) -> list[tuple[int, int, int]] | None:
        self.asked.append(since_us)
        return self.samples


@pytest.fixture
def other() -> Iterator[int]:
    """A live process outside any evaluation (stands for another job's GPU process)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _watch(samples: list[tuple[int, int, int]] | None, ours: set[int] = frozenset(),  # type: ignore[assignment]
           cgroup: set[int] = frozenset()) -> SharingWatch:  # type: ignore[assignment]
    w = SharingWatch(FakeNvml(samples), lambda pid: pid in ours, candidate_pids=lambda: cgroup)  # type: ignore[arg-type]
    w.begin()
    return w


def test_a_busy_process_outside_the_evaluation_is_a_cotenant(other: int) -> None:
    w = _watch([(other, 1, 3), (other, 2, 97), (os.getpid(), 2, 99)])
    assert w.cotenants() == {other: 97}
    cause = w.verdict()
    assert cause is not None and f"pid {other}" in cause and "97%" in cause and "shared" in cause


def test_the_evaluations_own_processes_are_not_cotenants(other: int) -> None:
    assert _watch([(other, 1, 99)], ours={other}).verdict() is None  # the judge's or the candidate's tree
    assert _watch([(other, 1, 99)], cgroup={other}).verdict() is None  # the candidate's pids cgroup (a double fork)
    assert _watch([(os.getpid(), 1, 99)]).verdict() is None  # the parent itself


def test_the_candidates_sandbox_namespace_is_the_candidates(other: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process in the sandbox's pid namespace is the candidate's whatever its ancestry says."""
    inside = 424242
    monkeypatch.setattr(sharing, "_pid_ns", lambda pid: "pid:[2]" if pid in (other, inside) else "pid:[1]")
    w = SharingWatch(FakeNvml([(other, 1, 99)]), lambda pid: False, candidate_pids=set,  # type: ignore[arg-type]
                     candidate_ns_roots=lambda: [inside])
    w.begin()
    assert w.verdict() is None


def test_idle_contexts_gone_pids_and_unmeasured_drivers_are_not_cotenants(other: int) -> None:
    assert _watch([(other, 1, SM_PERCENT - 1), (other, 2, 0)]).verdict() is None  # a context, a trickle
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert _watch([(gone.pid, 1, 99)]).cotenants() == {}  # cannot be told apart from the candidate's any more
    w = _watch(None)
    assert w.cotenants() is None and w.verdict() is None  # no per-process samples on this driver
    assert _watch([]).verdict() is None
    unstarted = SharingWatch(FakeNvml([(other, 1, 99)]), lambda pid: False, candidate_pids=set)  # type: ignore[arg-type]
    assert unstarted.cotenants() is None  # begin() never ran: no window


def test_the_window_starts_at_begin() -> None:
    nvml = FakeNvml([])
    w = SharingWatch(nvml, lambda pid: False, candidate_pids=set)  # type: ignore[arg-type]
    before = time.time_ns() // 1000
    w.begin()
    w.verdict()
    assert nvml.asked and before <= nvml.asked[0] <= time.time_ns() // 1000


def _state(samples: list[tuple[int, int, int]], sandbox: SandboxConfig | None = None) -> EvalState:
    cfg = EvalConfig(backend="cuda", sandbox=sandbox or SandboxConfig(mode="none", allow_unsafe=True))
    state = EvalState(str(Path("problems/level1/02_swish.py")), cfg, "final")
    state.flags = [Flag(name="static_early", detail="raised before the timed calls")]
    state.flags_at_timing = 1
    state.sharing = SharingWatch(FakeNvml(samples), lambda pid: False, candidate_pids=set)  # type: ignore[arg-type]
    state.sharing.begin()
    return state


def test_a_cotenant_makes_an_environment_fault_and_voids_the_timing_flags(other: int) -> None:
    state = _state([(other, 1, 95)])
    state.flags.append(Flag(name="timer_tampering", detail="parent clock 6 ms, candidate 0.6 ms"))
    check_sharing(state)
    assert state.environment_fault is not None and f"pid {other}" in state.environment_fault
    assert "timer_tampering" in state.environment_fault and "void" in state.environment_fault
    assert [f.name for f in state.flags] == ["static_early"]  # only the flags of the timed stretch go
    assert state.error is not None and "environment fault" in state.error
    result = finish(state)
    assert result.reward is None and result.environment_fault == state.environment_fault
    assert state.sharing is not None and state.sharing.since_us is None  # one verdict per stretch


def test_a_quiet_gpu_changes_nothing(other: int) -> None:
    state = _state([(other, 1, 0)])
    state.flags.append(Flag(name="timer_tampering", detail="a real one"))
    check_sharing(state)
    assert state.environment_fault is None and state.error is None
    assert [f.name for f in state.flags] == ["static_early", "timer_tampering"]


def test_the_clock_flags_are_the_timing_checks_clock_comparisons() -> None:
    assert CLOCK_FLAGS == {"timer_tampering", "unsynchronized_work"}
    src = (Path(__file__).resolve().parents[3] / "skills/evaluator/timing_checks.py").read_text()
    assert all(f'Flag(name="{name}"' in src for name in CLOCK_FLAGS)  # the names the checks raise


def test_both_clock_flags_are_void_and_named(other: int) -> None:
    state = _state([(other, 1, 95)])
    state.flags += [Flag(name="timer_tampering", detail="a"), Flag(name="unsynchronized_work", detail="b")]
    check_sharing(state)
    assert state.environment_fault is not None
    assert "(timer_tampering, unsynchronized_work) are void" in state.environment_fault
    assert [f.name for f in state.flags] == ["static_early"]


def test_a_flag_no_cotenant_causes_keeps_the_penalty(other: int) -> None:
    """The cheat: outputs replayed from a cache on a GPU that happens to be shared. Its flag is not
    a clock's, so the co-tenant excuses nothing: no fault, every flag kept, reward -1."""
    state = _state([(other, 1, 95)])
    state.flags += [Flag(name="timer_tampering", detail="skewed or not"),
                    Flag(name="timed_output_mismatch", detail="3 of the 12 timed calls checked returned wrong values")]
    check_sharing(state)
    assert state.environment_fault is None and state.error is None
    assert [f.name for f in state.flags] == ["static_early", "timer_tampering", "timed_output_mismatch"]
    assert state.sharing is not None and state.sharing.since_us is None
    assert finish(state).reward == -1.0


def _adopted(tmp_path: Path) -> PidsGroup:
    """A group the candidate was moved into (`adopt` set its cap); no cgroup is touched here."""
    group = PidsGroup(tmp_path / "kagent-eval-test")
    group.limit = 520
    return group


def test_no_sandbox_and_no_pids_group_turns_the_check_off(tmp_path: Path) -> None:
    """The cheat: unsandboxed and outside any cgroup, a double-forked GPU spinner (re-parented to
    init) would read as another job's and turn the candidate's -1 into None."""
    state = _state([])
    state.sandbox = "none (unsafe)"
    assert off_without_boundary(state, pids_group=None) is True
    assert state.sharing is None
    assert state.sandbox == f"none (unsafe); {NO_BOUNDARY}" and "shared-GPU check off" in NO_BOUNDARY
    unadopted = PidsGroup(tmp_path / "kagent-eval-test")  # made, but the candidate could not be moved in
    state = _state([])
    assert off_without_boundary(state, pids_group=unadopted) is True and state.sharing is None
    assert state.sandbox == NO_BOUNDARY


def test_a_pids_group_keeps_the_check_on(tmp_path: Path) -> None:
    state = _state([])
    state.sandbox = "none (unsafe); tasks capped by a pids cgroup"
    assert off_without_boundary(state, pids_group=_adopted(tmp_path)) is False
    assert state.sharing is not None and state.sandbox == "none (unsafe); tasks capped by a pids cgroup"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_sandbox_keeps_the_check_on() -> None:
    state = _state([], sandbox=SandboxConfig(mode="bwrap"))
    state.sandbox = "bwrap as nobody"
    assert off_without_boundary(state, pids_group=None) is False
    assert state.sharing is not None and state.sandbox == "bwrap as nobody"
