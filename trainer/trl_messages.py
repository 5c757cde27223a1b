"""SFT through TRL on the conversations: the episodes as TRL's conversational dataset with tools.

One JSONL row per episode, the form `trl.SFTTrainer` tokenizes itself with the model's chat
template (TRL's "conversational language modeling" type, with its "tool calling" extension):
  messages   system, user, assistant (`content`, `tool_calls` with `arguments` as a JSON object,
             as TRL and the transformers chat templates take them) and tool (`content`, `name`,
             `tool_call_id`), in the order the model saw them;
  tools      the JSON schemas of the functions the agent was offered (skills.base.tool_schemas,
             what the episode loop sends the policy);
  episode_id, problem_id, reward: where the row comes from.
`kagent episodes export --format trl-messages` writes them; `--format trl` writes the
pre-tokenized form (trainer/sft_trl.py) that trains on the logged token ids instead.

Unlike the pre-tokenized rows these are re-tokenized by whoever trains on them, so they also hold
episodes that have no token ids (trainable = 0: an API model, a chat-only server). The store does
not record which tools an episode was offered: `tools` is the config's `scheduler.tools` on the
episode's backend (the one its evaluations ran on, else the config's). An assistant message's
content is its text outside the tool-call markup (the policy's tool parser), so a template that
renders `tool_calls` does not render a call twice. The last turn's tool results are left out: the
model never read them, and a row ends on the assistant. JSONL only: the arguments of different
tools are differently shaped objects, which `datasets` reads from JSON as its `Json` feature but
which a Parquet schema would merge into one struct, filling each call with the others' keys.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anyio
import msgspec

from runtime.store import EpisodeDetail, Store, ToolCallSpec
from runtime.store.sql import select_episode
from runtime.tokens import ToolParser

Schemas = list[dict[str, Any]]
"""OpenAI `tools` entries: {"type": "function", "function": {"name", "description", "parameters"}}."""


class TrlFunction(msgspec.Struct):
    """The `function` of a tool call, as TRL's tool-calling datasets hold it."""

    name: str
    """Tool name."""
    arguments: dict[str, Any]
    """Arguments: the JSON object the model wrote, decoded."""


class TrlToolCall(msgspec.Struct):
    """One tool call of an assistant message."""

    id: str
    """The call's id (the tool message answering it carries it as tool_call_id)."""
    function: TrlFunction
    """What was called."""
    type: Literal["function"] = "function"
    """Always `function`."""


class TrlMessage(msgspec.Struct, omit_defaults=True):
    """One chat message."""

    role: Literal["system", "user", "assistant", "tool"]
    """Author."""
    content: str
    """Text ("" for an assistant message with only tool calls: templates concatenate it)."""
    tool_calls: list[TrlToolCall] | None = None
    """Assistant: the calls made."""
    name: str | None = None
    """Tool: the tool that answered."""
    tool_call_id: str | None = None
    """Tool: the call answered."""


class TrlConversation(msgspec.Struct, kw_only=True):
    """One row: an episode's conversation and the tools it was offered."""

    episode_id: int
    """Episode it comes from."""
    problem_id: str
    """Problem the episode worked on."""
    reward: float
    """The episode's reward."""
    messages: list[TrlMessage]
    """The conversation, ending on the assistant's last turn."""
    tools: Schemas
    """JSON schemas of the tools offered."""


def offered_tools(names: list[str] | None, backend: str) -> Schemas:
    """The tools an episode on `backend` is offered (`names`: scheduler.tools, None: every skill)."""
    import skills
    from skills.base import tool_schemas

    skills.load_skills()
    return tool_schemas(names, backend=backend)


def episode_backend(detail: EpisodeDetail, default: str) -> str:
    """The backend the episode's evaluations ran on, else `default` (none ran, or several did)."""
    logged = {ev.result.backend for ev in detail.evaluations}
    return logged.pop() if len(logged) == 1 else default


