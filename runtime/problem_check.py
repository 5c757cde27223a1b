"""Load and check a request's problem in a child process, never in the daemon.

A problem file is code: loading it runs its module body and `get_init_inputs`, and a body that
raises SystemExit, calls os._exit, loops forever or allocates without end would stop or stall
the daemon that loaded it. `check_problem` runs `python -m runtime.problem_check` instead, with
a time limit (killed past it) and an address-space limit (RLIMIT_AS, on top of what the
interpreter and torch take at start), and reads one JSON verdict from it.

    child:  stdin {"source", "name"} -> stdout (a pipe the problem's own prints cannot reach)
            one line {"ok": true, "level", "precision"} or {"ok": false, "error"}
"""

from __future__ import annotations

import os
import resource
import signal
import sys

import anyio
import msgspec


class ProblemVerdict(msgspec.Struct, kw_only=True):
    """What the child says about a problem."""

    ok: bool
    """The problem loaded and passed the loader's checks."""
    level: int | None = None
    """Level from the name's `levelN/` prefix."""
    precision: str | None = None
    """The precision the loader found."""
    error: str | None = None
    """Why it did not load (ok false)."""


class ProblemRejected(Exception):
    """The problem did not load, or loading it crashed, hung or ran out of memory."""


async def check_problem(source: str, name: str, *, timeout_s: float, memory_mb: int) -> ProblemVerdict:
    """The child's verdict on `source` (ProblemRejected when it is not ok)."""
    request = msgspec.json.encode({"source": source, "name": name, "memory_mb": memory_mb})
    cmd = [sys.executable, "-m", "runtime.problem_check"]
    with anyio.move_on_after(timeout_s) as scope:
        done = await anyio.run_process(cmd, input=request, check=False, start_new_session=True)
    if scope.cancelled_caught:  # run_process kills the child when cancelled
        raise ProblemRejected(f"loading the problem took longer than {timeout_s:g} s"
                              " (scheduler.problem_check_timeout_s); is there an endless loop at import?")
    stderr = done.stderr.decode(errors="replace").strip()
    try:
        verdict = msgspec.json.decode(done.stdout.strip().splitlines()[-1], type=ProblemVerdict)
    except (IndexError, msgspec.DecodeError, msgspec.ValidationError):
        raise ProblemRejected(_crash(done.returncode, stderr, memory_mb)) from None
    if not verdict.ok:
        raise ProblemRejected(verdict.error or "the problem did not load")
    return verdict


def _crash(code: int, stderr: str, memory_mb: int) -> str:
    tail = stderr.splitlines()[-1][:300] if stderr else "no output"
    if "MemoryError" in stderr or "std::bad_alloc" in stderr or "Cannot allocate memory" in stderr:
        return (f"loading the problem ran out of memory (limit {memory_mb} MiB beyond the interpreter,"
                f" scheduler.problem_check_memory_mb): {tail}")
    if code < 0:
        return f"loading the problem killed its process ({signal.Signals(-code).name}): {tail}"
    return f"loading the problem ended its process with status {code} (SystemExit or os._exit at import?): {tail}"


def _limit_memory(extra_mb: int) -> None:
    """RLIMIT_AS = what this process maps now (torch loaded) + extra_mb."""
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = mapped + extra_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main() -> int:
    verdict_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the problem's prints go to stderr, not into the verdict
    request = msgspec.json.decode(sys.stdin.buffer.read())
    from skills.evaluator.problem import ProblemError, load_problem_source

    _limit_memory(int(request["memory_mb"]))
    try:
        loaded = load_problem_source(request["source"], request["name"])
    except (ProblemError, MemoryError) as exc:
        error = str(exc) or type(exc).__name__
        if isinstance(exc, MemoryError) or "MemoryError" in error:
            error += (f" (loading the problem ran out of memory: the limit is {request['memory_mb']} MiB"
                      " beyond the interpreter, scheduler.problem_check_memory_mb)")
        verdict = ProblemVerdict(ok=False, error=error)
    except Exception as exc:  # the problem's own code raised: its fault, reported to the client
        verdict = ProblemVerdict(ok=False, error=f"<{request['name']}>: {type(exc).__name__}: {exc}")
    else:
        p = loaded.problem
        verdict = ProblemVerdict(ok=True, level=p.level, precision=p.precision)
    verdict_out.write(msgspec.json.encode(verdict) + b"\n")
    verdict_out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
