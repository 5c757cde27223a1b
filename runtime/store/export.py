"""Episode export: JSONL and Parquet, one episode per line / row (DESIGN §7, §9).

Every record has the episode's identity and outcome, `messages` in OpenAI chat format (system,
user, assistant with `tool_calls`, tool), and `turns`: per LLM call the exact token arrays.
The context of turn k is (context + completion_ids of turn k-1)[:prompt_prefix] + prompt_ids;
a trainer masks 1 on completion_ids and 0 on the rest.

Parquet needs pyarrow (optional); `datasets.load_dataset("parquet", data_files=PATH)` reads it.
Both writers go through a temporary file and rename, so a failed export leaves no half file.

The functions take anything with the Store's `read(fn)` (`Reader`), not the Store class, so the
Store (runtime/store/store.py, whose `export_jsonl` / `export_parquet` call them) and this module
do not import each other.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import anyio
import msgspec
from anyio import to_thread

from runtime.store.rows import EpisodeDetail, EpisodeStatus, Origin, StoreError
from runtime.store.sql import Conn, select_episode, select_episodes

T = TypeVar("T")
CHUNK = 64
"""Episodes read per read transaction (bounds memory and the time a reader pins the WAL)."""


class Reader(Protocol):
    """What an export needs of the store: `Store.read`."""

    async def read(self, fn: Callable[[Conn], T]) -> T: ...


class FunctionCall(msgspec.Struct):
    """OpenAI `function` of a tool call."""

    name: str
    """Tool name."""
    arguments: str
    """Arguments as the model wrote them."""


class ChatToolCall(msgspec.Struct):
    """OpenAI tool call."""

    id: str
    """Call id."""
    function: FunctionCall
    """What was called."""
    type: Literal["function"] = "function"
    """Always `function`."""


class ChatMessage(msgspec.Struct, omit_defaults=True):
    """OpenAI chat message."""

    role: Literal["system", "user", "assistant", "tool"]
    """Author."""
    content: str | None
    """Text (None for an assistant message with only tool calls)."""
    tool_calls: list[ChatToolCall] | None = None
    """Assistant: the calls made."""
    tool_call_id: str | None = None
    """Tool: the call answered."""


class ExportTurn(msgspec.Struct):
    """One LLM call's tokens."""

    index: int
    """Position in the episode."""
    policy_version: int | None
    """Policy that generated it."""
    prompt_prefix: int
    """Tokens carried over from the previous turn's context + completion."""
    prompt_ids: list[int] | None
    """Prompt token ids after the prefix."""
    completion_ids: list[int] | None
    """Sampled token ids."""
    logprobs: list[float] | None
    """Behaviour logprob per sampled token."""
    finish_reason: str | None
    """Why generation stopped."""


class ExportEpisode(msgspec.Struct):
    """One exported episode.

    Not the store's EpisodeRow (runtime/store/rows.py): this is the export's wire format, one
    JSONL line / Parquet row as documented (docs/runtime.md) and as `_arrow_schema` spells it,
    flat, named for readers outside kagent (`episode_id`, the problem's name, the speedups of the
    final evaluation), with the conversation and the token arrays; a change here changes files
    others read."""

    episode_id: int
    """Episode id in the store."""
    problem_id: str
    """Problem content hash."""
    problem: str
    """Problem name."""
    status: EpisodeStatus
    """How it ended."""
    reward: float | None
    """Final reward (None when not graded)."""
    trainable: bool
    """Token ids complete enough to train on."""
    policy_version: int | None
    """Policy version when it started."""
    origin: Origin
    """Why it ran."""
    speedup_eager: float | None
    """Speedup over eager of the last final evaluation (None when not measured)."""
    speedup_compile: float | None
    """Speedup over torch.compile of the last final evaluation (None when not measured)."""
    messages: list[ChatMessage]
    """The conversation."""
    turns: list[ExportTurn]
    """Token arrays per LLM call."""


def _chat_calls(calls: list[Any]) -> list[ChatToolCall] | None:
    return [ChatToolCall(id=c.id, function=FunctionCall(name=c.name, arguments=c.arguments))
            for c in calls] or None


def chat_messages(detail: EpisodeDetail) -> list[ChatMessage]:
    """The conversation: each turn's new input messages, then its output. The last turn's tool
    results never reached the model (the episode ended), so they come from tool_calls."""
    out: list[ChatMessage] = []
    for turn in detail.turns:
        out += [ChatMessage(role=m.role, content=m.content, tool_calls=_chat_calls(m.tool_calls or []),
                            tool_call_id=m.tool_call_id) for m in turn.messages]
        out.append(ChatMessage(role="assistant", content=turn.text, tool_calls=_chat_calls(turn.tool_calls)))
    if detail.turns:
        last = detail.turns[-1].id
        out += [ChatMessage(role="tool", content=c.result, tool_call_id=c.call_id)
                for c in detail.tool_calls if c.turn_id == last]
    return out


