"""Where the candidate's threads spend their CPU time, sampled from outside its process (cpu backend).

On the cpu backend nothing else outside the candidate lists what ran: the op recorder and the
profiler live in its interpreter, so a forward that calls its kernel while either watches and torch
otherwise passes them (measured: reward 1, correct and unflagged, before this check). The parent
therefore samples the instruction pointer of every thread of the candidate worker during its timed
loop with `perf_event_open` (a software CPU clock, user mode only, one ring buffer per thread),
each sample stamped on the marks' clock (CLOCK_REALTIME) so that only the samples between a timed
call's start and end marks count (not the harness's copies around the calls, nor the few watched
calls after the loop). Nothing of it exists in the candidate's process, and every timed call is sampled alike, so there is
no watched call to behave in. Each sample is placed in the file mapped at its address
(`/proc/PID/maps`, read while the worker lives): the agent's own code (the built library, a
load_inline module: anything under the evaluation's scratch folder or the sandbox's extensions
mount), torch's libraries, the OpenMP runtime, Python, or other.

The verdict (`verdict`) flags `decoy_kernel` when at least MIN_SAMPLES samples were taken, torch's
libraries held at least TORCH_SHARE of them and the agent's code less than AGENT_PER_TORCH times
torch's share, and torch's samples come to at least TORCH_US_PER_CALL of CPU time a timed call:
torch did the calls' work. Catches: a forward computing with torch whenever nothing
in its process watches (its kernel runs in the few watched calls only; in the benchmark 0% agent,
64-72% torch), and the same with the kernel run on a twentieth of each call's elements beside
torch's compute (a decoy slice: 4.7% agent, 63% torch, unflagged under the first rule, which
asked for at most 1% agent). Lets
through: a fair kernel, however small, whose calls spend part of their time in its own code beside
torch's allocation and Python's dispatch (the bundled cpu solutions: 32-56% agent, 12-24% torch
between the marks on the loaded 2-core box, `benchmarks/cpu_sample_shares.py`). Every round of
the candidate is sampled, and in final mode the judge's baseline rounds pay the same sampling
interrupts (`baseline_sampler`), so the speedups compare like with like. Where sampling is not permitted (`perf_event_paranoid`, a
seccomp filter, no Linux) the check is off and the report says so; it never fails an evaluation
by itself.

The next cheats, reasoned: a larger slice, the kernel doing about half of each call's work and
torch the rest (the shares then balance; the cheat saves half a kernel's writing); and the torch
compute on a thread of the candidate's own while the calling thread spins in the agent's library
for as long (the call costs no more, the agent's share is large). Closing them needs to know which
code produced the outputs, per thread: symbols of libtorch for the sampled addresses (its compute
kernels against allocation and copies). Not built.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import math
import mmap
import os
import struct
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from skills.evaluator.results import CpuSamples as Samples
from skills.evaluator.results import Flag

PERIOD_NS = 500_000
"""One sample per 500 us of a thread's CPU time (2 kHz): an interrupt of a few us each (a spinning
process ran 1.3% slower here, in a VM); final mode's baseline rounds pay the same (baseline_sampler)."""
DATA_PAGES = 32
"""Ring buffer per thread (a power of two): 128 KiB, ~4,000 samples of 32 bytes, 2 s of a busy
thread's CPU; records past a full buffer are lost (counted) rather than overwritten. Small because
a user without CAP_IPC_LOCK may lock only kernel.perf_event_mlock_kb (516 KiB) of them: past that,
threads beyond the first few are left unsampled (`Samples.threads` says how many were)."""
MIN_SAMPLES = 30
"""Fewer samples than this decide nothing. A fair kernel with the least favourable measured shares
(agent 36%, torch 22%: level1/04_mse_loss) is flagged by chance at 30 samples with probability
6e-5 (12 or more torch samples and fewer than a fifth as many agent ones; 5e-7 at 50, 3e-12 at
100; the fair rows took 117-436); the cheats' timed calls gave 43-73 samples over their rounds,
so a higher floor would let the fastest of them through."""
AGENT_PER_TORCH = 0.2
"""The agent's code held less than this fraction of torch's share of the samples (the bundled cpu
solutions: 1.6-4.3 times torch's, the load_inline fixture 30-120 times; the cheats: 0 and 0.05-0.07
times, benchmarks/results/cpu-sample-shares.json; a decoy slice of a twentieth, 5% agent and 65% torch,
is caught with probability 0.93 at 30 samples, 0.996 at 100) ..."""
TORCH_SHARE = 0.4
"""... and torch's libraries at least this share (the bundled solutions: 12-24%, their allocation and
dispatch; the cheats: 63-72%, their compute): torch did the calls' work. Both must hold, so a fair
kernel whose calls are mostly Python and torch's allocation around a tiny kernel (a small agent
share by chance) is not flagged for it."""

