"""The evaluator (trusted parent): build, then judge + candidate workers, then statistics and reward.

    build kernels/ (content-hash cache)
    start judge and candidate workers at once (each a fresh process, own process group), joined
    by a socket pair (the link) the parent made
      judge: input sets from seeds derived from a secret seed, reference outputs; weights -> exchange dir
      candidate: bind kernels, import model_new.py, build ModelNew from the weights
    judge drives the candidate over the link: each call's inputs written into shared memory (the
      arena) just before the call, the outputs read back from it and compared whole
      correctness: every set once; [profile/final] a timed loop with canaries at secret places and
      a secret subset of calls checked (skills/evaluator/harness/driver.py)
    [profile/final] baselines from the cache, else timed by the judge
    parent: the clock checks on the kernel-stamped marks, intervals, speedups, flags, reward

Input sets, reference outputs, tolerances, check positions and statistics never exist in the
candidate's process. Any crash, hang or timeout of a worker ends this one evaluation with a
structured failure.
"""

from __future__ import annotations

import contextlib
import os
import platform
import secrets
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Literal, TypeVar, cast, get_args

import anyio
import msgspec

from skills.evaluator import ext_cache
from skills.evaluator.affinity import reserve_timing_cpus, timing_cpus
from skills.evaluator.baselines import BaselineCache, BaselineEntry, BaselineKey
from skills.evaluator.build import BuildConfig, BuildResult, build
from skills.evaluator.footprint import CandidateFootprint
from skills.evaluator.harness import protocol as P
from skills.evaluator.marks import Mark
from skills.evaluator.nvml import MemorySampler, Nvml
from skills.evaluator.paired import PairedConfig, merged, paired_speedup, round_speedup, straddles
from skills.evaluator.pids import PidsGroup
from skills.evaluator.pids import hierarchy as pids_hierarchy
from skills.evaluator.precision_code import declares_tf32, scan_build
from skills.evaluator.quota import DiskQuota
from skills.evaluator.results import (
    Backend,
    BuildSummary,
    EvalResult,
    Flag,
    MemoryUse,
    Mode,
    Precision,
    SetResult,
    Speedup,
    Stage,
    StageTimes,
    TimingResult,
)
from skills.evaluator.reward import CompositeConfig, get_reward_fn, memory_limit
from skills.evaluator.sandbox import (
    EXTENSIONS_MOUNT,
    SandboxConfig,
    SandboxUnavailable,
    clean_env,
    needed_roots,
    rlimits_spec,
)
from skills.evaluator.sandbox import active as sandbox_active
from skills.evaluator.sandbox import wrap as sandbox_wrap
from skills.evaluator.schedstat import TreeClock, cpu_between, worker_pid
from skills.evaluator.static_check import check_workspace
from skills.evaluator.stats import coefficient_of_variation, median_interval
from skills.evaluator.workers import Worker, WorkerFailed

T = TypeVar("T")
PROJECT_ROOT = Path(__file__).resolve().parents[2]
STAGES = set(get_args(Stage))


class EvalConfig(msgspec.Struct, kw_only=True):
    """How evaluations run; one per evaluator."""

    backend: Backend = "cuda"
    """cuda (nvcc, a GPU) or cpu (C++/OpenMP on the CPU)."""
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
    """Running and comparing the correctness sets."""
    timeout_timing_s: float = 300.0
    """The candidate's timing loop."""
    timeout_baseline_s: float = 900.0
    """Timing the baselines (torch.compile cold start included)."""
    gpu: str | None = None
    """CUDA_VISIBLE_DEVICES for the workers (the leased GPU slot); None leaves it unset."""
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
    extension_cache_dir: str | None = None
    """Where the parent keeps the load_inline builds of evaluations that passed, for evaluations of
    the same code (skills/evaluator/ext_cache.py; never visible to candidates); None: no reuse. Each
    evaluation builds in a torch extensions folder of its own."""


TORCH_RULE_FLAGS = frozenset({"torch_fallback", "decoy_kernel"})
"""The flags of the rule "no torch compute in forward" (dropped when EvalConfig.torch_allowed)."""


class _State:
    """What an evaluation has learned so far (turned into an EvalResult at the end)."""

    def __init__(self, problem_path: str, config: EvalConfig, mode: Mode) -> None:
        self.problem = Path(problem_path).stem
        self.problem_id = ""
        self.mode = mode
        self.stage: Stage = "load"
        self.error: str | None = None
        self.compiled = True
        self.build: BuildSummary | None = None
        self.sets: list[SetResult] = []
        self.flags: list[Flag] = []
        self.candidate: TimingResult | None = None
        self.eager: TimingResult | None = None
        self.compiled_baseline: TimingResult | None = None
        self.precision: Precision = "fp32"
        self.gpu: str | None = None
        self.torch_version = ""
        self.input_shapes: list[list[int]] = []
        self.times = StageTimes()
        self.log = ""
        self.sandbox: str | None = None
        self.paired: list[Speedup] | None = None
        """Final mode: the speedups from paired rounds (skills/evaluator/paired.py), which the reward uses."""
        self.compile_error: str | None = None
        self.environment_fault: str | None = None
        """Set when the environment, not the candidate, stopped the evaluation (reward None)."""
        self.config = config
        self.quiet: Callable[[], AbstractAsyncContextManager[None]] = contextlib.nullcontext
        """Held around timed loops: the warm pool starts no worker's CUDA meanwhile."""
        self.began = time.perf_counter()
        self.memory: MemoryUse | None = None
        """cuda: the workers' NVML peaks (set once both are closed)."""
        self.footprint: CandidateFootprint | None = None
        """ModelNew's footprint, measured around its calls (None: not measured)."""
        self.baseline_bytes: dict[str, int] = {}
        """Each baseline's footprint (the largest of its rounds'; from the cache where its time is)."""

    def add_flags(self, flags: list[Flag]) -> None:
        """New flags (one per name), less the torch-op rule's where the config allows torch."""
        seen = {g.name for g in self.flags}
        self.flags += [f for f in flags if f.name not in seen
                       and not (self.config.torch_allowed and f.name in TORCH_RULE_FLAGS)]


def _timing_result(samples: P.Samples) -> TimingResult:
    return TimingResult(per_call_us=median_interval(samples.per_call_us), kernel_us=samples.kernel_us,
                        calls=len(samples.per_call_us), cv=coefficient_of_variation(samples.per_call_us),
                        caller_us=median_interval(samples.caller_us) if samples.caller_us else None,
                        lead_us=statistics.median(samples.lead_us) if samples.lead_us else None)


def speedup(baseline: str, base: TimingResult, cand: TimingResult, margin: float) -> Speedup:
    """One candidate loop against one baseline loop (profile mode: the baseline maybe cached)."""
    value, low, high = round_speedup(base, cand)
    return Speedup(baseline=baseline, value=value, low=low, high=high, faster=low > 1.0 + margin)


def _correct(state: _State) -> bool:
    """Every set was compared and passed, and nothing stopped the evaluation."""
    return bool(state.sets) and all(s.ok for s in state.sets) and state.error is None


