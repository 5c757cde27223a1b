"""Timing marks: the evaluator's own clock on the candidate's timed calls (EXPLOITS row 4).

The candidate times its calls in its own process, where code that got past the static checks can
replace any clock. So each timed call also sends two datagrams, one just before it reads its clock
and one just after, over a Unix datagram socket the parent made. The kernel stamps every datagram
(SO_TIMESTAMPNS) as it is sent: the stamps come from outside the candidate's process and do not
depend on when the parent gets around to reading them. The parent then checks that the times the
candidate reported fit inside those windows (skills/evaluator/timing_checks.py, clock_check).

Linux stamps Unix datagrams when the receiving socket asks for it; a kernel that does not makes
`MarkSocket()` fail with an error that says so (checked with one datagram when it is made).
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from collections.abc import Callable

import anyio

ENV = "KAGENT_MARK_FD"
"""The candidate's end of the socket, as an inherited file descriptor number."""
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # asm-generic value; Python may not export it
_RECORD = struct.Struct("<IB")  # call index, end
_TIMESPEC = struct.Struct("@qq")
BUFFER_BYTES = 4 << 20
"""Socket buffers: ~10,000 queued marks (the timed loop sends at most 2 x max_calls)."""

Mark = tuple[int, bool, int]
"""(timed call, end, nanoseconds on the stamping clock)."""


class MarkSocket:
    """The parent's end of the marks socket; `child_fd` goes to the candidate (pass_fds)."""

    def __init__(self) -> None:
        self.ours, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        for s in (self.ours, self.theirs):
            for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
                with contextlib.suppress(OSError):
                    s.setsockopt(socket.SOL_SOCKET, opt, BUFFER_BYTES)
        self.ours.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.ours.setblocking(False)
        self.theirs.set_inheritable(True)
        self.marks: list[Mark] = []
        self.stamped = True
        self.collecting = False
        self._check_stamps()

    def _check_stamps(self) -> None:
        """One datagram through: the kernel must stamp it, or the clock check could not run."""
        self.theirs.send(b"")
        got = self._receive()
        if got is None or got[1] is None:
            self.close()
            raise OSError("this kernel does not stamp Unix datagrams (SO_TIMESTAMPNS), so the evaluator cannot"
                          " check the candidate's clock; set EvalConfig.clock_marks = false to evaluate without it")

    @property
    def child_fd(self) -> int:
        return self.theirs.fileno()

    def started(self) -> None:
        """The child has its copy: close ours of its end (so a dead child reads as such)."""
        self.theirs.close()

    def _receive(self) -> tuple[bytes, int | None] | None:
        """One queued datagram and the kernel's stamp of it (ns; None: unstamped); None: none queued."""
        try:
            data, anc, _flags, _addr = self.ours.recvmsg(64, socket.CMSG_SPACE(_TIMESPEC.size))
        except OSError:  # BlockingIOError: nothing queued; or the socket is closed
            return None
        for level, kind, d in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(d) >= _TIMESPEC.size:
                sec, nsec = _TIMESPEC.unpack(d[: _TIMESPEC.size])
                return data, sec * 1_000_000_000 + nsec
        return data, None

    def drain(self) -> None:
        """Read every queued mark (while collecting; otherwise they are dropped)."""
        while (got := self._receive()) is not None:
            data, ns = got
            if not self.collecting or len(data) != _RECORD.size:
                continue
            if ns is None:
                self.stamped = False
                continue
            call, end = _RECORD.unpack(data)
            self.marks.append((call, bool(end), ns))

    async def collect(self, period_s: float = 0.05) -> None:
        """Read marks every `period_s` until cancelled, so the queue never fills. Not on every
        arrival: waking the parent at each mark would preempt the candidate on a small machine,
        right between its mark and its clock read (measured: +30 us per call on 2 cores)."""
        while True:
            self.drain()
            await anyio.sleep(period_s)

    def begin(self) -> None:
        """Start keeping marks (those sent before are stale: dropped)."""
        self.drain()
        self.marks = []
        self.stamped = True
        self.collecting = True

    def end(self) -> list[Mark]:
        self.drain()
        self.collecting = False
        return self.marks

    def close(self) -> None:
        for s in (self.ours, self.theirs):
            with contextlib.suppress(OSError):
                s.close()


def mark_sender() -> Callable[[int, bool], None] | None:
    """In the candidate: a function sending (call, end) marks to the parent, from the inherited
    socket named by KAGENT_MARK_FD (None where there is none: a worker started by hand)."""
    fd = os.environ.get(ENV)
    if not fd:
        return None
    try:
        sock = socket.socket(fileno=int(fd))
    except (OSError, ValueError):
        return None
    send = sock.send
    pack = _RECORD.pack

    def mark(call: int, end: bool) -> None:
        send(pack(call, end))

    return mark
