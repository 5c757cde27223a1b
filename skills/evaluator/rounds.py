"""The candidate's timed loops, driven by the judge: one round with every check on it, and final
mode's paired rounds of the candidate and its baselines (skills/evaluator/paired.py)."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Awaitable, Iterator
from typing import Literal, TypeVar

import anyio

from skills.evaluator.config import EvalConfig
from skills.evaluator.cpu_samples import ThreadSampler, baseline_sampler, samplable
from skills.evaluator.cpu_samples import verdict as cpu_verdict
from skills.evaluator.harness import protocol as P
from skills.evaluator.marks import Mark
from skills.evaluator.paired import merged, paired_speedup, straddles
from skills.evaluator.results import Flag, TimingResult
from skills.evaluator.schedstat import TreeClock, cpu_between, worker_pid
from skills.evaluator.sharing import check_sharing
from skills.evaluator.state import EvalState, timing_result
from skills.evaluator.timing_checks import (
    HANDOFF_SLACK_US,
    background_check,
    checked_calls_flags,
    clock_check,
    floor_check,
    idle_work_flags,
    mark_times,
    mark_windows,
    sync_check,
)
from skills.evaluator.workers import Worker, WorkerFailed

T = TypeVar("T")


async def paired_rounds(judge: Worker, cand: Worker, state: EvalState, ready: P.JudgeReady, seed: int,
                         nonce: str) -> None:
    """Final mode: rounds of the candidate's loop and then each baseline's, under the same load,
    until the speedups are decided (skills/evaluator/paired.py); the reward's speedups come from the pairs."""
    cfg = state.config
    cands: list[TimingResult] = []
    cand_samples: list[P.Samples] = []
    bases: dict[str, list[TimingResult]] = {}
    base_samples: dict[str, list[P.Samples]] = {}
    which = list(cfg.baselines)
    while True:
        state.stage = "timing"
        result, samples = await candidate_round(judge, cand, state, ready, seed, nonce, len(cands))
        cands.append(result)
        cand_samples.append(samples)
        if state.flags:
            break  # the reward is -1 whatever the baselines do
        state.stage = "baseline"
        t = time.perf_counter()
        which = await _baseline_round(judge, state, nonce, which, bases, base_samples)
        state.times.baselines = (state.times.baselines or 0.0) + time.perf_counter() - t
        state.paired = [paired_speedup(name, rounds, cands, cfg.margin) for name, rounds in bases.items()]
        if len(cands) >= cfg.paired.max_rounds or (
                len(cands) >= cfg.paired.min_rounds and not any(straddles(s, cfg.margin) for s in state.paired)):
            break
    check_sharing(state)  # while the candidate's processes live: its own kernels are told apart
    await cand.close()
    state.candidate = _merged_result(cands, cand_samples)
    state.eager = _merged_result(bases["eager"], base_samples["eager"]) if "eager" in bases else None
    state.compiled_baseline = (_merged_result(bases["compile"], base_samples["compile"])
                               if "compile" in bases else None)


def _merged_result(rounds: list[TimingResult], samples: list[P.Samples]) -> TimingResult:
    """One callable's timing over all its rounds (window and gap: the median round's)."""
    out = timing_result(merged(samples))
    windows = [r.window_us for r in rounds if r.window_us is not None]
    gaps = [r.between_us for r in rounds if r.between_us is not None]
    out.window_us = statistics.median(windows) if windows else None
    out.between_us = statistics.median(gaps) if gaps else None
    return out


