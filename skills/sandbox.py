"""The sandbox around evaluation workers that run candidate code: bubblewrap + rlimits.

What the candidate process sees (README "Security model"):
- the root filesystem read-only; a private empty /tmp; a fresh /dev with only the leased GPU's
  device nodes added; its own PID, IPC and network namespaces (no network at all);
- a user namespace where it runs as `nobody`, so root's override of file permissions is gone;
- $HOME, the store and workspace folders and the cache hidden under empty tmpfs mounts, with only
  the paths it needs bound back read-only: the project (harness code), the Python prefix, the
  workspace snapshot, the built library;
- writable: only the evaluation's `out/` and `tmp/` folders (and torch's extension build dir),
  whose total size the parent polls against a quota (skills/quota.py);
- an environment reduced to an allowlist (no API keys or tokens);
- rlimits set by the worker before any candidate import: processes, open files, file size, CPU
  time, core dumps, and (cpu backend) address space; and where the parent can make one, a pids
  cgroup that caps its tasks whatever its uid (skills/pids.py).
"""

from __future__ import annotations

import os
import shutil
import site
import sys
from pathlib import Path
from typing import Literal

import msgspec

ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",
             "CUDA_VISIBLE_DEVICES", "CUDA_MODULE_LOADING", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
             "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCH_CUDA_ARCH_LIST", "TORCH_EXTENSIONS_DIR", "CC", "CXX",
             "PYTHONPATH", "PYTHONUNBUFFERED", "TMPDIR", "TRITON_CACHE_DIR", "NCCL_NVLS_ENABLE",
             "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS", "KAGENT_RLIMITS")


class SandboxConfig(msgspec.Struct, kw_only=True, frozen=True):
    """How candidate workers are confined."""

    mode: Literal["bwrap", "none"] = msgspec.field(
        default_factory=lambda: "none" if os.environ.get("KAGENT_SANDBOX_MODE") == "none" else "bwrap")
    """bwrap (bubblewrap) or none (env KAGENT_SANDBOX_MODE); none requires allow_unsafe."""
    allow_unsafe: bool = msgspec.field(default_factory=lambda: os.environ.get("KAGENT_UNSAFE_NO_SANDBOX") == "1")
    """Run candidate code without a sandbox when bubblewrap is missing or mode is none (trusted code only;
    env KAGENT_UNSAFE_NO_SANDBOX=1)."""
    bwrap: str = "bwrap"
    """The bubblewrap executable."""
    hide: list[str] = msgspec.field(default_factory=list)
    """More paths to hide (e.g. a store outside $HOME); $HOME and the XDG dirs are always hidden."""
    max_processes: int = 512
    """Tasks (processes and threads) the candidate may add: RLIMIT_NPROC headroom above the user's
    current count, and the same headroom in the evaluation's pids cgroup where one can be made."""
    max_open_files: int = 1024
    """RLIMIT_NOFILE."""
    max_file_bytes: int = 4 * 2**30
    """RLIMIT_FSIZE: largest file the worker may write (its outputs file included)."""
    tmp_bytes: int = 2**30
    """Size of the private /tmp (a tmpfs: RAM) the candidate gets as TMPDIR."""
    max_out_bytes: int = 8 * 2**30
    """Quota on what the candidate writes to the evaluation's host-visible folders (out/, and tmp/ and
    torch_extensions/ when they are the evaluation's own; RAM in /dev/shm): past it the parent kills
    the candidate and flags disk_quota. The largest bundled problem's outputs take 1.2 GiB (3 sets)."""
    max_cpu_seconds: int = 1800
    """RLIMIT_CPU: CPU seconds (all threads) before SIGXCPU/SIGKILL."""
    max_address_bytes: int = 32 * 2**30
    """RLIMIT_AS on the cpu backend (CUDA needs a huge address space, so not on cuda)."""


class SandboxUnavailable(Exception):
    """bubblewrap is missing and the operator did not allow unsafe evaluation."""


def available(cfg: SandboxConfig) -> bool:
    return shutil.which(cfg.bwrap) is not None


def active(cfg: SandboxConfig) -> bool:
    """Candidate code will run inside bubblewrap (mode bwrap and the executable is installed)."""
    return cfg.mode == "bwrap" and available(cfg)


def _hidden_roots() -> list[Path]:
    home = Path.home()
    xdg = [os.environ.get(v) for v in ("XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")]
    return [home, *(Path(p) for p in xdg if p)]


