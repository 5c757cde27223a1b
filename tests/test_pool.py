"""The warm pool: workers started ahead of an evaluation, each still used for one evaluation only."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from skills.build import BuildConfig
from skills.evaluate import EvalConfig, WarmPool, evaluate
from skills.harness.protocol import TimingConfig

ROOT = Path(__file__).resolve().parent.parent
RELU = ROOT / "problems/level1/01_relu.py"
RELU_SOLUTION = ROOT / "problems/solutions/cpu/level1/01_relu"


def _worker_pids() -> set[int]:
    pids = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"skills.harness." in cmd:
            pids.add(int(pid))
    return pids


def test_pool_serves_fresh_workers_and_cleans_up(build_cache_dir: Path) -> None:
    cfg = EvalConfig(backend="cpu", baselines=["eager"], build=BuildConfig(backend="cpu", cache_dir=str(build_cache_dir)),
                     timing=TimingConfig(target_seconds=0.05, min_calls=10, max_calls=50))
    before = _worker_pids()
    seen: list[int] = []
    scratch_dirs: list[Path] = []

    async def main() -> None:
        async with WarmPool(cfg, size=1) as pool:
            for _ in range(2):
                with anyio.fail_after(120):
                    await pool.wait_full()  # the slot is started before the evaluation asks
                slot_pid = pool.ready[0].cand.proc.pid
                scratch_dirs.append(pool.ready[0].scratch.root)
                r = await evaluate(RELU, RELU_SOLUTION, mode="test", config=cfg, pool=pool)
                assert r.correct and r.error is None and not r.flags, r.error
                assert slot_pid not in seen  # a new process for every evaluation
                seen.append(slot_pid)

    anyio.run(main)
    assert _worker_pids() - before == set(), "the pool left worker processes behind"
    assert len(scratch_dirs) == 2 and not any(d.exists() for d in scratch_dirs), "scratch folders left behind"
