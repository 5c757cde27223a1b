"""Build-only: compile a workspace's load_inline extension(s) into the parent's extension cache on the
CPU cores alone, so that a later evaluation of the same code starts from the copy (a cache hit).

    key    ext_cache.cache_key of the frozen copy: the entry the evaluation looks up
    hit    the entry is there: nothing to do
    build  a scratch folder as an evaluation's (launch.make_scratch); the build-only worker
           (harness/build_only.py) imports model_new.py, so its load_inline calls compile, in the
           candidate's sandbox, environment and rlimits, its private torch extensions folder at
           EXTENSIONS_MOUNT, with no GPU: CUDA_VISIBLE_DEVICES="" and TORCH_CUDA_ARCH_LIST = arch_list(),
           the arch torch picks for the evaluation's GPU, so that build.ninja and nvcc's flags are the
           evaluation's and ninja finds nothing to redo there
    keep   once the import succeeded, ext_cache.keep stores the folder under the key (a .so needed)

Such an entry needs no more trust than one kept after an evaluation: only the same code reuses it,
and that code could have built the same files at run time (ext_cache.py). A prebuild never grades:
a failed build leaves no entry, and the evaluation builds again and reports the error as usual.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import msgspec

from skills.evaluator import ext_cache
from skills.evaluator.config import EvalConfig
from skills.evaluator.launch import Scratch, candidate_env, fill_scratch, make_scratch, worker_env
from skills.evaluator.pids import PidsGroup
from skills.evaluator.pids import hierarchy as pids_hierarchy
from skills.evaluator.quota import Unreadable, usage
from skills.evaluator.sandbox import SandboxUnavailable, cuda_paths, process_ids
from skills.evaluator.sandbox import wrap as sandbox_wrap

DEFAULT_ARCH = "9.0+PTX"
"""TORCH_CUDA_ARCH_LIST without a GPU to ask (H100, H200)."""
POLL_S = 0.1
"""How often the parent checks the worker's deadline and its folders' quota."""


class Prebuilt(msgspec.Struct, frozen=True):
    """What one build-only prebuild did; it never decides a reward."""

    ok: bool
    """The workspace's build is in the extension cache now (built here, or there already)."""
    seconds: float
    """Wall time of the prebuild."""
    detail: str
    """What happened; when not ok, why (a failed import's output tail: the compiler's errors)."""


def arch_list() -> str:
    """TORCH_CUDA_ARCH_LIST when set; else what torch picks for GPU 0 when it sees it ("9.0+PTX"
    on sm_90: torch adds +PTX to the last arch); else DEFAULT_ARCH."""
    env = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if env:
        return env
    sm = ext_cache.cuda_arch()
    return torch_arch(sm) if sm else DEFAULT_ARCH


def torch_arch(sm: str) -> str:
    """nvcc's target ("sm_90", "sm_100") as one TORCH_CUDA_ARCH_LIST entry with PTX ("9.0+PTX")."""
    return f"{sm[3:-1]}.{sm[-1]}+PTX"


def prebuild(ws: Path, cfg: EvalConfig) -> Prebuilt:
    """Build `ws`'s load_inline extension(s) into cfg.extension_cache_dir. Blocking; never raises
    for what the code does (a compile error, a hang, a crash: ok=False)."""
    began = time.perf_counter()
    if cfg.extension_cache_dir is None:
        return Prebuilt(ok=False, seconds=0.0, detail="no extension cache (extension_cache_dir) to build into")
    try:
        scratch = make_scratch(cfg.sandbox)
    except OSError as exc:
        return Prebuilt(ok=False, seconds=time.perf_counter() - began, detail=f"no scratch folder: {exc}")
    try:
        ok, detail = _build(ws, cfg, scratch)
    except (SandboxUnavailable, OSError) as exc:  # not the code's doing; the evaluation will say so too
        ok, detail = False, f"the build-only worker could not run: {exc}"
    finally:
        shutil.rmtree(scratch.root, ignore_errors=True)
    return Prebuilt(ok=ok, seconds=time.perf_counter() - began, detail=detail)


