"""Messages between the evaluator (trusted parent) and its two workers, and their framing.

Each frame is a 4-byte big-endian length and a msgpack-encoded tagged Struct. Workers move the
pipe off fds 0/1 before any candidate code runs (candidate prints go to stderr), and every
message carries the evaluation's nonce, so a frame forged by candidate code is refused.
"""

from __future__ import annotations

import hashlib
import os
import select
import socket
import struct
import time
from typing import Any, Literal

import msgspec

from skills.evaluator.precision_code import UNCHECKED, PrecisionEvidence
from skills.evaluator.results import Flag, Precision, SetResult

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
    loop_seconds: float = 0.6
    """...and a timed loop at most this much wall time, what each call costs around it included
    (the judge's loop of the candidate: its own input draw, hand-over and hops; a baseline's: the
    flush and sync), estimated from the warm-up, never below min_calls: on the H200 the judge's
    loop spent ~2 ms per call, and 1000 calls of a 139 us kernel made profile() 4.5 s."""
    flush_l2: bool = True
    """Write a buffer twice the size of the last-level cache between calls."""
    reset_persisting_l2: bool = True
    """Demote persisting L2 lines before every call (EXPLOITS row 17; cuda)."""
    work_buffers: int = 1
    """Pointer-stable input buffer sets the baselines' calls rotate through (call i uses set i % n;
    the candidate's calls use the judge's one arena). 4 made the time per call no steadier between
    evaluations on the H200 (docs/results.md, Timing stability)."""
    lead_us: float = 100.0
    """cuda: before each timed call, queue a spin kernel this long ahead of the start event, so
    the GPU is still busy while the host launches the call: the time per call is then the device's
    (from the moment the call's work could start to its end), not the host's launch jitter. Host
    work longer than the lead still shows as idle gaps (launch-bound calls are not flattered).
    0: the GPU is idle when the call starts, so the call's launch latency counts."""
    caller_calls: int = 50
    """cuda: after the timed loop, this many calls with no lead: the time per call as a caller
    that waits for every call sees it (launch included). Reported beside, not judged."""
    candidate_spin_us: float = 0.0
    """cuda: after answering a timed call, the candidate's worker polls the link this long for the
    judge's next message before it blocks, so its core is awake when the next call comes, as the
    judge's is before each baseline call (0: it blocks at once). Off until the GPU measures it
    (benchmarks/probe_parity.py, variant spin)."""

    def method(self) -> str:
        """What a cached baseline's times depend on (skills.evaluator.baselines.BaselineKey.timing).
        v3: the judge no longer sets torch's thread count between calls, which had turned MKL's
        dynamic threading off and slowed cpu baselines of small vector ops 4-20x (cached v2 times
        of those are wrong). v4: the judge times its baselines under the candidate's
        NVIDIA_TF32_OVERRIDE=0 (skills/evaluator/launch.py), which costs a cuBLAS call host time."""
        return f"v4 lead {self.lead_us:g} us, flush {int(self.flush_l2)}, reset {int(self.reset_persisting_l2)}"


TUPLE_TAG = "__kagent_tuple__"
"""The one-key dict a tuple travels as (msgpack has arrays only: a tuple would arrive a list)."""


def pack_scalars(values: Any) -> Any:
    """Non-tensor inputs for the wire: tuples (at any depth) tagged, so forward gets a tuple back."""
    if isinstance(values, tuple):
        return {TUPLE_TAG: [pack_scalars(v) for v in values]}
    if isinstance(values, list):
        return [pack_scalars(v) for v in values]
    if isinstance(values, dict):
        return {k: pack_scalars(v) for k, v in values.items()}
    return values


def unpack_scalars(values: Any) -> Any:
    """pack_scalars undone."""
    if isinstance(values, dict):
        if len(values) == 1 and TUPLE_TAG in values:
            return tuple(unpack_scalars(v) for v in values[TUPLE_TAG])
        return {k: unpack_scalars(v) for k, v in values.items()}
    if isinstance(values, list):
        return [unpack_scalars(v) for v in values]
    return values


class SlotSpec(msgspec.Struct, kw_only=True, frozen=True):
    """One tensor in the arena: where its bytes start, its shape and dtype."""

    offset: int
    shape: list[int]
    dtype: str


