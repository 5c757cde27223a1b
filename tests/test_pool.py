"""The warm pool: workers started ahead of an evaluation, each still used for one evaluation only."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from skills.build import BuildConfig
from skills.evaluate import EvalConfig, Slot, WarmPool, evaluate
from skills.harness.protocol import TimingConfig

ROOT = Path(__file__).resolve().parent.parent
RELU = ROOT / "problems/level1/01_relu.py"
RELU_SOLUTION = ROOT / "problems/solutions/cpu/level1/01_relu"


def _alive(pids: set[int]) -> set[int]:
    return {p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in _state(p)}


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def _inside(roots: list[Path]) -> set[int]:
    """Processes running in one of these scratch folders (the sandboxed children of bwrap)."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if any(cwd.startswith(str(r)) for r in roots):
            found.add(int(pid))
    return found


def _pids(slot: Slot) -> set[int]:
    return {slot.judge.proc.pid, slot.cand.proc.pid}


def test_pool_serves_fresh_workers_and_cleans_up(build_cache_dir: Path) -> None:
    cfg = EvalConfig(backend="cpu", baselines=["eager"], build=BuildConfig(backend="cpu", cache_dir=str(build_cache_dir)),
                     timing=TimingConfig(target_seconds=0.05, min_calls=10, max_calls=50))
    served: list[int] = []
    pids: set[int] = set()
    roots: list[Path] = []

    async def main() -> None:
        async with WarmPool(cfg, size=1) as pool:
            for _ in range(2):
                with anyio.fail_after(120):
                    await pool.wait_full()  # the slot is started before the evaluation asks
                slot = pool.ready[0]
                pids.update(_pids(slot))
                roots.append(slot.scratch.root)
                r = await evaluate(RELU, RELU_SOLUTION, mode="test", config=cfg, pool=pool)
                assert r.correct and r.error is None and not r.flags, r.error
                assert slot.cand.proc.pid not in served  # a new process for every evaluation
                served.append(slot.cand.proc.pid)
            with anyio.fail_after(120):
                await pool.wait_full()
            for slot in pool.ready:  # the refilled, unused slot is closed with the pool
                pids.update(_pids(slot))
                roots.append(slot.scratch.root)

    anyio.run(main)
    assert len(served) == 2 and len(roots) == 3
    assert _alive(pids | _inside(roots)) == set(), "the pool left worker processes behind"
    assert not any(d.exists() for d in roots), "scratch folders left behind"
