"""`kagent` command line (runtime/cli.py), run as a real subprocess on the cpu backend."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from skills.evaluator.results import EvalResult

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RELU = ROOT / "problems" / "level1" / "01_relu.py"


def cli(tmp_path: Path, *args: str | Path, timeout: float = 240,
        make_ext_dir: bool = True) -> subprocess.CompletedProcess[str]:
    """`python -m runtime.cli ARGS` with hermetic caches (XDG_CACHE_HOME and TMPDIR under tmp_path).

    make_ext_dir pre-creates $TMPDIR/kagent-torch-extensions, the shared load_inline build dir
    that the cli names but nothing creates (see test_eval_fair_workspace_json_with_fresh_tmpdir).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAGENT_")}
    # Still bubblewrap where it is installed; this only lets the suite run where it is not.
    env["KAGENT_UNSAFE_NO_SANDBOX"] = "1"
    env["PYTHONPATH"] = str(ROOT)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    if make_ext_dir:
        (tmp_path / "tmp" / "kagent-torch-extensions").mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmp_path / "tmp")
    return subprocess.run([sys.executable, "-m", "runtime.cli", *map(str, args)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False)


def relu_workspace(tmp_path: Path) -> Path:
    """A private copy of the fair workspace fixture (no evaluation may touch tests/fixtures)."""
    ws = tmp_path / "relu_cpu"
    shutil.copytree(FIXTURES / "relu_cpu", ws)
    return ws


def test_eval_fair_workspace_json_with_fresh_tmpdir(tmp_path: Path) -> None:
    """One evaluation for both: the JSON result, and a fresh TMPDIR (nothing made in it ahead)."""
    proc = cli(tmp_path, "eval", RELU, relu_workspace(tmp_path), "--backend", "cpu", "--mode", "test", "--json",
               make_ext_dir=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = msgspec.json.decode(proc.stdout, type=EvalResult)
    assert r.correct and r.error is None and r.flags == [] and r.stage == "done"
    assert r.problem == "level1/01_relu" and r.backend == "cpu" and r.mode == "test"
    assert r.reward is None and r.candidate is None  # test mode: correctness only
    assert r.build is not None and r.build.ok
    assert (tmp_path / "cache" / "kagent" / "build").is_dir()  # builds went to XDG_CACHE_HOME


def test_eval_wrong_values_text(tmp_path: Path) -> None:
    ws = relu_workspace(tmp_path)
    (ws / "kernels" / "relu.cpp").write_text(
        '#include "kagent.h"\n'
        "KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {\n"
        "  for (int64_t i = 0; i < n; ++i) y[i] = x[i];\n}\n")
    proc = cli(tmp_path, "eval", RELU, ws, "--backend", "cpu", "--mode", "test")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first == "level1/01_relu [cpu, test]: INCORRECT"
    assert "outside the error budget; worst at index [" in proc.stdout
    assert not proc.stdout.lstrip().startswith("{")  # text, not JSON


@pytest.mark.parametrize(("args", "message"), [
    (["eval", "no_such_problem.py", "{ws}"], "problem file no_such_problem.py does not exist"),
    (["eval", str(RELU), "{tmp}/no_such_solution"], "no_such_solution does not exist"),
    (["eval", str(RELU), "{ws}", "--baselines", "eager,inductor"], "unknown baseline(s) inductor; valid: eager, compile"),
    (["eval", str(RELU), "{ws}", "--reward", "vibes"], "unknown reward function 'vibes'; valid: binary, composite, milestone"),
    (["eval", str(RELU), "{ws}", "--backend", "tpu"], "invalid choice: 'tpu'"),
], ids=["missing-problem", "missing-solution", "bad-baseline", "bad-reward", "bad-backend"])
def test_eval_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    ws = relu_workspace(tmp_path)
    argv = [a.format(ws=ws, tmp=tmp_path) for a in args] + (["--backend", "cpu"] if "--backend" not in args else [])
    proc = cli(tmp_path, *argv, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_eval_single_file_load_inline(tmp_path: Path) -> None:
    """A KernelBench-style model_new.py that builds a CPU torch extension with load_inline."""
    solution = tmp_path / "model_new.py"
    shutil.copyfile(FIXTURES / "load_inline_relu.py", solution)
    began = time.monotonic()
    proc = cli(tmp_path, "eval", RELU, solution, "--backend", "cpu", "--mode", "test", "--json", timeout=280)
    elapsed = time.monotonic() - began
    print(f"load_inline evaluation took {elapsed:.1f} s")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = msgspec.json.decode(proc.stdout, type=EvalResult)
    assert r.correct and r.error is None and r.flags == []
    assert r.build is None  # model_new.py built its own extension; nothing under kernels/
    assert all(o.max_abs_err == 0.0 for s in r.sets for o in s.outputs)


def test_problems_list(tmp_path: Path) -> None:
    proc = cli(tmp_path, "problems", "list", timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["name", "level", "precision"]
    rows = {ln.split()[0]: ln.split() for ln in lines[1:]}
    bundled = {f"{p.parent.name}/{p.stem}" for p in (ROOT / "problems").glob("level*/*.py")}
    assert bundled <= set(rows), bundled - set(rows)
    assert rows["level1/01_relu"][1:3] == ["1", "fp32"]
    assert rows["level1/03_rms_norm"][1:3] == ["1", "fp32"]
    assert "(not in manifest)" not in proc.stdout


def test_problems_list_walks_the_folder_as_skills_does_and_loads_no_problem_code(tmp_path: Path) -> None:
    """runtime/problem_list.py mirrors skills.evaluator.problem.iter_problems without importing it (torch)."""
    from runtime.problem_list import problem_files
    from skills.evaluator.problem import iter_problems

    assert problem_files(ROOT / "problems") == iter_problems(ROOT / "problems")
    code = ("import sys, contextlib, io\nfrom runtime.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    main(['problems', 'list'])\n"
            "print('skills.evaluator.problem' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr
    missing = cli(tmp_path, "problems", "list", "--root", str(tmp_path / "none"), timeout=60)
    assert missing.returncode == 2 and "problems folder" in missing.stderr and "Traceback" not in missing.stderr