def finish(state: _State) -> EvalResult:
    cfg = state.config
    speedups = list(state.paired or [])
    if state.candidate is not None and state.paired is None:
        for name, base in (("eager", state.eager), ("compile", state.compiled_baseline)):
            if base is not None:
                speedups.append(speedup(name, base, state.candidate, cfg.margin))
    correct = _correct(state)
    state.times.total = time.perf_counter() - state.began
    result = EvalResult(
        problem=state.problem, problem_id=state.problem_id, backend=cfg.backend, mode=state.mode,
        compiled=state.compiled, correct=correct, stage=state.stage if state.error else "done",
        error=state.error, build=state.build, sets=state.sets, flags=state.flags,
        candidate=state.candidate, eager=state.eager, compiled_baseline=state.compiled_baseline,
        speedups=speedups, reward=None, reward_fn=None, precision=state.precision, gpu=state.gpu,
        torch_version=state.torch_version, stages=state.times, log=state.log, sandbox=state.sandbox,
        environment_fault=state.environment_fault, input_shapes=state.input_shapes,
        torch_allowed=cfg.torch_allowed, memory=memory_use(state),
    )
    if result.memory is not None:
        limit = memory_limit(result, cfg.composite)
        result.memory.limit_bytes = int(limit) if limit is not None else None
    if state.mode == "final" and state.environment_fault is None and not (state.error and state.stage == "problem"):
        result.reward = get_reward_fn(cfg.reward_fn, cfg.composite)(result)
        result.reward_fn = cfg.reward_fn
    return result


def memory_use(state: _State) -> MemoryUse | None:
    """The workers' GPU peaks and each callable's footprint (None: nothing was measured)."""
    got = state.memory or MemoryUse(judge_bytes=None, candidate_bytes=None)
    fp = state.footprint
    got.candidate_call_bytes = fp.bytes if fp is not None else None
    got.candidate_method = fp.method if fp is not None else None
    got.eager_bytes = state.baseline_bytes.get("eager") if state.eager is not None else None
    got.compile_bytes = state.baseline_bytes.get("compile") if state.compiled_baseline is not None else None
    if got.eager_bytes is not None or got.compile_bytes is not None:
        got.baseline_method = "allocator" if state.config.backend == "cuda" else "peak_rss"
    measured = (got.judge_bytes, got.candidate_bytes, got.candidate_call_bytes, got.eager_bytes, got.compile_bytes)
    return got if any(b is not None for b in measured) else None


def build_workspace(workspace: Path, config: EvalConfig) -> BuildResult | None:
    """Build kernels/ when it holds sources; None when model_new.py builds its own (load_inline)."""
    kdir = workspace / "kernels"
    if not kdir.is_dir() or not any(p.suffix in (".cu", ".cpp", ".cc") for p in kdir.iterdir()):
        return None
    return build(kdir, config.build or BuildConfig(backend=config.backend))


class Scratch(msgspec.Struct):
    """The per-evaluation folder (in /dev/shm where there is one) and what the candidate gets of it."""

    root: Path
    """Removed when the evaluation ends."""
    workspace: Path
    """A frozen copy of model_new.py and kernels/ (read-only to the candidate)."""
    lib: str | None
    """A copy of the built library (read-only to the candidate)."""
    run_as: int | None
    """uid/gid the candidate runs as (65534 when the evaluator is root), None for the current user."""


