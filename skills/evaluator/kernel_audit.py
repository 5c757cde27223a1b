"""The kernel audit: which kernels one call runs, listed from outside the candidate's process.

Launch accounting (harness/launches.py) runs the torch profiler inside the candidate worker, so
the candidate can see it: `torch.autograd.profiler._is_profiler_enabled`, a kineto callback, or
only the first N calls. A ModelNew that calls its own kernel while profiled and torch (or nothing
of its own) otherwise passes it (issue 13: "a kernel that runs only while the profiler is on").

So, after a final evaluation on cuda that passed everything else, the parent runs the workspace
once more under Nsight Compute in the same sandbox, as the same user, at the problem's own sizes
(harness/ncu_target.py: one warm-up call, then one call in the NVTX range `kagent`). Nsight
Compute intercepts the CUDA driver, so what it lists is what ran on the GPU, whatever the Python
process believes about profiling. The parent classifies the kernels by name (harness/
kernel_names.py, the rules launch accounting uses) and flags:

- `decoy_kernel`: none of them is built from kernels/ (or a library the build links), or the
  audited call launched nothing at all. Catches: a forward that calls torch, or serves cached
  outputs, except while the in-process profiler is on. Lets through: any workspace whose call
  launches one of its kernels (copies and fills around it are not compute).
- `torch_fallback`: a kernel only torch launches (at::native, c10::, triton) ran in the call.
  Catches: torch compute outside the profiler's sight. Lets through: cuBLAS/cuDNN kernels of a
  library the build links, memsets, copies and torch's fill for outputs.
- `profile_mismatch`: the audited call's kernels take more than AUDIT_FACTOR x the judged time
  per call + AUDIT_SLACK_US. Catches: expensive real work only while watched, a cheap shortcut
  when timed. Lets through: a fair kernel, whose kernels under ncu (clocks and caches left as they
  are) take about what the judge timed; the factor covers cold caches of a single call.

- `harness_tampering`: ncu's output holds a report ncu did not write (`forged_report`).

An audit that cannot be run says nothing about the candidate: no ncu, or ncu that sees no kernel
of a trusted probe in this sandbox (`ncu_usable`), skips it (EvalResult.audit None, the report says
why). A candidate whose audited run fails or times out after it passed the timed calls gets reward
None (an environment fault: it may be ncu's, but a workspace that crashes only when watched is not
paid either).

The next cheat: a ModelNew that detects Nsight Compute (its injection library in the process, the
environment ncu sets) and runs its kernel only then. Auditing a call the judge drives (inputs from
the arena, outputs compared) would not close it: the watched call would be the correct, honest one.
What closes it is a watch the candidate cannot tell apart from no watch: the candidate worker of
every final evaluation started under ncu, so every call, timed or not, runs in an injected process,
and a secret launch index (`--launch-skip`, chosen by the parent, never sent) picking the kernels
that are listed, so the candidate learns it was watched only after the watched launch. Its cost,
ncu's interception of every launch during the timed calls, has to be measured first (GPU).
"""

from __future__ import annotations

import time
from pathlib import Path

from skills.evaluator.build import BuildResult
from skills.evaluator.config import EvalConfig
from skills.evaluator.harness.kernel_names import is_copy, is_custom, linked_library_kernel
from skills.evaluator.launch import Scratch, candidate_env, sandbox_cmd, worker_env
from skills.evaluator.ncu import NcuKernel, NcuReport, find_ncu, ncu_command, ncu_prefix, run_ncu
from skills.evaluator.results import AuditedKernel, Flag, KernelAudit, Owner
from skills.evaluator.sandbox import SandboxUnavailable

AUDIT_FACTOR = 3.0
"""The audited call's kernels may take this many times the judged time per call (plus the slack).
The reference solutions read 0.84-1.02 times (22 of them, H100, 2026-12-06: docs/results.md)."""
AUDIT_SLACK_US = 50.0
"""Fixed slack for tiny calls, whose single profiled launch is dominated by cold caches."""
AUDIT_METRICS = "gpu__time_duration.sum"
"""One metric, one pass: no replay, so a kernel's side effects happen once, as in a timed call."""
AUDIT_OPTIONS = ("--cache-control", "none", "--print-kernel-base", "demangled")
"""Caches as the timed calls leave them; full demangled names for the name rules."""

_USABLE: dict[tuple[str, str | None, int | None, str], str | None] = {}
"""(ncu, gpu, run_as, sandboxed) -> None when the trusted probe's kernel was listed, else why not."""


def owner(name: str, built: BuildResult | None) -> Owner:
    """`agent` (built from kernels/, or the load_inline module's own), `library` (a library the
    build links), `copy` (copies, memsets, fills) or `torch` (a kernel only torch launches)."""
    if is_copy(name):
        return "copy"
    kernel_names = [r.kernel for r in built.resources] if built else []
    flavour = built.flavour if built else "torch"  # load_inline: any kernel not named like a library's
    if is_custom(name, kernel_names, flavour):
        return "agent"
    libraries = [lib.name for lib in built.libraries if lib.lib_dir] if built else []
    if linked_library_kernel(name, libraries):
        return "library"
    return "torch"


