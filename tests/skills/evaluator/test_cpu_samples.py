"""The outside sampler of the candidate's CPU time (skills/evaluator/cpu_samples.py): the sampler on a
real process, the verdict's rule, and end to end a forward that computes with torch whenever nothing
in its process watches (the cheat the op recorder and the profiler cannot see) against the fair
kernel it imitates. The fair kernels of every other cpu test pass through the same check."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skills.evaluator import cpu_samples
from skills.evaluator.cpu_samples import (
    AGENT_PER_TORCH,
    MIN_SAMPLES,
    TORCH_SHARE,
    TORCH_US_PER_CALL,
    ThreadSampler,
    verdict,
)
from skills.evaluator.report import format_result
from skills.evaluator.results import CpuSamples
from tests.conftest import make_ws
from tests.skills.evaluator.test_evaluate_cpu import RELU, RELU_CPP, run_eval
from tests.skills.evaluator.test_exploits_cpu import (
    DECOY_WHEN_ANY_WATCH_PY,
    RELU_FWD,
    SAMPLED_CALLS,
    relu_py,
)

SPIN = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end:\n    pass\n"


def _sample(agent_roots: list[str], seconds: float = 0.6) -> CpuSamples:
    proc = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        time.sleep(0.3)  # the interpreter is up and spinning
        sampler = ThreadSampler(proc.pid, agent_roots)
        why = sampler.start()
        if why is not None:
            pytest.skip(f"this kernel does not let the parent sample: {why}")
        time.sleep(seconds)
        samples = sampler.stop()
    finally:
        proc.kill()
        proc.wait()
    assert samples is not None
    return samples


def test_the_sampler_places_a_spinning_interpreter_in_python() -> None:
    s = _sample([])
    # 0.6 s of a busy thread at one sample per 200 us: ~3000, fewer on a loaded box
    assert s.total >= 200 and s.threads >= 1 and s.lost == 0, s
    assert s.share("python") + s.share("other") > 0.9 and s.share("agent") == 0.0, s.describe()


def test_code_mapped_from_an_agent_root_is_the_agents() -> None:
    exe_dir = os.path.dirname(os.path.realpath(sys.executable))
    lib_dir = os.path.dirname(os.path.realpath(sys.executable)).replace("/bin", "/lib")
    s = _sample([exe_dir, lib_dir])
    assert s.share("agent") > 0.5, s.describe()


def test_a_missing_process_is_reported_not_raised() -> None:
    sampler = ThreadSampler(2**22 + 12345, [])
    assert sampler.start() is not None and sampler.stop() is None


@pytest.mark.parametrize(("places", "flagged"), [
    ({"torch": 130, "python": 80, "other": 40}, True),  # the cheat: none of the agent's code ran
    ({"torch": 130, "python": 80, "agent": 1}, True),  # a watched call or two among hundreds
    ({"torch": 121, "python": 52, "agent": 9, "other": 9}, True),  # a decoy slice: 4.7% agent, 63% torch
    ({"torch": 90, "python": 50, "agent": 60}, False),  # torch's share high, the agent's code two thirds of it
    ({"torch": 80, "python": 90, "agent": 45, "openmp": 5}, False),  # a fair kernel under torch's overhead
    ({"torch": 40, "python": 160, "agent": 1}, False),  # a tiny kernel in Python's overhead: torch did not do the work
    ({"python": 200, "other": 40}, False),  # compute outside torch (numpy: the static checks' business)
    ({"torch": 20, "python": 5}, False),  # too few samples to decide anything
])
def test_verdict(places: dict[str, int], flagged: bool) -> None:
    s = CpuSamples(places=places, threads=2)
    flags = verdict(s)
    assert bool(flags) is flagged, (s.describe(), flags)
    if flagged:
        assert flags[0].name == "decoy_kernel" and "sampled from outside your process" in flags[0].detail
    assert verdict(None) == []


@pytest.mark.parametrize(("calls", "flagged"), [
    (180, False),  # 39 us of torch's a call: a call's allocation and dispatch
    (20, True),  # 350 us a call: torch computed
])
def test_a_tiny_fair_kernel_s_shares_need_torch_time_per_call(calls: int, flagged: bool) -> None:
    """The shares a fair relu on a 64 x 256 problem was flagged with (its kernel a few us of a call
    that is Python's and torch's overhead): they decide only where torch's samples come to more CPU
    time a call than that overhead."""
    s = CpuSamples(places={"python": 15, "torch": 14, "other": 4, "openmp": 1}, threads=4, calls=calls)
    assert s.share("torch") >= TORCH_SHARE and s.share("agent") == 0.0
    assert bool(verdict(s)) is flagged, (s.us_per_call("torch"), verdict(s))
    if flagged:
        assert "us of torch's a call" in verdict(s)[0].detail


def test_rounds_of_unknown_calls_leave_the_sum_s_calls_unknown() -> None:
    """A round whose samples were not bounded to call windows (calls 0) added to a windowed one:
    the sum's per-call figure would divide all samples by part of the calls, so it is unknown."""
    windowed = CpuSamples(places={"torch": 10}, calls=100)
    assert (windowed + windowed).calls == 200 and (windowed + windowed).us_per_call("torch") == 50.0
    unbounded = CpuSamples(places={"torch": 40})
    assert (windowed + unbounded).calls == 0 and (windowed + unbounded).us_per_call("torch") is None
    assert (unbounded + windowed).us_per_call("torch") is None