def clean_env(env: dict[str, str]) -> dict[str, str]:
    """Only allowlisted variables reach the candidate: no API keys, tokens or store paths."""
    out = {k: v for k, v in env.items() if k in ENV_ALLOW or k.startswith("LC_")}
    out["HOME"] = "/tmp"
    return out


def _gpu_nodes() -> list[str]:
    dev = Path("/dev")
    return sorted(str(p) for p in dev.glob("nvidia*")) + sorted(str(p) for p in dev.glob("nvidia-caps/*"))


def wrap(cmd: list[str], *, cfg: SandboxConfig, readable: list[Path], writable: list[Path],
         cwd: Path, gpu: bool) -> list[str]:
    """The command line that runs `cmd` inside the sandbox (or `cmd` itself when unsafe is allowed)."""
    if not active(cfg):
        if not cfg.allow_unsafe:
            why = "sandbox mode is 'none'" if cfg.mode == "none" else f"bubblewrap ({cfg.bwrap}) is not installed"
            raise SandboxUnavailable(
                f"refusing to run untrusted candidate code: {why}. Install bubblewrap (apt-get install"
                " bubblewrap), or for code you trust set KAGENT_UNSAFE_NO_SANDBOX=1 (kagent eval"
                " --unsafe-no-sandbox, SandboxConfig(allow_unsafe=True)).")
        return cmd
    args = [cfg.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--size", str(cfg.tmp_bytes), "--tmpfs", "/tmp",
            "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-user",
            "--uid", "65534", "--gid", "65534", "--die-with-parent", "--new-session"]
    if gpu:
        for node in _gpu_nodes():
            args += ["--dev-bind", node, node]
    hidden = [h for h in [*_hidden_roots(), *(Path(p) for p in cfg.hide)] if h.is_dir()]
    for h in hidden:
        args += ["--tmpfs", str(h)]
    # The project, the interpreter and its packages may live under a hidden folder (or /tmp):
    # bind them back, read-only, over the empty tmpfs.
    for need in needed_roots():
        if any(_inside(h, need) for h in [*hidden, Path("/tmp"), Path("/dev")]):
            args += ["--ro-bind", str(need), str(need)]
    for path in readable:
        args += ["--ro-bind", str(path), str(path)]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    return [*args, "--chdir", str(cwd), "--", *cmd]


def needed_roots() -> list[Path]:
    """What the worker must read to run: the project, the interpreter, its package folders."""
    project = Path(__file__).resolve().parent.parent
    paths = [project, Path(sys.prefix), Path(sys.base_prefix), *(Path(p) for p in site.getsitepackages())]
    paths += [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    out: list[Path] = []
    for p in paths:
        r = p.resolve()
        if r.is_dir() and r not in out:
            out.append(r)
    return out


def _inside(parent: Path, child: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
    except ValueError:
        return False
    return True


def process_ids(run_as: int | None) -> dict[str, object]:
    """Keyword arguments for subprocess/anyio.open_process that run a child as uid=gid=run_as."""
    return {"user": run_as, "group": run_as, "extra_groups": []} if run_as is not None else {}


def rlimits_spec(cfg: SandboxConfig, backend: str) -> str:
    """Encoded for the worker (KAGENT_RLIMITS), which applies them before importing candidate code."""
    parts = [f"NPROC={cfg.max_processes}", f"NOFILE={cfg.max_open_files}", f"FSIZE={cfg.max_file_bytes}",
             f"CPU={cfg.max_cpu_seconds}", "CORE=0"]
    if backend == "cpu":
        parts.append(f"AS={cfg.max_address_bytes}")
    return ",".join(parts)


def apply_rlimits(spec: str) -> None:
    """Lower soft and hard limits (irreversibly for this process). NPROC counts from the current total."""
    import resource

    for item in filter(None, spec.split(",")):
        name, value = item.split("=")
        limit = int(value)
        if name == "NPROC":
            limit += _user_tasks()
        res = getattr(resource, f"RLIMIT_{name}")
        soft, hard = resource.getrlimit(res)
        new = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(res, (new, new))


def _user_tasks() -> int:
    """Threads and processes of this user: what RLIMIT_NPROC counts."""
    uid = os.getuid()
    count = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.stat(f"/proc/{pid}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{pid}/task"))
            except OSError:
                continue
    return count
