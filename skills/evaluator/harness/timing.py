"""The timing loop shared by the candidate and the baselines, so both are timed alike.

Per call: copy the call's input set into pointer-stable buffers (`work_buffers` sets of them,
rotating; one by default), flush the last-level cache, device-wide sync, then [host clock, lead,
start event, call, end event, device-wide sync, host clock]. The lead (cuda, `lead_us`) is a spin
kernel queued ahead of the start event: the host launches the call while the GPU is still busy,
so the event time is the call's time on the device, from the moment its work could start to its
end, without the host's launch jitter; host work longer than the lead still shows as idle gaps.
The wall time, minus what an empty call (lead included) costs, must agree with the event time, or
work escaped the caller's stream (a side stream, a deferred thread). After the loop, a few calls
with no lead give the time as a caller that waits for every call sees it (`caller_calls`).
Every function this module calls on torch is looked up when the module is imported, before any
candidate code runs, so candidate code cannot patch the clock the harness reads.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import torch

from skills.evaluator.harness.protocol import Samples, TimingConfig

_perf_ns = time.perf_counter_ns
_realtime_ns = time.clock_gettime_ns
_REALTIME = time.CLOCK_REALTIME
_gc_enabled, _gc_disable, _gc_enable = gc.isenabled, gc.disable, gc.enable
_copy = torch.Tensor.copy_
_zero = torch.Tensor.zero_
_fill = torch.Tensor.fill_
_HAS_CUDA = torch.cuda.is_available()
_sync: Any = torch._C._cuda_synchronize if _HAS_CUDA else None
_EventBase: Any = torch._C._CudaEventBase if _HAS_CUDA else None
_record: Any = torch._C._CudaEventBase.record if _HAS_CUDA else None
_elapsed: Any = torch._C._CudaEventBase.elapsed_time if _HAS_CUDA else None
_spin: Any = getattr(torch._C, "_cuda_sleep", None) if _HAS_CUDA else None
SPIN_KERNEL = "spin_kernel"
"""The name of torch's spin kernel (at::cuda::sleep), which the lead runs: launch accounting
leaves it out (skills/evaluator/harness/launches.py)."""


def _persisting_l2_reset() -> Callable[[], int] | None:
    """cudaCtxResetPersistingL2Cache from the CUDA runtime torch loaded (None where not found).

    A candidate can mark its inputs persisting in L2 (EXPLOITS row 17); normal accesses do not
    evict persisting lines, so the flush alone would leave them cached for the next timed call.
    """
    if not _HAS_CUDA:
        return None
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "libcudart.so" in line})
    except OSError:
        paths = []
    for name in [*paths, "libcudart.so.13", "libcudart.so.12", "libcudart.so"]:
        try:
            fn = ctypes.CDLL(name).cudaCtxResetPersistingL2Cache
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int
        return cast(Callable[[], int], fn)
    return None


reset_l2 = _persisting_l2_reset()


AfterCall = Callable[[int, Any], None]
MarkCall = Callable[[int, bool], None]
"""Called with (call, False) just before a timed call reads the clock and (call, True) just after:
the candidate sends each to the parent as a datagram the kernel stamps (skills/evaluator/marks.py)."""


def llc_bytes(device: torch.device) -> int:
    """Size of the last-level cache that a flush must evict (GPU L2 or CPU L3)."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).L2_cache_size)
    for index in (3, 2):
        path = f"/sys/devices/system/cpu/cpu0/cache/index{index}/size"
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        mult = {"K": 2**10, "M": 2**20}.get(text[-1:], 1)
        return int(text.rstrip("KM")) * mult
    return 32 * 2**20


