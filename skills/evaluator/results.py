"""Typed records of an evaluation: what the store keeps and what `kagent eval --json` prints.

Every time is in microseconds; `None` means "not measured", never a sentinel number.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Backend = Literal["cuda", "cpu"]
Precision = Literal["fp32", "tf32", "bf16", "fp16"]
Mode = Literal["test", "profile", "final"]
Stage = Literal["load", "build", "import", "init", "correctness", "timing", "baseline", "problem", "done"]
"""`problem`: the problem itself is broken or degenerate (not the candidate's fault; no reward)."""


class Interval(msgspec.Struct, frozen=True):
    """A median with its 95% confidence interval (order-statistic interval of the median)."""

    median: float
    """Median of the samples."""
    low: float
    """Lower end of the 95% interval."""
    high: float
    """Upper end of the 95% interval."""
    n: int
    """Number of samples."""


class Flag(msgspec.Struct, frozen=True):
    """A check that fired: a reward hack or a rule broken by the candidate."""

    name: str
    """Stable identifier, e.g. `input_mutation`, `unsynchronized_work`, `torch_fallback`."""
    detail: str
    """What was seen, written for the agent to learn from."""


def dedupe_flags(flags: list[Flag]) -> list[Flag]:
    """The first flag of each name, in order (a check that fires on many calls is reported once)."""
    seen: dict[str, Flag] = {}
    for f in flags:
        seen.setdefault(f.name, f)
    return list(seen.values())


class OutputError(msgspec.Struct):
    """Error of one output on one input set, measured against an fp64 reference."""

    index: int
    """Position of the output in the returned tuple (0 for a single tensor)."""
    ok: bool
    """Within the error budget, right shape and dtype, no NaN where the reference has none."""
    shape: list[int]
    """Shape the candidate returned (empty for a 0-dim tensor)."""
    dtype: str
    """Dtype the candidate returned."""
    max_abs_err: float | None
    """Largest |candidate - reference| (None when shapes differ)."""
    max_rel_err: float | None
    """Largest |candidate - reference| / max(|reference|, output scale)."""
    err_ratio: float | None
    """Error norm of the candidate over the error norm of the eager reference (1 = same error)."""
    bad_elements: int
    """Elements over the per-element budget (NaN mismatches included)."""
    message: str
    """Human summary; names the worst element when something failed."""
    budget_used: float | None = None
    """How much of its budget the output used: the larger of the worst element's error over its
    budget and the error norm over the norm budget (1 = at the edge; None when not compared)."""


class SetResult(msgspec.Struct):
    """Correctness of the candidate on one input set."""

    set_index: int
    """Which input set (drawn from the secret seed)."""
    ok: bool
    """All outputs within budget."""
    outputs: list[OutputError]
    """One entry per output."""
    sizes: str | None = None
    """None: the sizes that are timed; `small`/`check`: the shape check's set at the problem's
    SMALL_SIZES / CHECK_SIZES (a kernel that hard-codes the timed shape fails it)."""


class BuildSummary(msgspec.Struct):
    """What the build step reported (the full record lives in skills.evaluator.build.BuildResult)."""

    ok: bool
    """The sources compiled and linked."""
    cached: bool
    """Every unit came from the build cache."""
    seconds: float
    """Wall time of the build."""
    errors: str
    """Trimmed compiler errors ("" when ok)."""
    flavour: str
    """`c_abi`, `torch` (a torch-extension source) or `inline` (model_new.py builds its own)."""
    libraries: list[str] = msgspec.field(default_factory=list)
    """CUDA libraries the kernels include and the build linked (cublas, cublasLt, cudnn, ...)."""


class TimingResult(msgspec.Struct):
    """Timing of one callable under the harness's timing loop."""

    per_call_us: Interval
    """Time per call, judged: on cuda the device's time from the moment the call's work could start
    to its end (the host launched it while the GPU was still busy: TimingConfig.lead_us; host work
    beyond that lead and gaps between kernels count); on cpu the call's wall time."""
    kernel_us: float | None
    """Summed device time of the kernels one call launches (cuda profile only)."""
    calls: int
    """Timed calls (warm-up excluded)."""
    cv: float
    """Coefficient of variation of the timed samples (std / mean)."""
    caller_us: Interval | None = None
    """cuda: time per call as a caller that waits for every call sees it (launched onto an idle
    GPU, launch latency included); reported beside per_call_us, not judged."""
    lead_us: float | None = None
    """cuda: median time the lead held the GPU before a timed call (TimingConfig.lead_us)."""
    window_us: float | None = None
    """Candidate only: median time from a timed call's start mark to its end mark on the kernel's
    stamps, a clock outside the candidate's process (skills/evaluator/marks.py); on cuda it includes the
    lead. The judged time must fit inside it (EXPLOITS row 4)."""
    between_us: float | None = None
    """Candidate only: median time between one timed call's end mark and the next one's start
    (the loop's own work: copying the inputs in, the cache flush, the sync)."""


class Speedup(msgspec.Struct):
    """Speedup of the candidate over one baseline, as a point and an interval."""

    baseline: str
    """`eager` or `compile`."""
    value: float
    """Baseline median over candidate median."""
    low: float
    """Conservative end: baseline low over candidate high."""
    high: float
    """Optimistic end: baseline high over candidate low."""
    faster: bool
    """More than the margin faster, judged on the interval (`low` > 1 + margin); with paired
    rounds, by the rounds' median point where the interval still straddles after the last round
    (skills/evaluator/paired.py)."""
    rounds: int = 1
    """Paired rounds the speedup comes from (1: one candidate loop against one baseline loop, the
    baseline maybe from the cache)."""
    round_values: list[float] = msgspec.field(default_factory=list)
    """Each paired round's ratio of medians: their spread shows how loaded the host was."""


class StageTimes(msgspec.Struct):
    """Wall seconds of each stage of one evaluation (None when the stage did not run)."""

    build: float | None = None
    """Compiling kernels/."""
    workers_ready: float | None = None
    """Starting the judge and candidate workers up to the candidate import."""
    correctness: float | None = None
    """Running and comparing the input sets."""
    timing: float | None = None
    """The candidate's timing loop."""
    baselines: float | None = None
    """Timing eager and torch.compile (0 when cached)."""
    total: float | None = None
    """The whole evaluation."""
    parts: dict[str, float] = msgspec.field(default_factory=dict)
    """Seconds inside the workers, by part (candidate: init, draw, run, checks, write; judge:
    read, compare), for finding where an evaluation's time goes."""


CandidateMemoryMethod = Literal["nvml", "peak_rss", "lifetime_rss"]
"""How the candidate's footprint was measured, from outside its process: `nvml` (cuda: the driver's
per-process figure of its tree, sampled every 10 ms and around its calls), `peak_rss` (cpu: the
kernel's peak resident set of its tree, reset just before its calls), `lifetime_rss` (cpu, where a
reset was refused: the peak since the process started, which can only read higher)."""
BaselineMemoryMethod = Literal["allocator", "peak_rss"]
"""How the judge measured its baselines' footprints: `allocator` (cuda: torch's peak allocated
bytes over the timed loop), `peak_rss` (cpu: the judge's peak resident set over the timed loop)."""


class MemoryUse(msgspec.Struct):
    """Memory of an evaluation: each worker's GPU peak (NVML, sampled by the parent every 10 ms:
    what each process tree held on the GPU, whatever it reports itself), and each callable's own
    footprint during its calls (the composite reward's memory penalty compares them;
    docs/reward.md says how each is measured)."""

    judge_bytes: int | None
    """cuda: the judge's process: its sets and references, the baselines' loops."""
    candidate_bytes: int | None
    """cuda: the candidate's process tree: its context, model, outputs and whatever its forward took."""
    candidate_call_bytes: int | None = None
    """ModelNew's footprint: the candidate tree's peak during its calls (correctness and timed) less
    what it held before model_new.py was imported (cpu: its resident set, torch imported; cuda: a
    CUDA context's, read on the warm judge), on the cpu less the judge's arena it maps: its weights,
    buffers, scratch, outputs and intermediates."""
    eager_bytes: int | None = None
    """Eager Model's footprint: the judge's peak over the baseline's timed loop beyond what it held
    before it, plus the model's parameter and buffer bytes."""
    compile_bytes: int | None = None
    """torch.compile(Model)'s footprint, measured as eager's."""
    candidate_method: CandidateMemoryMethod | None = None
    """How candidate_call_bytes was measured (None: not measured)."""
    baseline_method: BaselineMemoryMethod | None = None
    """How eager_bytes and compile_bytes were measured (None: not measured)."""
    limit_bytes: int | None = None
    """The footprint ModelNew may reach before the composite reward's memory penalty, under this
    evaluation's settings (skills.evaluator.reward.memory_limit; None: no baseline's footprint measured)."""


Owner = Literal["agent", "library", "copy", "torch"]
"""Whose a kernel is (skills/evaluator/kernel_audit.py: owner)."""


class CpuSamples(msgspec.Struct):
    """cpu: where the candidate's threads spent their CPU time during the timed calls, sampled from
    outside its process (skills/evaluator/cpu_samples.py)."""

    places: dict[str, int]
    """Samples per place: agent (its library or load_inline module), torch, openmp, python, other."""
    lost: int = 0
    """Records the kernel dropped (a full buffer)."""
    threads: int = 0
    """Threads sampled."""
    calls: int = 0
    """Timed calls whose windows the samples were taken in (0: not known)."""
    period_us: float = 500.0
    """A sample per this much of a thread's CPU time."""

    @property
    def total(self) -> int:
        return sum(self.places.values())

    def share(self, place: str) -> float:
        return self.places.get(place, 0) / self.total if self.total else 0.0

    def us_per_call(self, place: str) -> float | None:
        """CPU us a timed call spent in `place`, estimated from its samples (None: calls unknown)."""
        return self.places.get(place, 0) * self.period_us / self.calls if self.calls else None

    def __add__(self, other: CpuSamples) -> CpuSamples:
        places = dict(self.places)
        for k, v in other.places.items():
            places[k] = places.get(k, 0) + v
        return CpuSamples(places=places, lost=self.lost + other.lost, threads=max(self.threads, other.threads),
                          # a round whose calls are unknown (its samples not bounded to windows) leaves
                          # the sum's unknown too: its samples over a partial count would read high
                          calls=self.calls + other.calls if self.calls and other.calls else 0,
                          period_us=self.period_us)

    def describe(self) -> str:
        order = sorted(self.places, key=lambda p: -self.places[p])
        parts = ", ".join(f"{p} {100 * self.share(p):.0f}%" for p in order)
        lost = f", {self.lost} lost" if self.lost else ""
        return f"{self.total} samples of {self.threads} thread(s): {parts or 'none'}{lost}"


class AuditedKernel(msgspec.Struct):
    """One kernel the kernel audit's call ran, as Nsight Compute listed it."""

    name: str
    """Demangled name."""
    us: float | None
    """gpu__time_duration of this launch."""
    owner: Owner
    """Built from kernels/ (or the load_inline module's own), a library the build links, a copy or
    fill, or one only torch launches (skills/evaluator/kernel_audit.py)."""


class KernelAudit(msgspec.Struct):
    """What one call ran on the GPU, listed from outside the candidate's process (final mode, cuda)."""

    kernels: list[AuditedKernel]
    """Every launch inside the audited call, in order."""
    profiled_us: float
    """Their summed duration."""
    judged_us: float | None
    """The judged time per call it is compared with (None: the evaluation ran at other sizes)."""
    flags: list[Flag] = msgspec.field(default_factory=list)
    """What the audit raised (also in EvalResult.flags)."""
    seconds: float = 0.0
    """Wall time of the audit (the probe of ncu included, the first time)."""


def larger_baseline_bytes(eager: int | None, compile_: int | None) -> int | None:
    """The larger of the baselines' footprints (eager, torch.compile: whichever were measured), the
    one the composite reward's memory limit and every memory ratio are taken against."""
    bases = [b for b in (eager, compile_) if b is not None]
    return max(bases) if bases else None


class EvalResult(msgspec.Struct):
    """The outcome of one evaluation of a workspace: the reward signal and its evidence."""

    problem: str
    """Problem name."""
    problem_id: str
    """Content hash of the problem source."""
    backend: Backend
    """Where it ran."""
    mode: Mode
    """test (correctness only), profile (timing too), final (graded; reward set)."""
    compiled: bool
    """The kernels built (True when there was nothing to build)."""
    correct: bool
    """Every output on every input set within budget (flags are separate: see `flags`)."""
    stage: Stage
    """The last stage reached (`done` when the evaluation finished)."""
    error: str | None
    """Why the evaluation stopped early, for the agent (None when it finished)."""
    build: BuildSummary | None
    """Build report (None when model_new.py builds nothing)."""
    sets: list[SetResult]
    """Correctness per input set."""
    flags: list[Flag]
    """Checks that fired."""
    candidate: TimingResult | None
    """Candidate timing (profile/final)."""
    eager: TimingResult | None
    """Eager baseline timing."""
    compiled_baseline: TimingResult | None
    """torch.compile (default mode) baseline timing."""
    speedups: list[Speedup]
    """Speedups over each measured baseline."""
    reward: float | None
    """Reward by the configured reward function (final mode; None otherwise, and None when the
    problem was refused: that is the environment's fault, not the agent's)."""
    reward_fn: str | None
    """Name of the reward function that produced `reward`."""
    precision: Precision
    """Precision policy the evaluation enforced."""
    gpu: str | None
    """Device name (None on cpu)."""
    torch_version: str
    """torch version of the workers."""
    stages: StageTimes
    """Wall time per stage."""
    log: str
    """Tail of what the candidate printed (stdout and stderr), trimmed."""
    environment_fault: str | None = None
    """Why the environment, not the candidate, could not finish this evaluation (the judge crashed
    or ran out of memory, the problem does not fit the machine, a baseline failed, a worker or the
    sandbox did not start, the disk is full): reward None, and the episode is not trainable. None
    when the evaluation finished or the candidate's own code stopped it."""
    sandbox: str | None = None
    """How the candidate ran: `bwrap as nobody`, `bwrap, root in a user namespace (RLIMIT_NPROC not
    binding: ...)`, `bwrap as the current user` or `none (unsafe)`, with how its tasks were capped
    (`; tasks capped by a pids cgroup`, or why not); None when no candidate process was started."""
    input_shapes: list[list[int]] = msgspec.field(default_factory=list)
    """Shape of each tensor input at the timed sizes (what the regular sets and the timing loop
    used; the judge's JudgeReady.input_shapes); empty when the judge never got that far."""
    memory: MemoryUse | None = None
    """Peak memory of the workers (cuda) and each callable's footprint (None: nothing measured,
    e.g. no NVML, or EvalConfig.measure_memory off)."""
    torch_allowed: bool = False
    """Graded with the torch-op rule off (EvalConfig.torch_allowed: a problem's own Model as the
    solution, for benchmarks of the harness): not a kernel of the agent's."""
    audit: KernelAudit | None = None
    """The kernel audit (cuda final mode, EvalConfig.kernel_audit); None where it did not run or was
    skipped (audit_note says why)."""
    audit_note: str | None = None
    """Why the kernel audit was skipped, or how its run failed (None: it ran, or was not due)."""
    cpu_samples: CpuSamples | None = None
    """cpu: where the candidate's timed calls spent their CPU time, sampled from outside its process
    (skills/evaluator/cpu_samples.py); None: not sampled (cuda, test mode, or see cpu_samples_note)."""
    cpu_samples_note: str | None = None
    """Why the timed calls were not sampled where they would have been."""
    executor: str = "local"
    """What ran it: `local` (a slot of the daemon's own machine, or `kagent eval`) or
    `ray:<node>:<actor>` (an evaluation actor: the node's IP and the actor's name; docs/ray.md)."""