TORCH_US_PER_CALL = 150.0
"""... and torch's sampled CPU time per timed call surely (its one-sided 95% lower bound) at least
this: more than a fair call spends in torch's allocation and dispatch. Where the agent's own work is
a few us (a problem whose calls are all dispatch: a 64 x 256 relu), the shares are Python's and
torch's overhead whoever computes: that fair kernel read 36-39% torch and 5-7% agent over 430-500
samples (quiet and beside four spinning processes), at the edge of the share rule, and 0% agent
and 41% torch in a run of 34 samples, which was flagged before this bound. The cache flush before
each call evicts torch's and Python's code and data too, so a call's dispatch runs cold: that fair
kernel's calls spent 92-106 us of torch's each (measured to within a few %, 900 calls), the
bundled solutions 56-106 us (benchmarks/results/cpu-sample-shares-per-call.json, 2-core VM), the
cheats on the bundled relu 250 (when_watched) and 400 (decoy_slice). Let through, not caught by
this check: a forward computing with torch on a problem so small that torch's work is under this
bound a call (the same cheat on the tiny relu: 75 us); the static checks and the op recorder stand
before it, and its calls are as fast as eager's at best."""

_NR_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}
_PERF_TYPE_SOFTWARE, _PERF_COUNT_SW_CPU_CLOCK = 1, 0
_SAMPLE_IP, _SAMPLE_TID, _SAMPLE_TIME = 1 << 0, 1 << 1, 1 << 2
_FLAG_DISABLED, _FLAG_EXCLUDE_KERNEL, _FLAG_EXCLUDE_HV, _FLAG_USE_CLOCKID = 1 << 0, 1 << 5, 1 << 6, 1 << 25
_CLOCK_REALTIME = 0  # the clock of the marks' SO_TIMESTAMPNS stamps
_IOC_ENABLE, _IOC_DISABLE = 0x2400, 0x2401
_FD_CLOEXEC = 1 << 3
_RECORD_LOST, _RECORD_SAMPLE = 2, 9
_ATTR_SIZE = 112  # PERF_ATTR_SIZE_VER5

