"""The parent's checks on a timed loop's raw samples (skills/evaluator/timing_checks.py) and the judge's plan of
checked calls (skills/evaluator/harness/driver.py), on made-up samples."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from skills.evaluator.harness import protocol as P
from skills.evaluator.marks import ENV as MARK_ENV
from skills.evaluator.marks import Mark, MarkSocket
from skills.evaluator.schedstat import TreeClock, TreeSample, cpu_between, worker_pid
from skills.evaluator.timing_checks import background_check, clock_check

ROOT = Path(__file__).resolve().parents[3]


def _timed(times: list[float], sent: list[int], back: list[int]) -> P.TimeReport:
    samples = P.Samples(per_call_us=times, wall_us=times, sync_overhead_us=0.0)
    return P.TimeReport(nonce="n", samples=samples, first_seq=1, checked_calls=8, bad_calls=0, sent_ns=sent,
                        back_ns=back, flags=[])


def test_the_judges_plan_checks_a_secret_share_of_the_calls() -> None:
    """At least MIN_CHECKED calls, at most MAX_CHECKED, a share of the loop in between, at places
    that differ between loops."""
    from skills.evaluator.harness.driver import MAX_CHECKED, MIN_CHECKED, loop_plan

    assert len(loop_plan(40, 0.125, random.Random(0))) == MIN_CHECKED
    assert len(loop_plan(120, 0.125, random.Random(0))) == 15
    assert len(loop_plan(1000, 0.125, random.Random(0))) == MAX_CHECKED
    assert loop_plan(3, 0.125, random.Random(0)) == {0, 1, 2}  # a short loop: every call
    plans = {tuple(sorted(loop_plan(40, 0.125, random.Random(s)))) for s in range(50)}
    assert len(plans) == 50


# ---- clock_check: the candidate's reported times against the kernel-stamped marks (row 4) ----


def _marked(reported: list[float], windows: list[float], gap_us: float = 100.0, before_us: float = 40.0,
            after_us: float = 60.0) -> tuple[P.TimeReport, list[Mark]]:
    """A loop's report with these reported times, start/end marks `windows` apart and `gap_us`
    between calls, the judge's request `before_us` ahead of each start and the answer back
    `after_us` after each end."""
    marks: list[Mark] = []
    sent: list[int] = []
    back: list[int] = []
    t = 1_000_000_000
    for i, w in enumerate(windows):
        marks.append((i, False, t))
        sent.append(t - int(before_us * 1e3))
        t += int(w * 1e3)
        marks.append((i, True, t))
        back.append(t + int(after_us * 1e3))
        t += int(gap_us * 1e3)
    return _timed(reported, sent, back), marks


def _yard(hop: float = 30.0, handback: float = 40.0) -> list[P.YardstickReport]:
    return [P.YardstickReport(nonce="n", handback_us=[handback] * 15, hop_us=[hop] * 15)]


def test_reported_times_inside_their_windows_pass() -> None:
    rng = random.Random(1)
    reported = [150.0 * (1 + 0.05 * rng.random()) for _ in range(60)]
    samples, marks = _marked(reported, [r + 16.0 for r in reported])  # the ~16 us measured on this box
    assert clock_check(samples, marks, 0.0, _yard()) == []
    # cuda: the lead runs inside the window, before the start event
    samples, marks = _marked(reported, [r + 100.0 + 20.0 for r in reported])
    assert clock_check(samples, marks, 100.0, _yard()) == []
    # marks arrive out of order (both ends of every call are there): fine
    assert clock_check(samples, list(reversed(marks)), 100.0, _yard()) == []


def test_a_fake_clock_is_flagged() -> None:
    # the clock_patch_harness cheat on this box: every call "takes" 10 us, the stamps saw ~180 us
    samples, marks = _marked([10.0] * 60, [180.0] * 60)
    flags = clock_check(samples, marks, 0.0, _yard())
    assert [f.name for f in flags] == ["timer_tampering"]
    assert "180 us" in flags[0].detail and "reported 10 us" in flags[0].detail
    # around what is allowed: 50 us + 10% of the window (+1.1x the lead on cuda); a window of
    # 100 + x us allows x up to 66.7 us on cpu and 188.9 us with a 100 us lead
    for lead, x, caught in [(0.0, 63.0, False), (0.0, 70.0, True), (100.0, 185.0, False), (100.0, 192.0, True)]:
        samples, marks = _marked([100.0] * 60, [100.0 + x] * 60)
        assert bool(clock_check(samples, marks, lead, _yard())) == caught, (lead, x)


def test_work_moved_out_of_the_window_is_flagged() -> None:
    # honest: the worker's own time around a call is a hop and the hand-back, and a little more
    samples, marks = _marked([10.0] * 60, [20.0] * 60, before_us=80.0, after_us=150.0)
    assert clock_check(samples, marks, 0.0, _yard()) == []
    # the call's 5 ms of work done between the judge's request and the start mark
    samples, marks = _marked([10.0] * 60, [20.0] * 60, before_us=5080.0)
    flags = clock_check(samples, marks, 0.0, _yard())
    assert [f.name for f in flags] == ["timer_tampering"]
    assert "moved out of the timed calls" in flags[0].detail and "request" in flags[0].detail
    # ...or after the end mark, before the answer
    samples, marks = _marked([10.0] * 60, [20.0] * 60, after_us=5150.0)
    flags = clock_check(samples, marks, 0.0, _yard())
    assert [f.name for f in flags] == ["timer_tampering"] and "answer" in flags[0].detail
    # a machine that got busier during the loop: the judge's yardstick after it counts too
    samples, marks = _marked([10.0] * 60, [20.0] * 60, before_us=5080.0)
    assert clock_check(samples, marks, 0.0, _yard() + _yard(hop=3000.0)) == []
    # a few slow hand-overs (a hiccup) are not enough: three in four must be slow
    samples, marks = _marked([10.0] * 60, [20.0] * 60, before_us=80.0)
    samples.sent_ns = [s - (5_000_000 if i % 3 == 0 else 0) for i, s in enumerate(samples.sent_ns)]
    assert clock_check(samples, marks, 0.0, _yard()) == []


def _threads(n: int, waited_us: float, others_us: float = 0.0, cores: int = 2, **kw: int) -> P.ThreadReport:
    fields = {"idle_cpu_ns": 0, "idle_ns": 10_000_000, "unseen_ns": 0, "cpu_ns": 50_000_000, "threads": 3} | kw
    return P.ThreadReport(waited_ns=[int(waited_us * 1e3)] * n, others_ns=[int(others_us * 1e3)] * n, cores=cores, **fields)


def test_time_spent_waiting_for_a_cpu_is_the_hosts() -> None:
    """On a busy host the candidate is descheduled around its calls: the kernel's count of its wait
    on a run queue (ThreadReport.waited_ns) comes off the time around each call and off its window,
    so load is not read as moved work or a tampered clock; work really moved still is."""
    # 5 ms before each start mark, all of it spent runnable but not running: the host's
    samples, marks = _marked([10.0] * 60, [20.0] * 60, before_us=5080.0)
    samples.threads = _threads(60, 5000.0)
    assert clock_check(samples, marks, 0.0, _yard()) == []
    # the same 5 ms, of which the candidate waited 1 ms: 4 ms of work moved out of the call
    samples.threads = _threads(60, 1000.0)
    assert [f.name for f in clock_check(samples, marks, 0.0, _yard())] == ["timer_tampering"]
    # a window 3 ms longer than the reported time, the candidate descheduled 3 ms inside it
    samples, marks = _marked([100.0] * 60, [3100.0] * 60)
    assert [f.name for f in clock_check(samples, marks, 0.0, _yard())] == ["timer_tampering"]
    samples.threads = _threads(60, 3000.0)
    assert clock_check(samples, marks, 0.0, _yard()) == []
    # no count for every call (not readable there): nothing comes off
    samples.threads = _threads(30, 3000.0)
    assert [f.name for f in clock_check(samples, marks, 0.0, _yard())] == ["timer_tampering"]


def test_a_wait_the_candidates_own_threads_caused_is_not_excused() -> None:
    """The main thread waits for a CPU only while every core it may use is busy. A candidate that
    keeps its own threads spinning while a helper does the call's work before the start mark makes
    it wait too; the CPU its other threads used beyond what they could have used inside the window
    (OpenMP workers on its other cores on the cpu) then comes off the excuse. Honest OpenMP work
    inside the window keeps it."""
    # the cheat on 2 cores: 5 ms before each start mark, the main thread runnable but waiting
    # 4.5 ms of it, while its spinners and the helper used 9.5 ms of CPU; the window is 20 us
    samples, marks = _marked([10.0] * 60, [20.0] * 60, before_us=5080.0)
    samples.threads = _threads(60, 4500.0, others_us=9500.0, cores=2)
    assert [f.name for f in clock_check(samples, marks, 0.0, _yard(), 2000.0, backend="cpu")] == ["timer_tampering"]
    # the same, with threads that start and exit within each call (seen only in the process's total)
    samples.threads = _threads(60, 4500.0, others_us=0.0, cores=2, unseen_ns=60 * 9_500_000, cpu_ns=60 * 10_000_000)
    assert [f.name for f in clock_check(samples, marks, 0.0, _yard(), 2000.0, backend="cpu")] == ["timer_tampering"]
    # honest OpenMP on a busy 2-core host: a 10 ms window whose worker used 10 ms, and 5 ms of
    # waiting for a CPU before the start mark (other work on the host): excused
    samples, marks = _marked([10_000.0] * 60, [10_010.0] * 60, before_us=5080.0)
    samples.threads = _threads(60, 5000.0, others_us=10_000.0, cores=2)
    assert clock_check(samples, marks, 0.0, _yard(), 2000.0, backend="cpu") == []
    # on cuda the other threads have nothing to compute: the same CPU is not excused there
    assert [f.name for f in clock_check(samples, marks, 0.0, _yard(), 500.0, backend="cuda")] == ["timer_tampering"]
    samples.threads = _threads(60, 5000.0, others_us=200.0, cores=16)  # the driver's threads: a little
    assert clock_check(samples, marks, 0.0, _yard(), 500.0, backend="cuda") == []


def test_the_judges_own_wake_up_on_a_busy_host_is_not_the_candidates() -> None:
    """The judge stamps the answer when it runs again: on a loaded host it can wait for a core after
    the candidate answered (an honest relu was flagged so with 4 test workers on 2 cores: "2322 us
    between the call's end and its answer"). The judge's own run-queue wait (TimeReport.judge_waited_ns)
    comes off the time around each call; not where the candidate's spinners kept the cores busy,
    nor without the counts of the candidate's threads (spinners would go unseen)."""
    samples, marks = _marked([10.0] * 60, [20.0] * 60, after_us=3000.0)
    samples.threads = _threads(60, 0.0)
    assert [f.name for f in clock_check(samples, marks, 0.0, _yard(), 2000.0, backend="cpu")] == ["timer_tampering"]
    samples.judge_waited_ns = [2_900_000] * 60  # the judge waited 2.9 ms of the 3 ms for a core
    assert clock_check(samples, marks, 0.0, _yard(), 2000.0, backend="cpu") == []
    # the cheat: its own spinners (9.5 ms of CPU a call on 2 cores) keep the judge waiting while a
    # helper finishes the call's work after the end mark
    samples.threads = _threads(60, 0.0, others_us=9500.0, cores=2)
    assert [f.name for f in clock_check(samples, marks, 0.0, _yard(), 2000.0, backend="cpu")] == ["timer_tampering"]
    samples.threads = None  # the candidate's threads could not be read: nothing is excused
    assert [f.name for f in clock_check(samples, marks, 0.0, _yard(), 2000.0, backend="cpu")] == ["timer_tampering"]
    samples.threads = _threads(60, 0.0)
    samples.judge_waited_ns = [2_900_000] * 30  # not a count for every call: nothing comes off
    assert [f.name for f in clock_check(samples, marks, 0.0, _yard(), 2000.0, backend="cpu")] == ["timer_tampering"]
    # work really moved (5 ms after the end mark) while the judge waited 1 ms: still flagged
    samples, marks = _marked([10.0] * 60, [20.0] * 60, after_us=6000.0)
    samples.threads, samples.judge_waited_ns = _threads(60, 0.0), [1_000_000] * 60
    assert [f.name for f in clock_check(samples, marks, 0.0, _yard(), 2000.0, backend="cpu")] == ["timer_tampering"]


def _cpu_ns(pid: int) -> int:
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def test_own_wait_counts_the_time_this_thread_waited_for_a_core() -> None:
    """OwnWait reads the kernel's run-queue delay of the thread that opened it: sharing one core with
    a busy loop, a thread that spins 0.3 s waits a good part of it."""
    from skills.evaluator.schedstat import OwnWait

    before = os.sched_getaffinity(0)
    core = min(before)
    busy = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{core}}})\nwhile True: pass"])
    wait = OwnWait()
    try:
        os.sched_setaffinity(0, {core})
        deadline = time.monotonic() + 60
        while _cpu_ns(busy.pid) < 150_000_000:  # started (~50 ms of CPU), pinned and spinning
            assert time.monotonic() < deadline, "the busy loop never ran"
            time.sleep(0.02)
        a = wait.read()
        t = time.perf_counter()
        while time.perf_counter() - t < 0.3:
            pass
        b = wait.read()
    finally:
        os.sched_setaffinity(0, before)
        busy.kill()
        busy.wait()
        wait.close()
    assert a is not None and b is not None
    assert b - a > 30_000_000, (a, b)  # > 30 ms of the 300 ms waiting (about half, sharing the core)
    assert wait.read() is None  # closed


