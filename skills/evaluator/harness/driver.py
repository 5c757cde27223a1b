"""The judge's side of the candidate's calls: it hands over each call's inputs, asks for the call,
and reads the outputs itself (DESIGN section 5, "The trust boundary").

Per call: the judge writes the set's inputs into the arena (skills/evaluator/harness/arena.py), resets
persisting L2 lines, flushes the last-level cache and syncs, then sends `Call` over the link; the
candidate's worker marks, times and runs forward, copies its outputs into the arena and answers
`Called`. Every timed call runs on an input set drawn for it alone; which calls the judge checks
(against a reference computed for that call) is decided here, from the judge's secret seed, and
never sent.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import socket
import statistics
import subprocess
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import torch

from skills.evaluator.harness import arena
from skills.evaluator.harness import protocol as P
from skills.evaluator.harness.compare import Reference, compare_output
from skills.evaluator.harness.exchange import meta_tensor
from skills.evaluator.harness.timing import llc_bytes, now_ns, realtime_ns, reset_l2
from skills.evaluator.harness.timing import sync as device_sync
from skills.evaluator.results import Flag, OutputError

T = TypeVar("T")

MIN_CHECKED = 8
"""Timed calls the judge checks at least per loop."""
MAX_CHECKED = 24
"""...and at most: a check computes the call's own reference (its set was drawn for it alone)."""


class CandidateFault(Exception):
    """The candidate's call failed, timed out, or broke the link's protocol (its fault, not the judge's)."""

    def __init__(self, stage: str, message: str, flag: Flag | None = None, gone: bool = False) -> None:
        super().__init__(message)
        self.stage = stage
        self.flag = flag
        self.gone = gone
        """The link closed: the candidate process died (the parent words how)."""


class JudgeLate(Exception):
    """The judge's own work in a stage (drawing sets, references, comparisons) ran past its limit:
    the environment's fault, never the candidate's (the judge reports it as its own failure)."""