TORCH_LIBS = ("libtorch", "libc10", "libshm", "_C.cpython")
"""torch's own shared objects. Its OpenMP runtime counts as OpenMP: its threads wait there, and the
work of torch's parallel loops runs in libtorch_cpu's own code."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _attr() -> ctypes.Array[ctypes.c_char]:
    raw = bytearray(_ATTR_SIZE)
    struct.pack_into("IIQQQQQ", raw, 0, _PERF_TYPE_SOFTWARE, _ATTR_SIZE, _PERF_COUNT_SW_CPU_CLOCK, PERIOD_NS,
                     _SAMPLE_IP | _SAMPLE_TID | _SAMPLE_TIME, 0,
                     _FLAG_DISABLED | _FLAG_EXCLUDE_KERNEL | _FLAG_EXCLUDE_HV | _FLAG_USE_CLOCKID)
    struct.pack_into("i", raw, 92, _CLOCK_REALTIME)
    return (ctypes.c_char * _ATTR_SIZE).from_buffer(raw)


@dataclass
class _Event:
    fd: int
    buf: mmap.mmap


class ThreadSampler:
    """IP samples of every thread of `pid` (threads alive at start()), taken by this process.

    start() returns None when sampling runs, else why it cannot (then stop() returns None)."""

    def __init__(self, pid: int, agent_roots: list[str]) -> None:
        self.pid = pid
        self.agent_roots = [r.rstrip("/") + "/" for r in agent_roots]
        self.events: list[_Event] = []
        self.pagesize = mmap.PAGESIZE
        self.refused = False
        """start() failed because the kernel refused access to this process (EACCES/EPERM) while
        it exists: where the same parent may sample the judge, the candidate shut it out."""

    def start(self) -> str | None:
        nr = _NR_PERF_EVENT_OPEN.get(os.uname().machine) if sys.platform == "linux" else None
        if nr is None:
            return "sampling needs Linux on x86_64 or aarch64"
        libc = _libc()
        try:
            tids = sorted(int(t) for t in os.listdir(f"/proc/{self.pid}/task"))
        except OSError as exc:
            return f"the candidate's threads cannot be listed: {exc}"
        for tid in tids:
            fd = libc.syscall(nr, _attr(), tid, -1, -1, _FD_CLOEXEC)
            if fd < 0:
                err = ctypes.get_errno()
                if err == 3:  # ESRCH: the thread ended meanwhile
                    continue
                self.close()
                self.refused = err in (1, 13)  # EPERM, EACCES
                return f"perf_event_open: {os.strerror(err)} (kernel.perf_event_paranoid, seccomp?)"
            try:
                buf = mmap.mmap(fd, (1 + DATA_PAGES) * self.pagesize, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            except OSError as exc:
                os.close(fd)
                if self.events:  # past the locked-memory allowance: the threads mapped so far are sampled
                    continue
                self.close()
                return f"the sample buffer cannot be mapped: {exc}"
            self.events.append(_Event(fd, buf))
        if not self.events:
            return "the candidate has no thread to sample"
        for ev in self.events:
            libc.ioctl(ev.fd, _IOC_ENABLE, 0)
        return None

    def stop(self, windows: list[tuple[int, int]] | None = None) -> Samples | None:
        """Disable, read every buffer, place the samples by the worker's maps, close. With `windows`
        ((start, end) ns on CLOCK_REALTIME: the timed calls' marks) only the samples inside them count."""
        if not self.events:
            return None
        libc = _libc()
        for ev in self.events:
            libc.ioctl(ev.fd, _IOC_DISABLE, 0)
        hits: list[tuple[int, int]] = []
        lost = 0
        for ev in self.events:
            got, dropped = self._read(ev.buf)
            hits += got
            lost += dropped
        ips = [ip for ip, t in hits if windows is None or _inside(t, windows)]
        place = self._placer()
        out = Samples(places=dict(Counter(place(ip) for ip in ips)), lost=lost, threads=len(self.events),
                      calls=len(windows) if windows is not None else 0, period_us=PERIOD_NS / 1000)
        self.close()
        return out

    def close(self) -> None:
        for ev in self.events:
            with contextlib.suppress(OSError, ValueError):
                ev.buf.close()
            with contextlib.suppress(OSError):
                os.close(ev.fd)
        self.events = []

    def _read(self, buf: mmap.mmap) -> tuple[list[tuple[int, int]], int]:
        head, tail = struct.unpack_from("QQ", buf, 1024)  # data_head, data_tail
        offset, size = struct.unpack_from("QQ", buf, 1040)  # data_offset, data_size (Linux >= 4.1)
        if not size:
            offset, size = self.pagesize, DATA_PAGES * self.pagesize
        hits: list[tuple[int, int]] = []  # (ip, time)
        lost = 0
        pos = tail
        while pos + 8 <= head:
            start = offset + pos % size
            rtype, _misc, rsize = struct.unpack_from("IHH", self._bytes(buf, start, offset, size, 8))
            if rsize < 8:
                break
            body = self._bytes(buf, start, offset, size, rsize)
            if rtype == _RECORD_SAMPLE and rsize >= 32:  # header, ip, pid + tid, time
                ip, _pid, _tid, when = struct.unpack_from("QIIQ", body, 8)
                hits.append((ip, when))
            elif rtype == _RECORD_LOST and rsize >= 24:
                lost += struct.unpack_from("Q", body, 16)[0]
            pos += rsize
        return hits, lost

    @staticmethod
    def _bytes(buf: mmap.mmap, start: int, offset: int, size: int, n: int) -> bytes:
        end = offset + size
        if start + n <= end:
            return bytes(buf[start:start + n])
        first = bytes(buf[start:end])  # the record wraps around the ring
        return first + bytes(buf[offset:offset + n - len(first)])

    def _placer(self) -> Callable[[int], str]:
        starts: list[int] = []
        rows: list[tuple[int, str]] = []
        try:
            text = Path(f"/proc/{self.pid}/maps").read_text()
        except OSError:
            text = ""
        for line in text.splitlines():
            fields = line.split(maxsplit=5)
            if len(fields) < 6 or not fields[5].startswith("/"):
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            starts.append(lo)
            rows.append((hi, self._kind(fields[5])))

        def place(ip: int) -> str:
            i = bisect.bisect_right(starts, ip) - 1
            return rows[i][1] if i >= 0 and ip < rows[i][0] else "other"

        return place

    def _kind(self, path: str) -> str:
        if any(path.startswith(root) for root in self.agent_roots):
            return "agent"
        name = os.path.basename(path)
        if name.startswith(TORCH_LIBS):
            return "torch"
        if name.startswith(("libgomp", "libomp", "libiomp")):
            return "openmp"
        if name.startswith(("libpython", "python")):
            return "python"
        return "other"


async def baseline_sampler(judge_pid: int | None) -> ThreadSampler | None:
    """The same interrupts on the judge while it times the baselines as on the candidate while it
    was timed (cpu, final mode's paired rounds): sampling costs each sampled thread a few us per
    sample (in a VM, a timer exit), which the speedups must not charge the candidate alone."""
    if judge_pid is None:
        return None
    sampler = ThreadSampler(judge_pid, [])
    return sampler if await anyio.to_thread.run_sync(sampler.start) is None else None


def samplable(pid: int) -> bool:
    """Whether this process may sample `pid` (the trusted judge: telling the candidate's refusal
    from a kernel that permits no sampling at all)."""
    sampler = ThreadSampler(pid, [])
    ok = sampler.start() is None
    sampler.close()
    return ok


def _inside(t: int, windows: list[tuple[int, int]]) -> bool:
    i = bisect.bisect_right(windows, (t, 2**63)) - 1
    return i >= 0 and windows[i][0] <= t <= windows[i][1]


def _low_us_per_call(samples: Samples, place: str) -> float:
    """The one-sided 95% lower bound of `place`'s CPU us a timed call (its sample count taken as a
    Poisson count: n - 1.645 sqrt(n))."""
    n = samples.places.get(place, 0)
    return max(0.0, n - 1.645 * math.sqrt(n)) * samples.period_us / max(samples.calls, 1)


def verdict(samples: Samples | None) -> list[Flag]:
    """`decoy_kernel` when the sampled timed calls spent much of their CPU time in torch's code and
    a small fraction of that in the agent's: torch did the work."""
    if samples is None or samples.total < MIN_SAMPLES:
        return []
    agent, torch_share = samples.share("agent"), samples.share("torch")
    if torch_share < TORCH_SHARE or agent >= AGENT_PER_TORCH * torch_share:
        return []
    torch_us = samples.us_per_call("torch")
    if torch_us is not None and _low_us_per_call(samples, "torch") < TORCH_US_PER_CALL:
        return []  # not surely more torch time than a call's allocation and dispatch: the shares tell nothing
    per_call = f", {torch_us:.0f} us of torch's a call" if torch_us is not None else ""
    return [Flag(name="decoy_kernel", detail=(
        f"sampled from outside your process during the timed calls, {100 * agent:.1f}% of the CPU time was in "
        f"your kernels and {100 * torch_share:.0f}% in torch's ({samples.describe()}{per_call}); every call must do "
        f"its work in your own kernels"))]