class Loop:
    """Runs `fn` over rotating input sets with the cache flushed between calls."""

    def __init__(self, fn: Callable[..., Any], sets: Sequence[Sequence[Any]], device: torch.device,
                 config: TimingConfig, *, external: bool = False) -> None:
        """external: `sets` is one set whose tensors someone else fills before each call (the
        candidate's arena, which the judge writes and flushes): no copies, no buffers of its own."""
        self.fn = fn
        self.sets = sets
        self.device = device
        self.cuda = device.type == "cuda"
        self.config = config
        # Pointer-stable buffers: calls see fixed addresses with changing contents, so memoising
        # by pointer returns a stale answer that the spot checks catch. With work_buffers > 1,
        # call i uses set i % n (tried for stability; it measured no steadier on the H200).
        self.works = [list(sets[0])] if external else [
            [a.clone() if isinstance(a, torch.Tensor) else a for a in sets[0]] for _ in range(max(1, config.work_buffers))]
        self.external = external
        self.work = self.works[0]
        self._calls = 0
        self.lead_cycles = 0  # set by calibrate_lead(), corrected in place by warmup()
        self.last_lead_us = 0.0  # how long the last call's lead held the GPU (event time)
        self.round_us = 0.0  # wall us per warm-up call with what the loop does around it (warmup())
        flush_bytes = 2 * llc_bytes(device) if config.flush_l2 and not external else 0
        self.flush_buf = torch.empty(max(flush_bytes // 4, 1), dtype=torch.float32, device=device)
        # Events go on the caller's (default) stream: work the call leaves elsewhere is missed by
        # the events but not by the device-wide sync, which the wall clock then exposes.
        self.stream: Any = torch.cuda.current_stream(device) if self.cuda else None

    def prepare(self, set_index: int) -> None:
        self.work = self.works[self._calls % len(self.works)]
        self._calls += 1
        if not self.external:
            for w, src in zip(self.work, self.sets[set_index], strict=True):
                if isinstance(w, torch.Tensor):
                    _copy(w, src)
        if self.cuda and reset_l2 is not None and self.config.reset_persisting_l2:
            reset_l2()  # demote persisting lines so the flush below evicts them too
        if self.config.flush_l2 and not self.external:
            _zero(self.flush_buf)
        if self.cuda:
            _sync()  # outside the timed region

    def prepare_times(self, calls: int, out_like: Sequence[torch.Tensor] = ()) -> list[float]:
        """Wall us of `calls` rounds of the loop's own work between calls (judge: a yardstick):
        releasing the last call's outputs (`out_like`: tensors shaped like them, written first as
        a forward writes its outputs; a 32 MiB free is a ~3 ms munmap on the cpu), then copying the
        next set in, flushing and syncing."""
        out = []
        for i in range(calls):
            outs = [_fill(torch.empty_like(o), 1) for o in out_like]
            t0 = _perf_ns()
            outs.clear()
            self.prepare(i % len(self.sets))
            out.append((_perf_ns() - t0) / 1e3)
        return out

    def calibrate_lead(self, _event: Any = _EventBase, _rec: Any = _record, _sync_all: Any = _sync,
                       _elapsed_ms: Any = _elapsed, _sleep: Any = _spin) -> None:
        """Spin cycles for `lead_us` at the clock the GPU runs now (cuda; 0 leaves the lead off)."""
        if not self.cuda or self.config.lead_us <= 0 or _sleep is None:
            return
        probe = 200_000
        rates = []
        for _ in range(3):
            a, b = _event(enable_timing=True), _event(enable_timing=True)
            _rec(a, self.stream)
            _sleep(probe)
            _rec(b, self.stream)
            _sync_all()
            rates.append(probe / max(float(_elapsed_ms(a, b)) * 1e3, 1e-3))
        self.lead_cycles = int(self.config.lead_us * statistics.median(rates))

    def correct_lead(self, held_us: Sequence[float]) -> None:
        """The spin counts cycles: at the clock the GPU keeps *between these calls* (lower when a
        call leaves it idle, waiting for the host) it lasts longer or shorter than calibrated."""
        held = statistics.median(held_us) if held_us and self.lead_cycles else 0.0
        if held > 0:
            self.lead_cycles = max(1, int(self.lead_cycles * self.config.lead_us / held))

    def lead(self, _sleep: Any = _spin) -> None:
        """Queue the lead (a no-op on cpu or when it is off)."""
        if self.lead_cycles:
            _sleep(self.lead_cycles)

    def call(self, set_index: int, fn: Callable[..., Any] | None = None, *, lead: bool = True,
             tick: Callable[[], None] | None = None, _perf: Any = _perf_ns,
             _event: Any = _EventBase, _rec: Any = _record, _sync_all: Any = _sync,
             _elapsed_ms: Any = _elapsed, _sleep: Any = _spin) -> tuple[float, float, Any]:
        """One timed call: (event us, wall us, output); lead=False: the GPU is idle when it starts.
        `tick` runs after the inputs are in place, just before the clock is read.

        The clock functions are default arguments, bound when this module was imported (before any
        candidate code): rebinding the module's globals later does not reach them.
        """
        f = self.fn if fn is None else fn
        self.prepare(set_index)
        if tick is not None:
            tick()
        if not self.cuda:
            t0 = _perf()
            out = f(*self.work)
            t1 = _perf()
            us = (t1 - t0) / 1e3
            return us, us, out
        start, end = _event(enable_timing=True), _event(enable_timing=True)
        held = _event(enable_timing=True) if lead and self.lead_cycles else None
        t0 = _perf()
        if held is not None:
            _rec(held, self.stream)
            _sleep(self.lead_cycles)
        _rec(start, self.stream)
        out = f(*self.work)
        _rec(end, self.stream)
        _sync_all()
        t1 = _perf()
        self.last_lead_us = float(_elapsed_ms(held, start)) * 1e3 if held is not None else 0.0
        return float(_elapsed_ms(start, end)) * 1e3, (t1 - t0) / 1e3, out

    def sync_overhead_us(self, calls: int = 21) -> float:
        """What the sync and events cost around an empty call (wall minus event time)."""
        if not self.cuda:
            return 0.0
        diffs = []
        for i in range(calls):
            ev, wall, _ = self.call(i % len(self.sets), fn=_nothing)
            diffs.append(wall - ev)
        return statistics.median(diffs)

    def warmup(self, order: Sequence[int]) -> float:
        """Untimed calls, indistinguishable from timed ones; returns the mean wall us per call of
        the later half (the first calls carry one-off costs: torch.compile, module loading).
        Calibrates the lead before (so warm-up calls have one too), then corrects its cycle count
        to how long it held the GPU in the later warm-up calls."""
        walls: list[float] = []
        leads: list[float] = []
        rounds: list[float] = []
        self.calibrate_lead()
        began = _perf_ns()
        i = 0
        while i < self.config.warmup_calls or (_perf_ns() - began) / 1e9 < self.config.warmup_seconds:
            t0 = _perf_ns()
            _, wall, _ = self.call(order[i % len(order)])
            rounds.append((_perf_ns() - t0) / 1e3)
            walls.append(wall)
            leads.append(self.last_lead_us)
            i += 1
            if i >= 10 * self.config.warmup_calls:
                break
        self.correct_lead(leads[len(leads) // 2:])
        self.round_us = statistics.fmean(rounds[len(rounds) // 2:])
        return statistics.fmean(walls[len(walls) // 2:])

    def n_calls(self, mean_us: float) -> int:
        """calls_for, within the loop's wall budget at the warm-up's cost per call (flush included)."""
        return min(calls_for(self.config, mean_us), within_budget(self.config, self.round_us))

    def run(self, order: Sequence[int], after: AfterCall | None = None, mark: MarkCall | None = None) -> Samples:
        """Timed calls over `order` (set index per call); `mark` brackets each call's clock window."""
        overhead = self.sync_overhead_us()
        events: list[float] = []
        walls: list[float] = []
        leads: list[float] = []
        with no_gc():
            for i, s in enumerate(order):
                ev, wall, out = self.call(s, tick=None if mark is None else functools.partial(mark, i, False))
                if mark is not None:
                    mark(i, True)
                events.append(ev)
                walls.append(wall)
                if self.lead_cycles:
                    leads.append(self.last_lead_us)
                if after is not None:
                    after(i, out)
                # Released here, between the calls (the judge's yardstick for that time includes
                # it): held until the next call returned, the free fell inside that call's marked
                # window and read as a tampered clock (a 32 MiB output: ~3 ms on the cpu).
                del out
        return Samples(per_call_us=events, wall_us=walls, sync_overhead_us=overhead, lead_us=leads)

    def caller_times(self, order: Sequence[int]) -> list[float]:
        """Event times of calls with no lead: what a caller waiting for each call sees (cuda)."""
        if not self.cuda:
            return []
        return [self.call(s, lead=False)[0] for s in order]


def within_budget(config: TimingConfig, round_us: float) -> int:
    """Calls that fit in loop_seconds at round_us of wall time each, at least min_calls."""
    return max(config.min_calls, int(config.loop_seconds * 1e6 / max(round_us, 1.0)))


def calls_for(config: TimingConfig, mean_us: float) -> int:
    """Timed calls that fill target_seconds of calls, within [min_calls, max_calls]."""
    n = int(config.target_seconds * 1e6 / max(mean_us, 1.0))
    return max(config.min_calls, min(config.max_calls, n))


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """No garbage collection inside timed calls (as timeit does): a full collection landed in the
    same timed call of every evaluation (#350 of 1000) and took it from 139 us to 1.1-1.9 ms. The
    judge's loops (the baselines) and the candidate's timed calls (harness/candidate.py) both run
    under it, so neither pays collections the other does not."""
    collect = _gc_enabled()
    _gc_disable()
    try:
        yield
    finally:
        if collect:
            _gc_enable()


def sync() -> None:
    """Device-wide sync (cuda) through the reference bound at import."""
    if _HAS_CUDA:
        _sync()


def now_ns() -> int:
    return int(_perf_ns())


def realtime_ns() -> int:
    """The clock the kernel stamps the marks with (skills/evaluator/marks.py), for the judge's own stamps."""
    return _realtime_ns(_REALTIME)


class Parts:
    """Wall seconds by named part, for StageTimes.parts: `with parts("draw"): ...` (diagnostics
    only: in the candidate's process these numbers are as trustworthy as the candidate)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._name = ""
        self._t0 = 0

    def __call__(self, name: str) -> Parts:
        self._name = name
        return self

    def __enter__(self) -> None:
        self._t0 = _perf_ns()

    def __exit__(self, *exc: object) -> None:
        self.seconds[self._name] = self.seconds.get(self._name, 0.0) + (_perf_ns() - self._t0) / 1e9


def _nothing(*args: Any) -> None:
    return None