class Layout(msgspec.Struct, kw_only=True, frozen=True):
    """An arena's slots: the tensor inputs (by argument position) and the outputs."""

    inputs: list[SlotSpec]
    input_positions: list[int]
    """Argument position of each input slot; the other arguments are not tensors."""
    outputs: list[SlotSpec]
    nbytes: int


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
    exchange_dir: str
    """Where the judge writes the initial weights (init.pt) for the candidate."""
    shape_check: bool = True
    """Also draw one set at other sizes (skills/problem.shape_check_sizes), for correctness only."""
    evidence: PrecisionEvidence = UNCHECKED
    """What the scan of the candidate's built code found (skills/evaluator/precision_code.py); the judge's
    budget is fair only where it was checked and holds no reduced-precision instruction."""
    held_sets: int | None = None
    """Regular sets the judge holds with their references (EvalConfig.held_sets)."""


SHAPE_SET_SEED = -2
"""derive_seed index of the shape check's input set (-3: its model's weights, when they differ)."""
SHAPE_INIT_SEED = -3


class JudgeReady(msgspec.Struct, tag=True, kw_only=True):
    """Judge -> parent: references computed; the initial weights written to the exchange dir."""

    nonce: str
    name: str
    problem_id: str
    precision: Precision
    n_outputs: int
    gpu: str | None
    torch_version: str
    l2_bytes: int
    read_bytes: int = 0
    """Bytes one call must read from memory at least (inputs, parameters, buffers): a timing floor."""
    shape_sizes: Literal["small", "check"] | None = None
    """The shape check's sizes (None: no shape check); its set comes after the regular ones."""
    shape_init: bool = False
    """The shape check's model has init inputs of its own: weights in exchange/init_shape.pt."""
    input_shapes: list[list[int]] = msgspec.field(default_factory=list)
    """Shape of each tensor input of the regular sets (the timed sizes; non-tensor inputs left out),
    so the agent's report can say what was timed and checked."""
    seconds: dict[str, float] = msgspec.field(default_factory=dict)
    """Wall seconds of the judge's start by part (load, models, budget, sets and references)."""
    reserve_bytes: int = 0
    """cuda: what the judge may still allocate after this (a timed call's own set, its references in
    fp32 and fp64, the fp64 forward's inputs, the comparison's passes) on top of what it holds."""


class CheckRequest(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> judge: run the correctness sets through the candidate (over the link) and compare."""

    nonce: str
    timing: TimingConfig
    """The evaluation's loop settings (the candidate's loop gets them with the arena)."""
    limit_s: float
    """The candidate's answers may take this long in all (the judge's waits for them), or it timed out."""
    own_limit_s: float = 0.0
    """The judge's own work in the stage (sets, references, comparisons) may take this long apart
    from its waits, or the stage fails as the environment's fault (0: no limit of its own)."""
    candidate_pid: int | None = None
    """The candidate's process: its threads' CPU between the calls is read (a late stage's blame)."""
    candidate_root_pid: int | None = None
    """The outermost process of the candidate's sandbox (every task below it is the candidate's)."""


class CheckReport(msgspec.Struct, tag=True, kw_only=True):
    nonce: str
    sets: list[SetResult]
    flags: list[Flag]
    seconds: dict[str, float] = msgspec.field(default_factory=dict)
    """Where the judge's time went (hand-over, calls, compare)."""


class TimeRequest(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> judge: drive one timed loop of the candidate (warm-up, timed calls each on a set of
    its own, caller calls, probes, profiler) and check a random subset of its calls."""

    nonce: str
    timing: TimingConfig
    round: int
    checked_fraction: float
    profile_calls: int
    """Extra calls under the profiler for kernel time and launch accounting (0: none)."""
    limit_s: float
    """The candidate's answers in the loop may take this long in all (the judge's waits for them,
    never its own work between them: drawing sets, references, comparisons), or it timed out."""
    own_limit_s: float = 0.0
    """The judge's own work in the loop may take this long apart from its waits, or the loop fails
    as the environment's fault (0: no limit of its own)."""
    candidate_pid: int | None = None
    """The candidate's process (the parent found it): its run-queue delay is read around each call."""
    candidate_root_pid: int | None = None
    """The outermost process of the candidate's sandbox: every task below it counts as the
    candidate's (a helper it double-forks is inherited by the sandbox's init, still below it)."""


class TimeReport(msgspec.Struct, tag=True, kw_only=True):
    nonce: str
    samples: Samples
    """The candidate's own times (a hint that the marks bound)."""
    first_seq: int
    """The call number of the first timed call (its marks carry it)."""
    checked_calls: int
    bad_calls: int
    sent_ns: list[int]
    """Per timed call: the judge's realtime clock when it asked for the call."""
    back_ns: list[int]
    """...and when the call's answer was back (the outputs written)."""
    flags: list[Flag]
    seconds: dict[str, float] = msgspec.field(default_factory=dict)
    threads: ThreadReport | None = None
    """What the candidate's threads did around the timed calls, read from /proc (None where the
    judge could not read the candidate's /proc files)."""
    judge_waited_ns: list[int] = msgspec.field(default_factory=list)
    """Per timed call: how long the judge's own thread waited for a CPU between its request and the
    answer (/proc/thread-self/schedstat; empty where it could not be read)."""