def trl_call(call: ToolCallSpec, tools: Schemas) -> TrlToolCall | str:
    """The call in TRL's form, or why it has none: arguments that are not a JSON object the
    offered tool accepts (the episode answered such a call with an error, not a result)."""
    from skills.base import decode_args, get_skill

    if call.name not in {t["function"]["name"] for t in tools}:
        return f"call {call.id}: {call.name!r} is not an offered tool"
    try:
        args = json.loads(call.arguments.strip() or "{}")
    except json.JSONDecodeError as exc:
        return f"call {call.id}: arguments are not JSON ({exc.msg})"
    if not isinstance(args, dict):
        return f"call {call.id}: arguments are not a JSON object"
    problem = decode_args(get_skill(call.name), args)
    if isinstance(problem, str):
        return f"call {call.id}: {problem}"
    return TrlToolCall(id=call.id, function=TrlFunction(name=call.name, arguments=args))


def conversation(detail: EpisodeDetail, tools: Schemas, parse: ToolParser) -> list[TrlMessage] | str:
    """Each turn's new input messages, then its output; or why the episode has no TRL form."""
    out: list[TrlMessage] = []
    names: dict[str, str] = {}  # call id -> tool, for the tool messages that answer it
    for turn in detail.turns:
        for m in turn.messages:
            if m.role == "assistant":  # the policy logs only what it adds: system, user, tool
                return f"turn {turn.index}: an assistant message among the inputs"
            name = names.get(m.tool_call_id or "") if m.role == "tool" else None
            out.append(TrlMessage(role=m.role, content=m.content or "", name=name, tool_call_id=m.tool_call_id))
        calls: list[TrlToolCall] = []
        for c in turn.tool_calls:
            call = trl_call(c, tools)
            if isinstance(call, str):
                return f"turn {turn.index}: {call}"
            calls.append(call)
            names[c.id] = c.name
        text = parse(turn.text, lambda: "").content if turn.tool_calls else turn.text
        out.append(TrlMessage(role="assistant", content=text, tool_calls=calls or None))
    return out if out else "no turns"


def conversation_row(detail: EpisodeDetail, tools: Schemas, parse: ToolParser) -> TrlConversation | str:
    """The episode's row, or why it has none."""
    e = detail.episode
    if e.reward is None:
        return "not graded"
    messages = conversation(detail, tools, parse)
    if isinstance(messages, str):
        return messages
    return TrlConversation(episode_id=e.id, problem_id=e.problem_id, reward=e.reward, messages=messages, tools=tools)


async def export_conversations(store: Store, path: Path, *, tools_for: Callable[[EpisodeDetail], Schemas],
                               parse: ToolParser, min_reward: float = 0.0, trainable: bool | None = None,
                               chunk: int = 64) -> tuple[int, dict[int, str]]:
    """Write one row per finished episode whose reward is above `min_reward` (`trainable`: only
    those with token ids) to `path` (JSONL), through a temporary file and a rename like every
    export. `tools_for`: the tools an episode was offered. Returns (rows, skipped episode -> why)."""
    episodes = await store.list_episodes(finished=True, trainable=trainable)
    ids = [e.id for e in episodes if e.reward is not None and e.reward > min_reward]
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    rows, skipped = 0, {}
    try:
        async with await anyio.open_file(tmp, "wb") as f:
            for start in range(0, len(ids), chunk):
                part = ids[start:start + chunk]
                details = await store.read(lambda c, p=part: [select_episode(c, i) for i in p])  # type: ignore[misc]
                lines = []
                for d in details:
                    if d is None:
                        continue
                    row = conversation_row(d, tools_for(d), parse)
                    if isinstance(row, str):
                        skipped[d.episode.id] = row
                    else:
                        lines.append(msgspec.json.encode(row) + b"\n")
                await f.write(b"".join(lines))
                rows += len(lines)
        await anyio.Path(tmp).rename(path)
    finally:
        await anyio.Path(tmp).unlink(missing_ok=True)
    return rows, skipped
