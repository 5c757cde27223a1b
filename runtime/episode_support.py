"""Pieces of an episode that are not the loop itself: the opening messages, the texts the model
gets for malformed calls, the grading of a workspace the agent never touched, and the record of
the best verified solution (runtime/episode.py uses them)."""

from __future__ import annotations

import importlib.resources
import os
import re

import msgspec
import torch

from runtime.store import Message, ProblemRow
from skills.evaluator import reward
from skills.evaluator.results import Backend, EvalResult, Precision, Speedup, StageTimes
from skills.evaluator.reward import get_reward_fn
from skills.workspace import MODEL, MODEL_NEW_TEMPLATE, Workspace

NO_TOOL_CALL = ("Your reply contained no tool call. Work only through the tools (write_file, compile,"
                " run_tests, profile, ...), one or more calls per reply; call submit when you are done.")
MALFORMED_HINT = ' Write each call as <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>.'

_BACKEND_NOTE = {
    "cuda": "Backend: cuda. Kernels are CUDA (kernels/*.cu) and run on the GPU.",
    "cpu": ("Backend: cpu. Kernels are C++ (kernels/*.cpp with #include \"kagent.h\"; OpenMP and"
            " `#pragma omp simd` are available) and run on the CPU; tensors live on the CPU. The shapes"
            " checked and timed are the problem's SMALL_SIZES."),
}
_SECTION = re.compile(r"<!-- (cuda|cpu|end) -->")
_BACKENDS: tuple[Backend, ...] = ("cuda", "cpu")


def skill_prompt(backend: Backend) -> str:
    """skills/SKILL.md for one backend: its `<!-- cuda -->` / `<!-- cpu -->` ... `<!-- end -->`
    blocks kept only for that backend (so a cpu agent never reads CUDA-only advice, nor is offered
    a tool it does not have), the file's own comment dropped, {{cores}} filled in."""
    if backend not in _BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid backends: {', '.join(_BACKENDS)}")
    text = (importlib.resources.files("skills") / "SKILL.md").read_text(encoding="utf-8")
    text = text[text.index("-->") + 3:].lstrip("\n") if text.startswith("<!--") else text
    kept: list[str] = []
    section: str | None = None
    for line in text.splitlines():
        marker = _SECTION.fullmatch(line.strip())
        if marker is not None:
            section = None if marker[1] == "end" else marker[1]
        elif section is None or section == backend:
            kept.append(line)
    return "\n".join(kept).replace("{{cores}}", str(cores())).rstrip() + "\n"


def cores() -> int:
    """Cores this process may run on (its affinity): the evaluation's workers inherit it."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def opening_messages(problem: ProblemRow, source: str, backend: Backend, system: str | None = None) -> list[Message]:
    """System (SKILL.md for the backend) and user (the problem) messages that start an episode."""
    user = (f"Problem {problem.name}. {_BACKEND_NOTE[backend]}\n\n"
            f"model.py (also in your workspace):\n```python\n{source.rstrip()}\n```\n\n"
            "Write ModelNew in model_new.py with your kernels in kernels/, verify it with run_tests,"
            " make it fast, then submit.")
    return [Message(role="system", content=system if system is not None else skill_prompt(backend)),
            Message(role="user", content=user)]


def untouched(ws: Workspace) -> bool:
    """model_new.py is still the template and kernels/ holds nothing: there is nothing to grade."""
    files = ws.list()
    if [rel for rel, _ in files if rel != MODEL] != ["model_new.py"]:
        return False
    return ws.read_text("model_new.py") == MODEL_NEW_TEMPLATE


def untouched_result(problem: ProblemRow, backend: Backend, reward_fn: str) -> EvalResult:
    """The final evaluation of an untouched workspace, decided without starting workers."""
    result = EvalResult(
        problem=problem.name, problem_id=problem.id, backend=backend, mode="final", compiled=True,
        correct=False, stage="load", error="model_new.py is still the template: nothing was written",
        build=None, sets=[], flags=[], candidate=None, eager=None, compiled_baseline=None, speedups=[],
        reward=None, reward_fn=None, precision=_precision(problem.precision), gpu=None,
        torch_version=str(torch.__version__), stages=StageTimes(total=0.0), log="")
    result.reward = get_reward_fn(reward_fn)(result)
    result.reward_fn = reward_fn
    return result


_PRECISIONS: dict[str, Precision] = {"fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16"}


def _precision(value: str | None) -> Precision:
    return _PRECISIONS.get(value or "", "fp32")


def passed(result: EvalResult) -> bool:
    """Compiled, correct and no check fired."""
    return not reward.failed(result)


def read_files(ws: Workspace) -> dict[str, str]:
    """model_new.py and kernels/* as text (the agent's solution)."""
    return {rel: ws.read_text(rel) for rel, _ in ws.list() if rel != MODEL}


def speedup(result: EvalResult | None, baseline: str) -> float | None:
    return reward.speedup(result, baseline) if result is not None else None


class Best(msgspec.Struct, kw_only=True):
    """The best verified solution seen so far in an episode."""

    files: dict[str, str] = msgspec.field(default_factory=dict)
    """The solution's files (empty: nothing verified yet)."""
    evaluation: EvalResult | None = None
    """The evaluation that verified it."""

    def offer(self, result: EvalResult, files: dict[str, str]) -> None:
        """Keep `files` if `result` passed and is at least as fast as the current best (a passed
        final evaluation always wins: it graded the workspace as submitted)."""
        if not passed(result):
            return
        if result.mode == "final":
            self.files, self.evaluation = files, result
            return
        rank = speedup(result, "eager") or 0.0
        if self.evaluation is None or rank >= (speedup(self.evaluation, "eager") or 0.0):
            self.files, self.evaluation = files, result

    @property
    def speedups(self) -> list[Speedup]:
        return list(self.evaluation.speedups) if self.evaluation is not None else []
