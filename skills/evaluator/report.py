"""Plain-text rendering of evaluation records: what the agent reads and `kagent eval` prints."""

from __future__ import annotations

from skills.evaluator.build import BuildResult
from skills.evaluator.libraries import describe
from skills.evaluator.results import EvalResult, Interval, MemoryUse, TimingResult


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
    if b.libraries:
        lines.append("libraries: " + "; ".join(describe(b.libraries).splitlines()))
    for r in b.resources:
        spill = f", SPILLS {r.spill_store_bytes}B st/{r.spill_load_bytes}B ld" if r.spill_store_bytes or r.spill_load_bytes else ""
        lines.append(f"  {r.kernel}: {r.registers} regs, {r.shared_bytes} B smem, {r.stack_bytes} B stack{spill}")
    if b.warnings:
        lines.append("warnings:\n" + b.warnings)
    return "\n".join(lines)


def format_result(r: EvalResult) -> str:
    """A compact report: status line, the input shapes and every set checked, timings, speedups,
    flags, reward."""
    lines = [f"{r.problem} [{r.backend}, {r.mode}]: " + status(r)]
    if r.build is not None and not r.build.ok:
        lines.append(r.build.errors)
    elif r.error:
        lines.append(r.error)
    lines += set_lines(r)
    if r.candidate is not None or r.eager is not None or r.compiled_baseline is not None:
        lines += timing_lines(r)
        for sp in r.speedups:
            verdict = "faster" if sp.faster else "not clearly faster"
            paired = ""
            if sp.rounds > 1:
                spread = max(sp.round_values) / max(min(sp.round_values), 1e-12) - 1 if sp.round_values else 0.0
                paired = (f"; {sp.rounds} paired rounds: " + ", ".join(f"{v:.2f}x" for v in sp.round_values)
                          + (f" (rounds differ by {100 * spread:.0f}%: the host was loaded)" if spread > 0.1 else ""))
            lines.append(f"  speedup vs {sp.baseline}: {sp.value:.2f}x [95% {sp.low:.2f}-{sp.high:.2f}] ({verdict}{paired})")
    lines += memory_lines(r)
    if (audit := audit_line(r)) is not None:
        lines.append(audit)
    if r.cpu_samples is not None or r.cpu_samples_note is not None:
        seen = r.cpu_samples.describe() if r.cpu_samples is not None else f"not sampled: {r.cpu_samples_note}"
        lines.append(f"CPU time of the timed calls (sampled outside your process): {seen}")
    for f in r.flags:
        lines.append(f"FLAG {f.name}: {f.detail}")
    if r.reward is not None:
        lines.append(f"reward ({r.reward_fn}): {r.reward:g}")
    if r.log.strip() and (r.error or not r.correct):
        lines.append("candidate output (tail):\n" + r.log.strip()[-1500:])
    return "\n".join(lines)


def audit_line(r: EvalResult) -> str | None:
    """The kernel audit's line: what the audited call ran by owner, its time against the judged
    one, and the verdict; or why it was skipped (skills/evaluator/kernel_audit.py)."""
    head = "kernel audit (Nsight Compute, outside your process)"
    a = r.audit
    if a is None:
        return f"{head}: {r.audit_note}" if r.audit_note else None
    owners: dict[str, int] = {}
    for k in a.kernels:
        owners[k.owner] = owners.get(k.owner, 0) + 1
    listed = ", ".join(f"{n} {o}" for o, n in sorted(owners.items())) or "no kernel"
    judged = f" (timed calls: {a.judged_us:.1f} us)" if a.judged_us is not None else ""
    verdict = ", ".join(f.name for f in a.flags) or "ok"
    return f"{head}: one call ran {listed} kernel(s), {a.profiled_us:.1f} us{judged}: {verdict}"


def format_baselines(r: EvalResult) -> str:
    """profile() on the untouched template: the times to beat, and that ModelNew was not run."""
    lines = [f"{r.problem} [{r.backend}, profile]: baselines only. model_new.py is still the template,"
             " so ModelNew was not run or timed."]
    if r.error and r.environment_fault is not None:
        lines.append(r.error)
    lines += set_lines(r)
    if r.eager is not None or r.compiled_baseline is not None:
        lines += timing_lines(r)
        lines += memory_lines(r)
        lines.append("These are the times to beat. Write kernels/ and model_new.py, then compile(), run_tests(),"
                     " profile().")
    return "\n".join(lines)