class Driver:
    def __init__(self, link: P.Link, device: torch.device, timing: P.TimingConfig) -> None:
        self.link = link
        self.device = device
        self.cuda = device.type == "cuda"
        self.timing = timing
        self.seq = 0
        self.arenas: dict[int, arena.Arena] = {}
        self.scalars: dict[int, list[Any]] = {}
        self.limit_s = 0.0
        self.own_limit_s = 0.0
        self.began_ns = 0
        self.waited_ns = 0
        flush = 2 * llc_bytes(device) if timing.flush_l2 else 0
        # zeros, not empty: its pages are touched here, before any stage's clock (within()) starts. A
        # host reporting a 480 MiB L3 (this project's 2-core VM) flushes 960 MiB, whose first touch
        # cost 0.3 s quiet and more on a loaded box, charged to the correctness stage's first put.
        self.flush_buf = torch.zeros(max(flush // 4, 1), dtype=torch.float32, device=device)

    def within(self, seconds: float, own_seconds: float = 0.0) -> None:
        """A new stage: from now on the candidate's answers may take `seconds` in all (the time the
        judge waits for them, never the judge's own work between them), and the judge's own work
        `own_seconds` (0: no limit of its own; the parent's wait bounds it)."""
        self.limit_s, self.own_limit_s = seconds, own_seconds
        self.began_ns, self.waited_ns = now_ns(), 0

    def own_s(self) -> float:
        """The judge's own seconds in this stage so far: its wall time less its waits for the candidate."""
        return max(0, now_ns() - self.began_ns - self.waited_ns) / 1e9

    def late(self, what: str) -> None:
        """JudgeLate when the judge's own work in this stage is past its limit."""
        own = self.own_s()
        if self.own_limit_s > 0 and own > self.own_limit_s:
            raise JudgeLate(
                f"the judge's own work while {what} (drawing input sets, computing references, comparing) took"
                f" {own:.0f} s, past its limit of {self.own_limit_s:.0f} s (timeout_judge_s), while it waited"
                f" {self.waited_ns / 1e9:.0f} s for the candidate's answers (their limit: {self.limit_s:.0f} s):"
                f" the environment was too slow for this problem's size, not the candidate")

    def _expect(self, kind: type[T], stage: str, fds: bool = False) -> T:
        what = "running the input sets" if stage == "correctness" else "timing"
        self.late(what)
        left = max(0.001, self.limit_s - self.waited_ns / 1e9)
        t0 = now_ns()
        try:
            msg, _ = self.link.recv(timeout=left, fds=fds)
        except P.LinkClosed as exc:
            self.waited_ns += now_ns() - t0
            if "no answer" in str(exc):
                raise CandidateFault(stage, f"the candidate timed out after {self.limit_s:.0f} s of its calls while {what}"
                                     f" (an endless loop or kernel?; the judge's own work in between, {self.own_s():.0f} s,"
                                     " is not counted); its process group was killed") from None
            raise CandidateFault(stage, str(exc), gone=True) from None
        self.waited_ns += now_ns() - t0
        if isinstance(msg, P.Failed):
            raise CandidateFault(msg.stage, msg.message, msg.flag)
        if not isinstance(msg, kind):
            raise CandidateFault(stage, f"the candidate answered {type(msg).__name__} where {kind.__name__} was due",
                                 Flag(name="harness_tampering", detail="the candidate's worker broke the evaluator's"
                                      " protocol (the harness in the candidate's process was changed)"))
        return msg

    def offer(self, group: int, inputs: list[Any], outputs_like: list[torch.Tensor], model: int = 0) -> None:
        """Lay out and share the arena of a group of shapes; the candidate maps it."""
        layout = arena.layout_for(inputs, outputs_like)
        scalars = [None if isinstance(a, torch.Tensor) else a for a in inputs]
        if self.cuda:
            mem, handle, fd = arena.device_create(layout)
            try:
                self.link.send(P.Offer(group=group, layout=layout, handle=handle, scalars=P.pack_scalars(scalars),
                                       model=model, timing=self.timing),
                               fds=[fd] if fd >= 0 else None)
            finally:
                if fd >= 0:
                    os.close(fd)
        else:
            mem, fd = arena.host_create(layout)
            try:
                self.link.send(P.Offer(group=group, layout=layout, scalars=P.pack_scalars(scalars), model=model,
                                       timing=self.timing),
                               fds=[fd])
            finally:
                os.close(fd)
        self.arenas[group] = mem
        self.scalars[group] = scalars
        self._expect(P.Accepted, "correctness")

    def put(self, group: int, inputs: list[Any]) -> None:
        """Write a set's inputs into the group's arena; then the cache is flushed and the device synced."""
        for slot, pos in zip(self.arenas[group].inputs, self.arenas[group].layout.input_positions, strict=True):
            slot.copy_(inputs[pos])
        if self.cuda and reset_l2 is not None and self.timing.reset_persisting_l2:
            reset_l2()
        if self.timing.flush_l2:
            self.flush_buf.zero_()
        device_sync()

    def call(self, group: int, inputs: list[Any], *, lead: bool = True, watch: str = "none",
             stage: str = "timing") -> tuple[P.Called, int, int]:
        """One call on inputs already put; (its answer, realtime ns sent, realtime ns back)."""
        self.seq += 1
        scalars = [None if isinstance(a, torch.Tensor) else a for a in inputs]
        differ = scalars != self.scalars[group]
        sent = realtime_ns()
        self.link.send(P.Call(seq=self.seq, group=group, lead=lead, watch=watch,  # type: ignore[arg-type]
                              scalars=P.pack_scalars(scalars) if differ else None))
        called = self._expect(P.Called, stage)
        back = realtime_ns()
        if called.seq != self.seq:
            raise CandidateFault(stage, "the candidate answered another call than the one asked for",
                                 Flag(name="harness_tampering", detail="the candidate's worker broke the evaluator's"
                                      " protocol (the harness in the candidate's process was changed)"))
        return called, sent, back

    def compare(self, group: int, called: P.Called, refs: list[Reference], k: int) -> list[OutputError]:
        """The outputs the call left in the arena against the references of its set (k: for messages)."""
        errs = []
        slots = self.arenas[group].outputs
        for i, ref in enumerate(refs):
            if i >= len(called.outputs):
                errs.append(OutputError(index=i, ok=False, shape=[], dtype="missing", max_abs_err=None, max_rel_err=None,
                                        err_ratio=None, bad_elements=ref.r.numel(),
                                        message=f"output {i} missing: the model returned {len(called.outputs)} outputs,"
                                                f" expected {len(refs)}"))
                continue
            meta = called.outputs[i]
            if meta.copied and i < len(slots):
                errs.append(compare_output(i, slots[i], ref))
                continue
            stand_in = meta_tensor(meta)
            if stand_in is None:
                what = meta.kind if meta.kind != "Tensor" else f"tensor of dtype {meta.dtype or '?'}"
                errs.append(compare_output(i, None, ref, kind=what))
            else:
                errs.append(compare_output(i, stand_in, ref))
        return errs

    def check(self, group: int, called: P.Called, inputs: list[Any], refs: list[Reference], k: int, where: str,
              flags: list[Flag]) -> list[OutputError]:
        """compare(), and an input_mutation flag (`where`: which call, for its message) when the call
        wrote into its inputs."""
        errs = self.compare(group, called, refs, k)
        if self.mutated(group, inputs):
            flags.append(Flag(name="input_mutation", detail=f"forward wrote into its inputs {where}; inputs are read-only"))
        return errs

    def mutated(self, group: int, inputs: list[Any]) -> bool:
        """The call wrote into its inputs (the arena's input slots no longer hold the set)."""
        mem = self.arenas[group]
        return any(not _same_bits(slot, inputs[pos]) for slot, pos in zip(mem.inputs, mem.layout.input_positions, strict=True))

    def overhead(self, sets: list[list[Any]], calls: int = 21) -> float:
        """What the events and sync cost around an empty call (wall minus event us), each after the
        judge's own hand-over as before a timed call: the GPU then switches from the judge's context
        to the candidate's inside the wall window (~20 us on the H200), as it does for every call."""
        out = []
        for i in range(calls):
            self.put(0, sets[i % len(sets)])
            self.link.send(P.Overhead())
            out.append(self._expect(P.OverheadReport, "timing").sync_overhead_us)
        return statistics.median(out)

    def profile(self, calls: int) -> P.Profiled:
        self.link.send(P.Profile(group=0, calls=calls))
        return self._expect(P.Profiled, "timing")

    def handback_times(self, refs: list[Reference], calls: int) -> list[float]:
        """What the candidate's worker does between two calls, done here on the judge's side of the
        arena: release outputs shaped like the references (written first, as forward writes them),
        copy them into the arena and sync (us per round)."""
        slots = self.arenas[0].outputs
        out = []
        for _ in range(calls):
            outs = [torch.empty_like(r.r).fill_(1) for r in refs]
            t0 = now_ns()
            for slot, o in zip(slots, outs, strict=False):
                slot.copy_(o)
            outs.clear()
            device_sync()
            out.append((now_ns() - t0) / 1e3)
        return out

    def close(self) -> None:
        for mem in self.arenas.values():
            mem.close()
        self.arenas.clear()


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit for bit (a NaN input equals itself), whatever b's strides."""
    return a.shape == b.shape and torch.equal(a.contiguous().view(-1).view(torch.uint8),
                                              b.contiguous().view(-1).view(torch.uint8))


def loop_plan(n: int, checked_fraction: float, rng: random.Random) -> set[int]:
    """The timed calls (of n) the judge checks: a share of them, at least MIN_CHECKED and at most
    MAX_CHECKED (each check computes that call's reference), at secret places."""
    k = min(n, max(MIN_CHECKED, min(MAX_CHECKED, math.ceil(checked_fraction * n))))
    return set(rng.sample(range(n), k))


def warm_mean(walls: list[float]) -> float:
    """Mean wall us per call of the later half of the warm-up (the first calls carry one-off costs)."""
    return statistics.fmean(walls[len(walls) // 2:]) if walls else 1.0


Draw = Callable[[int], tuple[list[Any], list[Reference]]]


_ECHO = """\
import socket, struct, sys
import msgspec
s = socket.socket(fileno=int(sys.argv[1]))
mark, _sink = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
enc, dec = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder()
def exactly(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            sys.exit(0)
        b += c
    return b
while True:
    msg = dec.decode(exactly(struct.unpack(">I", exactly(4))[0]))
    mark.send(struct.pack("<IB", msg["seq"], 0))
    mark.send(struct.pack("<IB", msg["seq"], 1))
    _sink.recv(16), _sink.recv(16)
    body = enc.encode({"type": "Called", "seq": msg["seq"], "event_us": 1.0, "wall_us": 1.0, "lead_us": 0.0,
                       "outputs": [{"kind": "Tensor", "shape": [1], "dtype": "float32", "copied": True}]})
    s.sendall(struct.pack(">I", len(body)) + body)
"""


class Echo:
    """A stand-in for the candidate's worker on the link, without candidate code: a plain Python
    process that takes each framed request, sends two marks and answers like the worker does. The
    hop a call's request and answer make between two processes (wake-ups, framing), timed under
    the machine's load as it is now."""

    def __init__(self) -> None:
        self.ours, theirs = socket.socketpair()
        self.proc = subprocess.Popen([sys.executable, "-c", _ECHO, str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        theirs.close()
        self.link = P.Link(self.ours)

    def hops(self, calls: int) -> list[float]:
        """Half of each of `calls` round trips (us), after a few untimed ones."""
        out = []
        for i in range(calls + 3):
            t0 = now_ns()
            self.link.send(P.Call(seq=i))
            try:
                self.link.recv(timeout=30.0)
            except P.LinkClosed as exc:
                raise OSError(f"the judge's echo process failed: {exc}") from None
            if i >= 3:
                out.append((now_ns() - t0) / 2e3)
        return out

    def close(self) -> None:
        self.ours.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(2)
