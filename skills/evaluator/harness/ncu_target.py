"""The process Nsight Compute profiles: one ModelNew call inside an NVTX range named `kagent`.

Run as `python -m skills.evaluator.harness.ncu_target PROBLEM WORKSPACE LIB_JSON` (or `--probe`) under ncu. It needs no
reference outputs (nothing is graded here), so problem and candidate share this process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch

from skills.evaluator.harness.candidate import SHIM_DIR
from skills.evaluator.harness.exchange import to_device
from skills.evaluator.harness.judge import set_precision
from skills.evaluator.problem import load_problem


def load_pair(problem_path: str, workspace: str, lib: dict[str, Any], device: torch.device) -> tuple[Any, Any, list[Any]]:
    """The problem's Model (left on the CPU), the workspace's ModelNew with its weights (seed 0) on
    `device`, and the inputs there: what a process that grades nothing runs (this one, the probes in
    benchmarks/). lib is {"lib_path", "flavour", "functions"} of the built library (ncu.ncu_command's form)."""
    loaded = load_problem(problem_path)
    set_precision(loaded.problem.precision)
    if SHIM_DIR not in sys.path:
        sys.path.insert(0, SHIM_DIR)
    import kagent_ext

    if lib["lib_path"] and lib.get("flavour") == "torch":  # a torch extension module, as candidate.py binds it
        spec = importlib.util.spec_from_file_location(Path(lib["lib_path"]).stem.split(".")[0], lib["lib_path"])
        assert spec is not None and spec.loader is not None
        ext = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ext)
        kagent_ext._bind_module(ext)
    elif lib["lib_path"]:
        kagent_ext._bind(lib["lib_path"], lib["functions"], device.type)
    sys.path.insert(0, workspace)
    spec = importlib.util.spec_from_file_location("model_new", Path(workspace) / "model_new.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    init = loaded.get_init_inputs()
    ref = loaded.Model(*init)
    model = module.ModelNew(*init)
    model.load_state_dict(ref.state_dict())
    return ref, model.to(device), to_device(loaded.get_inputs(), device)


def probe() -> None:
    """`--probe`: a known kernel in the same range, for the kernel audit's check that ncu can see
    anything at all in this sandbox (skills/evaluator/kernel_audit.py, ncu_usable)."""
    x = torch.ones(1 << 16, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("kagent")  # type: ignore[no-untyped-call]
    x.mul_(2.0)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()  # type: ignore[no-untyped-call]


def _mute_stdout() -> None:
    """Before any candidate code loads: this process's fd 1 is ncu's stdout, where ncu prints the
    report the kernel audit reads; the candidate's prints go to stderr, its writes to fd 1 nowhere."""
    sys.stdout.flush()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    sys.stdout = sys.stderr


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:
        probe()
        return
    problem_path, workspace, lib_json = sys.argv[1:4]
    _mute_stdout()
    _, model, inputs = load_pair(problem_path, workspace, json.loads(lib_json), torch.device("cuda"))
    with torch.no_grad():
        model(*inputs)  # warm-up outside the range: lazy init, module load
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("kagent")  # type: ignore[no-untyped-call]
        model(*inputs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    main()
