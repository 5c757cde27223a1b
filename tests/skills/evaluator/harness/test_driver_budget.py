"""The judge's two limits in a stage (skills/evaluator/harness/driver.py): the candidate's answers
may take `limit_s` in all, counted only while the judge waits for them; the judge's own work
between them (drawing sets, references, comparisons) has its own limit, whose overrun is the
environment's fault. Before, one wall-clock deadline covered both, so a fair kernel on a problem
whose checks are slow read -1 "timed out" (docs/fair-grading.md)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import torch

from skills.evaluator.harness import protocol as P
from skills.evaluator.harness.driver import CandidateFault, Driver, JudgeLate
from skills.evaluator.harness.judge import _late_blame, _OwnCpu
from skills.evaluator.schedstat import TreeSample


class SlowLink:
    """The candidate's side of the link: each answer takes `answer_s`; None never answers."""

    def __init__(self, answer_s: float | None) -> None:
        self.answer_s = answer_s
        self.sent: list[Any] = []

    def send(self, msg: Any, fds: Any = None) -> None:
        self.sent.append(msg)

    def recv(self, timeout: float | None = None, fds: bool = False) -> tuple[Any, list[int]]:
        assert timeout is not None
        if self.answer_s is None or self.answer_s > timeout:
            time.sleep(timeout)
            raise P.LinkClosed(f"no answer within {timeout:.0f} s")
        time.sleep(self.answer_s)
        return P.Accepted(group=0), []


def driver(link: SlowLink) -> Driver:
    return Driver(link, torch.device("cpu"), P.TimingConfig(flush_l2=False))  # type: ignore[arg-type]


def test_the_judges_own_work_between_answers_is_not_the_candidates_time() -> None:
    """Five answers of 0.02 s with 0.25 s of the judge's own work after each: 1.35 s of wall time in
    a stage whose candidate limit is 1 s. The old wall-clock deadline failed the candidate here."""
    drv = driver(SlowLink(0.02))
    drv.within(1.0, own_seconds=30.0)
    began = time.monotonic()
    for _ in range(5):
        drv._expect(P.Accepted, "timing")
        time.sleep(0.25)  # the judge draws the next set, computes a checked call's reference
    assert time.monotonic() - began > 1.0  # past the candidate's limit on the wall clock
    assert 0.09 <= drv.waited_ns / 1e9 < 1.0  # its answers took about 0.1 s in all
    assert drv.own_s() >= 1.2


def test_the_candidates_waits_add_up_to_its_limit() -> None:
    """Each answer is quick, but together they pass the limit: the candidate timed out (its -1)."""
    drv = driver(SlowLink(0.15))
    drv.within(0.5, own_seconds=30.0)
    with pytest.raises(CandidateFault) as caught:
        for _ in range(10):
            drv._expect(P.Accepted, "timing")
    assert caught.value.flag is None and not caught.value.gone
    assert "the candidate timed out after 0 s of its calls while timing" in str(caught.value)
    assert "the judge's own work in between" in str(caught.value)
    assert 0.45 <= drv.waited_ns / 1e9 < 2.0


def test_an_answer_that_never_comes_is_the_candidates_timeout() -> None:
    drv = driver(SlowLink(None))
    drv.within(0.3, own_seconds=30.0)
    with pytest.raises(CandidateFault, match="timed out"):
        drv._expect(P.Accepted, "correctness")


def test_the_judges_own_work_past_its_limit_is_its_own_fault() -> None:
    """Not a CandidateFault: the judge reports JudgeLate as its failure (reward None), with both shares."""
    drv = driver(SlowLink(0.01))
    drv.within(5.0, own_seconds=0.2)
    drv._expect(P.Accepted, "timing")
    time.sleep(0.3)
    with pytest.raises(JudgeLate) as caught:
        drv._expect(P.Accepted, "timing")
    text = str(caught.value)
    assert "the judge's own work while timing" in text and "past its limit of 0 s (timeout_judge_s)" in text
    assert "for the candidate's answers (their limit: 5 s)" in text
    assert not isinstance(caught.value, CandidateFault)


def test_no_own_limit_means_only_the_parents_wait_bounds_the_judge() -> None:
    drv = driver(SlowLink(0.01))
    drv.within(5.0)
    time.sleep(0.2)
    drv._expect(P.Accepted, "timing")  # no JudgeLate


def test_each_stage_starts_its_own_budget() -> None:
    """Two rounds of one 0.6 s answer under a 1 s limit: the first round's wait is not carried over."""
    drv = driver(SlowLink(0.6))
    drv.within(1.0, own_seconds=30.0)
    drv._expect(P.Accepted, "timing")
    drv.within(1.0, own_seconds=30.0)
    drv._expect(P.Accepted, "timing")
    assert drv.waited_ns / 1e9 < 1.0