async def _baseline_round(judge: Worker, state: EvalState, nonce: str, which: list[Literal["eager", "compile"]],
                          bases: dict[str, list[TimingResult]],
                          base_samples: dict[str, list[P.Samples]]) -> list[Literal["eager", "compile"]]:
    """One loop of each baseline in `which`, right after a candidate round; returns the baselines
    to time next round (torch.compile failing is a fact about the problem: not asked again)."""
    cfg = state.config
    async with state.quiet():
        # cpu: where the candidate paid the sampler's interrupts, the judge pays them too
        sampler = await baseline_sampler(await _judge_pid(judge)) if state.cpu_samples is not None else None
        try:
            await judge.send(P.BaselineRequest(nonce=nonce, which=which, timing=cfg.timing))
            rep = await judge.expect(P.BaselineReport, cfg.timeout_baseline_s, "timing the baselines")
        finally:
            if sampler is not None:
                sampler.close()
    for name, samples, took in (("eager", rep.eager, rep.eager_bytes), ("compile", rep.compile, rep.compile_bytes)):
        if samples is not None:
            bases.setdefault(name, []).append(timing_result(samples))
            base_samples.setdefault(name, []).append(samples)
        if took is not None:
            state.baseline_bytes[name] = max(took, state.baseline_bytes.get(name, 0))
    state.compile_error = state.compile_error or rep.compile_error
    return [b for b in which if not (b == "compile" and rep.compile_error is not None)]


async def candidate_round(judge: Worker, cand: Worker, state: EvalState, ready: P.JudgeReady, seed: int,
                           nonce: str, r: int) -> tuple[TimingResult, P.Samples]:
    """One timed loop of the candidate, driven by the judge (round r's own canaries at secret places,
    a secret subset of calls checked), and every check on it (their flags go to the state); its
    timing and raw samples."""
    cfg = state.config
    async with state.quiet():
        pid = await anyio.to_thread.run_sync(worker_pid, cand.proc.pid)
        clock = TreeClock.open(pid, cand.proc.pid)  # the candidate's threads while the judge measures alone
        sampler = _sampler(state, pid)
        try:
            watch = _Idle(clock, pid)
            before = await watch.around(_yardstick(judge, cand, nonce, cfg))
            if sampler is not None:
                why = await anyio.to_thread.run_sync(sampler.start)
                if why is not None:
                    refused = sampler.refused
                    state.cpu_samples_note, sampler = why, None
                    judge_pid = await _judge_pid(judge)
                    if refused and judge_pid is not None and await anyio.to_thread.run_sync(samplable, judge_pid):
                        state.add_flags([Flag(name="harness_tampering", detail=(
                            f"the parent could sample the judge but not your process ({why}): a worker that "
                            f"shuts out the evaluator's view of it (e.g. PR_SET_DUMPABLE 0) is not graded"))])
            with calls_window(state):
                await judge.send(P.TimeRequest(nonce=nonce, timing=cfg.timing, round=r, checked_fraction=cfg.checked_fraction, limit_s=cfg.timeout_timing_s,
                                           own_limit_s=cfg.timeout_judge_s,
                                           profile_calls=cfg.profile_calls if cfg.backend == "cuda" and r == 0 else 0,
                                           candidate_pid=pid, candidate_root_pid=cand.proc.pid))
                timed, marks = await cand.marked(from_judge(judge, cand, P.TimeReport,
                                                            cfg.timeout_timing_s + cfg.timeout_judge_s, "timing"))
            n = len(timed.samples.per_call_us)
            own = _own_marks(timed, marks)
            if sampler is not None:  # only what ran between a timed call's marks counts
                got = mark_times(own, n) if own is not None else None
                windows = sorted(zip(got[0], got[1], strict=True)) if got is not None else None
                samples = await anyio.to_thread.run_sync(sampler.stop, windows)
                sampler = None
                if samples is not None:  # judged on every round's samples so far
                    state.cpu_samples = samples if state.cpu_samples is None else state.cpu_samples + samples
                    if not any(f.name == "decoy_kernel" for f in state.flags):
                        state.add_flags(cpu_verdict(state.cpu_samples))
            after = await watch.around(_yardstick(judge, cand, nonce, cfg))  # the load may have changed meanwhile
        finally:
            if clock is not None:
                clock.close()
            if sampler is not None:
                sampler.close()
    for k, v in timed.seconds.items():
        state.times.parts[f"judge {k}"] = state.times.parts.get(f"judge {k}", 0.0) + v
    result = timing_result(timed.samples)
    seen = mark_windows(own, n) if own is not None else None
    if seen is not None:
        result.window_us = statistics.median(seen[0])
        result.between_us = statistics.median(seen[1]) if seen[1] else None
    flags = (timed.flags + checked_calls_flags(timed) + sync_check(timed.samples)
             + floor_check(result, ready.read_bytes, cfg)
             + clock_check(timed, own, cfg.timing.lead_us if cfg.backend == "cuda" else 0.0,
                           [before, after], HANDOFF_SLACK_US[cfg.backend], backend=cfg.backend)
             + background_check(timed) + watch.check())
    state.add_flags(flags)
    return result, timed.samples