def test_the_per_call_bound_sits_between_the_measured_fair_calls_and_the_cheats() -> None:
    """Torch's CPU time a timed call (benchmarks/results/cpu-sample-shares-per-call.json): the fair
    rows, the tiny relu's included, below the bound; the cheats on the bundled relu well above it."""
    import json

    rows = json.loads((Path(__file__).resolve().parents[3] / "benchmarks" / "results"
                       / "cpu-sample-shares-per-call.json").read_text())["rows"]
    fair = [r for r in rows if not r["case"].startswith("cheat")]
    cheats = [r for r in rows if r["case"] in ("cheat when_watched", "cheat decoy_slice")]
    assert len(fair) >= 6 and len(cheats) == 2 and any(r["case"] == "tiny relu" for r in fair)
    assert max(r["torch_us_per_call"] for r in fair) < TORCH_US_PER_CALL / 1.3, fair
    assert min(r["torch_us_per_call"] for r in cheats) > 1.5 * TORCH_US_PER_CALL, cheats
    assert all("decoy_kernel" in r["flags"] for r in cheats)


def test_thresholds_leave_the_measured_fair_kernels_a_wide_margin() -> None:
    """Between the marks, the bundled cpu solutions spent 1.5-2.5 times as much of the timed calls'
    CPU time in their own code as in torch's (at most 24% there), the cheats (when_watched, decoy_slice)
    at most 0.07 times, with 63% or more in torch's (benchmarks/results/cpu-sample-shares.json)."""
    import json

    rows = json.loads((Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "cpu-sample-shares.json")
                      .read_text())["rows"]
    fair = [r for r in rows if not r["case"].startswith("cheat")]
    cheats = [r for r in rows if r["case"] in ("cheat when_watched", "cheat decoy_slice")]
    assert fair and len(cheats) == 2
    assert min(r["agent"] / max(r["torch"], 1e-9) for r in fair) >= 4 * AGENT_PER_TORCH
    assert max(r["torch"] for r in fair) <= 0.6 * 100 * TORCH_SHARE
    assert all(r["agent"] < AGENT_PER_TORCH * r["torch"] / 2 and r["torch"] >= 100 * TORCH_SHARE
               and "decoy_kernel" in r["flags"] for r in cheats), cheats
    assert MIN_SAMPLES >= 30


WATCHED = DECOY_WHEN_ANY_WATCH_PY


