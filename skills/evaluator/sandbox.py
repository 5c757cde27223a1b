"""The sandbox around evaluation workers that run candidate code: bubblewrap + rlimits.

What the candidate process sees (docs/sandbox.md; docs/security.md). Its root is an empty
tmpfs; only these are bound into it, read-only unless said otherwise:
- the system: /usr, and /bin, /sbin, /lib, /lib32, /lib64, /libx32 as the host has them (symlinks
  or folders), which hold the C/C++ toolchain load_inline builds with (g++, /usr/lib/gcc,
  /usr/include, /usr/local/cuda*); of /etc only alternatives/ (the compiler links) and the dynamic
  loader's ld.so.cache, ld.so.conf and ld.so.conf.d;
- the interpreter: sys.prefix, sys.base_prefix, site-packages, the PYTHONPATH entries other than
  the project; of the project only skills/ (all the harness imports: no tests/, benchmarks/,
  problems/, runtime/ or .git/);
- folders on LD_LIBRARY_PATH, the trees of $CC and $CXX (when outside /usr), and
  SandboxConfig.ro_binds (an operator's extras);
- on cuda: the GPU's device nodes, the driver's libraries wherever ld.so.cache finds them, the
  CUDA toolkit (CUDA_HOME, CUDA_PATH, nvcc's tree), /sys/devices, /sys/bus/pci, /sys/module/nvidia*
  and /run/nvidia-persistenced (/proc/driver/nvidia comes with its /proc);
- the evaluation's own parts: the frozen workspace copy, the judge's exchange folder, the built
  library; writable: out/, and its private torch extensions folder at EXTENSIONS_MOUNT (seeded by
  the parent from skills/evaluator/ext_cache.py; the cache itself is never bound);
- a fresh /dev, its own /proc, mounted read-only on the cpu backend (so the candidate cannot write
  its own /proc/PID/clear_refs, which would reset the peak resident set the parent reads as its
  memory figure: skills/evaluator/rss.py; nor any other /proc file; on cuda the figure is NVML's and /proc
  stays writable: the CUDA driver did not start with it read-only on the H200), a private empty /tmp (tmpfs); its own PID, IPC, UTS and network
  namespaces (no network at all); a user namespace where it runs as `nobody`, so root's override of
  file permissions is gone.
Not there: other files of the host (the rest of /etc, /home, $HOME, /opt, /var, /srv, /mnt, the
store, the build and extension caches, other evaluations' scratch folders). The parent polls what it writes
against a quota (skills/evaluator/quota.py); its environment is reduced to an allowlist (no API keys or
tokens); rlimits set by the worker before any candidate import cap processes, open files, file
size, CPU time, core dumps and (cpu backend) address space; where the parent can make one, a pids
cgroup caps its tasks whatever its uid (skills/evaluator/pids.py).
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path
from typing import Literal

import msgspec

PROJECT_ROOT = Path(__file__).resolve().parents[2]
EXTENSIONS_MOUNT = Path("/kagent/torch_extensions")
"""Where the candidate sees its private torch extensions folder: one path for every evaluation, so
that the build.ninja of a seeded copy (which names its sources by absolute path) stays unchanged
and ninja reuses its objects."""
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d")
"""All of /etc a worker needs: cc/c++ are links through alternatives/; the loader's configuration
finds libraries outside its default folders (a GPU driver's, say). No passwd: the candidate gets
USER=LOGNAME=nobody (evaluate.candidate_env), which getpass.getuser() reads first."""
CUDA_SYS = ("/sys/devices", "/sys/bus/pci", "/sys/module/nvidia", "/sys/module/nvidia_uvm",
            "/run/nvidia-persistenced")
"""What the CUDA driver and NVML read besides /dev and /proc/driver/nvidia: PCI topology and NUMA
nodes, the modules' parameters, the persistence daemon's socket (untested here: GPU run)."""
DRIVER_LIBS = ("libcuda.so", "libnvidia-", "libnvcuvid.so", "libnvoptix.so")
NSIGHT_COMPUTE_DIRS = ("/opt/nvidia/nsight-compute",)
"""Nsight Compute's install folder, where the toolkit's ncu launcher looks first."""

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
    """Paths to cover with an empty tmpfs although they lie in a bound folder (system folders and
    ro_binds; e.g. a secret under /usr/local). Nothing else of the host is bound: $HOME, the store
    and the caches are not there to begin with."""
    ro_binds: list[str] = msgspec.field(default_factory=list)
    """More files or folders bound read-only at the same path (e.g. a CUDA toolkit or driver
    libraries outside /usr that the evaluator does not find; see docs/sandbox.md)."""
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
    """Quota on what the candidate writes to the evaluation's host-visible folders (out/, its own
    torch_extensions/, and tmp/; RAM in /dev/shm): past it the parent kills the candidate and flags
    disk_quota. The largest bundled problem's outputs take 1.2 GiB (3 sets)."""
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