class ThreadReport(msgspec.Struct, kw_only=True):
    """The candidate's threads during a timed loop, from the kernel's counts (skills/evaluator/schedstat.py)."""

    waited_ns: list[int]
    """Per timed call: how long its main thread waited for a CPU between the request and the answer."""
    others_ns: list[int]
    """Per timed call: the CPU its other threads (and processes it forked) used in that time."""
    idle_cpu_ns: int
    """The CPU its other threads (and forked processes) used between the timed calls (from an
    answer to the next request), when it had nothing to do."""
    idle_ns: int
    """The wall time between the timed calls."""
    unseen_ns: int
    """CPU its process used in the loop that no live thread accounts for: threads that came and went."""
    cpu_ns: int
    """The CPU its process used in the loop (utime + stime, in clock ticks; exited threads included)."""
    threads: int
    """The most tasks its tree had at once."""
    cores: int
    """The CPUs it may run on (its affinity mask)."""


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
    eager_bytes: int | None = None
    """Eager's footprint over its timed loop, measured by the judge (skills/evaluator/harness/peak.py)."""
    compile_bytes: int | None = None
    """torch.compile's footprint, measured the same way."""


class YardstickRequest(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> judge: time, on the judge's own side of the arena, what the candidate's worker does
    between two timed calls (release the outputs, copy them into the arena, sync): a trusted
    yardstick for the candidate's share of the time between its calls (clock_check)."""

    nonce: str
    calls: int = 15


class YardstickReport(msgspec.Struct, tag=True, kw_only=True):
    nonce: str
    handback_us: list[float]
    hop_us: list[float]
    """One message from one thread of the judge to another and the wake-up (half a round trip),
    under the machine's load as it is: what one hop over the link costs."""


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
    libraries: list[str] = msgspec.field(default_factory=list)
    """The CUDA libraries the build linked (skills/evaluator/libraries.py): their kernels count as the agent's."""
    gpu_memory_fraction: float | None = None
    """Cap on the candidate's torch allocations (cuda)."""


class CandImported(msgspec.Struct, tag=True, kw_only=True):
    nonce: str


class CandInit(msgspec.Struct, tag=True, kw_only=True):
    """Parent -> candidate: build ModelNew from the judge's weights; then serve the judge's calls."""

    nonce: str
    exchange_dir: str
    """Holds init.pt (the judge's initial weights) and, with shape_init, init_shape.pt."""
    shape_init: bool = False
    """Build a second ModelNew from exchange/init_shape.pt for the shape check's calls (model 1)."""
    judge_reserve_bytes: int | None = None
    """cuda: what the judge may still allocate on the GPU (JudgeReady.reserve_bytes); the candidate's
    cap becomes what is free now, less that (None: keep the cap set at start)."""


class CandReady(msgspec.Struct, tag=True, kw_only=True):
    nonce: str
    seconds: float


# ---- the link: judge <-> candidate, a socket pair the parent made (no nonce: private to both) ----


class Offer(msgspec.Struct, tag=True, kw_only=True):
    """Judge -> candidate: an arena to map (cpu: its memfd comes with this frame; cuda: `handle`)."""

    group: int
    layout: Layout
    handle: bytes = b""
    scalars: list[Any] = msgspec.field(default_factory=list)
    """forward's arguments, with None where an input slot goes."""
    model: int = 0
    """Which ModelNew runs this group's calls (1: the shape check's own weights)."""
    timing: TimingConfig = msgspec.field(default_factory=TimingConfig)
    """The evaluation's loop settings (lead, persisting-L2 reset); the judge does the flush."""


class Accepted(msgspec.Struct, tag=True, kw_only=True):
    group: int


class Call(msgspec.Struct, tag=True, kw_only=True):
    """Judge -> candidate: the inputs are in place in the group's arena; run forward once and copy
    its outputs into the arena. Nothing says which set this is, whether it counts, or is checked."""

    seq: int
    group: int = 0
    lead: bool = True
    watch: Literal["none", "ops", "profiler"] = "none"
    """ops: under the op recorder (correctness and probe calls); profiler: the cpu profiler."""
    scalars: list[Any] | None = None
    """This call's non-tensor arguments, where they differ from the offer's."""


class OutputMeta(msgspec.Struct, kw_only=True):
    """What forward returned for one output: its type, shape and dtype; `copied`: it matched the
    arena's slot and its bytes are there."""

    kind: str
    shape: list[int]
    dtype: str
    copied: bool


class Called(msgspec.Struct, tag=True, kw_only=True):
    seq: int
    event_us: float
    wall_us: float
    lead_us: float
    outputs: list[OutputMeta]
    flags: list[Flag] = msgspec.field(default_factory=list)


class Overhead(msgspec.Struct, tag=True, kw_only=True):
    """Judge -> candidate: one empty call (events and sync around nothing): its wall minus event us."""

    group: int = 0


class OverheadReport(msgspec.Struct, tag=True, kw_only=True):
    sync_overhead_us: float


class Profile(msgspec.Struct, tag=True, kw_only=True):
    """Judge -> candidate: calls under the CUDA profiler on the arena's current inputs."""

    group: int
    calls: int


class Profiled(msgspec.Struct, tag=True, kw_only=True):
    kernel_us: float | None
    flags: list[Flag]


class Failed(msgspec.Struct, tag=True, kw_only=True):
    """Candidate -> judge: the agent's code failed (forward raised, the arena could not be mapped)."""

    stage: str
    message: str
    flag: Flag | None = None


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
    candidate: bool = False
    """Sent by the judge about the candidate: its call failed, timed out or broke the link."""
    gone: bool = False
    """...and the link closed (the candidate died: its exit status says how)."""


Message = (
    JudgeStart | JudgeReady | CheckRequest | CheckReport | TimeRequest | TimeReport | BaselineRequest | BaselineReport
    | YardstickRequest | YardstickReport | CandStart | CandImported | CandInit | CandReady | Started | Preinit | Warm
    | WorkerError
)
LinkMessage = Offer | Accepted | Call | Called | Overhead | OverheadReport | Profile | Profiled | Failed

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Message)
_link_decoder = msgspec.msgpack.Decoder(LinkMessage)


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


