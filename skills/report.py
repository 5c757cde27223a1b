"""Plain-text rendering of evaluation records: what the agent reads and `kagent eval` prints."""

from __future__ import annotations

from skills.build import BuildResult
from skills.results import EvalResult, Interval, TimingResult


def fmt_interval(iv: Interval) -> str:
    return f"{iv.median:.1f} us [95% {iv.low:.1f}-{iv.high:.1f}, n={iv.n}]"


def fmt_timing(name: str, t: TimingResult | None) -> str:
    if t is None:
        return f"  {name:<14} not measured"
    caller = f", waiting caller {t.caller_us.median:.1f} us" if t.caller_us is not None else ""
    kernel = f", kernels {t.kernel_us:.1f} us" if t.kernel_us is not None else ""
    return f"  {name:<14} {fmt_interval(t.per_call_us)}, cv {100 * t.cv:.2f}%{caller}{kernel}"


def format_build(b: BuildResult) -> str:
    if not b.ok:
        return f"compile FAILED ({b.seconds:.2f} s):\n{b.errors}"
    cached = sum(u.cached for u in b.units)
    lines = [f"compiled OK in {b.seconds:.2f} s ({cached}/{len(b.units)} units from cache)"]
    if b.functions:
        lines.append("exported: " + ", ".join(f"{f.name}({', '.join(p.ctype for p in f.params)})" for f in b.functions))
    for r in b.resources:
        spill = f", SPILLS {r.spill_store_bytes}B st/{r.spill_load_bytes}B ld" if r.spill_store_bytes or r.spill_load_bytes else ""
        lines.append(f"  {r.kernel}: {r.registers} regs, {r.shared_bytes} B smem, {r.stack_bytes} B stack{spill}")
    if b.warnings:
        lines.append("warnings:\n" + b.warnings)
    return "\n".join(lines)


def format_result(r: EvalResult) -> str:
    """A compact report: status line, errors per output, timings, speedups, flags, reward."""
    lines = [f"{r.problem} [{r.backend}, {r.mode}]: " + _status(r)]
    if r.build is not None and not r.build.ok:
        lines.append(r.build.errors)
    elif r.error:
        lines.append(r.error)
    for s in r.sets:
        for o in s.outputs:
            if not o.ok or s.set_index == 0:
                where = f" (shape check: the problem's {'SMALL_SIZES' if s.sizes == 'small' else 'CHECK_SIZES'})" if s.sizes else ""
                lines.append(f"  set {s.set_index}{where}: {o.message}")
    if r.candidate is not None or r.eager is not None or r.compiled_baseline is not None:
        lines.append("timing (per call, on the device from the moment its work could start; the waiting caller's beside):")
        if r.candidate is not None:
            lines.append(fmt_timing("ModelNew", r.candidate))
        lines.append(fmt_timing("eager", r.eager))
        lines.append(fmt_timing("torch.compile", r.compiled_baseline))
        for sp in r.speedups:
            verdict = "faster" if sp.faster else "not clearly faster"
            lines.append(f"  speedup vs {sp.baseline}: {sp.value:.2f}x [95% {sp.low:.2f}-{sp.high:.2f}] ({verdict})")
    for f in r.flags:
        lines.append(f"FLAG {f.name}: {f.detail}")
    if r.reward is not None:
        lines.append(f"reward ({r.reward_fn}): {r.reward:g}")
    if r.log.strip() and (r.error or not r.correct):
        lines.append("candidate output (tail):\n" + r.log.strip()[-1500:])
    return "\n".join(lines)


def _status(r: EvalResult) -> str:
    if not r.compiled:
        return "compile failed"
    if r.error:
        return f"failed at {r.stage}"
    if r.flags:
        return "flagged"
    return "correct" if r.correct else "INCORRECT"