class Own:
    """_OwnCpu's counts as the judge read them from /proc: the candidate's CPU between its calls."""

    def __init__(self, idle_cpu_s: float, idle_s: float, ok: bool = True, since_answer: tuple[float, float] = (0.0, 0.0)) -> None:
        self.idle_cpu, self.idle_ns, self.ok = int(idle_cpu_s * 1e9), int(idle_s * 1e9), ok
        self.since_answer = since_answer

    def settle(self) -> None:
        """The reading _late_blame takes when the judge runs late: the stretch since the last answer."""
        self.idle_cpu += int(self.since_answer[0] * 1e9)
        self.idle_ns += int(self.since_answer[1] * 1e9)


def late() -> JudgeLate:
    return JudgeLate("the judge's own work while timing took 901 s, past its limit of 900 s (timeout_judge_s)")


def test_a_late_judge_beside_an_idle_candidate_is_the_environments_fault() -> None:
    """The fair case: the candidate did nothing between its calls, so the late round is not scored."""
    with pytest.raises(JudgeLate), _late_blame(Own(0.001, 10.0)):  # type: ignore[arg-type]
        raise late()


def test_a_late_judge_beside_a_busy_candidate_is_the_candidates_fault() -> None:
    """The cheat: a kernel that would fail keeps threads spinning between its calls so that the
    judge's draws and checks run past their limit, hoping the round goes unscored. The judge read
    its CPU between the calls from /proc: the round is flagged as the candidate's background work."""
    with pytest.raises(CandidateFault) as caught, _late_blame(Own(8.0, 10.0)):  # type: ignore[arg-type]
        raise late()
    assert caught.value.flag is not None and caught.value.flag.name == "background_work"
    assert "while the judge worked" in str(caught.value) and "past its limit of 900 s" in str(caught.value)


def test_a_judge_late_after_the_last_answer_reads_that_stretch_too() -> None:
    """The judge learns it is late as it waits for an answer; where that wait follows no reading of
    its own (the offer of the next group's arena after the shape set's call), the candidate's CPU
    since the last answer was unread and a spinner's late stage could go unscored. It is read then."""
    with pytest.raises(CandidateFault) as caught, _late_blame(Own(0.0, 0.0, since_answer=(8.0, 10.0))):  # type: ignore[arg-type]
        raise late()
    assert caught.value.flag is not None and caught.value.flag.name == "background_work"
    with pytest.raises(JudgeLate), _late_blame(Own(0.0, 0.0, since_answer=(0.001, 10.0))):  # type: ignore[arg-type]
        raise late()


def test_a_late_judge_without_a_view_of_the_candidate_is_the_environments_fault() -> None:
    """No /proc reading of the candidate (own.ok false), or a stage without one (after the loop)."""
    with pytest.raises(JudgeLate), _late_blame(Own(8.0, 10.0, ok=False)):  # type: ignore[arg-type]
        raise late()
    with pytest.raises(JudgeLate), _late_blame(None):
        raise late()


def test_own_cpu_type_is_what_late_blame_reads() -> None:
    """The fake above stands for _OwnCpu: the fields _late_blame reads exist there with these names."""
    real = _OwnCpu(None, None)
    assert (real.idle_cpu, real.idle_ns, real.ok) == (0, 0, False)
    real.settle()  # without a view of the candidate: reads nothing, stays not ok
    assert (real.idle_cpu, real.idle_ns, real.ok) == (0, 0, False)


def test_settle_counts_only_an_unread_stretch_between_calls() -> None:
    """_OwnCpu.settle, on a fake clock: the stretch since the last answer once (not again, not while a
    call's request is out, whose time before() already read, and not after close(): the probe calls
    after the loop are the candidate's calls, so their CPU is not between calls)."""

    class Clock:
        def __init__(self) -> None:
            self.t = 0

        def sample(self) -> TreeSample:
            self.t += 1  # each read 1 s later; the helper thread (7, 8) spins throughout
            return TreeSample(self.t * 10**9, 0, {(7, 7): 0, (7, 8): self.t * 10**9}, None)

        def close(self) -> None:
            pass

    own = _OwnCpu(Clock(), 7)  # type: ignore[arg-type]
    own.settle()  # read at t=2: one second since the first read
    assert (own.idle_cpu, own.idle_ns) == (10**9, 10**9)
    own.settle()  # nothing new counted twice: one more second only
    assert (own.idle_cpu, own.idle_ns) == (2 * 10**9, 2 * 10**9)
    own.before()  # the request goes out (t=4)
    own.settle()  # late while the call is in flight: before() has read up to the request
    assert (own.idle_cpu, own.idle_ns) == (3 * 10**9, 3 * 10**9)
    own.after()
    own.close()
    own.settle()
    assert (own.idle_cpu, own.idle_ns) == (3 * 10**9, 3 * 10**9)
