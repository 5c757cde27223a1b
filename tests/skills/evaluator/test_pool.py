"""The warm pool: workers started ahead of an evaluation, each still used for one evaluation only."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.protocol import TimingConfig, Warm
from skills.evaluator.launch import Slot
from skills.evaluator.pool import WarmPool

ROOT = Path(__file__).resolve().parents[3]
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


def test_pool_holds_cuda_start_while_a_timed_loop_runs(build_cache_dir: Path) -> None:
    """A refill starts its processes at once but sends Preinit (CUDA up) only when no timed loop
    of the pool runs: held longer than a whole warm start takes, the slot is still not ready."""
    cfg = EvalConfig(backend="cpu", baselines=["eager"], build=BuildConfig(backend="cpu", cache_dir=str(build_cache_dir)))

    async def main() -> None:
        async with WarmPool(cfg, size=1) as pool:
            t0 = anyio.current_time()
            with anyio.fail_after(120):
                await pool.wait_full()
            warm_s = anyio.current_time() - t0  # a whole start: interpreter, torch, Preinit, Warm
            slot = await pool.take()  # the refill starts behind it
            async with pool.quiet():  # as an evaluation's timed loop does
                await anyio.sleep(2 * warm_s + 1.0)
                assert not pool.ready and pool._warming, "a slot warmed up while a timed loop ran"
            with anyio.fail_after(120):
                await pool.wait_full()
            assert pool.ready
            await slot.discard()
            assert not slot.scratch.root.exists()

    anyio.run(main)


class _FakeWorker:
    def __init__(self, warm: anyio.Event) -> None:
        self.warm = warm
        self.sent: list[object] = []

    async def send(self, msg: object) -> None:
        self.sent.append(msg)

    async def wait_for(self, kind: type, limit_s: float) -> bool:
        if kind is Warm:
            await self.warm.wait()
        return True  # Started: at once


def test_timed_loop_waits_for_a_cuda_start_in_progress() -> None:
    from skills.evaluator.harness.protocol import Preinit

    async def main() -> None:
        pool = WarmPool(EvalConfig(backend="cpu"))
        warm = anyio.Event()
        judge, cand = _FakeWorker(warm), _FakeWorker(warm)
        slot = Slot(scratch=None, judge=judge, cand=cand, nonce="n")  # type: ignore[arg-type]
        entered: list[float] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(pool._start_cuda, slot)
            await anyio.sleep(0.05)
            assert [type(m) for m in judge.sent + cand.sent] == [Preinit, Preinit]

            async def timed() -> None:
                async with pool.quiet():
                    entered.append(anyio.current_time())

            tg.start_soon(timed)
            await anyio.sleep(0.2)
            assert not entered, "the timed loop began while a worker was bringing CUDA up"
            released = anyio.current_time()
            warm.set()
        assert entered and entered[0] >= released

    anyio.run(main)


def test_a_slot_that_cannot_start_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """The candidate worker fails to start after the judge did: start_slot kills the judge and
    removes the scratch folder before the error goes on (before, both stayed behind)."""
    from skills.evaluator import launch
    from skills.evaluator.workers import Worker

    started: list[Worker] = []
    made: list[Path] = []
    real_start, real_scratch = Worker.start, launch.make_scratch

    async def start(name: str, *args: object, **kw: object) -> Worker:
        if name == "candidate":
            raise OSError("no process for the candidate")
        w = await real_start(name, *args, **kw)  # type: ignore[arg-type]
        started.append(w)
        return w

    def make_scratch(*args: object, **kw: object) -> launch.Scratch:
        s = real_scratch(*args, **kw)  # type: ignore[arg-type]
        made.append(s.root)
        return s

    monkeypatch.setattr(Worker, "start", start)
    monkeypatch.setattr(launch, "make_scratch", make_scratch)
    cfg = EvalConfig(backend="cpu")
    with pytest.raises(OSError, match="no process for the candidate"):
        anyio.run(launch.start_slot, cfg)
    assert made and not made[0].exists()
    assert started and started[0].closed and started[0].proc.returncode is not None
