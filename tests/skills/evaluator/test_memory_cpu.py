"""Memory measured from outside the candidate on the cpu backend, and the composite reward's memory
penalty on it (docs/reward.md): the kernel's peak resident set of a process tree (skills/evaluator/rss.py),
and whole evaluations where a kernel that takes 4x the reference's memory is penalised and a lean
one is not. The figures are the kernel's page counts: nothing here depends on timing.
"""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from skills.evaluator.baselines import JsonBaselineCache
from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.paired import PairedConfig
from skills.evaluator.results import EvalResult
from skills.evaluator.reward import MIB, CompositeConfig, composite, over_memory
from skills.evaluator.rss import ARENA_NAME, TreeRss
from skills.evaluator.sandbox import SandboxConfig
from tests.conftest import PROBLEMS, MakeWs

# A child that, per line on stdin, allocates and touches N MiB and frees it again ("t N"), keeps
# N MiB ("k N"), forks a child that keeps N MiB ("f N"), or maps and touches the memfd it was given
# ("m"); it answers each line once done.
CHILD = """
import mmap, os, sys
kept = []
for line in sys.stdin:
    op, n = (line.split() + ["0"])[:2]
    size = int(n) << 20
    if op == "t":
        b = bytearray(size)
        del b
    elif op == "k":
        kept.append(bytearray(size))
    elif op == "f":
        r, w = os.pipe()
        if os.fork() == 0:
            keep = bytearray(size)
            os.write(w, b"1")
            os.read(0, 1)  # until the parent's stdin closes
            os._exit(0)
        os.read(r, 1)  # the grandchild holds its memory now
    elif op == "m":
        fd = int(os.environ["ARENA_FD"])
        m = mmap.mmap(fd, os.fstat(fd).st_size)
        for i in range(0, len(m), 4096):
            m[i] = 1
        kept.append(m)
    print("ok", flush=True)
"""


class Child:
    def __init__(self, arena_fd: int | None = None) -> None:
        env = os.environ | ({"ARENA_FD": str(arena_fd)} if arena_fd is not None else {})
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env, pass_fds=(arena_fd,) if arena_fd is not None else ())

    def do(self, line: str) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "ok"

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(10)
        self.proc.stdout.close()


def test_peak_of_a_freed_allocation_is_seen_without_sampling() -> None:
    """64 MiB allocated, touched and freed between begin() and end() count in full (the kernel's
    peak, reset at begin); what was held before base() does not; a second stretch that takes less
    leaves the larger peak."""
    child = Child()
    try:
        child.do("k 32")  # held before the base: not the stretch's
        rss = TreeRss(child.proc.pid)
        rss.base()
        rss.begin()
        child.do("t 64")
        rss.end()
        assert rss.reset_ok
        assert rss.peak is not None and 60 * MIB <= rss.peak < 80 * MIB, rss.peak / MIB
        first = rss.peak
        rss.begin()
        child.do("t 8")
        rss.end()
        assert rss.peak == first
    finally:
        child.close()


def test_the_tree_counts_forked_children_and_not_the_judges_arena() -> None:
    """A process the child forks counts with it (its whole resident set: it did not exist at the
    base); the judge's arena the child maps and touches (inputs and outputs: the judge's memory)
    is taken off, up to the arena's size."""
    fd = os.memfd_create(ARENA_NAME.removeprefix("memfd:"))
    os.ftruncate(fd, 48 * MIB)
    mine = mmap.mmap(fd, 48 * MIB)  # the judge maps its arena: that is how its size is read
    child = Child(arena_fd=fd)
    try:
        rss = TreeRss(child.proc.pid, judge_pid=os.getpid())
        rss.base()
        rss.begin()
        child.do("m")
        child.do("f 40")
        rss.end()
        assert rss.peak is not None and 40 * MIB <= rss.peak < 80 * MIB, rss.peak / MIB
        without = TreeRss(child.proc.pid)  # no judge named: the arena's pages would count
        without.base_bytes = rss.base_bytes
        without.end()
        assert without.peak is not None and without.peak - rss.peak == pytest.approx(48 * MIB, abs=MIB)
    finally:
        child.close()
        mine.close()
        os.close(fd)


# -- whole evaluations ---------------------------------------------------------------------------

# ReLU on 4096 x 2304 floats at the cpu's small sizes: a 36 MiB output, so glibc maps each output
# afresh (above its 32 MiB mmap threshold: no heap reuse blurs the figures) and 4x it is far past
# the slack.
PROBLEM = (PROBLEMS / "level1" / "01_relu.py").read_text().replace(
    'SMALL_SIZES = {"M": 256, "N": 1024}', 'SMALL_SIZES = {"M": 4096, "N": 2304}')
assert '"N": 2304' in PROBLEM, "the bundled ReLU's SMALL_SIZES changed: update this test's sizes"
OUTPUT = 36 * MIB

LEAN_CPP = """#include "kagent.h"
KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
MODEL_NEW = """import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        {call}
        return y