def test_threads_working_between_the_calls_are_flagged() -> None:
    """Between two timed calls the candidate has nothing to do; its other threads sleep there.
    Spinners (which make the judge's yardsticks and the candidate's waits grow) and threads that
    come and go within the loop are work outside forward."""
    samples, _ = _marked([100.0] * 60, [110.0] * 60)
    samples.threads = _threads(60, 0.0, idle_ns=60_000_000, idle_cpu_ns=1_000_000)  # honest: a little
    assert background_check(samples) == []
    samples.threads = _threads(60, 0.0, idle_ns=60_000_000, idle_cpu_ns=55_000_000)  # a thread spinning
    flags = background_check(samples)
    assert [f.name for f in flags] == ["background_work"] and "between the timed calls" in flags[0].detail
    samples.threads = _threads(60, 0.0, unseen_ns=80_000_000, cpu_ns=100_000_000)  # a fresh thread per call
    flags = background_check(samples)
    assert [f.name for f in flags] == ["background_work"] and "started and exited" in flags[0].detail
    samples.threads = _threads(60, 0.0, unseen_ns=20_000_000, cpu_ns=100_000_000)  # clock-tick rounding
    assert background_check(samples) == []
    samples.threads = None  # not readable here: nothing to say
    assert background_check(samples) == []