def classify(kernels: list[NcuKernel], built: BuildResult | None, judged_us: float | None) -> KernelAudit:
    """The audit's verdict on what ncu listed for the audited call."""
    rows = [AuditedKernel(name=k.name, us=k.duration_us, owner=owner(k.name, built)) for k in kernels]
    profiled = sum(r.us or 0.0 for r in rows)
    flags: list[Flag] = []
    if not any(r.owner in ("agent", "library") for r in rows):
        ran = ", ".join(sorted({r.name[:60] for r in rows})[:4]) or "no kernel at all"
        flags.append(Flag(name="decoy_kernel", detail=(
            f"run once more under Nsight Compute, outside your process, the call launched none of the built "
            f"kernels (it ran: {ran}); every call must do its work in your own kernels")))
    foreign = sorted({r.name[:80] for r in rows if r.owner == "torch"})
    if foreign:
        flags.append(Flag(name="torch_fallback", detail=(
            f"run once more under Nsight Compute, outside your process, the call ran torch's kernels: "
            f"{', '.join(foreign[:4])}; compute must happen in your own kernels")))
    if judged_us is not None and profiled > AUDIT_FACTOR * judged_us + AUDIT_SLACK_US:
        flags.append(Flag(name="profile_mismatch", detail=(
            f"run once more under Nsight Compute, the call's kernels took {profiled:.1f} us, but the timed calls "
            f"took {judged_us:.1f} us each: the work that is timed must be the work that runs")))
    return KernelAudit(kernels=rows, profiled_us=profiled, judged_us=judged_us, flags=flags)


def _command(cfg: EvalConfig, scratch: Scratch, cmd: list[str]) -> tuple[list[str], dict[str, str]]:
    return sandbox_cmd(cfg, scratch, cmd), candidate_env(cfg, worker_env(cfg, scratch.root))


def forged_report(rep: NcuReport) -> str | None:
    """Why ncu's output cannot be all ncu's, or None. ncu and the audited process share the sandbox
    and its user, and ncu prints its one report on the stdout the process inherits (harness/
    ncu_target.py points the process's own fd 1 at /dev/null before any candidate code runs, but the
    same user can reopen ncu's through /proc). A report beside ncu's own, or one where ncu said it
    profiled nothing, was written by the audited process. Catches: a ModelNew that prints a raw CSV
    naming its own kernel, with or without launching anything. Lets through: every run whose output
    ncu alone wrote (one report, or none with ncu's warning)."""
    if rep.reports > 1:
        return (f"the audited run's output held {rep.reports} Nsight Compute reports where ncu prints one: "
                f"the audited process wrote into ncu's output")
    if rep.reports == 1 and rep.none_profiled:
        return ("ncu said it profiled no kernel, yet its output held a report: the audited process wrote into "
                "ncu's output")
    return None


async def ncu_usable(exe: str, scratch: Scratch, cfg: EvalConfig) -> str | None:
    """None when ncu, run the way the audit runs it, lists a trusted probe's kernel; else why not.
    Cached per ncu, GPU, user and sandbox: asked once per process."""
    key = (exe, cfg.gpu, scratch.run_as, cfg.sandbox.mode)
    if key not in _USABLE:
        probe = [*ncu_prefix(exe, AUDIT_METRICS, AUDIT_OPTIONS), "--probe"]
        try:
            cmd, env = _command(cfg, scratch, probe)
        except SandboxUnavailable as exc:
            return f"no sandbox for the audited run: {exc}"
        rep = await run_ncu(cmd, env=env, run_as=scratch.run_as, timeout_s=cfg.kernel_audit_timeout_s)
        _USABLE[key] = None if rep.ok and rep.kernels else (rep.error or "ncu listed no kernel of the probe")
    return _USABLE[key]


async def run_audit(problem: Path, scratch: Scratch, built: BuildResult | None, cfg: EvalConfig,
                    judged_us: float | None) -> tuple[KernelAudit | None, str | None]:
    """(audit, None) when the audited run finished; (None, why) when it was skipped or failed.
    A failure of the candidate's run is returned as `failed: ...` (the caller makes it a fault)."""
    exe = find_ncu()
    if exe is None:
        return None, "skipped: Nsight Compute (ncu) is not installed on this machine"
    began = time.perf_counter()
    why = await ncu_usable(exe, scratch, cfg)
    if why is not None:
        return None, f"skipped: ncu cannot list kernels in this sandbox ({why[:300]})"
    cmd = ncu_command(problem, scratch.workspace, scratch.lib, built, exe, metrics=AUDIT_METRICS, options=AUDIT_OPTIONS)
    try:
        full, env = _command(cfg, scratch, cmd)
    except SandboxUnavailable as exc:
        return None, f"skipped: no sandbox for the audited run: {exc}"
    rep: NcuReport = await run_ncu(full, env=env, run_as=scratch.run_as, timeout_s=cfg.kernel_audit_timeout_s)
    if rep.returncode != 0:
        return None, f"failed: the audited run under Nsight Compute {rep.error or 'failed'}"[:1500]
    audit = classify(rep.kernels, built, judged_us)
    forged = forged_report(rep)
    if forged is not None:
        audit.flags.append(Flag(name="harness_tampering", detail=forged))
    audit.seconds = time.perf_counter() - began
    return audit, None