def clean_env(env: dict[str, str]) -> dict[str, str]:
    """Only allowlisted variables reach the candidate: no API keys, tokens or store paths."""
    out = {k: v for k, v in env.items() if k in ENV_ALLOW or k.startswith("LC_")}
    out["HOME"] = "/tmp"
    return out


def _gpu_nodes() -> list[str]:
    dev = Path("/dev")
    return sorted(str(p) for p in dev.glob("nvidia*")) + sorted(str(p) for p in dev.glob("nvidia-caps/*"))


def wrap(cmd: list[str], *, cfg: SandboxConfig, readable: list[Path], writable: list[Path],
         cwd: Path, gpu: bool, extensions: Path | None = None) -> list[str]:
    """The command line that runs `cmd` inside the sandbox (or `cmd` itself when unsafe is allowed).
    `extensions` (writable) appears at EXTENSIONS_MOUNT."""
    if not active(cfg):
        if not cfg.allow_unsafe:
            why = "sandbox mode is 'none'" if cfg.mode == "none" else f"bubblewrap ({cfg.bwrap}) is not installed"
            raise SandboxUnavailable(
                f"refusing to run untrusted candidate code: {why}. Install bubblewrap (apt-get install"
                " bubblewrap), or for code you trust set KAGENT_UNSAFE_NO_SANDBOX=1 (kagent eval"
                " --unsafe-no-sandbox, SandboxConfig(allow_unsafe=True)).")
        return cmd
    # cpu: /proc read-only, so the candidate cannot reset the peak resident set its memory figure is
    # read from (skills/evaluator/rss.py). cuda: left writable (that figure is NVML's, which no /proc write
    # moves): with /proc read-only the CUDA driver failed to start inside the sandbox on the H200
    # (cudaGetDeviceCount: error 304, 2026-12-03).
    proc = ["--proc", "/proc"] if gpu else ["--proc", "/proc", "--remount-ro", "/proc"]
    args = [cfg.bwrap, "--tmpfs", "/", *_system_args(), "--dev", "/dev", *proc,
            "--size", str(cfg.tmp_bytes), "--tmpfs", "/tmp",
            "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-user",
            "--uid", "65534", "--gid", "65534", "--die-with-parent", "--new-session"]
    bound = [Path(p) for p in SYSTEM_DIRS]
    extra = [Path(p) for p in cfg.ro_binds] + toolchain_paths() + (cuda_paths() if gpu else [])
    args += _ro_binds(extra, bound)
    bound += extra
    # Covered before the interpreter and the evaluation's parts are bound (they may lie below).
    for h in cfg.hide:
        if Path(h).is_dir() and any(_inside(b, Path(h)) for b in bound):
            args += ["--tmpfs", h]
    args += _ro_binds([*needed_roots(), *_library_path()], bound)
    if gpu:
        for node in _gpu_nodes():
            args += ["--dev-bind", node, node]
    for path in readable:
        args += ["--ro-bind", str(path), str(path)]
    for path in writable:
        args += ["--bind", str(path), str(path)]
    if extensions is not None:
        args += ["--bind", str(extensions), str(EXTENSIONS_MOUNT)]
    return [*args, "--chdir", str(cwd), "--", *cmd]


