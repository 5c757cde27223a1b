"""The evaluation's processes: its scratch folder, the workers' environments and command lines
(the candidate's inside the sandbox), and a started judge + candidate pair (`Slot`)."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import socket
import tempfile
from pathlib import Path

import anyio
import msgspec

from skills.evaluator.affinity import reserve_timing_cpus, timing_cpus
from skills.evaluator.build import BuildResult
from skills.evaluator.config import EvalConfig
from skills.evaluator.ext_cache import inductor_dir
from skills.evaluator.harness import protocol as P
from skills.evaluator.pids import hierarchy as pids_hierarchy
from skills.evaluator.sandbox import (
    EXTENSIONS_MOUNT,
    PROJECT_ROOT,
    SandboxConfig,
    SandboxUnavailable,
    clean_env,
    needed_roots,
    rlimits_spec,
)
from skills.evaluator.sandbox import active as sandbox_active
from skills.evaluator.sandbox import wrap as sandbox_wrap
from skills.evaluator.workers import Worker, WorkerFailed

log = logging.getLogger(__name__)


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


SCRATCH_PREFIX = "kagent-eval-"
OWNER_FILE = "owner"
"""In each scratch folder's root (never bound into the sandbox): the pid and start time of the
process that made it, so that a later process can tell a folder whose maker was killed."""


def _scratch_base() -> Path:
    return Path("/dev/shm") if os.path.isdir("/dev/shm") else Path(tempfile.gettempdir())


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), None when no
    such process: with the pid, it names one process even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def make_scratch(sandbox: SandboxConfig) -> Scratch:
    """A fresh folder whose permissions the evaluator controls; the sandbox binds its parts."""
    root = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=_scratch_base()))
    (root / OWNER_FILE).write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")
    run_as = candidate_uid(sandbox)
    os.chmod(root, 0o711)
    for sub in ("exchange", "lib", "out", "tmp", "torch_extensions", "ws", "ws/kernels"):
        (root / sub).mkdir(mode=0o755)
        if sub in ("out", "tmp", "torch_extensions") and run_as is not None:
            os.chown(root / sub, run_as, run_as)
    return Scratch(root=root, workspace=root / "ws", lib=None, run_as=run_as)


def sweep_scratch(base: Path | None = None) -> list[Path]:
    """Remove the scratch folders whose maker is gone: its pid no longer runs, or runs another
    process (another start time). An evaluation removes its own folder when it ends, also on error
    and cancellation; only a killed process (SIGKILL, the OOM killer, a lost machine) leaves one.
    Folders of live processes, and folders without an owner file (being made, or made by a kagent
    from before the file), are kept. Returns what was removed."""
    removed = []
    for path in sorted((base or _scratch_base()).glob(SCRATCH_PREFIX + "*")):
        try:
            pid_text, started = (path / OWNER_FILE).read_text().split()
            pid = int(pid_text)
        except (OSError, ValueError):
            continue
        if pid > 0 and _start_time(pid) == started:
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed


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
    # cuBLAS/cuDNN in fp32 until the problem allows TF32 (harness/judge.py set_precision drops it):
    # the candidate needs it so that library calls cannot use TF32 on an fp32 problem, and the judge
    # runs under it too, because it also costs host time a call (H100, level3/03_mlp_block: 237 us a
    # forward with it, 123 us without): the eager and torch.compile baselines are timed under the
    # candidate's conditions.
    env["NVIDIA_TF32_OVERRIDE"] = "0"
    if config.backend == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
        # OpenMP workers sleep once a parallel region ends, in both workers alike: the judge and the
        # candidate take turns on the cores, and workers spinning in one took the cores the other
        # needed (a 336 us relu read 13.5 ms on a loaded 2-core box).
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


def judge_env(config: EvalConfig, env: dict[str, str]) -> dict[str, str]:
    """The judge's environment: the workers' (worker_env), and where it keeps torch.compile's caches
    between evaluations (EvalConfig.compile_cache; the candidate's allowlisted environment never
    carries it). Without it inductor writes under TMPDIR, the evaluation's scratch folder, and every
    evaluation compiles its baselines cold. A TORCHINDUCTOR_CACHE_DIR in the evaluator's own
    environment is not passed on (inductor sets it in a process that compiled), so the setting alone
    decides."""
    cold = {k: v for k, v in env.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    if not config.compile_cache:
        return cold
    folder = inductor_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:  # a cold compile, not a failed evaluation
        log.warning("torch.compile cache %s unusable (%s): the baselines compile cold", folder, exc)
        return cold
    return cold | {"TORCHINDUCTOR_CACHE_DIR": str(folder)}


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

    async def discard(self) -> None:
        """Both workers closed and the scratch folder removed (a slot nobody will evaluate in)."""
        await _abandon(self.scratch, self.cand, self.judge)


async def _abandon(scratch: Scratch, *workers: Worker) -> None:
    """Close the workers and remove the scratch folder, shielded from cancellation (what is
    abandoned must not stay behind)."""
    with anyio.CancelScope(shield=True):
        for w in workers:
            await w.close()
        await anyio.to_thread.run_sync(shutil.rmtree, scratch.root, True)


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
    judge: Worker | None = None
    try:
        try:
            judge = await Worker.start("judge", [cfg.python, "-m", "skills.evaluator.harness.judge"], judge_env(cfg, env), nonce,
                                       link=judge_end)
            cand = await Worker.start("candidate", cand_cmd, cand_env, nonce, cwd=str(scratch.workspace),
                                      log_chars=cfg.log_chars, run_as=scratch.run_as, marks=cfg.clock_marks,
                                      link=cand_end)
        finally:  # each worker has its end now: a dead worker then reads as a closed link to the other
            judge_end.close()
            cand_end.close()
    except BaseException:  # a worker that could not start, or a cancel: nothing of the slot stays behind
        await _abandon(scratch, *([judge] if judge is not None else []))
        raise
    slot = Slot(scratch, judge, cand, nonce)
    if preinit:
        try:
            await slot.preinit()
        except BaseException:
            await slot.discard()
            raise
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