def test_a_helper_the_candidate_double_forks_is_still_read() -> None:
    """A process the candidate double-forks leaves its tree: the sandbox's init (pid 1 of its pid
    namespace, below the sandbox's outermost process) inherits it. Read from that outermost
    process, the helper's CPU still counts; read from the worker alone, it would not."""
    script = """
import ctypes, os, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: as the sandbox's init
worker = os.fork()
if worker == 0:
    if os.fork() == 0:
        if os.fork() == 0:  # the helper, orphaned at once
            t = time.perf_counter()
            while time.perf_counter() - t < 1.5:
                pass
            os._exit(0)
        os._exit(0)
    time.sleep(30)
    os._exit(0)
print(worker, flush=True)
time.sleep(30)
"""
    root = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert root.stdout is not None
    try:
        worker = int(root.stdout.readline())
        time.sleep(0.2)
        wide, narrow = TreeClock.open(worker, root.pid), TreeClock.open(worker)
        assert wide is not None and narrow is not None
        a, a_narrow = wide.sample(), narrow.sample()
        time.sleep(0.5)
        b, b_narrow = wide.sample(), narrow.sample()
        assert a is not None and b is not None and a_narrow is not None and b_narrow is not None
        assert cpu_between(a, b, main=worker) >= 50_000_000, (a, b)  # the orphan (load may slow it)
        assert cpu_between(a_narrow, b_narrow, main=worker) < 20_000_000
        wide.close()
        narrow.close()
    finally:
        root.kill()
        root.wait()
        root.stdout.close()