def _system_args() -> list[str]:
    """/usr and the top-level system folders (a merged-/usr host's /bin is a link: kept a link),
    and the few entries of /etc a worker needs."""
    args: list[str] = []
    for d in SYSTEM_DIRS:
        p = Path(d)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), d]
        elif p.is_dir():
            args += ["--ro-bind", d, d]
    for e in ETC_ENTRIES:
        if os.path.exists(e):
            args += ["--ro-bind", e, e]
    return args


def _ro_binds(paths: list[Path], bound: list[Path]) -> list[str]:
    """--ro-bind for each existing path not already visible through a folder in `bound`."""
    args: list[str] = []
    seen = list(bound)
    for p in paths:
        if p.exists() and not any(_inside(b, p) for b in seen):
            args += ["--ro-bind", str(p), str(p)]
            seen.append(p)
    return args


def needed_roots() -> list[Path]:
    """What the worker must read to run: the harness (the project's skills/ alone), the interpreter,
    its package folders, and the PYTHONPATH entries that are not the project (or above it)."""
    paths = [PROJECT_ROOT / "skills", Path(sys.prefix), Path(sys.base_prefix),
             *(Path(p) for p in site.getsitepackages())]
    for entry in filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)):
        if not _inside(Path(entry), PROJECT_ROOT):
            paths.append(Path(entry))
    out: list[Path] = []
    for p in paths:
        r = p.resolve()
        if r.is_dir() and r not in out:
            out.append(r)
    return out


def _library_path() -> list[Path]:
    """LD_LIBRARY_PATH reaches the candidate (ENV_ALLOW), so its folders must be there too."""
    return [Path(p).resolve() for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]


@functools.cache
def toolchain_paths() -> list[Path]:
    """The trees of the compilers $CC and $CXX name (they reach the candidate: ENV_ALLOW) when
    outside /usr, e.g. /opt/gcc on the H200 image, whose load_inline builds run /opt/gcc/bin/g++."""
    found: list[Path] = []
    for var in ("CC", "CXX"):
        exe = shutil.which(os.environ.get(var, ""))
        if exe is not None:
            found.append(Path(exe).resolve().parent.parent)
    return found


@functools.cache
def cuda_paths() -> list[Path]:
    """What a CUDA worker reads outside /usr, /dev and /proc: the toolkit (CUDA_HOME, CUDA_PATH,
    nvcc's tree), the folders ld.so.cache lists the driver's libraries in, and CUDA_SYS."""
    found = [Path(os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        found.append(Path(nvcc).resolve().parent.parent)
    found += _driver_lib_dirs()
    found += [Path(p) for p in CUDA_SYS]
    found += nsight_compute_dirs()
    return [p.resolve() for p in found if p.exists()]


def nsight_compute_dirs() -> list[Path]:
    """Where the toolkit's ncu (a launcher script) looks for Nsight Compute itself: NSIGHT_COMPUTE_DIRS
    and the nsight-compute* folders beside the toolkit's bin/. Bound for the kernel audit and the
    profile skill, whose ncu runs in the sandbox: on the H200 image the launcher sits in
    /usr/local/cuda-13.0/bin and Nsight Compute in /opt/nvidia/nsight-compute, and without the
    latter ncu exited 1 ("nsight-compute directory is not found") in every audit (2026-12-06)."""
    found = [Path(p) for p in NSIGHT_COMPUTE_DIRS]
    for exe in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if exe and os.path.exists(exe):
            found += sorted(Path(exe).resolve().parent.parent.glob("nsight-compute*"))
    return [p for p in found if p.is_dir()]


def _driver_lib_dirs() -> list[Path]:
    """Folders of libcuda and libnvidia-* as the loader's cache lists them (`ldconfig -p`)."""
    exe = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        out = subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=30, check=False).stdout
    except OSError:
        return []
    dirs: list[Path] = []
    for line in out.splitlines():
        name, _, target = line.strip().partition(" => ")
        if name.startswith(DRIVER_LIBS) and target:
            d = Path(target).resolve().parent
            if d not in dirs:
                dirs.append(d)
    return dirs


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
