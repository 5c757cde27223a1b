"""benchmarks/make_inline_set.py: a load_inline solution per problem, each with an extension of its own."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.utils.cpp_extension

from benchmarks.make_inline_set import main
from skills.evaluator.problem import load_problem

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = [ROOT / "problems" / "level1" / "01_relu.py", ROOT / "problems" / "level2" / "05_swiglu.py"]


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_each_file_runs_model_and_copies_through_its_own_extension(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    """The written file is the problem plus a ModelNew whose outputs equal Model's, passed through
    load_inline'd `kcopy`; names and sources differ per file (so the content-hash cache builds each)."""
    assert main([*map(str, PROBLEMS), "--out", str(tmp_path), "--backend", backend]) == 0
    built: list[dict[str, Any]] = []

    def fake_load_inline(**kw: Any) -> Any:
        built.append(kw)
        return types.SimpleNamespace(kcopy=lambda x: x.clone())

    monkeypatch.setattr(torch.utils.cpp_extension, "load_inline", fake_load_inline)
    for problem in PROBLEMS:
        path = tmp_path / problem.parent.name / problem.name
        ns: dict[str, Any] = {"__name__": "solution"}
        exec(compile(path.read_text(), str(path), "exec"), ns)
        lp = load_problem(problem, sizes="small")
        torch.manual_seed(0)
        ref = lp.Model(*lp.get_init_inputs())
        new = ns["ModelNew"](*lp.get_init_inputs())
        new.load_state_dict(ref.state_dict())
        x = lp.get_inputs()
        assert torch.equal(new(*x), ref(*x))
    names = [kw["name"] for kw in built]
    assert len(set(names)) == 2 and all(n.startswith("kb_level") for n in names)
    code = [kw.get("cuda_sources") or kw["cpp_sources"] for kw in built]
    assert all(n in c for n, c in zip(names, code, strict=True))  # each source names its extension
    if backend == "cuda":
        assert all("__global__" in kw["cuda_sources"] for kw in built)
    else:
        assert all(kw["with_cuda"] is False and "omp parallel" in kw["cpp_sources"] for kw in built)


def test_no_problem_files_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert f"make_inline_set: {tmp_path} holds no problem files" in capsys.readouterr().err
