"""Messages between the evaluator (trusted parent) and its two workers, and their framing.

Each frame is a 4-byte big-endian length and a msgpack-encoded tagged Struct. Workers move the
pipe off fds 0/1 before any candidate code runs (candidate prints go to stderr), and every
message carries the evaluation's nonce, so a frame forged by candidate code is refused.
"""

from __future__ import annotations

import hashlib
import os
import struct
from typing import Literal

import msgspec

from skills.precision_code import UNCHECKED, PrecisionEvidence
from skills.results import Flag, Precision, SetResult

MAX_FRAME = 256 * 2**20


class TimingConfig(msgspec.Struct, kw_only=True, frozen=True):
    """How the timing loop runs (shared by candidate and baselines, so they are timed alike)."""

    warmup_calls: int = 10
    """At least this many untimed calls first."""
    warmup_seconds: float = 0.15
    """...and at least this long (an idle GPU idles at a low clock and needs load to boost)."""
    min_calls: int = 30
    """Fewest timed calls."""
    max_calls: int = 1000
    """Most timed calls."""
    target_seconds: float = 0.4
    """Aim the timed loop at this much time spent inside calls."""
    flush_l2: bool = True
    """Write a buffer twice the size of the last-level cache between calls."""
    reset_persisting_l2: bool = True
    """Demote persisting L2 lines before every call (EXPLOITS row 17; cuda)."""
    work_buffers: int = 1
    """Pointer-stable input buffer sets the calls rotate through (call i uses set i % n). 4 made
    the time per call no steadier between evaluations on the H200 (README, Timing stability)."""
    lead_us: float = 100.0
    """cuda: before each timed call, queue a spin kernel this long ahead of the start event, so
    the GPU is still busy while the host launches the call: the time per call is then the device's
    (from the moment the call's work could start to its end), not the host's launch jitter. Host
    work longer than the lead still shows as idle gaps (launch-bound calls are not flattered).
    0: the GPU is idle when the call starts, so the call's launch latency counts."""
    caller_calls: int = 50
    """cuda: after the timed loop, this many calls with no lead: the time per call as a caller
    that waits for every call sees it (launch included). Reported beside, not judged."""

    def method(self) -> str:
        """What a cached baseline's times depend on (skills.baselines.BaselineKey.timing)."""
        return f"v2 lead {self.lead_us:g} us, flush {int(self.flush_l2)}, reset {int(self.reset_persisting_l2)}"


# ---- judge (trusted: reference, comparisons, baselines; never imports candidate code) ----


def derive_seed(seed: int, index: int) -> int:
    """The seed of input set `index` (-1: the model's weights): one-way, so a candidate that is
    given the seeds of the sets it runs cannot compute the canaries' or the secret base seed."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


class JudgeStart(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> judge: build the reference and its input sets."""

    nonce: str
    problem_path: str
    sizes: Literal["default", "small"]
    device: str
    seed: int
    n_sets: int
    n_canaries: int
    samples_per_output: int
    exchange_dir: str
    """Where the judge writes the initial weights (init.pt) for the candidate."""
    shape_check: bool = True
    """Also draw one set at other sizes (skills.problem.shape_check_sizes), for correctness only."""
    evidence: PrecisionEvidence = UNCHECKED
    """What the scan of the candidate's built code found (skills/precision_code.py); the judge's
    budget is fair only where it was checked and holds no reduced-precision instruction."""


SHAPE_SET_SEED = -2
"""derive_seed index of the shape check's input set (-3: its model's weights, when they differ)."""
SHAPE_INIT_SEED = -3


class SampleRefs(msgspec.Struct, kw_only=True):
    """Reference values and per-element budgets at the secret sample positions of one set."""

    set_index: int
    values: list[list[float]]
    """Per output: r64 at the sample positions."""
    budgets: list[list[float]]
    """Per output: the per-element error budget at those positions."""