"""
LEAN_PY = MODEL_NEW.format(call="ops.relu(x, y, x.numel())")
# 4x the output as scratch, written by the kernel (an untouched torch.empty would take no pages)
SCRATCH_CPP = """#include "kagent.h"
KAGENT_EXPORT void relu(const float* x, float* y, float* s, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] > 0.f ? x[i] : 0.f;
    for (int k = 0; k < 4; ++k) s[4 * i + k] = v;
    y[i] = s[4 * i + 3];
  }
}
"""
SCRATCH_PY = MODEL_NEW.format(call="s = torch.empty(4 * x.numel())\n        ops.relu(x, y, s, x.numel())")
# the same 4x taken and freed inside one call, in C++: a sampler between calls would never see it
MALLOC_CPP = """#include "kagent.h"
#include <cstdlib>
#include <cstring>
KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {
  float* s = static_cast<float*>(std::malloc(4 * n * sizeof(float)));
  std::memset(s, 0, 4 * n * sizeof(float));
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) { s[4 * i] = x[i] > 0.f ? x[i] : 0.f; y[i] = s[4 * i]; }
  std::free(s);
}
"""
# The cheat on the figure: the same malloc'd 4x, then the kernel resets its own peak from inside
# by writing "5" to /proc/self/clear_refs after the free. Raw system calls in extended asm (the
# static checks allow extended asm for PTX and barriers, and no rule book can list every way to
# reach a file) get past the file_access rule, so only the sandbox stands in the way: it mounts
# /proc read-only, the write is refused and the peak stays (skills/evaluator/sandbox.py). x86-64 Linux.
RESET_CPP = MALLOC_CPP.replace("  std::free(s);\n", """  std::free(s);
  static const char path[] = "/proc/self/clear_refs";
  long fd;
  asm volatile("syscall" : "=a"(fd) : "a"(257L), "D"(-100L), "S"(path), "d"(1L) : "rcx", "r11", "memory");
  if (fd >= 0) {
    long n;
    asm volatile("syscall" : "=a"(n) : "a"(1L), "D"(fd), "S"("5"), "d"(1L) : "rcx", "r11", "memory");
    asm volatile("syscall" : "=a"(n) : "a"(3L), "D"(fd) : "rcx", "r11", "memory");
  }
""")
X86_64 = os.uname().machine == "x86_64"
COMPOSITE = CompositeConfig(memory_slack_cpu_mib=32.0)
"""The test's slack, below the default (128 MiB) so that 4x a 36 MiB output is past it: the lean
kernel reads ~1x the output + a few MiB, the 4x ones ~5x; eager 1x: limits 2 x 36 + 32 = 104 MiB."""


def run_final(problem: Path, ws: Path, build_cache_dir: Path) -> EvalResult:
    config = EvalConfig(backend="cpu", baselines=["eager"], reward_fn="composite", composite=COMPOSITE,
                        timing=TimingConfig(warmup_calls=2, warmup_seconds=0.0, target_seconds=0.01, min_calls=4,
                                            max_calls=4), n_sets=2,
                        paired=PairedConfig(min_rounds=0), build=BuildConfig(backend="cpu", cache_dir=str(build_cache_dir)),
                        sandbox=SandboxConfig(allow_unsafe=True))
    cache = JsonBaselineCache(ws.parent / "baselines.json")
    return anyio.run(lambda: evaluate(problem, ws, mode="final", config=config, baseline_cache=cache))


@pytest.fixture(scope="module")
def problem(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("problem") / "relu_64mib.py"
    path.write_text(PROBLEM)
    return path


@pytest.mark.parametrize(("name", "model_new", "kernel", "penalised"), [
    ("lean", LEAN_PY, LEAN_CPP, False),
    ("scratch_in_forward", SCRATCH_PY, SCRATCH_CPP, True),
    # the 4x malloc'd and freed inside one call (which a sampler between calls would never see),
    # then the peak reset from inside: one evaluation grades both (a second, without the reset,
    # cost CI ~30 s and proved nothing this one does not)
    pytest.param("malloc_then_reset_its_own_peak", LEAN_PY, RESET_CPP, True,
                 marks=pytest.mark.skipif(not X86_64, reason="the cheat's raw system calls are x86-64's")),
])
def test_memory_penalty_on_the_cpu_backend(name: str, model_new: str, kernel: str, penalised: bool,
                                           problem: Path, new_workspace: MakeWs, build_cache_dir: Path) -> None:
    """Each callable's footprint is measured (ModelNew's by the parent from outside its process,
    eager's by the judge) and shown; the kernels that take 4x the reference's memory (a scratch
    tensor in forward, or malloc'd and freed inside the kernel) lose the memory penalty, the lean
    one keeps its reward."""
    r = run_final(problem, new_workspace(model_new, {"relu.cpp": kernel}, problem=problem), build_cache_dir)
    assert r.error is None and r.correct and not r.flags, (r.error, r.flags)
    m = r.memory
    assert m is not None and m.candidate_method == "peak_rss" and m.baseline_method == "peak_rss", m
    assert m.candidate_call_bytes is not None and m.eager_bytes is not None and m.compile_bytes is None
    assert m.eager_bytes >= 0.95 * OUTPUT  # eager's output counts
    assert m.candidate_call_bytes >= (5 if penalised else 0.95) * OUTPUT, (name, m)
    if not penalised:  # the profiler's calls come after the output is handed back: one output at a time
        assert m.candidate_call_bytes < 1.5 * OUTPUT, (name, m)
    assert over_memory(r, COMPOSITE) is penalised, (name, m)
    assert m.limit_bytes == int(2 * m.eager_bytes + 32 * MIB)  # under the evaluation's own settings
    unpenalised = composite(r, CompositeConfig(memory_slack_cpu_mib=1e9))
    assert r.reward == pytest.approx(unpenalised - 0.5 if penalised else unpenalised), (name, r.reward, m)
    from skills.evaluator.report import format_result

    text = format_result(r)
    assert "memory (peak resident memory during the calls" in text and "ModelNew" in text, text
    assert ("memory penalty" in text) is penalised, text
