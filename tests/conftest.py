"""Shared fixtures: hermetic build and baseline caches, and workspaces written by the tests."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

# The CLI sizes its tables from COLUMNS when stdout is not a terminal; pytest-xdist's workers
# inherit a narrow one, which elided the columns tests read. One width for every test's subprocess.
os.environ["COLUMNS"] = "160"

PROJECT_ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = PROJECT_ROOT / "problems"

MakeWs = Callable[..., Path]

SYS_MODULES = 'getattr(getattr(os.path, "sys"), "modules")'
"""sys.modules from model_new.py without `import sys`: os.path is posixpath, which imported sys
(the static checks flag this route; tests of the defences behind them turn those checks off)."""


def moved_work_patch(after_work: str = "") -> str:
    """model_new.py header (row 4): wraps the harness's Loop.call, reached through getattr, so each
    timed call's work runs before the call's start mark (then `after_work`, e.g. a sync), and the
    timed call itself returns the stored answer."""
    then = f"\n        {after_work}" if after_work else ""
    return f"""import os

_timing = {SYS_MODULES}["skills.evaluator.harness.timing"]
_call = _timing.Loop.call


def _moved(self, set_index, fn=None, *, tick=None, **kwargs):
    if tick is None:
        return _call(self, set_index, fn, tick=tick, **kwargs)
    real = self.fn if fn is None else fn
    box = []

    def early():
        box.append(real(*self.work))  # the call's work, before its start mark{then}
        tick()

    return _call(self, set_index, lambda *args: box[0], tick=early, **kwargs)


_timing.Loop.call = _moved
"""


@pytest.fixture(scope="session", autouse=True)
def gpu_run_properties(request: pytest.FixtureRequest, record_testsuite_property: Callable[[str, object], None]) -> None:
    """On a `-m gpu` run, the JUnit file names the card and the torch it ran on (`gpu`, `torch`
    properties): scripts/exploit_table.py reads them, so a table made elsewhere from the file names
    the run's machine, not its own. Not under pytest-xdist (`-n`): its workers' suite properties
    never reach the file, so the table falls back to --gpu-name and --torch."""
    mark = request.config.option.markexpr or ""
    if "gpu" not in mark or "not gpu" in mark:
        return
    import torch

    record_testsuite_property("torch", torch.__version__)
    if torch.cuda.is_available():
        record_testsuite_property("gpu", torch.cuda.get_device_name(0))


@pytest.fixture(scope="session")
def build_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One content-addressed build cache for the session (identical sources build once), shared
    by pytest-xdist's workers (entries land by atomic rename, as with the daemon's concurrent
    evaluations)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "kagent-build-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("kagent-build-cache")


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], bytes]) -> tuple[Path, bytes]:
    """`make(folder)` run once per test run, its folder and returned bytes shared by pytest-xdist's
    workers: `--dist worksteal` may hand tests of one module to both workers, and a module fixture
    of real evaluations then ran twice. The first worker runs it under a lock; the other waits and
    reads what it wrote. A `make` that fails leaves nothing, so the next asker runs it again."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.mktemp(name)
        return folder, make(folder)
    base = tmp_path_factory.getbasetemp().parent  # this run's folder, shared by its workers
    folder, out, part = base / name, base / f"{name}.out", base / f"{name}.part"
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not out.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            part.write_bytes(make(folder))
            part.rename(out)
        return folder, out.read_bytes()


def make_ws(root: Path, model_new_src: str | bytes | None, kernels: dict[str, str] | None = None,
            problem: str | Path = "level1/01_relu") -> Path:
    """A new workspace dir under `root`: model.py (copy of the problem), model_new.py, kernels/NAME.

    `problem` is a bundled problem name (`level1/01_relu`) or a path to a problem file;
    `model_new_src=None` leaves model_new.py out; bytes are written as they are.
    """
    n = 0
    while (root / f"ws{n or ''}").exists():
        n += 1
    ws = root / f"ws{n or ''}"
    ws.mkdir(parents=True)
    src = Path(problem) if Path(problem).suffix == ".py" else PROBLEMS / f"{problem}.py"
    shutil.copyfile(src, ws / "model.py")
    if isinstance(model_new_src, bytes):
        (ws / "model_new.py").write_bytes(model_new_src)
    elif model_new_src is not None:
        (ws / "model_new.py").write_text(model_new_src)
    if kernels:
        (ws / "kernels").mkdir()
        for name, text in kernels.items():
            (ws / "kernels" / name).write_text(text)
    return ws


@pytest.fixture
def new_workspace(tmp_path: Path) -> MakeWs:
    """`new_workspace(model_new_src, {"relu.cpp": src}, problem=...)`: make_ws under this test's tmp_path
    (each call makes a new workspace: ws, ws1, ...)."""

    def make(model_new_src: str | bytes | None, kernels: dict[str, str] | None = None,
             problem: str | Path = "level1/01_relu") -> Path:
        return make_ws(tmp_path, model_new_src, kernels, problem)

    return make


@pytest.fixture(scope="session")
def make_workspace() -> Callable[..., Path]:
    """The `make_ws(root, model_new_src, kernels, problem)` helper, for module-scoped fixtures."""
    return make_ws