class JudgeReady(msgspec.Struct, tag=True, kw_only=True):
    """Judge -> parent: references computed; the initial weights written to the exchange dir."""

    nonce: str
    name: str
    problem_id: str
    precision: Precision
    n_outputs: int
    sample_positions: list[list[int]]
    samples: list[SampleRefs]
    gpu: str | None
    torch_version: str
    l2_bytes: int
    read_bytes: int = 0
    """Bytes one call must read from memory at least (inputs, parameters, buffers): a timing floor."""
    fingerprints: list[list[float]] = msgspec.field(default_factory=list)
    """Per input set (regular, then canaries): a checksum per input, so the candidate can tell that
    it drew the same inputs from the set's seed."""
    shape_sizes: Literal["small", "check"] | None = None
    """The shape check's sizes (None: no shape check); its set comes after the regular ones."""
    shape_fingerprint: list[float] = msgspec.field(default_factory=list)
    shape_init: bool = False
    """The shape check's model has init inputs of its own: weights in exchange/init_shape.pt."""
    input_shapes: list[list[int]] = msgspec.field(default_factory=list)
    """Shape of each tensor input of the regular sets (the timed sizes; non-tensor inputs left out),
    so the agent's report can say what was timed and checked."""


class OutputFile(msgspec.Struct, kw_only=True):
    """One output of one set, as raw bytes (C order) in `path`; empty path: not a plain tensor."""

    path: str
    shape: list[int]
    dtype: str
    kind: str = "Tensor"
    """The Python type the forward returned (for the message when it is not a tensor)."""


