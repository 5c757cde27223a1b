"""The judge's own work in a timed loop is not the candidate's time (issue: fair work is never
punished). A problem whose fp64 reference is slow makes every checked call cost the judge 0.4 s;
a fair kernel answers in microseconds. Before, one wall-clock limit covered the round, so the
fair kernel read -1 "the candidate timed out while timing" (as the 16384 x 16384 ReLU did on the
cpu backend at its own size); now its answers alone count against timeout_timing_s, and the
judge's own work has its own limit, whose overrun is the environment's fault (reward None)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from tests.skills.evaluator.test_evaluate_cpu import (
    FAST_TIMING,
    RELU_CPP,
    RELU_PY,
    MakeWs,
    run_eval,
)

NO_FLUSH = msgspec.structs.replace(FAST_TIMING, flush_l2=False)
"""The tests that set a short timeout_judge_s run without the cache flush: on a host reporting a
480 MiB L3 each put flushes 960 MiB (~80 ms quiet), and a loaded CI box once took the correctness
stage's few puts past a 1 s limit meant for the timed loop's checks (0.4 s each). Without it the
judge's own work outside the slow references is milliseconds, whatever the load."""

SLOW_REFERENCE = """\
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype == torch.float64:
            time.sleep(0.4)  # the fp64 reference the judge computes for each checked call
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
"""


# The cheat: spinning threads started on the first call, working between the calls while the judge
# works. Four of them (row 31's fixture has one): on a loaded 2-core box they still take far more than
# BACKGROUND_FRACTION of the time between the calls, so the verdict does not hang on the box's load.
SPINNERS_CPP = """\
#include "kagent.h"
#include <atomic>
#include <thread>
static std::atomic<long> spins{0};
KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {
  static bool started = false;
  if (!started) {
    started = true;
    for (int t = 0; t < 4; ++t) std::thread([] { for (;;) spins.fetch_add(1, std::memory_order_relaxed); }).detach();
  }
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""


def slow_problem(tmp_path: Path) -> Path:
    path = tmp_path / "slow_reference.py"
    path.write_text(SLOW_REFERENCE)
    return path


def test_a_fair_kernel_is_not_timed_out_by_the_judges_checks(tmp_path: Path, new_workspace: MakeWs,
                                                             build_cache_dir: Path) -> None:
    """At least 8 checked calls a round at 0.4 s each: 3.2 s of the judge's own work in a round whose
    candidate limit is 2 s. The candidate's answers take milliseconds: it is graded."""
    problem = slow_problem(tmp_path)
    ws = new_workspace(RELU_PY, {"relu.cpp": RELU_CPP}, problem=problem)
    r = run_eval(problem, ws, build_cache_dir, mode="final", timeout_timing_s=2.0)
    assert r.error is None, r.error
    assert r.correct and r.reward is not None and r.reward >= 0, (r.reward, r.error)
    parts = r.stages.parts
    assert parts["judge timed loop: check"] > 2.0  # the judge's own work alone passed the old limit
    # its waits for the candidate (summed over the rounds and the correctness stage) are a small share
    assert parts["judge waiting for the candidate"] < parts["judge timed loop: check"]


def test_a_judge_too_slow_for_its_own_limit_is_an_environment_fault(tmp_path: Path, new_workspace: MakeWs,
                                                                    build_cache_dir: Path) -> None:
    """The same fair kernel with timeout_judge_s = 1 s: the judge's checks run past their limit.
    Not the agent's failure: reward None, the cause names the judge's own work and the waits."""
    problem = slow_problem(tmp_path)
    ws = new_workspace(RELU_PY, {"relu.cpp": RELU_CPP}, problem=problem)
    r = run_eval(problem, ws, build_cache_dir, mode="final", timeout_judge_s=1.0, timing=NO_FLUSH)
    assert r.reward is None, (r.reward, r.error)
    assert r.environment_fault is not None
    assert "the judge's own work while timing" in r.environment_fault
    assert "past its limit of 1 s (timeout_judge_s)" in r.environment_fault
    assert "for the candidate's answers" in r.environment_fault
    assert not r.flags


def test_a_candidate_that_keeps_the_judge_busy_past_its_limit_is_flagged(tmp_path: Path, new_workspace: MakeWs,
                                                                         build_cache_dir: Path) -> None:
    """The cheat the split limits invite (docs/exploits.md row 32): a kernel keeps a thread spinning
    between its calls so that the judge's draws and checks run past their limit, hoping the round
    ends unscored (None) rather than at its -1. The judge read that thread's CPU between the calls
    from /proc: the late round is the candidate's, flagged background_work, reward -1."""
    problem = slow_problem(tmp_path)
    ws = new_workspace(RELU_PY, {"relu.cpp": SPINNERS_CPP}, problem=problem)
    # the static checks would refuse the thread before any timing: this is the runtime defence behind them
    r = run_eval(problem, ws, build_cache_dir, mode="final", timeout_judge_s=1.0, static_checks=False,
                 timing=NO_FLUSH)
    assert r.reward == -1.0, (r.reward, r.error, r.environment_fault)
    assert r.environment_fault is None
    assert "background_work" in {f.name for f in r.flags}, r.flags
    assert "while the judge worked" in (r.error or "") + " ".join(f.detail for f in r.flags)


def test_a_late_correctness_stage_is_blamed_like_a_late_round(tmp_path: Path, new_workspace: MakeWs,
                                                              build_cache_dir: Path) -> None:
    """The same in the correctness stage, where the judge's own work is the streamed sets' references
    (held_sets = 1: sets 1 and 2 are drawn again and referenced there, 0.4 s each): the fair kernel's
    late stage is not scored (None); the spinner's is flagged background_work (-1)."""
    problem = slow_problem(tmp_path)
    fair = run_eval(problem, new_workspace(RELU_PY, {"relu.cpp": RELU_CPP}, problem=problem), build_cache_dir,
                    mode="final", timeout_judge_s=0.5, held_sets=1, timing=NO_FLUSH)
    assert fair.reward is None and fair.environment_fault is not None, (fair.reward, fair.error)
    assert "the judge's own work while running the input sets" in fair.environment_fault
    assert fair.stage == "correctness" and not fair.flags
    busy = run_eval(problem, new_workspace(RELU_PY, {"relu.cpp": SPINNERS_CPP}, problem=problem), build_cache_dir,
                    mode="final", timeout_judge_s=0.5, held_sets=1, static_checks=False,
                    timing=NO_FLUSH)
    assert busy.reward == -1.0 and busy.environment_fault is None, (busy.reward, busy.error)
    assert busy.stage == "correctness"
    assert "background_work" in {f.name for f in busy.flags}, busy.flags
    assert "between the correctness calls, while the judge worked" in " ".join(f.detail for f in busy.flags)