def _build(ws: Path, cfg: EvalConfig, scratch: Scratch) -> tuple[bool, str]:
    assert cfg.extension_cache_dir is not None
    fill_scratch(scratch, ws, None)
    key = ext_cache.cache_key(scratch.workspace, cfg.backend)  # of the copy, as the evaluation keys it
    entry = Path(cfg.extension_cache_dir) / key
    if entry.is_dir():
        return True, "in the cache already"
    code, tail = _run(build_command(cfg, scratch), build_env(cfg, scratch), cfg, scratch)
    if code != 0:
        why = f"exit status {code}" if isinstance(code, int) else code
        return False, f"importing model_new.py failed ({why}):\n{tail}"
    private = scratch.root / "torch_extensions"
    ext_cache.keep(ext_cache.Reuse(cache=cfg.extension_cache_dir, key=key, private=str(private),
                                   run_as=scratch.run_as), passed=True)
    if not entry.is_dir():
        return False, ("nothing kept: importing model_new.py built no extension (.so), or the build was over"
                       f" {ext_cache.MAX_ENTRY_BYTES >> 20} MiB, or the cache could not be written")
    return True, "built"


def build_command(cfg: EvalConfig, scratch: Scratch) -> list[str]:
    """The build-only worker in the candidate's sandbox, without the GPU's device nodes: of the
    scratch folder it sees the frozen workspace and its private extensions folder (writable, at
    EXTENSIONS_MOUNT); on cuda the toolkit too (raises SandboxUnavailable)."""
    sandbox = cfg.sandbox
    if cfg.backend == "cuda":  # nvcc's tree, which the sandbox binds only with a GPU otherwise
        sandbox = msgspec.structs.replace(sandbox, ro_binds=[*sandbox.ro_binds, *map(str, cuda_paths())])
    cmd = [cfg.python, "-m", "skills.evaluator.harness.build_only", str(scratch.workspace)]
    return sandbox_wrap(cmd, cfg=sandbox, readable=[scratch.workspace], writable=[],
                        extensions=scratch.root / "torch_extensions", cwd=scratch.workspace, gpu=False)


def build_env(cfg: EvalConfig, scratch: Scratch) -> dict[str, str]:
    """The candidate's environment (allowlist, rlimits, TORCH_EXTENSIONS_DIR) with no GPU visible
    and the arch list torch would pick on the evaluation's GPU."""
    env = candidate_env(cfg, worker_env(cfg, scratch.root))
    env["CUDA_VISIBLE_DEVICES"] = ""
    if cfg.backend == "cuda":
        env["TORCH_CUDA_ARCH_LIST"] = arch_list()
    return env


def _run(cmd: list[str], env: dict[str, str], cfg: EvalConfig, scratch: Scratch) -> tuple[int | str, str]:
    """Run the worker to its end (or kill its process group past cfg.timeout_import_s or the disk
    quota on its host-visible folders); its exit status (or why it was killed) and output tail."""
    watched = [scratch.root / "tmp", scratch.root / "torch_extensions"]  # its TMPDIR when unsandboxed
    log = scratch.root / "tmp" / "build-only.log"  # under a watched folder: counts against the quota
    deadline = time.monotonic() + cfg.timeout_import_s
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=scratch.workspace, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                **process_ids(scratch.run_as))  # type: ignore[call-overload]
    group = _limit_tasks(proc.pid, scratch, cfg)
    code: int | str | None = None
    try:
        while code is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(POLL_S)
            if code is None and time.monotonic() > deadline:
                code = f"killed after {cfg.timeout_import_s:.0f} s (timeout_import_s)"
            elif code is None and _over_quota(watched, cfg.sandbox.max_out_bytes):
                code = f"killed: over the {cfg.sandbox.max_out_bytes >> 20} MiB disk quota (max_out_bytes)"
    finally:
        with contextlib.suppress(ProcessLookupError):  # whatever it left running (no sandbox) goes too
            os.killpg(proc.pid, signal.SIGKILL)
        if group is not None:  # and what double-forked out of the process group
            group.release_blocking()
        proc.wait()
    with log.open("rb") as f:
        f.seek(max(0, log.stat().st_size - cfg.log_chars))
        return code, f.read().decode(errors="replace")


def _limit_tasks(pid: int, scratch: Scratch, cfg: EvalConfig) -> PidsGroup | None:
    """EXPLOITS row 20 for the build-only worker, as for the candidate worker (stages._limit_tasks):
    its processes in a pids cgroup of their own, capped at what they are now plus max_processes, so
    that a fork bomb in model_new.py's import is stopped here too; None where no such cgroup can be
    made (the sandbox's PID namespace and the timeout still end it)."""
    if pids_hierarchy() is None:
        return None
    try:
        group = PidsGroup.make(f"{scratch.root.name}-build")
    except OSError:
        return None
    try:
        group.adopt(pid, cfg.sandbox.max_processes)
    except OSError:
        group.release_blocking()
        return None
    return group


def _over_quota(paths: list[Path], limit: int) -> bool:
    try:
        return usage(paths, limit) > limit
    except Unreadable:  # what cannot be measured must not pass
        return True