class CompareRequest(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> judge: compare the candidate's outputs (per set, per output)."""

    nonce: str
    out_dir: str
    outputs: list[list[OutputFile]]


class CompareReport(msgspec.Struct, tag=True, kw_only=True):
    nonce: str
    sets: list[SetResult]
    seconds: dict[str, float] = msgspec.field(default_factory=dict)
    """Where the judge's time went (read, compare)."""


class BaselineRequest(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> judge: time these baselines with the given loop."""

    nonce: str
    which: list[Literal["eager", "compile"]]
    timing: TimingConfig


class Samples(msgspec.Struct, kw_only=True):
    """Raw timing samples of one callable; the parent does the statistics."""

    per_call_us: list[float]
    """Device-event time per timed call (launch and host overhead included)."""
    wall_us: list[float]
    """Host wall time per timed call, from before launch to after a device-wide sync."""
    sync_overhead_us: float
    """Median wall minus event time of an empty call: what the sync itself costs."""
    kernel_us: float | None = None
    """Summed device time of the kernels per call, from the profiler (cuda only)."""
    caller_us: list[float] = msgspec.field(default_factory=list)
    """Event time of the calls with no lead (TimingConfig.caller_calls; cuda only)."""
    lead_us: list[float] = msgspec.field(default_factory=list)
    """How long the lead actually held the GPU before each timed call (cuda, lead on)."""


class BaselineReport(msgspec.Struct, tag=True, kw_only=True):
    nonce: str
    eager: Samples | None
    compile: Samples | None
    compile_error: str | None


class PrepareRequest(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> judge: time the timing loop's own work between calls (copy the inputs in, flush
    the cache, sync) on the judge's input sets, as a trusted yardstick for the candidate's loop."""

    nonce: str
    timing: TimingConfig
    calls: int = 15


class PrepareReport(msgspec.Struct, tag=True, kw_only=True):
    nonce: str
    prepare_us: list[float]


# ---- candidate (untrusted: imports model_new.py and the agent's kernels) ----


class CandStart(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> candidate: bind the kernels and import model_new.py."""

    nonce: str
    workspace: str
    lib_path: str | None
    functions: list[dict[str, object]]
    flavour: Literal["c_abi", "torch", "none"]
    device: str
    precision: Precision
    kernel_names: list[str]
    """Kernels the build produced (demangled): each call must launch one of them."""
    gpu_memory_fraction: float | None = None
    """Cap on the candidate's torch allocations (cuda)."""


class CandImported(msgspec.Struct, tag=True, kw_only=True):
    nonce: str


class CandRun(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> candidate: draw the correctness input sets from their seeds and run them."""

    nonce: str
    exchange_dir: str
    """Holds problem.py (for get_inputs) and init.pt (the judge's initial weights)."""
    sizes: Literal["default", "small"]
    out_dir: str
    set_seeds: list[int]
    fingerprints: list[list[float]]
    """The judge's checksums of the same sets."""
    shape_sizes: Literal["small", "check"] | None = None
    """Then one more set at these sizes (the shape check), from shape_seed, into set index len(set_seeds)."""
    shape_seed: int = 0
    shape_fingerprint: list[float] = msgspec.field(default_factory=list)
    shape_init: bool = False
    """Build a second ModelNew from exchange/init_shape.pt for the shape check's set."""


class CandTime(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> candidate: correctness passed; time the model over the sets and canaries."""

    nonce: str
    canary_seeds: list[int]
    canary_fingerprints: list[list[float]]
    sample_positions: list[list[int]]
    timing: TimingConfig
    canary_fractions: list[float]
    """Where in the timed loop each canary set is used, once (fractions of the loop)."""
    profile_calls: int
    """Extra calls under the profiler for kernel time and launch accounting (0: none)."""


class CandOutputs(msgspec.Struct, tag=True, kw_only=True):
    nonce: str
    outputs: list[list[OutputFile]]
    flags: list[Flag]
    seconds: dict[str, float] = msgspec.field(default_factory=dict)
    """Where the candidate's time went (init, draw, run, checks, write)."""


class CandTiming(msgspec.Struct, tag=True, kw_only=True):
    nonce: str
    samples: Samples
    set_order: list[int]
    """Input set used by each timed call."""
    spot: list[list[list[float]]]
    """Per timed call, per output: values at the sample positions."""
    flags: list[Flag]
    seconds: dict[str, float] = msgspec.field(default_factory=dict)
    """Wall seconds of the timing stage's parts (diagnostics only)."""


class Started(msgspec.Struct, tag=True, kw_only=True):
    """Either worker -> parent, before any job: interpreter up, torch imported (no CUDA yet);
    waiting for Preinit."""


class Preinit(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> either worker, before any job: bring CUDA up now. A warm pool sends it only while
    no evaluation on the same GPU is timing, so starting workers do not disturb a timed loop."""


class Warm(msgspec.Struct, tag=True, kw_only=True):
    """Either worker -> parent, before any job: torch imported, CUDA up, ready to work. Carries no
    nonce (sent before any candidate code runs); evaluations ignore it, a warm pool waits for it."""


class WorkerError(msgspec.Struct, tag=True, kw_only=True):
    """Either worker -> parent: a stage failed; `message` is for the agent."""

    nonce: str
    stage: str
    message: str
    flag: Flag | None = None


Message = (
    JudgeStart | JudgeReady | CompareRequest | CompareReport | BaselineRequest | BaselineReport | PrepareRequest | PrepareReport
    | CandStart | CandImported | CandRun | CandTime | CandOutputs | CandTiming | Started | Preinit | Warm | WorkerError
)

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Message)


def encode(msg: Message) -> bytes:
    body = _encoder.encode(msg)
    return struct.pack(">I", len(body)) + body


def decode(body: bytes) -> Message:
    return _decoder.decode(body)


def frame_length(header: bytes) -> int:
    n: int = struct.unpack(">I", header)[0]
    if n > MAX_FRAME:
        raise ValueError(f"frame of {n} bytes exceeds the {MAX_FRAME}-byte limit")
    return n


class Channel:
    """Blocking framed channel over two file descriptors (the worker side)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd

    def _read_exactly(self, n: int) -> bytes:
        chunks: list[bytes] = []
        while n:
            chunk = os.read(self.read_fd, n)
            if not chunk:
                raise EOFError("the evaluator closed the channel")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def recv(self) -> Message:
        return decode(self._read_exactly(frame_length(self._read_exactly(4))))

    def send(self, msg: Message) -> None:
        data = encode(msg)
        while data:
            data = data[os.write(self.write_fd, data):]


def take_over_stdio() -> Channel:
    """Move the protocol pipe off fds 0/1 so prints from candidate code cannot corrupt it."""
    read_fd, write_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return Channel(read_fd, write_fd)


def rotation(n_sets: int, n_calls: int) -> list[int]:
    """Set index per call: 0, 1, ..., n_sets-1, 0, 1, ..."""
    return [i % n_sets for i in range(n_calls)]


def timed_order(n_sets: int, n_calls: int, canary_fractions: list[float]) -> list[int]:
    """The timed loop's set per call: the rotation, with canary c (set n_sets + c) once each at
    fraction c of the loop (the next free call when two land on the same one). The parent
    rebuilds it to check the order the candidate reports."""
    order = rotation(n_sets, n_calls)
    taken: set[int] = set()
    for c, frac in enumerate(canary_fractions):
        pos = min(n_calls - 1, int(frac * n_calls))
        while pos in taken and len(taken) < n_calls:
            pos = (pos + 1) % n_calls
        if len(taken) < n_calls:
            taken.add(pos)
            order[pos] = n_sets + c
    return order