def make_scratch(sandbox: SandboxConfig) -> Scratch:
    """A fresh folder whose permissions the evaluator controls; the sandbox binds its parts."""
    root = Path(tempfile.mkdtemp(prefix="kagent-eval-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    run_as = candidate_uid(sandbox)
    os.chmod(root, 0o711)
    for sub in ("exchange", "lib", "out", "tmp", "torch_extensions", "ws", "ws/kernels"):
        (root / sub).mkdir(mode=0o755)
        if sub in ("out", "tmp", "torch_extensions") and run_as is not None:
            os.chown(root / sub, run_as, run_as)
    return Scratch(root=root, workspace=root / "ws", lib=None, run_as=run_as)


def fill_scratch(scratch: Scratch, ws: Path, built: BuildResult | None) -> None:
    """Copy the frozen workspace and the built library where the (maybe already running) candidate reads them."""
    root, cand_ws = scratch.root, scratch.workspace
    shutil.copyfile(ws / "model_new.py", cand_ws / "model_new.py")
    kdir = ws / "kernels"
    if kdir.is_dir():
        for f in kdir.iterdir():
            if f.is_file() and not f.is_symlink():
                shutil.copyfile(f, cand_ws / "kernels" / f.name)
    for path in (cand_ws, cand_ws / "kernels", *cand_ws.rglob("*")):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    if built is not None and built.lib_path:
        lib = root / "lib" / Path(built.lib_path).name
        shutil.copyfile(built.lib_path, lib)
        os.chmod(lib, 0o755)
        scratch.lib = str(lib)


def copy_problem(problem: Path, scratch: Scratch) -> Path:
    """The problem file where the candidate can read it (it draws its inputs with get_inputs())."""
    dest = scratch.root / "exchange" / "problem.py"
    shutil.copyfile(problem, dest)
    os.chmod(dest, 0o644)
    return dest


def describe_sandbox(sandbox: SandboxConfig, scratch: Scratch) -> str:
    """Who the candidate runs as, and whether a pids cgroup caps its tasks (skills/evaluator/pids.py)."""
    tasks = "; tasks capped by a pids cgroup" if pids_hierarchy() is not None else ""
    if not sandbox_active(sandbox):
        return "none (unsafe)" + tasks
    if scratch.run_as is not None:
        return "bwrap as nobody" + tasks
    if os.geteuid() == 0:
        nproc = "RLIMIT_NPROC not binding: interpreter not readable by nobody"
        if not tasks:
            return f"bwrap, root in a user namespace ({nproc}; no writable pids cgroup: tasks not capped)"
        return f"bwrap, root in a user namespace ({nproc}){tasks}"
    return "bwrap as the current user" + tasks


def candidate_uid(sandbox: SandboxConfig) -> int | None:
    """As root, candidates run as nobody (65534) so rlimits bind; only if they can read the project."""
    if os.geteuid() != 0 or not sandbox_active(sandbox):
        return None
    if os.environ.get("KAGENT_SANDBOX_KEEP_UID") == "1":  # operator opt-out (e.g. GPU nodes not world-usable)
        return None
    return 65534 if all(world_readable(p) for p in needed_roots()) else None


def world_readable(path: Path) -> bool:
    """Every folder from / down to path can be entered by others, and path can be read."""
    p = path.resolve()
    for anc in (p, *p.parents):
        if not os.stat(anc).st_mode & 0o001:
            return False
    return bool(os.stat(p).st_mode & 0o004)


def worker_env(config: EvalConfig, scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAGENT_", "PYTHON"))}
    env["KAGENT_PREINIT"] = config.backend  # workers bring CUDA up while they wait for their job
    # The project first; then whatever path the evaluator itself runs with (packages outside a venv).
    env["PYTHONPATH"] = os.pathsep.join([str(PROJECT_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    env["PYTHONUNBUFFERED"] = "1"
    env["TORCH_EXTENSIONS_DIR"] = str(scratch / "torch_extensions")  # the evaluation's own, never shared
    env["TMPDIR"] = str(scratch / "tmp")
    if config.gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = config.gpu
    if config.backend == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
        # OpenMP workers sleep once a parallel region ends, in both workers alike: the judge and the
        # candidate take turns on the cores, and workers spinning in one took the cores the other
        # needed (a 336 us relu read 13.5 ms on a loaded 2-core box).
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


async def evaluate(problem_path: str | Path, workspace: str | Path, *, mode: Mode = "test",
                   config: EvalConfig | None = None, baseline_cache: BaselineCache | None = None,
                   pool: WarmPool | None = None) -> EvalResult:
    """Grade the workspace's model_new.py (+ kernels/) against the problem. Never raises for bad candidates.

    With a `pool` (same config), the workers were started before the call; each is still used once.
    """
    cfg = config or EvalConfig()
    state = _State(str(problem_path), cfg, mode)
    ws = Path(await anyio.Path(workspace).resolve())
    problem = Path(await anyio.Path(problem_path).resolve())
    if not await anyio.Path(ws / "model_new.py").is_file():
        state.error = "model_new.py does not exist: write it with write_file"
        return finish(state)
    flags = await anyio.to_thread.run_sync(check_workspace, ws) if cfg.static_checks and not cfg.torch_allowed else []
    if flags:
        state.flags += flags
        state.error = "static checks of model_new.py and kernels/ failed (see the flags)"
        return finish(state)
    state.stage = "build"
    t = time.perf_counter()
    built = await anyio.to_thread.run_sync(build_workspace, ws, cfg)
    state.times.build = time.perf_counter() - t
    if built is not None:
        state.build = BuildSummary(ok=built.ok, cached=built.cached, seconds=built.seconds,
                                   errors=built.errors, flavour=built.flavour,
                                   libraries=[lib.name for lib in built.libraries if lib.lib_dir])
        if not built.ok:
            state.compiled = False
            state.error = "the kernels did not compile:\n" + built.errors
            return finish(state)
    try:
        slot = await pool.take() if pool is not None else await start_slot(cfg)
    except (SandboxUnavailable, OSError) as exc:  # no sandbox, no process, no scratch space: not the agent's doing
        state.error = environment_fault(state, f"the evaluation's workers could not be started: {exc}")
        return finish(state)
    state.sandbox = describe_sandbox(cfg.sandbox, slot.scratch)
    if pool is not None:
        state.quiet = pool.quiet
    try:
        try:
            await anyio.to_thread.run_sync(fill_scratch, slot.scratch, ws, built)
            await anyio.to_thread.run_sync(copy_problem, problem, slot.scratch)
            reuse = await anyio.to_thread.run_sync(ext_cache.seed, cfg.extension_cache_dir, slot.scratch.workspace,
                                                   slot.scratch.root / "torch_extensions", cfg.backend, slot.scratch.run_as)
        except OSError as exc:  # e.g. the disk or /dev/shm is full
            state.error = environment_fault(state, f"the evaluation's scratch folder could not be filled: {exc}")
            await slot.cand.close()
            await slot.judge.close()
            return finish(state)
        await _run_workers(problem, built, slot, state, baseline_cache)
        passed = _correct(state) and not state.flags
        state.times.parts |= await anyio.to_thread.run_sync(ext_cache.keep, reuse, passed)
    finally:
        await anyio.to_thread.run_sync(shutil.rmtree, slot.scratch.root, True)
    return finish(state)


def environment_fault(state: _State, cause: str) -> str:
    """Record that the environment could not finish this evaluation (reward None: the judge is
    trusted code, so its crash, OOM or timeout, a baseline that fails and a worker or sandbox that
    cannot start say nothing about the candidate). Returns the message for the agent."""
    state.environment_fault = cause
    return f"{cause}\n(an environment fault, not your kernel's: this evaluation has no reward)"


class Slot:
    """A judge and a candidate worker, started (torch imported, CUDA up) before an evaluation needs them."""

    def __init__(self, scratch: Scratch, judge: Worker, cand: Worker, nonce: str) -> None:
        self.scratch = scratch
        self.judge = judge
        self.cand = cand
        self.nonce = nonce

    async def preinit(self) -> None:
        """Tell both workers to bring CUDA up (a worker that already died is found by its next use)."""
        for w in (self.judge, self.cand):
            with contextlib.suppress(WorkerFailed):
                await w.send(P.Preinit())


async def start_slot(cfg: EvalConfig, preinit: bool = True) -> Slot:
    """Make a scratch folder and start both workers in it (raises SandboxUnavailable). They import
    torch at once; they bring CUDA up when sent Preinit (now, unless preinit=False)."""
    scratch = await anyio.to_thread.run_sync(make_scratch, cfg.sandbox)
    try:
        cand_cmd = candidate_command(cfg, scratch)
    except SandboxUnavailable:
        await anyio.to_thread.run_sync(shutil.rmtree, scratch.root, True)
        raise
    nonce = secrets.token_hex(16)
    env = worker_env(cfg, scratch.root)
    cand_env = candidate_env(cfg, env)
    if cfg.pin_cpus:
        reserve_timing_cpus()  # from now on compilers in this process keep off those cores
    cores = timing_cpus(cfg.gpu) if cfg.backend == "cuda" and cfg.pin_cpus else None
    if cores is not None:
        cand_env["KAGENT_CPUS"], env["KAGENT_CPUS"] = str(cores[0]), str(cores[1])
    judge_end, cand_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        judge = await Worker.start("judge", [cfg.python, "-m", "skills.evaluator.harness.judge"], env, nonce, link=judge_end)
        cand = await Worker.start("candidate", cand_cmd, cand_env, nonce, cwd=str(scratch.workspace),
                                  log_chars=cfg.log_chars, run_as=scratch.run_as, marks=cfg.clock_marks, link=cand_end)
    finally:  # each worker has its end now: a dead worker then reads as a closed link to the other
        judge_end.close()
        cand_end.close()
    slot = Slot(scratch, judge, cand, nonce)
    if preinit:
        await slot.preinit()
    return slot


def candidate_env(cfg: EvalConfig, env: dict[str, str]) -> dict[str, str]:
    """The allowlisted environment, the rlimits, the sandbox's sized private /tmp as TMPDIR, and
    its private torch extensions folder where the sandbox shows it (one path for all evaluations)."""
    out = clean_env(env) | {"KAGENT_RLIMITS": rlimits_spec(cfg.sandbox, cfg.backend)}
    if "OMP_WAIT_POLICY" in env:
        out["OMP_WAIT_POLICY"] = env["OMP_WAIT_POLICY"]
    out["NVIDIA_TF32_OVERRIDE"] = "0"  # cuBLAS/cuDNN in fp32 (workers start before the problem is known)
    if sandbox_active(cfg.sandbox):
        out["TMPDIR"] = "/tmp"
        out["TORCH_EXTENSIONS_DIR"] = str(EXTENSIONS_MOUNT)
        # No /etc/passwd in the sandbox: getpass.getuser() reads these first (torch 2.11's inductor
        # calls it at import and lets getpwuid's KeyError through; seen on the H200).
        out["USER"] = out["LOGNAME"] = "nobody"
    return out


def candidate_command(cfg: EvalConfig, scratch: Scratch) -> list[str]:
    """The candidate worker's command line, inside the sandbox (raises SandboxUnavailable)."""
    return sandbox_cmd(cfg, scratch, [cfg.python, "-m", "skills.evaluator.harness.candidate"])


def sandbox_cmd(cfg: EvalConfig, scratch: Scratch, cmd: list[str]) -> list[str]:
    """`cmd` (which runs candidate code) inside the sandbox over this scratch folder: of it the
    candidate sees the exchange folder, the library and its workspace copy read-only, and its out/
    and torch_extensions/ (at EXTENSIONS_MOUNT) writable."""
    root = scratch.root
    return sandbox_wrap(cmd, cfg=cfg.sandbox,
                        readable=[root / "exchange", root / "lib", scratch.workspace],
                        writable=[root / "out"], extensions=root / "torch_extensions", cwd=scratch.workspace,
                        gpu=cfg.backend == "cuda")


async def _run_workers(problem: Path, built: BuildResult | None, slot: Slot,
                       state: _State, cache: BaselineCache | None) -> None:
    cfg = state.config
    judge, cand, scratch, nonce = slot.judge, slot.cand, slot.scratch, slot.nonce
    seed = secrets.randbits(62)
    device = "cuda" if cfg.backend == "cuda" else "cpu"
    sizes = cfg.sizes or ("small" if cfg.backend == "cpu" else "default")
    quota = DiskQuota(_quota_paths(cfg, scratch), cfg.sandbox.max_out_bytes)
    group: PidsGroup | None = None
    sampler = memory_sampler(cfg)
    if sampler is not None:
        tree = sampler.watch({"judge": judge.proc.pid, "candidate": cand.proc.pid})
        state.footprint = CandidateFootprint.cuda(sampler.nvml, tree)
    elif cfg.backend == "cpu" and cfg.measure_memory:
        state.footprint = CandidateFootprint.cpu(cand.proc.pid, judge.proc.pid)
    async with anyio.create_task_group() as tg:
        tg.start_soon(judge.drain_stderr)
        tg.start_soon(cand.drain_stderr)
        try:
            group = await _limit_tasks(cand, scratch, state)  # before any candidate code runs
            tg.start_soon(quota.watch, cand.kill)
            await _stages(judge, cand, problem, built, scratch, state, cache, nonce, seed, device, sizes)
        except WorkerFailed as exc:
            state.error = exc.message
            if exc.stage in STAGES:
                state.stage = cast(Stage, exc.stage)
            if exc.flag is not None:
                state.flags.append(exc.flag)
            if exc.worker == "judge":  # the problem refused, or the trusted side failed
                state.error = environment_fault(state, exc.message)
            await _baselines_for_agent(judge, cand, state, cache, nonce, device, sizes)
        finally:
            quota.stop()
            with anyio.CancelScope(shield=True):
                await cand.close()
                await judge.close()
                state.log = cand.log_tail()
                await _after_candidate(group, quota, state)
                if sampler is not None:
                    sampler.trees.remove(tree)
                    state.memory = MemoryUse(judge_bytes=tree.peaks.get("judge"), candidate_bytes=tree.peaks.get("candidate"))


_SAMPLERS: dict[str, MemorySampler | None] = {}


def memory_sampler(cfg: EvalConfig) -> MemorySampler | None:
    """The process's NVML sampler of the evaluation's GPU (started once, kept running: one thread
    serves every evaluation there), or None on the cpu backend and where NVML cannot be read."""
    if cfg.backend != "cuda" or not cfg.measure_memory:
        return None
    key = cfg.gpu or "0"
    if key not in _SAMPLERS:
        nvml = Nvml.open(int(key) if key.isdigit() else 0)
        _SAMPLERS[key] = MemorySampler(nvml).__enter__() if nvml is not None else None
    return _SAMPLERS[key]


def _quota_paths(cfg: EvalConfig, scratch: Scratch) -> list[Path]:
    """The host-visible folders the candidate can fill (RAM in /dev/shm): out/, tmp/ (its TMPDIR
    when unsandboxed) and its own torch extensions folder."""
    return [scratch.root / "out", scratch.root / "tmp", scratch.root / "torch_extensions"]


async def _limit_tasks(cand: Worker, scratch: Scratch, state: _State) -> PidsGroup | None:
    """Row 20: the candidate worker's processes into a pids cgroup of their own, capped at what
    they are now plus max_processes; None where no such cgroup can be made (state.sandbox says so)."""
    if pids_hierarchy() is None:
        return None
    try:
        group = await anyio.to_thread.run_sync(PidsGroup.make, scratch.root.name)
    except OSError as exc:
        state.sandbox = f"{state.sandbox} (but its pids cgroup could not be made: {exc}; tasks not capped)"
        return None
    try:
        await anyio.to_thread.run_sync(group.adopt, cand.proc.pid, state.config.sandbox.max_processes)
    except OSError as exc:
        state.sandbox = f"{state.sandbox} (but the candidate could not be moved into it: {exc}; tasks not capped)"
    return group


async def _after_candidate(group: PidsGroup | None, quota: DiskQuota, state: _State) -> None:
    """Once the candidate is killed: its pids cgroup goes, and one last look at its folders (a
    write between two polls) decides the disk quota, whose failure replaces any other error."""
    if group is not None:
        await group.release()
    if await quota.check():
        state.error = quota.message()
        state.flags.append(quota.flag())


async def _stages(judge: Worker, cand: Worker, problem: Path, built: BuildResult | None,
                  scratch: Scratch, state: _State, cache: BaselineCache | None, nonce: str, seed: int,
                  device: str, sizes: Literal["default", "small"]) -> None:
    cfg = state.config
    t = time.perf_counter()
    state.stage = "import"
    evidence = await anyio.to_thread.run_sync(scan_build, built, scratch.workspace / "kernels",
                                              cfg.build or BuildConfig(backend=cfg.backend))
    t_scan = time.perf_counter() - t
    if state.footprint is not None and device == "cuda":
        # a CUDA context's memory, read on the warm judge before its job (skills/evaluator/footprint.py)
        await judge.wait_for(P.Warm, cfg.timeout_import_s)
        state.footprint.base()
    await judge.send(P.JudgeStart(nonce=nonce, problem_path=str(problem), sizes=sizes, device=device, seed=seed,
                                  n_sets=cfg.n_sets, held_sets=cfg.held_sets, exchange_dir=str(scratch.root / "exchange"),
                                  shape_check=cfg.shape_check, evidence=evidence))
    if state.footprint is not None and device == "cpu":
        # what the warm candidate holds before any candidate code runs (torch imported)
        await cand.wait_for(P.Warm, cfg.timeout_import_s)
        state.footprint.base()
    await cand.send(P.CandStart(
        nonce=nonce, workspace=str(scratch.workspace), lib_path=scratch.lib,
        gpu_memory_fraction=cfg.gpu_memory_fraction if device == "cuda" else None,
        functions=[msgspec.to_builtins(f) for f in built.functions] if built else [],
        flavour=built.flavour if built else "none", device=device,
        precision="tf32" if await anyio.to_thread.run_sync(declares_tf32, problem) else "fp32",
        kernel_names=[r.kernel for r in built.resources] if built else [],
        libraries=[lib.name for lib in built.libraries if lib.lib_dir] if built else []))
    ready = await judge.expect(P.JudgeReady, cfg.timeout_import_s, "computing the reference")
    judge_ready = time.perf_counter() - t
    state.problem, state.problem_id, state.precision = ready.name, ready.problem_id, ready.precision
    state.gpu, state.torch_version, state.input_shapes = ready.gpu, ready.torch_version, ready.input_shapes
    await cand.expect(P.CandImported, cfg.timeout_import_s, "importing model_new.py")
    state.times.workers_ready = time.perf_counter() - t
    state.times.parts.update({"build scan": t_scan, "judge ready": judge_ready,
                              **{f"judge start: {k}": v for k, v in ready.seconds.items()}})

    t = time.perf_counter()
    state.stage = "correctness"
    await cand.send(P.CandInit(nonce=nonce, exchange_dir=str(scratch.root / "exchange"), shape_init=ready.shape_init,
                               judge_reserve_bytes=ready.reserve_bytes if device == "cuda" else None))
    init = await cand.expect(P.CandReady, cfg.timeout_run_s, "building ModelNew")
    with _calls(state):
        await judge.send(P.CheckRequest(nonce=nonce, timing=cfg.timing, limit_s=cfg.timeout_run_s))
        report = await _from_judge(judge, cand, P.CheckReport, cfg.timeout_run_s, "running the input sets")
    state.sets = report.sets
    state.add_flags(report.flags)
    state.times.parts.update({"candidate init": init.seconds, **{f"judge {k}": v for k, v in report.seconds.items()}})
    state.times.correctness = time.perf_counter() - t
    if state.mode == "test" or not all(s.ok for s in state.sets) or state.flags:
        await _baselines_for_agent(judge, cand, state, cache, nonce, device, sizes)
        return

    t = time.perf_counter()
    state.stage = "timing"
    if state.mode != "final" or cfg.paired.min_rounds <= 0:
        state.candidate, _ = await _candidate_round(judge, cand, state, ready, seed, nonce, device, 0)
        await cand.close()  # free its memory and the GPU before baselines run
        state.times.timing = time.perf_counter() - t
        t = time.perf_counter()
        state.stage = "baseline"
        await _baselines(judge, state, cache, nonce, device, sizes)
        state.times.baselines = time.perf_counter() - t
        state.stage = "done"
        return
    await _paired_rounds(judge, cand, state, ready, seed, nonce, device)
    if cache is not None and (state.eager is not None or state.compiled_baseline is not None):
        # the paired rounds' baselines, fresher than any cached ones, serve the next profile()
        cache.put(_baseline_key(state, sizes), BaselineEntry(
            eager=state.eager, compile=state.compiled_baseline, compile_error=state.compile_error,
            measured_at=time.time(), eager_bytes=state.baseline_bytes.get("eager"),
            compile_bytes=state.baseline_bytes.get("compile")))
    state.times.timing = time.perf_counter() - t - (state.times.baselines or 0.0)  # the candidate's rounds
    state.stage = "done"


async def _paired_rounds(judge: Worker, cand: Worker, state: _State, ready: P.JudgeReady, seed: int,
                         nonce: str, device: str) -> None:
    """Final mode: rounds of the candidate's loop and then each baseline's, under the same load,
    until the speedups are decided (skills/evaluator/paired.py); the reward's speedups come from the pairs."""
    cfg = state.config
    cands: list[TimingResult] = []
    cand_samples: list[P.Samples] = []
    bases: dict[str, list[TimingResult]] = {}
    base_samples: dict[str, list[P.Samples]] = {}
    which = list(cfg.baselines)
    while True:
        state.stage = "timing"
        result, samples = await _candidate_round(judge, cand, state, ready, seed, nonce, device, len(cands))
        cands.append(result)
        cand_samples.append(samples)
        if state.flags:
            break  # the reward is -1 whatever the baselines do
        state.stage = "baseline"
        t = time.perf_counter()
        which = await _baseline_round(judge, state, nonce, which, bases, base_samples)
        state.times.baselines = (state.times.baselines or 0.0) + time.perf_counter() - t
        state.paired = [paired_speedup(name, rounds, cands, cfg.margin) for name, rounds in bases.items()]
        if len(cands) >= cfg.paired.max_rounds or (
                len(cands) >= cfg.paired.min_rounds and not any(straddles(s, cfg.margin) for s in state.paired)):
            break
    await cand.close()
    state.candidate = _merged_result(cands, cand_samples)
    state.eager = _merged_result(bases["eager"], base_samples["eager"]) if "eager" in bases else None
    state.compiled_baseline = (_merged_result(bases["compile"], base_samples["compile"])
                               if "compile" in bases else None)


def _merged_result(rounds: list[TimingResult], samples: list[P.Samples]) -> TimingResult:
    """One callable's timing over all its rounds (window and gap: the median round's)."""
    out = _timing_result(merged(samples))
    windows = [r.window_us for r in rounds if r.window_us is not None]
    gaps = [r.between_us for r in rounds if r.between_us is not None]
    out.window_us = statistics.median(windows) if windows else None
    out.between_us = statistics.median(gaps) if gaps else None
    return out


async def _baseline_round(judge: Worker, state: _State, nonce: str, which: list[Literal["eager", "compile"]],
                          bases: dict[str, list[TimingResult]],
                          base_samples: dict[str, list[P.Samples]]) -> list[Literal["eager", "compile"]]:
    """One loop of each baseline in `which`, right after a candidate round; returns the baselines
    to time next round (torch.compile failing is a fact about the problem: not asked again)."""
    cfg = state.config
    async with state.quiet():
        await judge.send(P.BaselineRequest(nonce=nonce, which=which, timing=cfg.timing))
        rep = await judge.expect(P.BaselineReport, cfg.timeout_baseline_s, "timing the baselines")
    for name, samples, took in (("eager", rep.eager, rep.eager_bytes), ("compile", rep.compile, rep.compile_bytes)):
        if samples is not None:
            bases.setdefault(name, []).append(_timing_result(samples))
            base_samples.setdefault(name, []).append(samples)
        if took is not None:
            state.baseline_bytes[name] = max(took, state.baseline_bytes.get(name, 0))
    state.compile_error = state.compile_error or rep.compile_error
    return [b for b in which if not (b == "compile" and rep.compile_error is not None)]


async def _candidate_round(judge: Worker, cand: Worker, state: _State, ready: P.JudgeReady, seed: int,
                           nonce: str, device: str, r: int) -> tuple[TimingResult, P.Samples]:
    """One timed loop of the candidate, driven by the judge (round r's own canaries at secret places,
    a secret subset of calls checked), and every check on it (their flags go to the state); its
    timing and raw samples."""
    cfg = state.config
    async with state.quiet():
        pid = await anyio.to_thread.run_sync(worker_pid, cand.proc.pid)
        clock = TreeClock.open(pid, cand.proc.pid)  # the candidate's threads while the judge measures alone
        try:
            watch = _Idle(clock, pid)
            before = await watch.around(_yardstick(judge, cand, nonce, cfg))
            with _calls(state):
                await judge.send(P.TimeRequest(nonce=nonce, timing=cfg.timing, round=r, checked_fraction=cfg.checked_fraction, limit_s=cfg.timeout_timing_s,
                                           profile_calls=cfg.profile_calls if device == "cuda" and r == 0 else 0,
                                           candidate_pid=pid, candidate_root_pid=cand.proc.pid))
                timed, marks = await cand.marked(_from_judge(judge, cand, P.TimeReport, cfg.timeout_timing_s, "timing"))
            after = await watch.around(_yardstick(judge, cand, nonce, cfg))  # the load may have changed meanwhile
        finally:
            if clock is not None:
                clock.close()
    for k, v in timed.seconds.items():
        state.times.parts[f"judge {k}"] = state.times.parts.get(f"judge {k}", 0.0) + v
    result = _timing_result(timed.samples)
    n = len(timed.samples.per_call_us)
    own = [(c - timed.first_seq, e, t) for c, e, t in marks or [] if timed.first_seq <= c < timed.first_seq + n]
    seen = mark_windows(own, n) if marks is not None else None
    if seen is not None:
        result.window_us = statistics.median(seen[0])
        result.between_us = statistics.median(seen[1]) if seen[1] else None
    flags = (timed.flags + checked_calls_flags(timed) + sync_check(timed.samples)
             + floor_check(result, ready.read_bytes, cfg)
             + clock_check(timed, own if marks is not None else None, cfg.timing.lead_us if device == "cuda" else 0.0,
                           [before, after], HANDOFF_SLACK_US[device], backend=device)
             + background_check(timed) + watch.check())
    state.add_flags(flags)
    return result, timed.samples


@contextlib.contextmanager
def _calls(state: _State) -> Iterator[None]:
    """Around a stretch of the candidate's calls: its footprint's window (skills/evaluator/footprint.py); read
    even when the stretch fails (a call that ran out of memory still counts)."""
    fp = state.footprint
    if fp is None:
        yield
        return
    fp.begin()
    try:
        yield
    finally:
        fp.end()


async def _from_judge(judge: Worker, cand: Worker, kind: type[T], limit_s: float, what: str) -> T:
    """The judge's report on a stage it drives the candidate through. The judge words the candidate's
    own failures (forward raised, timed out); when the candidate died, its exit says how."""
    try:
        return await judge.expect(kind, limit_s + 30.0, what)
    except WorkerFailed as exc:
        if exc.worker != "candidate" or not exc.gone:
            raise
        raise await cand.died(f"while {what}") from None


class _Idle:
    """The CPU of the candidate's other threads while the judge measures its yardsticks alone: the
    candidate has nothing to do then, and threads of its that spin there make the yardsticks (and
    so the bound on its time around each call) grow."""

    def __init__(self, clock: TreeClock | None, pid: int | None) -> None:
        self.clock, self.pid = clock, pid
        self.cpu_ns = self.wall_ns = 0

    async def around(self, work: Awaitable[T]) -> T:
        a = self.clock.sample() if self.clock is not None else None
        out = await work
        b = self.clock.sample() if self.clock is not None else None
        if a is not None and b is not None:
            self.cpu_ns += cpu_between(a, b, main=self.pid)
            self.wall_ns += b.t_ns - a.t_ns
        return out

    def check(self) -> list[Flag]:
        return idle_work_flags(self.cpu_ns, self.wall_ns, "while the evaluator measured its own overheads between the calls")


async def _yardstick(judge: Worker, cand: Worker, nonce: str, cfg: EvalConfig) -> P.YardstickReport:
    """The judge's time (us) for what the candidate's worker does around a timed call (a hop over a
    socket; release the outputs, copy them into the arena, sync): the trusted yardstick for the
    candidate's own time around its calls (clock_check)."""
    await judge.send(P.YardstickRequest(nonce=nonce))
    return await _from_judge(judge, cand, P.YardstickReport, cfg.timeout_run_s, "timing")


async def evaluate_baselines(problem_path: str | Path, *, config: EvalConfig | None = None,
                             baseline_cache: BaselineCache | None = None) -> EvalResult:
    """profile mode with nothing to run (model_new.py still the template): the judge alone draws the
    sets and times the baselines, as it does for a failed candidate (`_baselines_for_agent`), so the
    workflow's first profile() shows the times to beat without a candidate failing at init. The
    times go to the cache under the same key, so the next profile() reuses them."""
    cfg = config or EvalConfig()
    state = _State(str(problem_path), cfg, "profile")
    problem = Path(await anyio.Path(problem_path).resolve())
    nonce = secrets.token_hex(16)
    try:
        scratch = await anyio.to_thread.run_sync(make_scratch, cfg.sandbox)
    except OSError as exc:
        state.error = environment_fault(state, f"the judge's scratch folder could not be made: {exc}")
        return finish(state)
    try:
        try:
            judge = await Worker.start("judge", [cfg.python, "-m", "skills.evaluator.harness.judge"],
                                       worker_env(cfg, scratch.root), nonce)
        except OSError as exc:
            state.error = environment_fault(state, f"the judge could not be started: {exc}")
            return finish(state)
        async with anyio.create_task_group() as tg:
            tg.start_soon(judge.drain_stderr)
            try:
                await _judge_baselines(judge, problem, scratch, state, baseline_cache, nonce)
            except WorkerFailed as exc:
                state.error = environment_fault(state, exc.message)
            finally:
                with anyio.CancelScope(shield=True):
                    await judge.close()
    finally:
        await anyio.to_thread.run_sync(shutil.rmtree, scratch.root, True)
    return finish(state)


async def _judge_baselines(judge: Worker, problem: Path, scratch: Scratch, state: _State,
                           cache: BaselineCache | None, nonce: str) -> None:
    cfg = state.config
    device = "cuda" if cfg.backend == "cuda" else "cpu"
    sizes = cfg.sizes or ("small" if cfg.backend == "cpu" else "default")
    await judge.send(P.Preinit())
    await judge.send(P.JudgeStart(nonce=nonce, problem_path=str(problem), sizes=sizes, device=device,
                                  seed=secrets.randbits(62), n_sets=cfg.n_sets, held_sets=cfg.held_sets,
                                  exchange_dir=str(scratch.root / "exchange"), shape_check=False))
    ready = await judge.expect(P.JudgeReady, cfg.timeout_import_s, "computing the reference")
    state.problem, state.problem_id, state.precision = ready.name, ready.problem_id, ready.precision
    state.gpu, state.torch_version, state.input_shapes = ready.gpu, ready.torch_version, ready.input_shapes
    state.stage = "baseline"
    t = time.perf_counter()
    await _baselines(judge, state, cache, nonce, device, sizes)
    state.times.baselines = time.perf_counter() - t
    state.stage = "load"
    state.error = "ModelNew was not run: only the baselines were timed"


async def _baselines_for_agent(judge: Worker, cand: Worker, state: _State, cache: BaselineCache | None,
                               nonce: str, device: str, sizes: str) -> None:
    """profile mode: even when the candidate failed, report the times to beat (the workflow's first step)."""
    if state.mode != "profile" or not state.problem_id or judge.closed:
        return
    await cand.close()
    try:
        await _baselines(judge, state, cache, nonce, device, sizes)
    except WorkerFailed as exc:
        state.error = f"{state.error}\n(baselines: {exc.message})"


def _baseline_key(state: _State, sizes: str) -> BaselineKey:
    dev_name = state.gpu or f"cpu:{platform.processor() or platform.machine()}:{os.cpu_count()}"
    return BaselineKey(problem_id=state.problem_id, device=dev_name, torch_version=state.torch_version,
                       precision=state.precision, sizes=sizes, timing=state.config.timing.method())


async def _baselines(judge: Worker, state: _State, cache: BaselineCache | None, nonce: str,
                     device: str, sizes: str) -> None:
    cfg = state.config
    key = _baseline_key(state, sizes)
    entry = cache.get(key) if cache is not None else None
    want = [b for b in cfg.baselines if entry is None or (b == "eager" and entry.eager is None)
            or (b == "compile" and entry.compile is None and entry.compile_error is None)]
    if want:
        async with state.quiet():
            await judge.send(P.BaselineRequest(nonce=nonce, which=want, timing=cfg.timing))
            rep = await judge.expect(P.BaselineReport, cfg.timeout_baseline_s, "timing the baselines")
        old = entry
        entry = BaselineEntry(
            eager=_timing_result(rep.eager) if rep.eager else (old.eager if old else None),
            compile=_timing_result(rep.compile) if rep.compile else (old.compile if old else None),
            compile_error=rep.compile_error, measured_at=time.time(),
            eager_bytes=rep.eager_bytes if rep.eager else (old.eager_bytes if old else None),
            compile_bytes=rep.compile_bytes if rep.compile else (old.compile_bytes if old else None))
        if cache is not None:
            cache.put(key, entry)
    if entry is not None:
        state.eager = entry.eager if "eager" in cfg.baselines else None
        state.compiled_baseline = entry.compile if "compile" in cfg.baselines else None
        for name, took in (("eager", entry.eager_bytes), ("compile", entry.compile_bytes)):
            if took is not None:
                state.baseline_bytes[name] = took


def checked_calls_flags(timed: P.TimeReport) -> list[Flag]:
    """Rows 7-9: the judge read the whole outputs of a secret subset of the timed calls (each on a set
    drawn for it alone) and of the probe calls after the loop; each must match its own reference."""
    if not timed.bad_calls:
        return []
    return [Flag(name="timed_output_mismatch",
                 detail=f"{timed.bad_calls} of the {timed.checked_calls} timed calls checked returned wrong values:"
                        " outputs must be computed by each call")]


class WarmPool:
    """Keeps `size` slots started ahead, so an evaluation skips process start, imports and CUDA init.

    Use as `async with WarmPool(config) as pool: await evaluate(..., pool=pool)`. Every slot serves
    one evaluation and is then discarded: workers are still fresh per evaluation.

    A refill starts the next slot's processes (interpreter, torch import) at once, but brings their
    CUDA up only while no evaluation of this pool is in a timed loop (`quiet`), and a timed loop
    waits for a CUDA start in progress: context creation on the same GPU would disturb the timing.
    """

    def __init__(self, config: EvalConfig, size: int = 1) -> None:
        self.config = config
        self.size = size
        self.ready: list[Slot] = []
        self._tg: anyio.abc.TaskGroup | None = None
        self._wake = anyio.Event()
        self._full = anyio.Event()
        self._added = anyio.Event()
        self._warming = False
        self._gate = anyio.Condition()
        self._timing = 0
        self._starting_cuda = 0

    @asynccontextmanager
    async def quiet(self) -> AsyncIterator[None]:
        """Held around a timed loop: no slot of this pool brings CUDA up meanwhile."""
        async with self._gate:
            while self._starting_cuda:
                await self._gate.wait()
            self._timing += 1
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._gate:
                    self._timing -= 1
                    self._gate.notify_all()

    async def _start_cuda(self, slot: Slot) -> None:
        """Once both workers have imported torch and no timed loop runs: Preinit them; until both
        are warm. Only that CUDA start holds the gate (~0.5 s), not the imports (seconds)."""
        await slot.judge.wait_for(P.Started, self.config.timeout_import_s)
        await slot.cand.wait_for(P.Started, self.config.timeout_import_s)
        async with self._gate:
            while self._timing:
                await self._gate.wait()
            self._starting_cuda += 1
        try:
            await slot.preinit()
            await slot.judge.wait_for(P.Warm, self.config.timeout_import_s)
            await slot.cand.wait_for(P.Warm, self.config.timeout_import_s)
        finally:
            async with self._gate:
                self._starting_cuda -= 1
                self._gate.notify_all()

    async def __aenter__(self) -> WarmPool:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._keep_full)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        with anyio.CancelScope(shield=True):
            for slot in self.ready:
                await slot.cand.close()
                await slot.judge.close()
                await anyio.to_thread.run_sync(shutil.rmtree, slot.scratch.root, True)
        self.ready.clear()

    async def _keep_full(self) -> None:
        while True:
            while len(self.ready) < self.size:
                # Shielded: a slot half-started when the pool closes would leak its processes.
                with anyio.CancelScope(shield=True):
                    slot = await start_slot(self.config, preinit=False)
                # Ready once both workers have imported torch and brought CUDA up.
                with anyio.CancelScope(shield=True):
                    self._warming = True
                    await self._start_cuda(slot)
                self.ready.append(slot)
                self._warming = False
                self._added.set()
                self._added = anyio.Event()
            self._full.set()
            await self._wake.wait()
            self._wake = anyio.Event()

    async def take(self) -> Slot:
        """A started slot (or one started now when none is ready); the pool refills behind it."""
        while not self.ready and self._warming:
            await self._added.wait()  # a slot half-way warm beats a cold start
        slot = self.ready.pop(0) if self.ready else await start_slot(self.config)
        self._full = anyio.Event()
        self._wake.set()
        return slot

    async def wait_full(self) -> None:
        """Until every slot is started and warm (e.g. before a latency measurement)."""
        await self._full.wait()


def floor_check(cand: TimingResult, read_bytes: int, cfg: EvalConfig) -> list[Flag]:
    """A call cannot beat reading its inputs and weights once from memory (the cache is flushed)."""
    gbs = cfg.max_bandwidth_gbs or (10_000.0 if cfg.backend == "cuda" else 500.0)
    floor_us = read_bytes / (gbs * 1e3)
    if cand.per_call_us.median > floor_us:  # floor_us >= 0, so a zero or negative time fails too
        return []
    return [Flag(name="implausible_timing",
                 detail=f"measured {cand.per_call_us.median:.3g} us per call, but reading its {read_bytes} input"
                        f" bytes takes at least {floor_us:.3g} us at {gbs:.0f} GB/s: the clock was tampered with")]


CLOCK_SLACK_US = 50.0
"""What the parent's window of a timed call may exceed the reported time by, besides the lead and
CLOCK_SLACK_FRACTION of the window: the Python around the clock reads and the marks' sends."""
CLOCK_SLACK_FRACTION = 0.1
HANDOFF_SLACK_US = {"cuda": 500.0, "cpu": 2000.0}
"""What the candidate's own time around a call (from the judge's request to the start mark, and
from the end mark to its answer) may exceed HANDOFF_FACTOR x the judge's yardstick for that work
by: the worker's Python (the loop, the output checks; ~50-100 us on a loaded 2-core box) and the
wake-ups of a process that just ran a call, which a stand-in that did not wakes faster from. On
the cpu the two processes share the few cores with whatever else runs: an honest content cache
(28 ms calls) was flagged once in four runs at 500 us on the 2-core box."""
HANDOFF_FACTOR = 2.0
MARK_SKEW_US = 20.0
"""How much shorter than the reported time a window may read: the kernel's stamps (realtime clock)
and the candidate's clock (monotonic) tick at the same rate but are different clocks."""


def mark_times(marks: list[Mark], n: int) -> tuple[list[int], list[int]] | None:
    """Per timed call, the stamps (ns) of its start and end marks; None when a call lacks either
    mark or ends before it starts."""
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    for call, end, t in marks:
        (ends if end else starts).setdefault(call, t)
    if not all(i in starts and i in ends and starts[i] <= ends[i] for i in range(n)):
        return None
    return [starts[i] for i in range(n)], [ends[i] for i in range(n)]


def mark_windows(marks: list[Mark], n: int) -> tuple[list[float], list[float]] | None:
    """Per timed call, its marks' window (us), and the time between consecutive calls (us)."""
    got = mark_times(marks, n)
    if got is None:
        return None
    starts, ends = got
    return ([(e - s) / 1e3 for s, e in zip(starts, ends, strict=True)],
            [(starts[i + 1] - ends[i]) / 1e3 for i in range(n - 1)])


OWN_THREADS_CUDA_FRACTION = 0.1
OWN_THREADS_CUDA_US = 100.0
"""On cuda the candidate's other threads have nothing to compute: what they may use inside a
call's window before their CPU stops the main thread's wait being excused (the driver's threads)."""


def own_threads_allowance(window_us: float, backend: str, cores: int) -> float:
    """CPU (us) the candidate's other threads may have used inside one call's window: on the cpu,
    OpenMP workers on every other core it may use for the whole window; on cuda, a little."""
    if backend == "cpu":
        return max(0, cores - 1) * window_us
    return OWN_THREADS_CUDA_FRACTION * window_us + OWN_THREADS_CUDA_US


def excused_waits(timed: P.TimeReport, windows: list[float], backend: str) -> list[float]:
    """Per timed call, the run-queue wait (us) of the candidate's main thread that the clock checks
    take off as the host's: the kernel's count, less the CPU its own other threads used beyond what
    they could have used inside the window (own_threads_allowance; threads that came and went, read
    from the process's total, are spread over the calls). The main thread only waits when every
    core it may use is busy: with other work on the host that is the host's doing, but a candidate
    that keeps its own threads spinning while a helper does the call's work outside the window makes
    its main thread wait too, and that wait is its own."""
    th = timed.threads
    n = len(windows)
    if th is None or len(th.waited_ns) != n or len(th.others_ns) != n or n == 0:
        return [0.0] * n
    unseen = th.unseen_ns / 1e3 / n
    return [max(0.0, q / 1e3 - max(0.0, o / 1e3 + unseen - own_threads_allowance(w, backend, th.cores)))
            for q, o, w in zip(th.waited_ns, th.others_ns, windows, strict=True)]


BACKGROUND_FRACTION = 0.25
BACKGROUND_MIN_US = 5000.0
"""The candidate's other threads may use this share of the time between timed calls (and at least
this much CPU in all) before that counts as work outside forward: honest ones sleep there."""
UNSEEN_MIN_US = 30_000.0
UNSEEN_FRACTION = 0.1
"""CPU that no live thread accounts for (threads that came and went) beyond this much and this
share of the process's CPU: the root's utime + stime come in clock ticks (10 ms), twice."""


def idle_work_flags(cpu_ns: int, wall_ns: int, when: str) -> list[Flag]:
    """`background_work` when the candidate's other threads used more than BACKGROUND_FRACTION of
    `wall_ns` (and BACKGROUND_MIN_US) of CPU while it had nothing to do."""
    cpu, wall = cpu_ns / 1e3, wall_ns / 1e3
    if cpu > max(BACKGROUND_MIN_US, BACKGROUND_FRACTION * wall):
        return [Flag(name="background_work", detail=(
            f"the candidate's other threads used {cpu / 1e3:.1f} ms of CPU in {wall / 1e3:.1f} ms {when}, when no"
            " call was running: work must run inside forward, on its caller's thread or on threads that finish"
            " with the call"))]
    return []


def background_check(timed: P.TimeReport) -> list[Flag]:
    """docs/exploits.md row 31: threads of the candidate's that work when no call is running, read
    from /proc by the judge: CPU between the calls (spinners that keep the machine busy, so the
    judge's yardsticks and the candidate's waits grow), and CPU of threads that exited before the
    judge could see them (a fresh thread per call)."""
    th = timed.threads
    if th is None:
        return []
    idle = idle_work_flags(th.idle_cpu_ns, th.idle_ns, "between the timed calls")
    if idle:
        return idle
    if th.unseen_ns / 1e3 > UNSEEN_MIN_US + UNSEEN_FRACTION * th.cpu_ns / 1e3:
        return [Flag(name="background_work", detail=(
            f"threads that started and exited during the timed loop used {th.unseen_ns / 1e6:.0f} ms of CPU"
            f" ({th.unseen_ns / max(1, th.cpu_ns):.0%} of the candidate's): start worker threads once, at init"))]
    return []


def clock_check(timed: P.TimeReport, marks: list[Mark] | None, lead_us: float,
                yardsticks: list[P.YardstickReport], slack_us: float = HANDOFF_SLACK_US["cuda"],
                backend: str = "cuda") -> list[Flag]:
    """Row 4: the candidate reads its clock in its own process, where code that got past the static
    checks can replace it. Each timed call marks its start and end on a socket the kernel stamps
    (skills/evaluator/marks.py): on the median call the reported (judged) time may fall short of that window
    only by the lead (cuda: it runs inside the window, before the start event; at most 1.1x its
    setting), CLOCK_SLACK_US and CLOCK_SLACK_FRACTION of the window. And work moved out of the
    windows shows in the candidate's own time around each call, which the judge's stamps of its
    request and of the answer bound (same clock as the marks): from the request to the start mark
    (a hop), from the end mark to the answer (copying the outputs into the arena, a hop), against
    the judge's yardsticks for that work (before and after the loop; the larger counts, so a
    machine that got busier meanwhile does not read as moved work) + `slack_us`, on three calls in four."""
    samples = timed.samples
    n = len(samples.per_call_us)
    if marks is None or n == 0:
        return []
    got = mark_times(marks, n)
    if got is None:
        both = len({c for c, e, _ in marks if e} & {c for c, e, _ in marks if not e} & set(range(n)))
        return [Flag(name="harness_tampering", detail=f"the evaluator's own clock saw {both} of the {n} timed calls"
                     " start and end in order (the harness in the candidate's process was changed)")]
    starts, ends = got
    windows = [(e - s) / 1e3 for s, e in zip(starts, ends, strict=True)]
    window = statistics.median(windows)
    # Time the candidate waited for a CPU (the kernel's count, per call) is the host's, not work
    # it moved or hid, unless its own threads kept the cores busy: what is excused comes off what
    # the checks below compare. Never below zero.
    waited = excused_waits(timed, windows, backend)
    excess = statistics.median(w - e - min(q, max(0.0, w - e)) for w, e, q in zip(windows, samples.per_call_us, waited, strict=True))
    # The stamps bracket the clock reads, so a real window is never shorter than its reported time,
    # and the marks together span at least the sum of the reported times: marks sent on their own,
    # not around the calls, fail one or the other.
    if excess < -MARK_SKEW_US or (ends[-1] - starts[0]) / 1e3 < sum(samples.per_call_us) - MARK_SKEW_US:
        return [Flag(name="harness_tampering", detail="the timed calls' marks do not bracket the times reported for"
                     " them (the harness in the candidate's process was changed)")]
    allowed = 1.1 * lead_us + CLOCK_SLACK_US + CLOCK_SLACK_FRACTION * window
    if excess > allowed:
        return [Flag(name="timer_tampering", detail=(
            f"the evaluator's clock saw the median timed call take {window:.0f} us, but the candidate's process"
            f" reported {window - excess:.0f} us (more than {allowed:.0f} us less): its clock was tampered with"))]
    return _handoff_check(timed, starts, ends, yardsticks, slack_us, waited)


def _at(values: list[float], q: float) -> float:
    """The q-quantile of the values (the value a fraction q of them is below)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _handoff_check(timed: P.TimeReport, starts: list[int], ends: list[int],
                   yardsticks: list[P.YardstickReport], slack_us: float, waited: list[float] | None = None) -> list[Flag]:
    if len(timed.sent_ns) != len(starts) or not yardsticks or not all(y.handback_us and y.hop_us for y in yardsticks):
        return []
    hop = max(_at(y.hop_us, 0.75) for y in yardsticks)
    handback = max(statistics.median(y.handback_us) for y in yardsticks)
    q = waited if waited is not None and len(waited) == len(starts) else [0.0] * len(starts)
    # three in four calls took at least this long around them, less what the candidate waited for a CPU
    before = _at([max(0.0, (s - sent) / 1e3 - w) for s, sent, w in zip(starts, timed.sent_ns, q, strict=True)], 0.25)
    after = _at([max(0.0, (back - e) / 1e3 - w) for e, back, w in zip(ends, timed.back_ns, q, strict=True)], 0.25)
    for seen, own, where in ((before, hop, "between the judge's request and the call's start"),
                             (after, hop + handback, "between the call's end and its answer")):
        if seen > HANDOFF_FACTOR * own + slack_us:
            return [Flag(name="timer_tampering", detail=(
                f"at least {seen:.0f} us passed {where} on three in four timed calls, where the worker's own work"
                f" there takes {own:.0f} us: work was moved out of the timed calls"))]
    return []


UNSYNCED_SLACK_US = 50.0
"""Wall time per call beyond the event time and the sync's own cost that is not yet work left
running: on the H200 the GPU's switch from the judge's context (which just wrote the inputs) to the
candidate's falls inside the wall window, and honest kernels read 20-23 us here (2026-12-02) with
the sync's cost measured the same way; a side stream's 20 launches read milliseconds."""


def unsynchronized_work(samples: P.Samples) -> float:
    """Median wall time per call not explained by the event time and the sync's own cost (us)."""
    diffs = sorted(w - e for w, e in zip(samples.wall_us, samples.per_call_us, strict=True))
    return diffs[len(diffs) // 2] - samples.sync_overhead_us if diffs else 0.0


def sync_check(samples: P.Samples) -> list[Flag]:
    """Row 1-2: work that finishes after the call returned (side stream, thread) shows in wall time."""
    if not samples.per_call_us:
        return []
    extra = unsynchronized_work(samples)
    median = sorted(samples.per_call_us)[len(samples.per_call_us) // 2]
    if extra > max(UNSYNCED_SLACK_US, 0.1 * median):
        return [Flag(name="unsynchronized_work",
                     detail=f"each call left ~{extra:.0f} us of work running after it returned (side stream or"
                            " background thread); all work must finish on the caller's stream")]
    return []
