"""How evaluations run: `EvalConfig`, one per evaluator."""

from __future__ import annotations

import sys
from typing import Literal

import msgspec

from skills.evaluator.build import BuildConfig
from skills.evaluator.harness import protocol as P
from skills.evaluator.paired import PairedConfig
from skills.evaluator.results import Backend
from skills.evaluator.reward import CompositeConfig
from skills.evaluator.sandbox import SandboxConfig


class EvalConfig(msgspec.Struct, kw_only=True):
    """How evaluations run; one per evaluator."""

    backend: Backend = "cuda"
    """Where kernels build and run: cuda (nvcc, a GPU) or cpu (C++/OpenMP on the CPU); the one backend setting (kagent's --backend sets it)."""
    sizes: Literal["default", "small"] | None = None
    """Problem sizes; None picks small on cpu and default on cuda."""
    n_sets: int = 3
    """Input sets for correctness (each from the secret seed)."""
    held_sets: int | None = None
    """Regular sets the judge holds with their references for the whole evaluation (warm-up,
    probes and baselines rotate over them); the others are drawn again, referenced, checked and
    freed when their turn comes. None: all n_sets where the memory plan fits them, else 1."""
    shape_check: bool = True
    """One more correctness set at other sizes (the problem's SMALL_SIZES on the GPU, its
    CHECK_SIZES at small sizes): a kernel that hard-codes the timed shape fails it (EXPLOITS row 14)."""
    checked_fraction: float = 0.125
    """Share of timed calls (at least 8, at most 24 per loop) whose whole outputs the judge reads and
    compares with a reference of their own (every timed call runs on a set drawn for it); which ones
    is secret."""
    timing: P.TimingConfig = msgspec.field(default_factory=P.TimingConfig)
    """The timing loop (candidate and baselines alike)."""
    baselines: list[Literal["eager", "compile"]] = msgspec.field(default_factory=lambda: ["eager", "compile"])
    """Baselines to time in profile/final mode."""
    paired: PairedConfig = msgspec.field(default_factory=PairedConfig)
    """Final mode: the candidate and its baselines timed in turn, in rounds (skills/evaluator/paired.py)."""
    margin: float = 0.05
    """"Faster" means the conservative speedup exceeds 1 + margin."""
    reward_fn: str = "milestone"
    """Reward function by name (skills.evaluator.reward.REWARDS)."""
    composite: CompositeConfig = msgspec.field(default_factory=CompositeConfig)
    """The composite reward's constants (reward_fn = "composite")."""
    profile_calls: int = 5
    """Calls under the profiler for kernel time and launch accounting (cuda)."""
    timeout_import_s: float = 300.0
    """Starting workers, importing model_new.py (load_inline builds count) and the reference."""
    timeout_run_s: float = 120.0
    """The candidate's calls on the correctness sets: the judge's waits for its answers, in all."""
    timeout_timing_s: float = 300.0
    """The candidate's share of one timed loop: the judge's waits for its answers, in all (the judge's
    own work between them is bounded apart, by timeout_judge_s)."""
    timeout_judge_s: float = 900.0
    """The judge's own work in one correctness stage or timed loop (drawing input sets, the references
    of checked calls, comparisons), apart from its waits for the candidate: past it the stage is the
    environment's fault (reward None). The parent waits for the judge's report at most this plus
    the candidate's limit plus 30 s."""
    timeout_baseline_s: float = 900.0
    """Timing the baselines (torch.compile cold start included)."""
    gpu: str | None = None
    """CUDA_VISIBLE_DEVICES for the workers (the leased GPU slot); None leaves it unset. Set per slot by
    kagentd's scheduler and `kagent bench` (choose GPUs with scheduler.gpus; a config setting this
    fails) and by `kagent eval --gpu`."""
    python: str = sys.executable
    """Interpreter for the workers."""
    log_chars: int = 4000
    """Tail of the candidate's stdout/stderr kept in the result."""
    build: BuildConfig | None = None
    """Build settings; None derives them from the backend."""
    static_checks: bool = True
    """Run the static checks (turned off only by tests of the runtime defences behind them)."""
    sandbox: SandboxConfig = msgspec.field(default_factory=SandboxConfig)
    """How candidate workers are confined (bubblewrap + rlimits)."""
    gpu_memory_fraction: float = 0.45
    """Cap on the candidate's torch allocations while it imports model_new.py, as a fraction of the
    GPU; before ModelNew is built the cap becomes what is free once the judge holds its sets and
    references, less what the judge may still need (skills.evaluator.harness.candidate.cap_memory)."""
    max_bandwidth_gbs: float | None = None
    """Fastest memory any call could read at (GB/s) for the timing floor; None: 10,000 on cuda,
    500 on cpu (beyond any current device, so only impossible timings are flagged)."""
    pin_cpus: bool = False
    """On cuda, run each GPU's judge and candidate on two cores of their own that compilers keep
    off (skills/evaluator/affinity.py; machines with 8 or more cores). Off by default: on the H200 it made
    the time per call no steadier between evaluations (docs/results.md, Timing stability)."""
    clock_marks: bool = True
    """Candidate timed calls mark their start and end on a kernel-stamped socket that the parent
    checks the reported times against (skills/evaluator/marks.py; EXPLOITS row 4). Off only to measure it."""
    shared_gpu_check: bool = True
    """cuda: a process outside the evaluation that runs kernels on its GPU during the timed calls
    (NVML's per-process SM samples) makes the evaluation an environment fault, reward None, instead
    of flags and speedups skewed by it (skills/evaluator/sharing.py). Off only to measure the effect."""
    cpu_sampling: bool = True
    """cpu: the parent samples where the candidate's threads spend their CPU time during the timed
    calls (perf_event_open, from outside its process) and flags torch_fallback when it was torch's
    compute, not the agent's (skills/evaluator/cpu_samples.py); off where the kernel does not permit it."""
    kernel_audit: bool = True
    """cuda, final mode: a workspace that passed everything else runs once more under Nsight Compute
    in its sandbox, and the kernels one call ran, listed outside its process, are checked against
    the built ones and the judged time (skills/evaluator/kernel_audit.py); skipped where ncu is missing
    or cannot list kernels."""
    kernel_audit_timeout_s: float = 300.0
    """Bound on the audited run under Nsight Compute (and on the probe that checks ncu works)."""
    measure_memory: bool = True
    """Measure memory from outside the workers into EvalResult.memory: on cuda each worker's GPU peak
    (NVML, skills/evaluator/nvml.py); on both backends ModelNew's footprint during its calls
    (skills/evaluator/footprint.py) and the baselines' (the judge's own, skills/evaluator/harness/peak.py), which the
    composite reward's memory penalty compares."""
    torch_allowed: bool = False
    """Benchmarks of the harness only (`kagent bench --reference-model`, benchmarks/bench_kernelbench.py):
    grade torch compute as a solution, e.g. the problem's own Model as ModelNew. The static checks
    are skipped and the torch-op rule's flags (TORCH_RULE_FLAGS: the op recorder's and the
    profiler's) are dropped; every other check stays, and the result says so (torch_allowed)."""
    compile_cache: bool = True
    """The judge keeps torch.compile's caches (TORCHINDUCTOR_CACHE_DIR: the FX graph cache, generated
    code, Triton kernels) between evaluations, in $XDG_CACHE_HOME/kagent/inductor (else
    ~/.cache/kagent/inductor), so the compile baseline of a problem seen before is a cache hit
    instead of a cold compile (a CPU level-2 problem's baselines: 24-27 s cold, 11-13 s from the
    cache). Only the judge's environment names it; candidates never see it. False: each evaluation
    compiles cold in its own scratch folder."""
    extension_cache_dir: str | None = None
    """Where the parent keeps the load_inline builds of evaluations that passed (and of `kagent bench`'s
    build-only prebuilds), for evaluations of the same code (skills/evaluator/ext_cache.py; never visible to candidates); None: no reuse. Each
    evaluation builds in a torch extensions folder of its own."""


TORCH_RULE_FLAGS = frozenset({"torch_fallback", "decoy_kernel"})
"""The flags of the rule "no torch compute in forward" (dropped when EvalConfig.torch_allowed)."""
