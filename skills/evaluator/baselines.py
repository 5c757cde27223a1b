"""Baseline timings (eager, torch.compile), cached per (problem, GPU, torch version, precision,
sizes, timing method).

The store (runtime/store/store.py, StoreBaselineCache) implements the same protocol for kagentd;
for `kagent eval` without a daemon, a JSON file under the XDG cache directory holds them.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Protocol

import msgspec

from skills.evaluator.cache_home import user_cache
from skills.evaluator.results import TimingResult


class BaselineKey(msgspec.Struct, frozen=True):
    """What a baseline timing depends on."""

    problem_id: str
    """Content hash of the problem source."""
    device: str
    """GPU name, or `cpu:<model>` for the cpu backend."""
    torch_version: str
    """torch version of the workers."""
    precision: str
    """Precision policy in force."""
    sizes: str
    """`default` or `small` problem sizes."""
    timing: str = ""
    """How the calls were timed (`timing_method()`): a change of method re-times the baselines."""

    def text(self) -> str:
        return "|".join((self.problem_id, self.device, self.torch_version, self.precision, self.sizes, self.timing))


class BaselineEntry(msgspec.Struct):
    """Cached baseline timings of one problem on one machine."""

    eager: TimingResult | None
    """Eager PyTorch (None when not measured)."""
    compile: TimingResult | None
    """torch.compile default mode (None when not measured or when it failed)."""
    compile_error: str | None
    """Why torch.compile failed, when it did."""
    measured_at: float
    """Unix time of the measurement."""
    eager_bytes: int | None = None
    """Eager's footprint over its timed loop (EvalResult.memory.eager_bytes; None: not measured)."""
    compile_bytes: int | None = None
    """torch.compile's footprint, measured the same way."""


class BaselineCache(Protocol):
    def get(self, key: BaselineKey) -> BaselineEntry | None: ...
    def put(self, key: BaselineKey, entry: BaselineEntry) -> None: ...


def default_cache_path() -> Path:
    return user_cache("baselines.json")


class JsonBaselineCache:
    """One JSON object {key: entry}; writers serialise on an flock and replace the file atomically."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def _read(self) -> dict[str, BaselineEntry]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            return msgspec.json.decode(data, type=dict[str, BaselineEntry])
        except msgspec.DecodeError:
            # A cache is disposable: a damaged file is replaced on the next put, never fatal.
            return {}

    def get(self, key: BaselineKey) -> BaselineEntry | None:
        return self._read().get(key.text())

    def put(self, key: BaselineKey, entry: BaselineEntry) -> None:
        lock_path = self.path.with_suffix(".lock")
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            entries = self._read()
            entries[key.text()] = entry
            tmp = self.path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(msgspec.json.encode(entries))
            os.replace(tmp, self.path)


def now() -> float:
    return time.time()