def fmt_shapes(shapes: list[list[int]]) -> str:
    return ", ".join(str(s) for s in shapes)


def set_lines(r: EvalResult) -> list[str]:
    """The timed input shapes, then every set that was checked with each output's verdict: the
    agent sees that the shape check ran (and at which sizes), not only set 0."""
    lines = [f"inputs at the timed sizes: {fmt_shapes(r.input_shapes)}"] if r.input_shapes else []
    if not r.sets:
        return lines
    regular = [s.set_index for s in r.sets if s.sizes is None]
    checks = [s for s in r.sets if s.sizes is not None]
    what = f"sets {regular[0]}-{regular[-1]}" if len(regular) > 1 else f"set {regular[0]}" if regular else ""
    parts = [f"{what} at the timed sizes"] if what else []
    parts += [f"set {s.set_index} at the problem's {_sizes_name(s.sizes)} (the shape check)" for s in checks]
    lines.append(f"checked {len(r.sets)} input set{'s' if len(r.sets) != 1 else ''}: " + ", ".join(parts))
    for s in r.sets:
        where = ""
        if s.sizes is not None:
            where = f" (shape check, outputs {fmt_shapes([o.shape for o in s.outputs])})"
        for o in s.outputs:
            lines.append(f"  set {s.set_index}{where}: {o.message}")
    return lines


def _sizes_name(sizes: str | None) -> str:
    return "SMALL_SIZES" if sizes == "small" else "CHECK_SIZES"


def timing_lines(r: EvalResult) -> list[str]:
    """The timing header says what the numbers are on this backend, and promises the waiting
    caller's time only when some row prints it (cuda profile; the cpu has no such second clock)."""
    rows: list[tuple[str, TimingResult | None]] = [("ModelNew", r.candidate)] if r.candidate is not None else []
    rows += [("eager", r.eager), ("torch.compile", r.compiled_baseline)]
    if r.backend == "cpu":
        header = "timing (per call: wall time of the call on the host, the last-level cache flushed before each call):"
    else:
        caller = any(t is not None and t.caller_us is not None for _, t in rows)
        header = ("timing (per call, on the device from the moment its work could start"
                  + ("; the waiting caller's beside):" if caller else "):"))
    return [header, *(fmt_timing(name, t) for name, t in rows)]


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "not measured"
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.1f} MiB"


def memory_lines(r: EvalResult) -> list[str]:
    """Each callable's footprint during its calls, measured outside ModelNew's process (what the
    composite reward's memory penalty compares), and the default limit where ModelNew is past it."""
    m: MemoryUse | None = r.memory
    if m is None or (m.candidate_call_bytes is None and m.eager_bytes is None and m.compile_bytes is None):
        return []
    what = "GPU memory" if r.backend == "cuda" else "resident memory"
    lines = [f"memory (peak {what} during the calls, beyond what the process held before them; weights included):"]
    bases = [b for b in (m.eager_bytes, m.compile_bytes) if b is not None]
    if m.candidate_call_bytes is not None or r.candidate is not None:
        ratio = (f" ({m.candidate_call_bytes / max(bases):.1f}x the larger baseline's)"
                 if m.candidate_call_bytes is not None and bases and max(bases) > 0 else "")
        lines.append(f"  {'ModelNew':<14} {fmt_bytes(m.candidate_call_bytes)}{ratio}")
    lines.append(f"  {'eager':<14} {fmt_bytes(m.eager_bytes)}")
    lines.append(f"  {'torch.compile':<14} {fmt_bytes(m.compile_bytes)}")
    if m.limit_bytes is not None and m.candidate_call_bytes is not None and m.candidate_call_bytes > m.limit_bytes:
        lines.append(f"  ModelNew takes more than {fmt_bytes(m.limit_bytes)} (memory_factor x the larger baseline's"
                     " + slack): the composite reward takes a memory penalty off")
    return lines


def status(r: EvalResult) -> str:
    """The status line's verdict: compile failed, failed at STAGE, flagged, correct or INCORRECT."""
    if not r.compiled:
        return "compile failed"
    if r.error:
        return f"failed at {r.stage}"
    if r.flags:
        return "flagged"
    return "correct" if r.correct else "INCORRECT"