def test_a_process_trees_threads_are_read_from_outside() -> None:
    """TreeClock reads every task of a tree (a forked child's too) from /proc: a spinning thread's
    CPU shows in the other threads' sum, and a thread that exited only in the process's total."""
    # Every wait is for CPU used, polled up to a deadline: on a loaded box the spinners only take longer.
    script = """
import os, sys, threading, time
def spin_cpu(s):  # until this thread has used s seconds of CPU
    t = time.thread_time()
    while time.thread_time() - t < s:
        pass
stop = threading.Event()
def spin_until_stopped():
    while not stop.is_set():
        pass
sys.stdin.readline()
threading.Thread(target=spin_until_stopped).start()  # lives through the next read: seen per task
sys.stdin.readline()
stop.set()
t = threading.Thread(target=spin_cpu, args=(0.3,)); t.start(); t.join()  # exits: only in the total
if os.fork() == 0:  # a child process spinning
    spin_cpu(0.3)
    os._exit(0)
sys.stdin.readline()
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, text=True)
    assert proc.stdin is not None

    def until(ok: Callable[[TreeSample], bool]) -> TreeSample:
        deadline = time.monotonic() + 60
        s = clock.sample()
        while s is not None and not ok(s) and time.monotonic() < deadline:
            time.sleep(0.02)
            s = clock.sample()
        assert s is not None and ok(s), s
        return s

    try:
        clock = TreeClock.open(proc.pid)
        assert clock is not None
        a = clock.sample()
        assert a is not None
        proc.stdin.write("\n")
        proc.stdin.flush()
        b = until(lambda s: cpu_between(a, s, main=proc.pid) >= 50_000_000)  # the live thread
        assert len(b.tasks) >= 2 and b.process_ns is not None
        proc.stdin.write("\n")
        proc.stdin.flush()
        until(lambda s: any(k[0] != proc.pid for k in s.tasks))  # the forked child's task
        # the exited thread's 0.3 s of CPU: in the process's total, in no live task's
        d = until(lambda s: s.process_ns is not None and b.process_ns is not None
                  and s.process_ns - b.process_ns >= cpu_between(b, s, only=proc.pid) + 50_000_000 - 20_000_000)
        assert d.process_ns is not None
        clock.close()
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()


def test_the_candidates_process_is_found_and_its_waits_read() -> None:
    """worker_pid finds the process that runs the candidate's module in a tree (itself, or under
    bubblewrap the sandbox's child), and TreeClock reads its main thread's wait from the kernel."""
    sleeper = f"{sys.executable} -c 'import os, time; os.fork() or time.sleep(30); time.sleep(30)' skills.evaluator.harness.candidate"
    direct = subprocess.Popen(["sh", "-c", f"exec {sleeper}"])  # the worker forks a child like itself
    wrapped = subprocess.Popen(["sh", "-c", f"{sleeper}; true"])  # the shell stays, the worker is its child
    try:
        found: dict[int, int | None] = {}
        for _ in range(200):
            found = {root: worker_pid(root) for root in (direct.pid, wrapped.pid)}
            if all(found.values()):
                break
            time.sleep(0.05)
        assert found[direct.pid] == direct.pid, found
        child = found[wrapped.pid]
        assert child is not None and child != wrapped.pid, found
        clock = TreeClock.open(child, wrapped.pid)
        sample = clock.sample() if clock is not None else None
        assert sample is not None and sample.main_wait_ns >= 0
        assert clock is not None
        clock.close()
        plain = subprocess.Popen(["sleep", "30"])
        try:
            assert worker_pid(plain.pid) is None  # a tree that runs no candidate module
        finally:
            plain.kill()
            plain.wait()
    finally:
        for proc in (direct, wrapped):
            proc.kill()
            proc.wait()


def test_marks_sent_apart_from_the_calls_are_tampering() -> None:
    """Code that sends the marks itself (not around the calls) cannot make them bracket the times it
    reports: every window shorter than its call, or all of them sent in one burst."""
    samples, marks = _marked([300.0] * 60, [2.0] * 60, gap_us=2.0)  # a burst: 60 calls in ~0.2 ms
    flags = clock_check(samples, marks, 0.0, _yard())
    assert [f.name for f in flags] == ["harness_tampering"] and "bracket" in flags[0].detail
    # honest windows a hair shorter than the reported time (clock skew) pass
    samples, marks = _marked([300.0] * 60, [295.0] * 60, gap_us=200.0)
    assert clock_check(samples, marks, 0.0, _yard()) == []


def test_missing_marks_are_tampering() -> None:
    samples, marks = _marked([100.0] * 10, [110.0] * 10)
    flags = clock_check(samples, [m for m in marks if m[0] != 4], 0.0, _yard())
    assert [f.name for f in flags] == ["harness_tampering"] and "9 of the 10" in flags[0].detail
    # an end before its start
    bad = [(c, e, t if c != 2 else (0 if e else t)) for c, e, t in marks]
    assert [f.name for f in clock_check(samples, bad, 0.0, _yard())] == ["harness_tampering"]
    # no socket at all (a worker started by hand): nothing to check against
    assert clock_check(samples, None, 0.0, _yard()) == []


def test_the_kernel_stamps_marks_when_they_are_sent() -> None:
    """The stamps come from the kernel at send time, not from the sender's clock or the reader's."""
    sock = MarkSocket()
    code = ("import time\nfrom skills.evaluator.marks import mark_sender\n"
            "time.time_ns = lambda: 0\ntime.perf_counter_ns = lambda: 0\n"  # the sender's clocks lie
            "mark = mark_sender()\nmark(0, False)\ntime.sleep(0.2)\nmark(0, True)\nmark(1, False)\n")
    env = {**os.environ, MARK_ENV: str(sock.child_fd), "PYTHONPATH": str(ROOT)}
    sock.begin()
    subprocess.run([sys.executable, "-c", code], env=env, pass_fds=(sock.child_fd,), check=True, timeout=60)
    sock.started()
    time.sleep(0.3)  # read late: the stamps must not move
    marks = sock.end()
    sock.close()
    assert sock.stamped
    assert [(c, e) for c, e, _ in marks] == [(0, False), (0, True), (1, False)]
    window_ms = (marks[1][2] - marks[0][2]) / 1e6
    assert 195 <= window_ms < 400, window_ms
    assert (marks[2][2] - marks[1][2]) / 1e6 < 50
