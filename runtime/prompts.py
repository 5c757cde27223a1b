"""The texts the agent reads from the runtime: the opening messages of an episode (SKILL.md for
its backend, then the problem) and the answers to malformed tool calls (runtime/episode.py)."""

from __future__ import annotations

import importlib.resources
import os
import re

from runtime.store import Message, ProblemRow
from skills.evaluator.results import Backend

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
