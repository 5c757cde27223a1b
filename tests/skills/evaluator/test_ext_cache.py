"""Private torch extensions folders and the parent's load_inline build cache (skills/evaluator/ext_cache.py).

One sequence of real evaluations in bubblewrap shares one cache:
    planter  plants a `lock`, a fake .so and a bad build.ninja in its extensions folder, probes the cache
    inline   the bundled load_inline fixture, cold: builds in the sandbox, passes, is kept
    again    the same fixture: seeded from the cache, so its build is skipped
    planter  again: seeded with its own entry, which holds no `lock`
Before this change one shared folder made the planted lock stall the next load_inline build 300 s.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import anyio
import msgspec
import pytest

from skills.evaluator import ext_cache
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.results import EvalResult
from skills.evaluator.sandbox import SandboxConfig
from tests.conftest import once_per_run

ROOT = Path(__file__).resolve().parents[3]
RELU = ROOT / "problems" / "level1" / "01_relu.py"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NAME = "kagent_test_relu_inline"  # the extension tests/fixtures/load_inline_relu.py builds

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

# Static checks off: the runtime defences alone are under test. Then the fair relu_cpu kernel.
PLANTER = '''import os

_dir = os.path.join(os.environ["TORCH_EXTENSIONS_DIR"], "@NAME@")
print(f"PROBE seeded-lock {os.path.exists(os.path.join(_dir, 'lock'))}", flush=True)
print(f"PROBE seeded-so {os.path.exists(os.path.join(_dir, '@NAME@.so'))}", flush=True)
os.makedirs(_dir, exist_ok=True)
for _name, _data in (("lock", b""), ("@NAME@.so", b"not an ELF"), ("build.ninja", b"garbage\\n")):
    with open(os.path.join(_dir, _name), "wb") as _f:
        _f.write(_data)
for _path in ("@CACHE@", "@CACHE@/planted"):
    try:
        if _path.endswith("planted"):
            open(_path, "w").close()
        else:
            os.listdir(_path)
        print(f"PROBE cache {_path}: ALLOWED", flush=True)
    except OSError as exc:
        print(f"PROBE cache {_path}: DENIED {exc.strerror}", flush=True)
'''


@dataclass
class Runs:
    cache: Path
    planter: EvalResult
    inline: EvalResult
    again: EvalResult
    planter_again: EvalResult


def workspace(root: Path, name: str, model_new: str, kernels: bool) -> Path:
    ws = root / name
    if kernels:
        shutil.copytree(FIXTURES / "relu_cpu", ws)
    else:
        ws.mkdir()
        shutil.copyfile(RELU, ws / "model.py")
    (ws / "model_new.py").write_text(model_new)
    return ws


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")

    def make(root: Path) -> bytes:
        cache = root / "cache"
        cache.mkdir()  # there from the start, so the planter's probe of it means something
        config = EvalConfig(backend="cpu", sandbox=SandboxConfig(), static_checks=False, log_chars=30000,
                            extension_cache_dir=str(cache))
        planter_src = (PLANTER.replace("@NAME@", NAME).replace("@CACHE@", str(cache))
                       + (FIXTURES / "relu_cpu" / "model_new.py").read_text())
        planter = workspace(root, "planter", planter_src, kernels=True)
        inline = workspace(root, "inline", (FIXTURES / "load_inline_relu.py").read_text(), kernels=False)

        def run(ws: Path) -> EvalResult:
            return anyio.run(lambda: evaluate(RELU, ws, mode="test", config=config))

        return msgspec.json.encode([run(planter), run(inline), run(inline), run(planter)])

    root, data = once_per_run(tmp_path_factory, "ext-cache", make)
    return Runs(root / "cache", *msgspec.json.decode(data, type=list[EvalResult]))


def passed(r: EvalResult) -> None:
    assert r.correct and r.error is None and r.flags == [], (r.error, r.flags, r.log[-3000:])


@needs_bwrap
@pytest.mark.timeout(900)
def test_load_inline_builds_and_passes_in_the_sandbox(runs: Runs) -> None:
    r = runs.inline
    passed(r)
    assert r.build is None  # model_new.py built its own extension
    assert all(o.max_abs_err == 0.0 for s in r.sets for o in s.outputs)
    assert ext_cache.SEED_PART not in r.stages.parts and ext_cache.KEEP_PART in r.stages.parts


@needs_bwrap
@pytest.mark.timeout(900)
def test_planted_lock_does_not_reach_the_next_evaluation(runs: Runs) -> None:
    """(a) The planter passes; the next load_inline evaluation builds in a folder of its own, so
    it passes in normal time instead of waiting for the planted lock (timeout_import_s, 300 s)."""
    passed(runs.planter)
    passed(runs.inline)
    assert runs.inline.stages.workers_ready is not None and runs.inline.stages.workers_ready < 200
    assert not list(runs.cache.rglob("lock")), "a lock file reached the cache"
    # The planter's own entry (its fake .so) comes back to the same code only, without the lock.
    passed(runs.planter_again)
    assert ext_cache.SEED_PART in runs.planter_again.stages.parts
    assert "PROBE seeded-so True" in runs.planter_again.log
    assert "PROBE seeded-lock False" in runs.planter_again.log


@needs_bwrap
@pytest.mark.timeout(900)
def test_second_evaluation_reuses_the_cached_build(runs: Runs) -> None:
    """(b) The hit is read from StageTimes.parts; the time is reported, not asserted beyond < cold."""
    first, again = runs.inline, runs.again
    passed(again)
    assert ext_cache.SEED_PART in again.stages.parts and ext_cache.KEEP_PART not in again.stages.parts
    assert first.stages.workers_ready is not None and again.stages.workers_ready is not None
    print(f"load_inline import: cold {first.stages.workers_ready:.1f} s, cached {again.stages.workers_ready:.1f} s")
    assert again.stages.workers_ready < first.stages.workers_ready


@needs_bwrap
@pytest.mark.timeout(900)
def test_cache_is_not_visible_to_the_candidate(runs: Runs) -> None:
    """(c) The cache is not bound: the candidate can neither list nor write it, even holding entries."""
    for r in (runs.planter, runs.planter_again):
        assert f"PROBE cache {runs.cache}: DENIED No such file or directory" in r.log, r.log[-2000:]
        assert f"PROBE cache {runs.cache}/planted: DENIED" in r.log
    assert not (runs.cache / "planted").exists()
    assert len([p for p in runs.cache.iterdir() if not p.name.startswith(".")]) == 2  # inline, planter


# ---- the cache's parts, without evaluations -------------------------------------------------------


def build_folder(root: Path) -> Path:
    """A private extensions folder as torch leaves it, plus what a candidate might add."""
    d = root / "private" / NAME
    d.mkdir(parents=True)
    for name in ("build.ninja", "main.cpp", "main.o", f"{NAME}.so", "lock"):
        (d / name).write_bytes(name.encode())
    (d / "link").symlink_to("/etc/hostname")
    os.chmod(d / f"{NAME}.so", 0o4755)
    return root / "private"


def test_key_follows_the_code(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "kernels").mkdir(parents=True)
    (ws / "model_new.py").write_text("a")
    key = ext_cache.cache_key(ws, "cpu")
    assert ext_cache.cache_key(ws, "cpu") == key
    (ws / "kernels" / "k.cpp").write_text("b")
    assert ext_cache.cache_key(ws, "cpu") != key
    assert ext_cache.cache_key(ws, "cuda") != ext_cache.cache_key(ws, "cpu")


def test_keep_copies_regular_files_once_and_seed_keeps_mtimes(tmp_path: Path) -> None:
    private = build_folder(tmp_path)
    cache = tmp_path / "cache"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "model_new.py").write_text("x")
    reuse = ext_cache.seed(str(cache), ws, private, "cpu", None)
    assert reuse.seeded_s is None
    assert ext_cache.keep(reuse, passed=False) == {} and not cache.exists()
    assert ext_cache.KEEP_PART in ext_cache.keep(reuse, passed=True)
    entry = cache / reuse.key / NAME
    assert sorted(p.name for p in entry.iterdir()) == sorted(["build.ninja", "main.cpp", "main.o", f"{NAME}.so"])
    assert (entry / f"{NAME}.so").stat().st_mode & 0o7777 == 0o755  # no setuid bit kept
    assert ext_cache.keep(reuse, passed=True) == {}  # an entry is never rewritten
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    again = ext_cache.seed(str(cache), ws, fresh, "cpu", None)
    assert again.seeded_s is not None
    assert ext_cache.keep(again, passed=True) == {ext_cache.SEED_PART: again.seeded_s}
    assert (fresh / NAME / "main.o").stat().st_mtime_ns == (private / NAME / "main.o").stat().st_mtime_ns
    assert not [p for p in cache.iterdir() if p.name.startswith(".tmp-")]


def test_keep_needs_a_built_extension(tmp_path: Path) -> None:
    private = tmp_path / "private"
    (private / NAME).mkdir(parents=True)
    (private / NAME / "lock").write_text("")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "model_new.py").write_text("x")
    reuse = ext_cache.seed(str(tmp_path / "cache"), ws, private, "cpu", None)
    assert ext_cache.keep(reuse, passed=True) == {}
    assert ext_cache.keep(ext_cache.seed(None, ws, private, "cpu", None), passed=True) == {}
