"""`kagent build WORKSPACE`: static checks + the compile skill's report, on a machine without a GPU."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.cli import main

PROJECT_ROOT = Path(__file__).resolve().parents[2]
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

KERNEL_CPP = """\
#include "kagent.h"
KAGENT_EXPORT void twice(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = 2.f * x[i];
}
"""
MODEL_NEW = """\
import torch
from kagent_ext import ops


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        ops.twice(x, y, x.numel())
        return y
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAGENT_CACHE_DIR", str(tmp_path / "cache"))


def workspace(root: Path, kernels: dict[str, str], model_new: str = MODEL_NEW) -> Path:
    (root / "kernels").mkdir(parents=True)
    (root / "model_new.py").write_text(model_new)
    for name, text in kernels.items():
        (root / "kernels" / name).write_text(text)
    return root


def test_cpu_build_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = workspace(tmp_path / "ws", {"k.cpp": KERNEL_CPP})
    assert main(["build", str(ws), "--backend", "cpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "static checks: passed"
    assert out[1].startswith("compiled OK in ") and out[1].endswith("(0/1 units from cache)")
    assert out[2] == "exported: twice(const float*, float*, int64_t)"
    assert main(["build", str(ws), "--backend", "cpu"]) == 0
    assert "(1/1 units from cache)" in capsys.readouterr().out


def test_cpu_compile_error_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = workspace(tmp_path / "ws", {"k.cpp": KERNEL_CPP.replace("2.f * x[i];", "2.f * x[i]")})
    assert main(["build", str(ws), "--backend", "cpu"]) == 1
    out = capsys.readouterr().out
    assert "compile FAILED" in out and "kernels/k.cpp:3" in out and "expected ';'" in out
    assert str(tmp_path) not in out  # paths are the agent's, not the build folder's


def test_static_check_flag_exits_1_and_still_builds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cheat = MODEL_NEW.replace("ops.twice(x, y, x.numel())\n        return y", "return torch.matmul(x, x)")
    ws = workspace(tmp_path / "ws", {"k.cpp": KERNEL_CPP}, model_new=cheat)
    assert main(["build", str(ws), "--backend", "cpu"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FLAG torch_fallback: model_new.py:")
    assert "the grader would score this -1" in out
    assert "compiled OK" in out


def test_no_sources_and_no_workspace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = workspace(tmp_path / "ws", {})
    assert main(["build", str(ws), "--backend", "cpu"]) == 1
    assert "kernels/ holds no .cu or .cpp source: nothing to build" in capsys.readouterr().out
    assert main(["build", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = workspace(tmp_path / "ws", {"k.cpp": KERNEL_CPP})
    assert main(["build", str(ws), "--backend", "cpu", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["flags"] == [] and doc["build"]["ok"] is True
    assert [f["name"] for f in doc["build"]["functions"]] == ["twice"]
    assert doc["build"]["libraries"] == []


@needs_nvcc
def test_cuda_build_without_gpu(tmp_path: Path) -> None:
    """The console script, as a user runs it: the cuda backend builds with no GPU visible."""
    src = PROJECT_ROOT / "problems/solutions/cuda/level1/02_swish"
    ws = tmp_path / "swish"
    shutil.copytree(src, ws)
    proc = subprocess.run([sys.executable, "-m", "runtime.cli", "build", str(ws), "--arch", "sm_90"],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "static checks: passed" and lines[1].startswith("compiled OK")
    assert any(" regs, " in ln and " B smem" in ln for ln in lines), proc.stdout


@needs_nvcc
def test_cuda_library_not_found_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not (Path(p or ".") / "nvidia" / "cudnn").is_dir()])
    conv = '#include "kagent.h"\n#include <cudnn.h>\nKAGENT_EXPORT void twice(const float* x, float* y, int64_t n) {}\n'
    ws = workspace(tmp_path / "ws", {"c.cu": conv})
    assert main(["build", str(ws), "--arch", "sm_90"]) == 1
    out = capsys.readouterr().out
    assert "kernels/c.cu:2: <cudnn.h>: cuDNN was not found" in out
