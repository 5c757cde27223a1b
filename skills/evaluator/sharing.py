"""A GPU shared with another job during the timed calls: an environment fault, not the candidate's.

Another process's kernels time-slice the SMs. The parent's clock then counts their share and the
candidate's own events do not, so a fair kernel reads as `timer_tampering` / `unsynchronized_work`,
and its speedup is noise (seen on the H200, 2026-12-03: docs/fair-grading.md). The parent cannot
stop a co-tenant, but it can see one: NVML samples each process's share of the SMs about every
200 ms (benchmarks/results/gpu-sharing-probe-h200.json: a process that saturates the GPU reads
95-99%, one that runs kernels a fifth of the time reads ~88% in the periods it ran, one that only
holds a context has no sample, this process idle reads 0-1%).

After the timed stretch, `SharingWatch.verdict()` reads every sample taken since it began. A process
whose share reached `SM_PERCENT` and that is not the evaluation's own is a co-tenant. Three checks
keep that from becoming a way out of a -1 (None pays nothing, but it is not trained on either):

- `check_sharing`: a co-tenant voids only the `CLOCK_FLAGS`, the two comparisons of clocks it
  skews. Lets through: a fair kernel on a shared GPU flagged by those alone, which becomes an
  environment fault (reward None, not trainable) naming the void flags. Catches: a cheat that
  raised any other flag in the stretch (replayed outputs: `timed_output_mismatch`; a changed
  harness; a time below the memory floor), which no co-tenant causes: the -1 stands, nothing is void.
- "The evaluation's own" (`SharingWatch.cotenants`): a process is the candidate's when it descends
  from the candidate worker, or sits in its pids cgroup (a double fork stays there), or in its
  sandbox's pid namespace (a process cannot leave it). The judge's tree and the parent are ours
  too. Catches: a candidate that forks a GPU spinner to pose as another job. Lets through: the warm
  pool's idle workers and other slots' judges, which hold contexts but run no kernels (a context
  alone never counts).
- `off_without_boundary`: with neither a sandbox nor a pids cgroup holding the candidate, a
  double-forked helper (re-parented to init) cannot be told from a stranger, so the check is off
  and `EvalResult.sandbox` says why. Catches: that helper posing as a co-tenant. Lets through:
  every evaluation with a sandbox or a pids cgroup (the check stays on); without either, a fair
  kernel on a shared GPU is graded under the co-tenant's load, as with the check off.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from skills.evaluator.nvml import Nvml
from skills.evaluator.pids import PidsGroup
from skills.evaluator.sandbox import active as sandbox_active
from skills.evaluator.state import EvalState, environment_fault

SM_PERCENT = 10
"""A process outside the evaluation whose SM share reached this in any sample shares the GPU
(the probe's co-tenants read 88-99%, an idle process 0-1%)."""
CLOCK_FLAGS = frozenset({"timer_tampering", "unsynchronized_work"})
"""The timing checks' flags that compare two clocks (skills/evaluator/timing_checks.py), which a
co-tenant's kernels skew apart: the only flags it makes void."""
NO_BOUNDARY = ("shared-GPU check off: no sandbox and no pids cgroup, so the candidate's own processes "
               "could pose as another job's")


def _pid_ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    text = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    return text[:120] or "?"


class SharingWatch:
    """The samples of one evaluation's timed stretch: `begin()` when it starts, `verdict()` after."""

    def __init__(self, nvml: Nvml, ours: Callable[[int], bool], candidate_pids: Callable[[], Iterable[int]],
                 candidate_ns_roots: Callable[[], Iterable[int]] = lambda: ()) -> None:
        self.nvml = nvml
        self.ours = ours
        """pid -> True for the judge's and the candidate's process trees (and the parent)."""
        self.candidate_pids = candidate_pids
        """The candidate's pids cgroup members, read at verdict time (empty: no cgroup)."""
        self.candidate_ns_roots = candidate_ns_roots
        """Processes inside the candidate's sandbox, whose pid namespace marks the candidate's work."""
        self.since_us: int | None = None

    def begin(self) -> None:
        self.since_us = time.time_ns() // 1000

    def cotenants(self) -> dict[int, int] | None:
        """pid -> peak SM percent of every process outside the evaluation that reached SM_PERCENT
        since begin(); None: not measured (no begin, or no per-process samples on this driver)."""
        if self.since_us is None:
            return None
        samples = self.nvml.utilization(self.since_us)
        if samples is None:
            return None
        busy: dict[int, int] = {}  # a pid gone by now is left out: it can no longer be told apart from the candidate's
        for pid, _, sm in samples:
            if sm >= SM_PERCENT and Path(f"/proc/{pid}").exists():
                busy[pid] = max(busy.get(pid, 0), sm)
        if not busy:
            return {}
        me = os.getpid()
        cand = set(self.candidate_pids())
        own_ns = _pid_ns(me)
        sandbox_ns = {ns for p in self.candidate_ns_roots() if (ns := _pid_ns(p)) is not None and ns != own_ns}
        return {pid: sm for pid, sm in busy.items()
                if pid != me and not self.ours(pid) and pid not in cand and _pid_ns(pid) not in sandbox_ns}

    def verdict(self) -> str | None:
        """The environment fault's cause when a co-tenant used the SMs, else None."""
        found = self.cotenants()
        if not found:
            return None
        who = "; ".join(f"pid {pid} ({_cmdline(pid)}) up to {sm}% of the SMs"
                        for pid, sm in sorted(found.items(), key=lambda kv: -kv[1])[:3])
        return (f"the GPU was shared during the timed calls: another process outside this evaluation ran kernels "
                f"there ({who}), so neither the clocks nor the speedups can be trusted; run evaluations on a GPU "
                f"nothing else uses")


def off_without_boundary(state: EvalState, *, pids_group: PidsGroup | None) -> bool:
    """Turn the shared-GPU check off (True) where nothing marks the candidate's processes: no
    sandbox pid namespace, and no pids cgroup it was moved into (`limit` is set once `adopt`
    succeeded). `state.sandbox` gets NO_BOUNDARY."""
    if state.sharing is None or sandbox_active(state.config.sandbox):
        return False
    if pids_group is not None and pids_group.limit is not None:
        return False
    state.sharing = None
    state.sandbox = f"{state.sandbox}; {NO_BOUNDARY}" if state.sandbox else NO_BOUNDARY
    return True


def check_sharing(state: EvalState) -> None:
    """At the end of the candidate's timed stretch (while its processes still live, so that its own
    work can be told apart): a co-tenant seen since the stretch began turns the evaluation into an
    environment fault and voids the clock flags raised since then, unless another flag was raised
    then too (a co-tenant does not cause it: the evaluation stands as it is)."""
    watch = state.sharing
    if watch is None or watch.since_us is None:
        return
    cause = watch.verdict()
    watch.since_us = None
    raised = [f.name for f in state.flags[state.flags_at_timing:]]
    if cause is None or any(name not in CLOCK_FLAGS for name in raised):
        return
    del state.flags[state.flags_at_timing:]
    if raised:
        cause += (f"; the flags the timing checks raised meanwhile ({', '.join(raised)}) are void: both clocks they "
                  f"compare counted the other process's kernels differently")
    state.error = environment_fault(state, cause)
