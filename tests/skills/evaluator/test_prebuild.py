"""Build-only prebuilds (skills/evaluator/prebuild.py): real g++ builds in bubblewrap, no GPU.

    built    the bundled load_inline fixture (verbose, so ninja says what it did) is built into the
             cache; the evaluation of the same code is a hit and ninja finds nothing to redo there
    broken   a source that does not compile: ok=False, the compiler's error in detail, no entry
    env      on cuda the worker sees no GPU and gets arch_list() as TORCH_CUDA_ARCH_LIST
    fork     a fork bomb in model_new.py's import is capped by the build's own pids cgroup
"""

from __future__ import annotations

import errno
import re
import shutil
from pathlib import Path

import anyio
import pytest

from skills.evaluator import ext_cache
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.pids import hierarchy as pids_hierarchy
from skills.evaluator.prebuild import DEFAULT_ARCH, arch_list, prebuild, torch_arch
from skills.evaluator.results import Backend
from skills.evaluator.sandbox import SandboxConfig
from tests.skills.evaluator.test_sandbox_pids import FORK_LOOP

ROOT = Path(__file__).resolve().parents[3]
RELU = ROOT / "problems" / "level1" / "01_relu.py"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

BROKEN = '''from torch.utils.cpp_extension import load_inline

# The compiler stops at once: the missing header is read before torch/extension.h (-include), so
# the test does not pay the ~20 s that parsing torch's headers costs before an error further down.
SOURCE = "int relu_forward(int x) { return x > 0 ? x : 0; }"
ext = load_inline(name="kagent_test_broken_inline", cpp_sources=SOURCE, functions=["relu_forward"],
                  extra_cflags=["-include", "kagent_no_such_header.h"])
'''
# No compile: a stand-in .so (enough for the cache to keep the folder) beside what the worker saw.
ENV_PROBE = '''import os

_dir = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "probe")
os.makedirs(_dir)
open(os.path.join(_dir, "probe.so"), "w").close()
with open(os.path.join(_dir, "env.txt"), "w") as f:
    f.write(repr(os.environ.get("CUDA_VISIBLE_DEVICES")) + " " + repr(os.environ.get("TORCH_CUDA_ARCH_LIST")))
'''


def _workspace(root: Path, model_new: str) -> Path:
    ws = root / "ws"
    ws.mkdir()
    shutil.copyfile(RELU, ws / "model.py")
    (ws / "model_new.py").write_text(model_new)
    return ws


def _config(cache: Path, backend: Backend = "cpu", gpu: str | None = None) -> EvalConfig:
    return EvalConfig(backend=backend, gpu=gpu, sandbox=SandboxConfig(), static_checks=False, log_chars=30000,
                      extension_cache_dir=str(cache))


@needs_bwrap
@pytest.mark.timeout(600)
def test_a_prebuilt_extension_is_a_cache_hit_that_ninja_does_not_redo(tmp_path: Path) -> None:
    source = (FIXTURES / "load_inline_relu.py").read_text()
    verbose = source.replace('functions=["relu_forward"])', 'functions=["relu_forward"], verbose=True)')
    assert verbose != source
    ws, cache = _workspace(tmp_path, verbose), tmp_path / "cache"
    cfg = _config(cache)
    built = prebuild(ws, cfg)
    assert built.ok and built.detail == "built", built.detail
    assert [p.name for p in cache.iterdir()] == [ext_cache.cache_key(ws, "cpu")]
    again = prebuild(ws, cfg)
    assert again.ok and again.detail == "in the cache already" and again.seconds < built.seconds
    r = anyio.run(lambda: evaluate(RELU, ws, mode="test", config=cfg))
    assert r.correct and r.error is None and not r.flags, (r.error, r.log[-3000:])
    assert ext_cache.SEED_PART in r.stages.parts and ext_cache.KEEP_PART not in r.stages.parts
    # The seeded build.ninja is the evaluation's own: same paths, same flags, nothing recompiled.
    assert "ninja: no work to do." in r.log, r.log[-3000:]


@needs_bwrap
@pytest.mark.timeout(600)
def test_a_compile_error_is_reported_not_raised(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    built = prebuild(_workspace(tmp_path, BROKEN), _config(cache))
    assert not built.ok
    assert "importing model_new.py failed (exit status 1)" in built.detail
    assert "kagent_no_such_header.h: No such file" in built.detail and "kagent_test_broken_inline" in built.detail, \
        built.detail
    assert not cache.exists() or not list(cache.iterdir())


@needs_bwrap
@pytest.mark.timeout(300)
def test_the_cuda_worker_sees_no_gpu_and_gets_the_arch_list(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    ws, cache = _workspace(tmp_path, ENV_PROBE), tmp_path / "cache"
    # gpu set: without prebuild's own environment the worker would see GPU 0 and no arch list.
    built = prebuild(ws, _config(cache, backend="cuda", gpu="0"))
    assert built.ok, built.detail
    (entry,) = cache.iterdir()
    assert (entry / "probe" / "env.txt").read_text() == f"'' {arch_list()!r}"


def test_arch_list_respects_torch_cuda_arch_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.6;9.0+PTX")
    assert arch_list() == "8.6;9.0+PTX"
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST")
    sm = ext_cache.cuda_arch()
    assert arch_list() == (torch_arch(sm) if sm else DEFAULT_ARCH)
    assert (torch_arch("sm_90"), torch_arch("sm_100"), torch_arch("sm_120")) == ("9.0+PTX", "10.0+PTX", "12.0+PTX")


def test_without_a_cache_nothing_is_built(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, BROKEN)
    built = prebuild(ws, EvalConfig(backend="cpu", extension_cache_dir=None))
    assert not built.ok and "no extension cache" in built.detail


# Forks sleeping children at import until the kernel refuses (each exits within 30 s by itself, so
# nothing outlives the test even without a cap), then says how far it got and fails the import.
FORK_AT_IMPORT = ("import os, time\n\n" + FORK_LOOP.replace("FORKS", "400").replace("SLEEP", "30")
                  + "with open('/proc/self/cgroup') as f:\n    groups = f.read().replace(chr(10), ' ')\n"
                  + "raise SystemExit(f'forked {made} children, then errno {err}; cgroups: {groups}')\n")


@needs_bwrap
@pytest.mark.skipif(pids_hierarchy() is None, reason="no writable cgroup hierarchy with the pids controller")
def test_a_fork_bomb_in_the_build_only_import_is_capped(tmp_path: Path) -> None:
    """EXPLOITS row 20 in the build-only worker: model_new.py's import forks until the pids cgroup
    (max_processes above what the worker had) refuses; without the cap it made all 400."""
    cfg = EvalConfig(backend="cpu", sandbox=SandboxConfig(max_processes=32), static_checks=False, log_chars=30000,
                     extension_cache_dir=str(tmp_path / "cache"))
    built = prebuild(_workspace(tmp_path, FORK_AT_IMPORT), cfg)
    assert not built.ok
    match = re.search(r"forked (\d+) children, then errno (\d+)", built.detail)
    assert match is not None, built.detail
    made, err = map(int, match.groups())
    assert made < 40 and err == errno.EAGAIN, built.detail
    assert re.search(r"kagent-eval-\w+-build", built.detail), built.detail  # the cap was the build's group
