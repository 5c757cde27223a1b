"""What `pip install .` gives (issue 20): the daemon's and the CLI's dependencies are core, the
trainer's an extra that, when missing, is one line naming it.

The core-only environment is real: a fresh venv whose site-packages holds exactly the
distributions pyproject's `dependencies` name and what they require (linked from this venv, so
nothing is downloaded). In it kagentd starts, `kagent solve` runs an episode through it, and the
trainer says what to install.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import distribution, packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.kagentd_harness import RELU, ROOT, SUBMIT, Kagentd, Scripted

OPTIONAL = {"pyarrow": "runtime", "transformers": "train", "ray": "ray", "kagent_ext": "the harness's own extension"}
"""Imported by runtime/ or skills/ only inside functions, with a message when missing."""


def project() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]  # type: ignore[no-any-return]


def core() -> set[str]:
    return {Requirement(r).name.lower() for r in project()["dependencies"]}


def imports(path: Path) -> list[tuple[str, bool]]:
    """(top-level module, imported at module level) for each import in a file."""
    tree = ast.parse(path.read_text())
    top_level = {id(n) for n in tree.body}  # `if TYPE_CHECKING:` imports do not run
    top_level |= {id(n) for t in tree.body if isinstance(t, ast.Try) for n in t.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [(n.split(".")[0], id(node) in top_level) for n in names]
    return found


def test_every_package_runtime_and_skills_import_is_a_core_dependency() -> None:
    dists = packages_distributions()
    first_party = {"runtime", "skills", "trainer", "synth"}
    files = [*ROOT.glob("runtime/**/*.py"), *(p for p in ROOT.glob("skills/**/*.py") if "shim" not in p.parts)]
    wrong = []
    for path in files:
        for module, at_top in imports(path):
            if module in sys.stdlib_module_names or module in first_party:
                continue
            if module in OPTIONAL:
                if at_top:
                    wrong.append(f"{path.relative_to(ROOT)} imports the optional {module} at module level")
                continue
            names = {d.lower() for d in dists.get(module, [module])}
            if not names & core():
                wrong.append(f"{path.relative_to(ROOT)} imports {module}, which is not a core dependency")
    assert not wrong, "\n".join(wrong)


def closure(names: set[str]) -> set[str]:
    """The distributions `names` need, transitively (no extras)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for req in distribution(name).requires or []:
            r = Requirement(req)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(r.name.lower())
    return seen


def core_venv(where: Path) -> Path:
    """A venv with only the core dependencies' distributions (symlinked from this one)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    site = next(where.glob("lib/python*/site-packages"))
    for name in closure(core()):
        dist = distribution(name)
        base = Path(str(dist.locate_file("")))
        tops = {Path(str(f)).parts[0] for f in dist.files or []} - {"..", "bin"}
        for top in tops:
            src, dst = base / top, site / top
            if src.exists() and not dst.exists():
                dst.symlink_to(src)
    return where / "bin" / "python"


@pytest.mark.slow
def test_core_dependencies_alone_run_kagentd_and_solve_and_the_trainer_names_its_extra(tmp_path: Path) -> None:
    python = core_venv(tmp_path / "venv")
    missing = subprocess.run([str(python), "-c", "import transformers"], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and "No module named 'transformers'" in missing.stderr  # truly not there
    scripted = Scripted(tmp_path, [SUBMIT])
    d = Kagentd(tmp_path, scripted.base_url)
    d.env["PATH"] = f"{python.parent}:{d.env['PATH']}"
    try:
        started = subprocess.run([str(python), "-m", "runtime.kagentd_cli", "start", "--config", str(d.config)], cwd=ROOT,
                                 env=d.env, capture_output=True, text=True, timeout=180)
        assert started.returncode == 0, started.stdout + started.stderr
        assert Path(f"/proc/{d.pid}/exe").resolve() == python.resolve()  # the daemon runs in the core venv
        solved = subprocess.run([str(python), "-m", "runtime.cli", "solve", str(RELU), "--config", str(d.config)],
                                cwd=ROOT, env=d.env, capture_output=True, text=True, timeout=240)
        assert "kagent: episode 1: submitted" in solved.stderr, solved.stdout + solved.stderr
        trainer = subprocess.run([str(python), "-m", "trainer.run", "--db", str(d.db), "--model", "tiny", "--stage",
                                  "rft", "--out", str(tmp_path / "ckpt")], cwd=ROOT, env=d.env, capture_output=True,
                                 text=True, timeout=120)
        assert trainer.returncode == 2
        assert trainer.stderr.strip().splitlines() == [
            "trainer: transformers, accelerate, safetensors, peft, tensorboard not installed:"
            " pip install 'kagent[train]'"], trainer.stderr
    finally:
        d.kill()
        scripted.stop()


def test_the_wheel_ships_the_package_data_and_its_store_migrates(tmp_path: Path) -> None:
    """`pip install .` from a copy of the sources (no build folder left in the checkout): every
    package-data pattern of pyproject matches files in the wheel, and the installed runtime.store,
    imported away from the checkout, finds its migrations and brings a new store to the latest."""
    src = tmp_path / "src"
    for top in ("runtime", "skills", "trainer", "synth"):
        shutil.copytree(ROOT / top, src / top, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    wheels, site = tmp_path / "wheels", tmp_path / "site"

    def pip(*args: str) -> None:
        done = subprocess.run([sys.executable, "-m", "pip", *args], cwd=src, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr

    pip("wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), ".")
    (wheel,) = wheels.glob("*.whl")
    pip("install", "--no-deps", "-q", "--target", str(site), str(wheel))
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for package, patterns in data.items():
        for pattern in patterns:
            assert list((site / package.replace(".", "/")).glob(pattern)), f"{package}: {pattern} not installed"
    probe = ("import anyio, sqlite3, sys\nimport runtime.store as s\nfrom runtime.store.sql import migrations\n"
             "async def go():\n    async with s.Store.open(sys.argv[1]):\n        pass\nanyio.run(go)\n"
             "print(s.__file__, sqlite3.connect(sys.argv[1]).execute('PRAGMA user_version').fetchone()[0],"
             " migrations()[-1][0])\n")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "k.db")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr
    where, have, latest = done.stdout.split()
    assert Path(where).is_relative_to(site), where  # the installed copy, not the checkout
    assert int(have) == int(latest) == len(list((ROOT / "runtime" / "store" / "migrations").glob("*.sql")))