LINK_ENV = "KAGENT_LINK_FD"
"""Each worker's end of the judge <-> candidate socket pair, as an inherited file descriptor."""


class LinkClosed(Exception):
    """The other side of the link closed it (the candidate died) or did not answer in time."""


class Link:
    """The judge <-> candidate link: framed messages on a Unix stream socket, file descriptors
    (the cpu arena's memfd) alongside an Offer's frame, and a deadline on every receive."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.sock.setblocking(True)

    @classmethod
    def inherited(cls) -> Link | None:
        fd = os.environ.get(LINK_ENV)
        if not fd:
            return None
        return cls(socket.socket(fileno=int(fd)))

    def send(self, msg: LinkMessage, fds: list[int] | None = None) -> None:
        data = encode(msg)  # type: ignore[arg-type]
        if fds:
            sent = socket.send_fds(self.sock, [data[:4]], fds)
            data = data[sent:]
        self.sock.sendall(data)

    def _exactly(self, n: int, timeout: float | None) -> bytes:
        self.sock.settimeout(timeout)
        chunks: list[bytes] = []
        try:
            while n:
                chunk = self.sock.recv(min(n, 1 << 20))
                if not chunk:
                    raise LinkClosed("the other side closed the link")
                chunks.append(chunk)
                n -= len(chunk)
        except TimeoutError:
            raise LinkClosed(f"no answer within {timeout:.0f} s") from None
        return b"".join(chunks)

    def poll(self, seconds: float) -> bool:
        """Busy-wait up to `seconds` for something to read (the caller's core stays awake); True if it came."""
        end = time.perf_counter() + seconds
        while True:
            if select.select([self.sock], [], [], 0)[0]:
                return True
            if time.perf_counter() >= end:
                return False

    def recv(self, timeout: float | None = None, fds: bool = False) -> tuple[LinkMessage, list[int]]:
        """The next message (and, with fds, the descriptors that came with its first bytes)."""
        got: list[int] = []
        if fds:
            self.sock.settimeout(timeout)
            try:
                head, got, _flags, _addr = socket.recv_fds(self.sock, 4, 4)
            except TimeoutError:
                raise LinkClosed(f"no answer within {timeout:.0f} s") from None
            if not head:
                raise LinkClosed("the other side closed the link")
            head += self._exactly(4 - len(head), timeout) if len(head) < 4 else b""
        else:
            head = self._exactly(4, timeout)
        body = self._exactly(frame_length(head), timeout)
        try:
            return _link_decoder.decode(body), got
        except msgspec.DecodeError as exc:
            raise LinkClosed(f"an unreadable message on the link ({exc})") from None

    def close(self) -> None:
        self.sock.close()


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