def _own_marks(timed: P.TimeReport, marks: list[Mark] | None) -> list[Mark] | None:
    """The marks of this loop's timed calls, numbered from 0 (None: the candidate has no mark socket)."""
    if marks is None:
        return None
    n = len(timed.samples.per_call_us)
    return [(c - timed.first_seq, e, t) for c, e, t in marks if timed.first_seq <= c < timed.first_seq + n]


async def _judge_pid(judge: Worker) -> int | None:
    return await anyio.to_thread.run_sync(worker_pid, judge.proc.pid, "skills.evaluator.harness.judge")


def _sampler(state: EvalState, pid: int | None) -> ThreadSampler | None:
    """cpu, every timed round: the outside sampler of the candidate's threads (off for the rest of
    the evaluation once it could not start)."""
    cfg = state.config
    if cfg.backend != "cpu" or not cfg.cpu_sampling or pid is None or state.cpu_samples_note is not None:
        return None
    return ThreadSampler(pid, state.agent_paths)


@contextlib.contextmanager
def calls_window(state: EvalState) -> Iterator[None]:
    """Around a stretch of the candidate's calls: its footprint's window (skills/evaluator/footprint.py); read
    even when the stretch fails (a call that ran out of memory still counts)."""
    fp = state.footprint
    if fp is None:
        yield
        return
    fp.begin()
    try:
        yield
    finally:
        fp.end()


async def from_judge(judge: Worker, cand: Worker, kind: type[T], limit_s: float, what: str) -> T:
    """The judge's report on a stage it drives the candidate through. The judge words the candidate's
    own failures (forward raised, timed out); when the candidate died, its exit says how."""
    try:
        return await judge.expect(kind, limit_s + 30.0, what)
    except WorkerFailed as exc:
        if exc.worker != "candidate" or not exc.gone:
            raise
        raise await cand.died(f"while {what}") from None


class _Idle:
    """The CPU of the candidate's other threads while the judge measures its yardsticks alone: the
    candidate has nothing to do then, and threads of its that spin there make the yardsticks (and
    so the bound on its time around each call) grow."""

    def __init__(self, clock: TreeClock | None, pid: int | None) -> None:
        self.clock, self.pid = clock, pid
        self.cpu_ns = self.wall_ns = 0

    async def around(self, work: Awaitable[T]) -> T:
        a = self.clock.sample() if self.clock is not None else None
        out = await work
        b = self.clock.sample() if self.clock is not None else None
        if a is not None and b is not None:
            self.cpu_ns += cpu_between(a, b, main=self.pid)
            self.wall_ns += b.t_ns - a.t_ns
        return out

    def check(self) -> list[Flag]:
        return idle_work_flags(self.cpu_ns, self.wall_ns, "while the evaluator measured its own overheads between the calls")


async def _yardstick(judge: Worker, cand: Worker, nonce: str, cfg: EvalConfig) -> P.YardstickReport:
    """The judge's time (us) for what the candidate's worker does around a timed call (a hop over a
    socket; release the outputs, copy them into the arena, sync): the trusted yardstick for the
    candidate's own time around its calls (clock_check)."""
    await judge.send(P.YardstickRequest(nonce=nonce))
    return await from_judge(judge, cand, P.YardstickReport, cfg.timeout_run_s, "timing")