def episode_record(detail: EpisodeDetail) -> ExportEpisode:
    e = detail.episode
    final = [ev.result for ev in detail.evaluations if ev.result.mode == "final"]
    speed = {s.baseline: s.value for s in final[-1].speedups} if final else {}
    return ExportEpisode(
        episode_id=e.id, problem_id=e.problem_id, problem=detail.problem.name, status=e.status,
        reward=e.reward, trainable=e.trainable, policy_version=e.policy_version, origin=e.origin,
        speedup_eager=speed.get("eager"), speedup_compile=speed.get("compile"),
        messages=chat_messages(detail),
        turns=[ExportTurn(index=t.index, policy_version=t.policy_version, prompt_prefix=t.prompt_prefix,
                          prompt_ids=t.prompt_ids, completion_ids=t.completion_ids, logprobs=t.logprobs,
                          finish_reason=t.finish_reason) for t in detail.turns])


def _select_many(conn: Conn, ids: list[int]) -> list[EpisodeDetail | None]:
    return [select_episode(conn, i) for i in ids]


async def iter_records(store: Reader, *, finished: bool | None = True,
                       trainable: bool | None = None) -> AsyncIterator[list[ExportEpisode]]:
    """Export records in chunks of CHUNK episodes, by episode id."""
    ids = [e.id for e in await store.read(partial(select_episodes, finished=finished, trainable=trainable))]
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        details = await store.read(partial(_select_many, ids=chunk))
        yield [episode_record(d) for d in details if d is not None]


async def export_jsonl(store: Reader, path: Path, *, finished: bool | None = True,
                       trainable: bool | None = None) -> int:
    """Write one JSON object per episode; returns the number written."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    n = 0
    try:
        async with await anyio.open_file(tmp, "wb") as f:
            async for records in iter_records(store, finished=finished, trainable=trainable):
                await f.write(b"".join(msgspec.json.encode(r) + b"\n" for r in records))
                n += len(records)
        await anyio.Path(tmp).rename(path)
    finally:
        await anyio.Path(tmp).unlink(missing_ok=True)
    return n


def _arrow_schema(pa: Any) -> Any:
    call = pa.struct([("id", pa.string()), ("type", pa.string()),
                      ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])
    message = pa.struct([("role", pa.string()), ("content", pa.string()),
                         ("tool_calls", pa.list_(call)), ("tool_call_id", pa.string())])
    turn = pa.struct([("index", pa.int64()), ("policy_version", pa.int64()), ("prompt_prefix", pa.int64()),
                      ("prompt_ids", pa.list_(pa.int32())), ("completion_ids", pa.list_(pa.int32())),
                      ("logprobs", pa.list_(pa.float32())), ("finish_reason", pa.string())])
    return pa.schema([
        ("episode_id", pa.int64()), ("problem_id", pa.string()), ("problem", pa.string()),
        ("status", pa.string()), ("reward", pa.float64()), ("trainable", pa.bool_()),
        ("policy_version", pa.int64()), ("origin", pa.string()), ("speedup_eager", pa.float64()),
        ("speedup_compile", pa.float64()), ("messages", pa.list_(message)), ("turns", pa.list_(turn)),
    ])


def load_pyarrow() -> tuple[Any, Any]:
    """pyarrow and pyarrow.parquet, or a StoreError saying how to get them."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise StoreError("Parquet export needs pyarrow, which is not installed: `pip install pyarrow`"
                         " (or export JSONL, which needs nothing)") from exc
    return pa, pq


async def export_parquet(store: Reader, path: Path, *, finished: bool | None = True,
                         trainable: bool | None = None) -> int:
    """Write a Parquet file, one row per episode (one row group per chunk); returns the rows."""
    pa, pq = load_pyarrow()
    schema = _arrow_schema(pa)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    n = 0
    try:
        writer = pq.ParquetWriter(str(tmp), schema)
        try:
            async for records in iter_records(store, finished=finished, trainable=trainable):
                table = pa.Table.from_pylist(msgspec.to_builtins(records), schema=schema)
                await to_thread.run_sync(writer.write_table, table)
                n += len(records)
        finally:
            writer.close()
        await anyio.Path(tmp).rename(path)
    finally:
        await anyio.Path(tmp).unlink(missing_ok=True)
    return n