def test_torch_compute_whenever_nothing_watches_is_caught(tmp_path: Path) -> None:
    """Behind the static checks, the kernel runs only while the op recorder or the profiler is on in
    the candidate's process; the timed calls, sampled from outside, ran torch's clamp. Before the
    sampler this scored reward 1 (correct, unflagged)."""
    ws = make_ws(tmp_path, WATCHED, {"relu.cpp": RELU_CPP}, RELU)
    r = run_eval(RELU, ws, tmp_path / "build", mode="final", static_checks=False, **SAMPLED_CALLS)
    if r.cpu_samples is None:
        pytest.skip(f"not sampled here: {r.cpu_samples_note}")
    assert "decoy_kernel" in {f.name for f in r.flags}, (r.flags, r.cpu_samples)
    assert r.reward == -1.0 and r.cpu_samples.share("agent") < AGENT_PER_TORCH * r.cpu_samples.share("torch")
    # the same forward with the sampler off: what it scored before
    off = run_eval(RELU, make_ws(tmp_path, WATCHED, {"relu.cpp": RELU_CPP}, RELU), tmp_path / "build",
                   mode="final", static_checks=False, cpu_sampling=False)
    assert off.correct and not off.flags and off.reward is not None and off.reward >= 1.0, off.flags


def test_the_fair_kernel_it_imitates_passes_and_the_report_says_where_its_time_went(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from skills.evaluator import rounds

    judged: list[bool] = []  # per baseline round: was the judge sampled as the candidate was

    async def recording(judge_pid: int | None) -> ThreadSampler | None:
        sampler = await cpu_samples.baseline_sampler(judge_pid)
        judged.append(sampler is not None)
        return sampler

    monkeypatch.setattr(rounds, "baseline_sampler", recording)
    ws = make_ws(tmp_path, relu_py(RELU_FWD), {"relu.cpp": RELU_CPP}, RELU)
    r = run_eval(RELU, ws, tmp_path / "build", mode="final")
    assert r.correct and not r.flags and r.reward is not None and r.reward >= 1.0, r.flags
    if r.cpu_samples is None:
        pytest.skip(f"not sampled here: {r.cpu_samples_note}")
    assert r.cpu_samples.share("agent") >= AGENT_PER_TORCH * r.cpu_samples.share("torch"), r.cpu_samples.describe()
    assert "CPU time of the timed calls (sampled outside your process)" in format_result(r)
    assert judged and all(judged), judged  # every paired baseline round paid the same interrupts


def test_sampling_that_cannot_start_is_noted_and_flags_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_samples, "_NR_PERF_EVENT_OPEN", {})
    ws = make_ws(tmp_path, relu_py(RELU_FWD), {"relu.cpp": RELU_CPP}, RELU)
    r = run_eval(RELU, ws, tmp_path / "build", mode="final")
    assert r.cpu_samples is None and r.cpu_samples_note is not None and "Linux" in r.cpu_samples_note
    assert not r.flags and r.correct


def test_a_candidate_that_shuts_the_sampler_out_is_flagged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that makes itself non-dumpable (PR_SET_DUMPABLE 0, behind the static checks) refuses a
    parent without CAP_SYS_PTRACE: where that parent may sample the judge, the refusal is the
    candidate's (here faked: the parent is root, which no process can shut out)."""
    from skills.evaluator import rounds

    if not cpu_samples.samplable(os.getpid()):
        pytest.skip("this kernel does not let the parent sample at all")

    class Refused(ThreadSampler):
        def start(self) -> str | None:
            self.refused = True
            return "perf_event_open: Permission denied (kernel.perf_event_paranoid, seccomp?)"

    monkeypatch.setattr(rounds, "ThreadSampler", Refused)
    ws = make_ws(tmp_path, relu_py(RELU_FWD), {"relu.cpp": RELU_CPP}, RELU)
    r = run_eval(RELU, ws, tmp_path / "build", mode="final")
    assert "harness_tampering" in {f.name for f in r.flags} and r.reward == -1.0, r.flags
    assert r.cpu_samples is None and r.cpu_samples_note is not None
