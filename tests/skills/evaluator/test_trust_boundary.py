"""The judge holds what the reward depends on (docs/trust-boundary.md): cheats that read the timing
loop's state from the candidate's own interpreter find nothing to read. Each cheat runs with the
static checks off (they would stop its `gc` / frame walks first: these tests are of what is behind
them), and the honest kernel it wraps passes the same way."""

from __future__ import annotations

from pathlib import Path

from tests.skills.evaluator.test_evaluate_cpu import (
    RELU,
    RELU_CPP,
    RELU_PY,
    MakeWs,
    failed_outputs,
    flag_names,
    run_eval,
)

# Walks every object in the interpreter and every frame above forward for float tensors shaped
# like the input, precomputes ops.relu of each one, and from then on only replays: an answer by the
# first 16 values, zeros where it has none (the frame-replay cheat: in the earlier design the
# loop's frames held every input set and the round's canaries, so it had them all).
REPLAY_PY = """\
import torch
from kagent_ext import ops

_gc = __import__("gc")
_sys = __import__("sys")


def _tensors_like(x):
    found = []
    for obj in _gc.get_objects():
        if type(obj) is torch.Tensor and obj.shape == x.shape and obj.data_ptr() != x.data_ptr():
            found.append(obj)
    frame = _sys._getframe(1)
    while frame is not None:
        for v in list(frame.f_locals.values()):
            if isinstance(v, (list, tuple)):
                found += [t for t in v if type(t) is torch.Tensor and t.shape == x.shape
                          and t.data_ptr() != x.data_ptr()]
        frame = frame.f_back
    return found


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.answers = None

    def forward(self, x):
        if self.answers is None:
            self.answers = {}
            for t in _tensors_like(x):
                y = torch.empty_like(t)
                ops.relu(t.contiguous(), y, t.numel())
                self.answers[tuple(t.reshape(-1)[:16].tolist())] = y
        got = self.answers.get(tuple(x.reshape(-1)[:16].tolist()))
        return got if got is not None else torch.zeros_like(x)
"""

# Finds the harness's messages in the interpreter (any msgspec Struct with a field naming sample
# positions, seeds or canaries) and, once past the first four calls (the correctness sets), writes
# only the first 64 elements: in the earlier design it computed exactly the spot-checked ones.
PARTIAL_PY = """\
import torch
from kagent_ext import ops

_gc = __import__("gc")
SECRET_FIELDS = ("sample_positions", "canary_seeds", "canary_fractions", "set_seeds", "fingerprints")


def harness_secrets():
    found = []
    for obj in _gc.get_objects():
        fields = getattr(type(obj), "__struct_fields__", ())
        if isinstance(fields, tuple):
            found += [f for f in fields if f in SECRET_FIELDS]
    return found


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.secrets = None

    def forward(self, x):
        self.calls += 1
        if self.secrets is None:
            self.secrets = harness_secrets()
            if self.secrets:
                raise RuntimeError("found the harness's secrets: " + ", ".join(sorted(set(self.secrets))))
        y = torch.zeros_like(x)
        n = x.numel() if self.calls <= 4 else 64
        ops.relu(x, y, n)
        return y
"""


def test_frame_and_gc_replay_finds_no_other_input_set(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    """The cheat searches the interpreter for input sets to precompute: only the current call's
    inputs exist there (in the judge's arena), so it has no answer for any set and fails at once."""
    ws = new_workspace(REPLAY_PY, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="final", static_checks=False)
    assert r.error is None or "forward failed" not in r.error, r.error
    assert r.sets and not any(s.ok for s in r.sets), failed_outputs(r)  # zeros everywhere: nothing found
    assert not r.correct and r.candidate is None
    assert r.reward == -1.0


def test_no_positions_or_seeds_exist_in_the_candidate(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    """No message the candidate receives names positions, seeds, canaries or set indices (the cheat
    would raise with their names); computing only part of the output after the correctness calls
    is caught on the checked timed calls, whole outputs compared."""
    ws = new_workspace(PARTIAL_PY, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="final", static_checks=False)
    assert r.error is None, r.error  # no secret found (the cheat would raise naming it)
    assert r.sets and all(s.ok for s in r.sets), failed_outputs(r)
    assert "timed_output_mismatch" in flag_names(r), r.flags
    detail = next(f.detail for f in r.flags if f.name == "timed_output_mismatch")
    assert "timed calls checked returned wrong values" in detail
    assert r.reward == -1.0


def test_the_honest_kernel_behind_both_passes(new_workspace: MakeWs, build_cache_dir: Path) -> None:
    ws = new_workspace(RELU_PY, {"relu.cpp": RELU_CPP})
    r = run_eval(RELU, ws, build_cache_dir, mode="final", static_checks=False)
    assert r.correct and r.flags == [], (r.error, r.flags)
    assert r.reward is not None and r.reward >= 1.0
