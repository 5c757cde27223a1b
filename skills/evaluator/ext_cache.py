"""Reuse of load_inline builds between evaluations of the same code, through a cache only the parent writes.

Every evaluation builds in a torch extensions folder of its own (scratch/torch_extensions, which the
candidate sees at sandbox.EXTENSIONS_MOUNT), so nothing one candidate plants there (a `lock` file
that makes torch wait forever, a doctored object) reaches another evaluation. What is reused goes
through this cache, which the candidate never sees:

    key   = sha256(model_new.py, kernels/*, torch version, Python, backend, machine, CUDA arch)
    seed  before the candidate imports model_new.py: a copy of cache/KEY into its private folder
    keep  after an evaluation that passed (correct, no flags, no error), or a build-only import of
          model_new.py (skills/evaluator/prebuild.py, `kagent bench`), that built a .so: a copy of
          the private folder (regular files only, no `lock`) to cache/.tmp-*, renamed to cache/KEY

Entries are never rewritten, so a reader sees a whole entry or none. Only the same code reuses an
entry, and that code could have written the same files at run time: a candidate gains nothing by
changing its folder after the build. The seeded copy keeps the files' mtimes and build.ninja keeps
its paths (the mount point is the same in every sandbox), so ninja finds nothing to rebuild;
without the sandbox the folder's path differs per evaluation and torch rebuilds (no gain, no harm).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import os
import platform
import secrets
import shutil
import stat
import sys
import time
from pathlib import Path

import msgspec

from skills.evaluator.build import detect_arch
from skills.evaluator.cache_home import user_cache

log = logging.getLogger(__name__)
cuda_arch = functools.cache(detect_arch)
"""GPU 0's nvcc target ("sm_90"; None without a GPU), part of a cuda key: nvidia-smi once per
process, not once per evaluation."""

FORMAT = "kagent-ext-cache-1"
"""Part of every key: bump it when what an entry holds changes."""
MAX_ENTRY_BYTES = 512 * 2**20
"""A larger folder is not kept (a load_inline build is a few MiB; the rest would be junk)."""
SKIPPED = frozenset({"lock"})
"""Names never copied into the cache: torch's build lock (its presence makes the next build wait)."""
SEED_PART = "parent extension cache seed"
"""StageTimes.parts key: seconds spent copying a cached build in (present only on a cache hit)."""
KEEP_PART = "parent extension cache keep"
"""StageTimes.parts key: seconds spent storing this evaluation's build (present only when stored)."""


class Reuse(msgspec.Struct):
    """One evaluation's use of the cache."""

    cache: str | None
    """The cache folder; None: no cache (nothing is seeded or kept)."""
    key: str
    """The entry's name (see the module docstring)."""
    private: str
    """The evaluation's own torch extensions folder on the host."""
    run_as: int | None
    """Owner to give the seeded copy (the candidate's uid), None to leave it the evaluator's."""
    seeded_s: float | None = None
    """Seconds copying the entry in; None on a miss."""


def default_dir() -> Path:
    """The load_inline builds' cache: $XDG_CACHE_HOME/kagent/torch_extensions (cache_home.user_cache)."""
    return user_cache("torch_extensions")


def inductor_dir() -> Path:
    """The judge's torch.compile caches (EvalConfig.compile_cache): $XDG_CACHE_HOME/kagent/inductor
    (cache_home.user_cache)."""
    return user_cache("inductor")


def cache_key(workspace: Path, backend: str) -> str:
    """The entry for this frozen workspace on this machine's torch, Python and device."""
    h = hashlib.sha256()
    arch = (os.environ.get("TORCH_CUDA_ARCH_LIST") or cuda_arch() or "") if backend == "cuda" else ""
    parts: list[bytes | str] = [FORMAT, importlib.metadata.version("torch"), sys.version, backend,
                                platform.machine(), arch, (workspace / "model_new.py").read_bytes()]
    kdir = workspace / "kernels"
    for f in sorted(kdir.iterdir()) if kdir.is_dir() else []:
        parts += [f.name, f.read_bytes()]
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))  # length-prefixed: concatenations cannot collide
        h.update(data)
    return h.hexdigest()


def seed(cache: str | None, workspace: Path, private: Path, backend: str, run_as: int | None) -> Reuse:
    """Copy the cached build of this workspace (if any) into the evaluation's private folder,
    before the candidate imports model_new.py."""
    reuse = Reuse(cache=cache, key=cache_key(workspace, backend) if cache else "", private=str(private),
                  run_as=run_as)
    if cache is None:
        return reuse
    entry = Path(cache) / reuse.key
    if not entry.is_dir():
        return reuse
    began = time.perf_counter()
    shutil.copytree(entry, private, dirs_exist_ok=True)  # copy2: mtimes kept, so ninja sees no change
    if run_as is not None:  # the candidate rewrites .ninja_log and takes torch's lock in there
        for path in [private, *private.rglob("*")]:
            os.chown(path, run_as, run_as)
    reuse.seeded_s = time.perf_counter() - began
    return reuse


def keep(reuse: Reuse, passed: bool) -> dict[str, float]:
    """After the candidate is gone: store its build if it passed and none is cached yet. Returns
    the StageTimes.parts entries (SEED_PART on a hit, KEEP_PART when stored)."""
    out = {SEED_PART: reuse.seeded_s} if reuse.seeded_s is not None else {}
    private = Path(reuse.private)
    if reuse.cache is None or not passed or (Path(reuse.cache) / reuse.key).exists():
        return out
    files = _build_files(private)
    if files is None:
        return out
    began = time.perf_counter()
    try:
        _store(Path(reuse.cache), reuse.key, private, files)
    except OSError as exc:  # a cache that cannot be written costs a later evaluation a build, no more
        log.warning("could not keep the load_inline build in %s: %s", reuse.cache, exc)
        return out
    return out | {KEEP_PART: time.perf_counter() - began}


def _build_files(private: Path) -> list[Path] | None:
    """The regular files worth keeping (no links, devices or lock files), or None when there is no
    built extension (.so) or the folder is over MAX_ENTRY_BYTES."""
    files: list[Path] = []
    total = 0
    for path in private.rglob("*"):
        st = path.lstat()
        if stat.S_ISREG(st.st_mode) and path.name not in SKIPPED:
            files.append(path)
            total += st.st_size
    if total > MAX_ENTRY_BYTES or not any(f.suffix == ".so" for f in files):
        return None
    return files


def _store(cache: Path, key: str, private: Path, files: list[Path]) -> None:
    """Copy `files` into a temporary folder in the cache, then rename it to `key` (atomic: readers
    see the whole entry or none; when another evaluation stored it first, ours is dropped)."""
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = cache / f".tmp-{key[:16]}-{secrets.token_hex(4)}"
    try:
        for f in files:
            dest = tmp / f.relative_to(private)
            dest.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            shutil.copy2(f, dest, follow_symlinks=False)
            # Plain modes: whatever bits the candidate set (setuid, none at all) are not kept.
            os.chmod(dest, 0o755 if f.stat().st_mode & 0o111 else 0o644)
        for d in [tmp, *(p for p in tmp.rglob("*") if p.is_dir())]:
            os.chmod(d, 0o755)
        try:
            tmp.rename(cache / key)
        except OSError:
            if not (cache / key).is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
