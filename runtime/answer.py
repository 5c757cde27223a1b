"""What `POST /v1/chat/completions` answers: the problem module out of the user's message, and
the episode's outcome as markdown (the best verified ModelNew, its kernels, the speedups)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from runtime.episode import EpisodeOutcome
from skills.evaluator.report import format_result

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.DOTALL)
_MODEL = re.compile(r"^class\s+Model\s*\(", re.MULTILINE)
_LANG = {".py": "python", ".cu": "cuda", ".cuh": "cuda", ".cpp": "cpp", ".h": "cpp", ".hpp": "cpp"}


class RequestError(Exception):
    """A request the server refuses; `status` is the HTTP status, the message says why."""

    def __init__(self, status: int, message: str, *, code: str = "invalid_request", param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.param = param


def message_text(content: Any) -> str:
    """The text of an OpenAI message `content`: a string or a list of `{"type": "text"}` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if all(isinstance(p, str) for p in parts):
            return "\n".join(parts)
    raise RequestError(400, "the last user message's content must be a string or a list of text parts",
                       param="messages")


def last_user_text(messages: Any) -> str:
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "`messages` must be a non-empty list of chat messages", param="messages")
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            return message_text(m.get("content"))
    raise RequestError(400, "no user message: the last user message must hold a KernelBench-format module",
                       param="messages")


def extract_module(text: str) -> str:
    """The KernelBench module in a message: the fenced code block defining `class Model(`, else the
    whole text when it defines one (plain source)."""
    blocks = [str(m[2]) for m in _FENCE.finditer(text)]
    for body in blocks:
        if _MODEL.search(body):
            return body
    if not blocks and _MODEL.search(text):
        # Plain source, or a code block whose closing fence was left out.
        opened = re.match(r"\A\s*```[^\n]*\n", text)
        return text[opened.end():] if opened else text
    raise RequestError(400, "no KernelBench module found in the last user message: send Python source "
                            "(plain or in a ```python block) that defines `class Model(nn.Module)`, "
                            "`get_inputs()` and `get_init_inputs()`", code="no_module", param="messages")


def _speedup_line(outcome: EpisodeOutcome) -> str:
    parts = []
    for s in outcome.speedups:
        name = "torch.compile" if s.baseline == "compile" else s.baseline
        verdict = "faster" if s.faster else "not clearly faster"
        parts.append(f"**{s.value:.2f}x** vs {name} [95% {s.low:.2f}-{s.high:.2f}, {verdict}]")
    if not parts:
        for name, value in (("eager", outcome.speedup_eager), ("torch.compile", outcome.speedup_compile)):
            if value is not None:
                parts.append(f"**{value:.2f}x** vs {name}")
    return "Speedup: " + "; ".join(parts) if parts else "Speedup: not measured"


def _files(files: dict[str, str]) -> list[str]:
    order = sorted(files, key=lambda p: (p != "model_new.py", p))
    out = []
    for path in order:
        lang = _LANG.get(PurePosixPath(path).suffix, "")
        out += [f"### `{path}`", "", f"```{lang}", files[path].rstrip("\n"), "```", ""]
    return out


def render_answer(outcome: EpisodeOutcome, problem: str) -> str:
    """Markdown: the verdict, the speedups, then every file of the best verified solution."""
    reward = "—" if outcome.reward is None else f"{outcome.reward:g}"
    head = f"Episode {outcome.episode_id} on `{problem}` ended `{outcome.status}` with reward {reward}."
    if not outcome.files:
        lines = [f"**No verified `ModelNew`.** {head}"]
        if outcome.evaluation is not None:
            lines += ["", "Last evaluation:", "", "```", format_result(outcome.evaluation), "```"]
        return "\n".join(lines) + "\n"
    verified = f" (verified by the {outcome.verified_by} evaluation)" if outcome.verified_by else ""
    lines = [f"**Verified `ModelNew`** for `{problem}`{verified}. {head}", "", _speedup_line(outcome), ""]
    if outcome.evaluation is not None:
        lines += ["<details><summary>evaluation</summary>", "", "```", format_result(outcome.evaluation),
                  "```", "</details>", ""]
    lines += _files(outcome.files)
    return "\n".join(lines)
