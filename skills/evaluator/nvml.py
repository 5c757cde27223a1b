"""GPU memory seen from outside the workers: NVML through ctypes (no package needed), sampled by
the parent around an evaluation's calls.

NVML reports the memory each process holds on the device (its CUDA context, torch's caching
allocator, IPC mappings it created), whatever the process itself claims; the parent's sampler
keeps the peak of each worker's process tree. Where NVML cannot be loaded (no driver, the
CPU backend) `Nvml.open()` returns None and callers record "not measured" (None)."""

from __future__ import annotations

import ctypes
import threading
import time
from types import TracebackType

from skills.evaluator.schedstat import parent_pid

_MAX_PROCS = 256


class _Proc(ctypes.Structure):
    """nvmlProcessInfo_t (v2/v3: pid, usedGpuMemory, gpuInstanceId, computeInstanceId)."""

    _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong),
                ("gpu_instance", ctypes.c_uint), ("compute_instance", ctypes.c_uint)]


class _Util(ctypes.Structure):
    """nvmlProcessUtilizationSample_t: one process's share of one sampling period, in percent."""

    _fields_ = [("pid", ctypes.c_uint), ("timestamp", ctypes.c_ulonglong), ("sm", ctypes.c_uint),
                ("mem", ctypes.c_uint), ("enc", ctypes.c_uint), ("dec", ctypes.c_uint)]


_NOT_FOUND, _INSUFFICIENT_SIZE = 6, 7


class Nvml:
    """One device's handle: the memory each process holds there, in bytes, and the share of the
    SMs each process used (`utilization`)."""

    def __init__(self, lib: ctypes.CDLL, handle: ctypes.c_void_p) -> None:
        self.lib = lib
        self.handle = handle
        try:
            self._procs = lib.nvmlDeviceGetComputeRunningProcesses_v3
        except AttributeError:  # an older driver
            self._procs = lib.nvmlDeviceGetComputeRunningProcesses_v2

    @classmethod
    def open(cls, index: int = 0) -> Nvml | None:
        """NVML for device `index` (as CUDA_VISIBLE_DEVICES would number it: NVML's own order is
        PCI order, the same on the one- and two-GPU machines this runs on), or None."""
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                return None
            handle = ctypes.c_void_p()
            if lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(handle)) != 0:
                return None
            return cls(lib, handle)
        except (OSError, AttributeError):
            return None

    def processes(self) -> dict[int, int]:
        """pid -> bytes used on the device, for every process with a compute context there."""
        count = ctypes.c_uint(_MAX_PROCS)
        infos = (_Proc * _MAX_PROCS)()
        if self._procs(self.handle, ctypes.byref(count), infos) != 0:
            return {}
        return {int(infos[i].pid): int(infos[i].used) for i in range(count.value)}

    def utilization(self, since_us: int) -> list[tuple[int, int, int]] | None:
        """(pid, timestamp us, SM percent) of every per-process sample the driver took after
        `since_us` (Unix time in microseconds, as `time.time_ns() // 1000`); None where the driver
        cannot report per-process utilisation (an old driver, MIG, a vGPU): "not measured".

        The driver samples each process that ran kernels, over periods of its own (seen on the H200:
        benchmarks/results/gpu-sharing-probe-h200.json); a process with a context and no kernels has
        no sample, or a sample of 0."""
        fn = getattr(self.lib, "nvmlDeviceGetProcessUtilization", None)
        if fn is None:
            return None
        since = ctypes.c_ulonglong(since_us)
        for _ in range(3):  # the count can grow between the two calls
            count = ctypes.c_uint(0)
            rc = fn(self.handle, None, ctypes.byref(count), since)
            if rc == _NOT_FOUND:
                return []
            if rc not in (0, _INSUFFICIENT_SIZE):
                return None
            n = count.value + 8
            samples = (_Util * n)()
            count = ctypes.c_uint(n)
            rc = fn(self.handle, samples, ctypes.byref(count), since)
            if rc == _NOT_FOUND:
                return []
            if rc == 0:
                return [(int(samples[i].pid), int(samples[i].timestamp), int(samples[i].sm))
                        for i in range(min(count.value, n))]
            if rc != _INSUFFICIENT_SIZE:
                return None
        return None


class MemorySampler:
    """Samples every `period_s` in a thread while held, for the process trees it watches:

        sampler = MemorySampler(nvml).__enter__();  tree = sampler.watch({"judge": pid});  tree.peaks
    """

    def __init__(self, nvml: Nvml, period_s: float = 0.01) -> None:
        self.nvml = nvml
        self.period_s = period_s
        self.trees: list[TreePeaks] = []
        """Process trees whose peaks this sampler keeps (watch())."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpu-memory-sampler", daemon=True)

    def watch(self, roots: dict[str, int]) -> TreePeaks:
        """Keep the peaks of these process trees (name -> root pid) from now on."""
        tree = TreePeaks(roots)
        self.trees.append(tree)
        return tree

    def _sample(self) -> None:
        samples = self.nvml.processes()
        for tree in list(self.trees):
            tree.add(samples)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.period_s)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


class TreePeaks:
    """Peak device memory of named process trees (each worker's process and what it spawned:
    bwrap's child, the candidate's own processes), from a sampler's per-pid samples."""

    def __init__(self, roots: dict[str, int]) -> None:
        self.roots = {pid: name for name, pid in roots.items()}
        self._of: dict[int, str | None] = {}
        self.peaks: dict[str, int] = {}
        self.window: dict[str, int] | None = None
        """Peaks since open_window() (None: no window open): one stretch of calls."""

    def owner(self, pid: int) -> str | None:
        """The tree `pid` belongs to (None: none of them), kept from the first look: a pid seen
        while it lived keeps its owner after it exits."""
        return self._owner(pid)

    def _owner(self, pid: int) -> str | None:
        if pid not in self._of:
            p, hops = pid, 0
            while p > 1 and p not in self.roots and hops < 32:
                p, hops = parent_pid(p), hops + 1
            self._of[pid] = self.roots.get(p)
        return self._of[pid]

    def sums(self, samples: dict[int, int]) -> dict[str, int]:
        """Each tree's bytes in one sample (pid -> bytes); a tree with no process there is absent."""
        now: dict[str, int] = {}
        for pid, used in samples.items():
            name = self._owner(pid)
            if name is not None:
                now[name] = now.get(name, 0) + used
        return now

    def add(self, samples: dict[int, int]) -> None:
        """One sample (pid -> bytes): each tree's sum, its peak kept (and its window's)."""
        window = self.window
        for name, used in self.sums(samples).items():
            self.peaks[name] = max(self.peaks.get(name, 0), used)
            if window is not None:
                window[name] = max(window.get(name, 0), used)

    def open_window(self) -> None:
        """Keep the peaks from now on apart too (the sampler thread adds to them meanwhile)."""
        self.window = {}

    def close_window(self) -> dict[str, int]:
        """The peaks since open_window()."""
        window, self.window = self.window or {}, None
        return window
