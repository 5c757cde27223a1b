"""Token-level helpers of the policy client (DESIGN §8): chat-template renderers, the token bridge
that appends new messages to an exact token context, and tool-call parsers for raw completions.

Token-in generation keeps the context as the exact ids the server saw and sampled; new messages
(tool results) are appended by rendering only them. `TokenBridge` does that with any renderer:

    base  = render([system S, user U, assistant A])                  (once)
    full  = render([system S, user U, assistant A] + new, add_generation_prompt=True)
    delta = full[len(base):]                                          (checked: full starts with base)

and, before the delta, the rest of the template's assistant closing sequence that the sampled
completion lacks (Qwen: the completion ends at `<|im_end|>`, the template then writes `\\n`; a
completion cut by max_tokens gets the whole closing sequence). The closing sequence is the common
suffix of two renderings that differ only in the assistant's content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Protocol

import anyio
import msgspec

from runtime.store import ToolCallSpec


class TokenBridgeError(Exception):
    """The chat template cannot be extended message by message (use token_mode = "chat")."""


class Renderer(Protocol):
    """The policy's chat template: messages (OpenAI format) -> prompt token ids."""

    async def render(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> list[int]: ...


class HFRenderer:
    """A local Hugging Face tokenizer's chat template (same tokenizer as the served model)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._tokenizer: Any = None
        self._lock = anyio.Lock()

    async def _load(self) -> Any:
        async with self._lock:
            if self._tokenizer is None:
                from transformers import AutoTokenizer

                self._tokenizer = await anyio.to_thread.run_sync(AutoTokenizer.from_pretrained, self.path)
        return self._tokenizer

    async def render(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> list[int]:
        tok = await self._load()

        def run() -> list[int]:
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt)
            return list(tok.encode(text, add_special_tokens=False))

        return await anyio.to_thread.run_sync(run)


_DUMMY: list[dict[str, Any]] = [
    {"role": "system", "content": "S"},
    {"role": "user", "content": "U"},
    {"role": "assistant", "content": "A"},
]


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two id lists."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class TokenBridge:
    """Renders only the new messages of a conversation and joins them to its token context."""

    def __init__(self, renderer: Renderer) -> None:
        self.renderer = renderer
        self._base: list[int] | None = None
        self._closing: list[int] = []
        self._lock = anyio.Lock()

    async def _prepare(self) -> list[int]:
        async with self._lock:
            if self._base is None:
                base = await self.renderer.render(_DUMMY, add_generation_prompt=False)
                alt = await self.renderer.render([*_DUMMY[:2], {"role": "assistant", "content": "B"}],
                                                 add_generation_prompt=False)
                n = 0
                while n < min(len(base), len(alt)) and base[-1 - n] == alt[-1 - n]:
                    n += 1
                self._closing = base[len(base) - n:] if n else []
                self._base = base
            return self._base

    def closing(self, context: list[int]) -> list[int]:
        """The part of the assistant closing sequence that `context` does not already end with."""
        seq = self._closing
        for k in range(len(seq), 0, -1):
            if len(context) >= k and context[-k:] == seq[:k]:
                return seq[k:]
        return list(seq)

    async def delta(self, context: list[int], new: list[dict[str, Any]]) -> list[int]:
        """Ids to append to `context` (prompt + sampled completion) for the messages `new`,
        ending with the generation prompt."""
        base = await self._prepare()
        full = await self.renderer.render([*_DUMMY, *new], add_generation_prompt=True)
        if full[: len(base)] != base:
            raise TokenBridgeError(
                "the chat template renders earlier messages differently once new messages follow,"
                " so token-in generation cannot extend the context; set token_mode = \"chat\"")
        return self.closing(context) + full[len(base):]


# ---------------------------------------------------------------------------------- parsers


class ParsedOutput(msgspec.Struct, kw_only=True):
    """A raw completion split into text and tool calls."""

    content: str
    """The text outside the tool-call blocks (stripped)."""
    calls: list[ToolCallSpec]
    """Tool calls in order (malformed ones too, with what could be read of them)."""
    errors: dict[str, str]
    """Call id -> why the call could not be parsed (only malformed calls appear)."""


ToolParser = Callable[[str, Callable[[], str]], ParsedOutput]
"""(completion text, new_call_id) -> ParsedOutput."""

_HERMES = re.compile(r"<tool_call>(.*?)(</tool_call>|\Z)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]{1,64})"')


def parse_hermes(text: str, new_id: Callable[[], str]) -> ParsedOutput:
    """Hermes / Qwen format: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks."""
    calls: list[ToolCallSpec] = []
    errors: dict[str, str] = {}
    for m in _HERMES.finditer(text):
        body, closed = m.group(1).strip(), bool(m.group(2))
        call_id = new_id()
        spec, error = _hermes_call(call_id, body, closed)
        calls.append(spec)
        if error is not None:
            errors[call_id] = error
    content = _HERMES.sub("", text).strip()
    return ParsedOutput(content=content, calls=calls, errors=errors)


def _hermes_call(call_id: str, body: str, closed: bool) -> tuple[ToolCallSpec, str | None]:
    guess = _NAME.search(body)
    fallback = ToolCallSpec(id=call_id, name=guess.group(1) if guess else "", arguments=body)
    if not closed:
        return fallback, "the <tool_call> block is not closed with </tool_call> (output cut off?)"
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as e:
        return fallback, f"the <tool_call> block is not valid JSON ({e.msg} at character {e.pos})"
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
        return fallback, 'the <tool_call> block must be a JSON object with a "name" string'
    args = obj.get("arguments", {})
    if isinstance(args, str):
        return ToolCallSpec(id=call_id, name=obj["name"], arguments=args), None
    if not isinstance(args, dict):
        return ToolCallSpec(id=call_id, name=obj["name"], arguments=json.dumps(args)), \
            '"arguments" must be a JSON object'
    return ToolCallSpec(id=call_id, name=obj["name"], arguments=json.dumps(args)), None


def render_hermes(content: str | None, calls: list[tuple[str, Any]]) -> str:
    """Completion text in hermes format: content, then one block per (name, arguments) call."""
    parts = [content] if content else []
    for name, args in calls:
        parts.append("<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>")
    return "\n".join(parts)


TOOL_PARSERS: dict[str, ToolParser] = {"hermes": parse_hermes}
"""Tool-call parsers for raw completions, by name (PolicyConfig.tool_parser)."""


def get_tool_parser(name: str) -> ToolParser:
    """The parser called `name`; an unknown name lists the valid ones."""
    try:
        return TOOL_PARSERS[name]
    except KeyError:
        raise KeyError(f"unknown tool parser {name!r}; valid: {', '.join(sorted(TOOL_PARSERS))}") from None
