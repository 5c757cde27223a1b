"""The shape check (EXPLOITS row 14): one correctness set at other sizes than the timed ones, so
a kernel that hard-codes the timed shape fails; a fair kernel passes it, including a model whose
init inputs (and so its weights) depend on the sizes."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.problem import load_problem, shape_check_sizes
from skills.evaluator.report import format_result
from skills.evaluator.results import EvalResult

ROOT = Path(__file__).resolve().parents[3]
PROBLEMS = ROOT / "problems"
SOLUTIONS = PROBLEMS / "solutions" / "cpu"

OVERFIT_CPP = """#include "kagent.h"
KAGENT_EXPORT void relu(const float* x, float* y, int64_t n) {
  (void)n;
  const int64_t N = 256 * 1024;  // hard-coded: the SMALL_SIZES count
  for (int64_t i = 0; i < N; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""


def _with_check_sizes(src: Path, dest_dir: Path, check: str) -> Path:
    dest = dest_dir / src.parent.name / src.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(src.read_text() + f"\n\nCHECK_SIZES = {check}\n")
    return dest


def _without_check_sizes(src: Path, dest_dir: Path) -> Path:
    """A copy of a bundled problem with its CHECK_SIZES line taken out (every bundled one has one)."""
    dest = dest_dir / "plain" / src.parent.name / src.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    lines = src.read_text().splitlines(keepends=True)
    assert any(line.startswith("CHECK_SIZES = ") for line in lines), src
    dest.write_text("".join(line for line in lines if not line.startswith("CHECK_SIZES = ")))
    return dest


def _eval(problem: Path, ws: Path, tmp: Path, **kw: object) -> EvalResult:
    cfg = EvalConfig(backend="cpu", baselines=["eager"], build=BuildConfig(backend="cpu", cache_dir=str(tmp / "build")),
                     timing=TimingConfig(target_seconds=0.05, min_calls=10, max_calls=40), **kw)  # type: ignore[arg-type]
    return anyio.run(lambda: evaluate(problem, ws, mode="test", config=cfg))


def test_shape_check_sizes_follow_the_regime(tmp_path: Path) -> None:
    relu = PROBLEMS / "level1/01_relu.py"
    assert shape_check_sizes(load_problem(relu)) == "small"  # on the GPU: the small sizes
    assert shape_check_sizes(load_problem(relu, sizes="small")) == "check"  # its CHECK_SIZES
    plain = _without_check_sizes(relu, tmp_path)
    assert shape_check_sizes(load_problem(plain, sizes="small")) is None
    checked = _with_check_sizes(relu, tmp_path, '{"M": 96, "N": 300}')
    loaded = load_problem(checked, sizes="check")
    assert loaded.get_inputs()[0].shape == (96, 300)
    assert shape_check_sizes(load_problem(checked, sizes="small")) == "check"
    bad = _with_check_sizes(relu, tmp_path / "bad", '{"Q": 1}')
    with pytest.raises(Exception, match="CHECK_SIZES names 'Q'"):
        load_problem(bad, sizes="check")


def test_hard_coded_shape_fails_the_shape_check(tmp_path: Path) -> None:
    # Larger than the hard-coded count, so the kernel leaves part of the output unwritten (smaller
    # would make it write out of bounds: a crash, which fails the evaluation as well).
    problem = _with_check_sizes(PROBLEMS / "level1/01_relu.py", tmp_path, '{"M": 300, "N": 1024}')
    ws = tmp_path / "ws"
    shutil.copytree(SOLUTIONS / "level1/01_relu", ws)
    (ws / "kernels").mkdir(exist_ok=True)
    for f in (ws / "kernels").iterdir():
        f.unlink()
    (ws / "kernels" / "relu.cpp").write_text(OVERFIT_CPP)
    r = _eval(problem, ws, tmp_path)
    regular = [s for s in r.sets if s.sizes is None]
    shape = [s for s in r.sets if s.sizes is not None]
    assert regular and all(s.ok for s in regular), [o.message for s in r.sets for o in s.outputs]
    assert len(shape) == 1 and shape[0].sizes == "check" and not shape[0].ok
    assert not r.correct  # (test mode grades no reward; a final evaluation would give -1)
    assert "shape check" in format_result(r)
    # Without CHECK_SIZES the same kernel passes at the small sizes: the check is what catches it.
    r = _eval(_without_check_sizes(PROBLEMS / "level1/01_relu.py", tmp_path), ws, tmp_path)
    assert r.correct and all(s.sizes is None for s in r.sets)
    # The bundled problem declares CHECK_SIZES of its own (each size at 5/4): caught as well.
    r = _eval(PROBLEMS / "level1/01_relu.py", ws, tmp_path)
    assert not r.correct and [s.sizes for s in r.sets if not s.ok] == ["check"], [(s.sizes, s.ok) for s in r.sets]
    r = _eval(problem, ws, tmp_path, shape_check=False)
    assert r.correct


@pytest.mark.parametrize("name, check", [("level1/01_relu", '{"M": 96, "N": 300}'),
                                         ("level1/03_rms_norm", '{"BATCH": 40, "DIM": 384}')])
def test_fair_solution_passes_the_shape_check(name: str, check: str, tmp_path: Path) -> None:
    """rms_norm's init inputs depend on DIM: its shape set gets a model (and weights) of its own."""
    problem = _with_check_sizes(PROBLEMS / f"{name}.py", tmp_path, check)
    r = _eval(problem, SOLUTIONS / name, tmp_path)
    assert r.error is None and r.correct and not r.flags, (r.error, r.flags, [o.message for s in r.sets for o in s.outputs])
    assert [s.sizes for s in r.sets][-1] == "check" and len(r.sets) == EvalConfig().n_sets + 1
