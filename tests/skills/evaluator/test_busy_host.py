"""No false flags for honest work on a busy host (fair work is never punished): an honest kernel
with a big output, on a quiet box and with the box's cores oversubscribed 2x by other processes,
is timed without a clock flag. Nothing the harness does may fall inside the window the clock check
compares: the previous call's output used to be freed there (a 32 MiB munmap, ~3 ms)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio

from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.protocol import TimingConfig
from tests.conftest import MakeWs
from tests.skills.evaluator.test_environment_faults import RELU_NEW

BIG_RELU = '''import torch
import torch.nn as nn

M = 2048
N = 4096


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(M, N)]  # 32 MiB in, 32 MiB out


def get_init_inputs():
    return []
'''
RELU_CPP = ('#include "kagent.h"\nKAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n'
            '#pragma omp parallel for simd schedule(static)\n'
            '  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n')
CLOCK_FLAGS = {"timer_tampering", "harness_tampering", "implausible_timing", "unsynchronized_work"}


@contextmanager
def oversubscribed(factor: int = 2, seconds: float = 240.0) -> Iterator[None]:
    """`factor` x the cores in busy processes (each ends by itself after `seconds`)."""
    spin = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(factor * (os.cpu_count() or 1))]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _grade(tmp_path: Path, new_workspace: MakeWs) -> list[str]:
    problem = tmp_path / "big_relu.py"
    problem.write_text(BIG_RELU)
    ws = new_workspace(RELU_NEW, {"relu.cpp": RELU_CPP}, problem=problem)
    cfg = EvalConfig(backend="cpu", baselines=["eager"], build=BuildConfig(backend="cpu", cache_dir=str(tmp_path / "b")),
                     timing=TimingConfig(target_seconds=0.3, max_calls=200, min_calls=30))
    result = anyio.run(lambda: evaluate(problem, ws, mode="profile", config=cfg))
    assert result.correct and result.candidate is not None, result.error
    return [f"{f.name}: {f.detail}" for f in result.flags]


def test_a_big_output_is_not_flagged_on_a_quiet_box(tmp_path: Path, new_workspace: MakeWs) -> None:
    assert _grade(tmp_path, new_workspace) == []


def test_a_big_output_is_not_flagged_with_the_cores_oversubscribed(tmp_path: Path, new_workspace: MakeWs) -> None:
    with oversubscribed():
        flags = _grade(tmp_path, new_workspace)
    assert not [f for f in flags if f.split(":")[0] in CLOCK_FLAGS], flags
