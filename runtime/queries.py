"""Read-only SQL the daemon, the HTTP server and the CLI need beyond runtime/store.py: plain
`fn(conn)` functions, run through `Store.read(fn)` (one read transaction each)."""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec

from runtime.store import Conn, EpisodeStatus, Origin


class EpisodeSummary(msgspec.Struct, kw_only=True):
    """One line per episode (the `episode_summary` view)."""

    id: int
    """Episode id."""
    problem_id: str
    """Problem content hash."""
    problem: str
    """Problem name."""
    policy_version: int | None
    """Policy version when it started."""
    origin: Origin
    """Why it ran."""
    status: EpisodeStatus
    """How it ended (`running` until it does)."""
    reward: float | None
    """Final reward (None when not graded)."""
    trainable: bool
    """Usable for training."""
    started: float
    """Unix time it started."""
    finished: float | None
    """Unix time it ended."""
    seconds: float | None
    """Wall time (None while running)."""
    turns: int
    """LLM calls stored."""
    tool_calls: int
    """Tool calls stored."""
    completion_tokens: int | None
    """Completion tokens: per turn the server's count, else the stored ids' length; None when
    no turn has either (migration 0004: the same convention as `kagent episodes show`)."""
    speedup_eager: float | None
    """Speedup over eager of the last final evaluation."""
    speedup_compile: float | None
    """Speedup over torch.compile of the last final evaluation."""
    error: str | None
    """Why it ended badly."""


class Usage(msgspec.Struct, kw_only=True):
    """Tokens an episode used, as the policy server reported them (OpenAI `usage`)."""

    prompt_tokens: int
    """Sum of the prompt lengths of all LLM calls."""
    completion_tokens: int
    """Sum of the completion lengths."""
    total_tokens: int
    """The two together."""


_SUMMARY_COLS = ("id, problem_id, problem, policy_version, origin, status, reward, trainable, started,"
                 " finished, seconds, turns, tool_calls, completion_tokens, speedup_eager,"
                 " speedup_compile, error")


def episode_summaries(conn: Conn, *, status: str | None = None, origin: str | None = None,
                      limit: int | None = 50, before_id: int | None = None) -> list[EpisodeSummary]:
    """Newest first; `before_id` pages backwards."""
    where, args = [], []
    for cond, value in (("status = ?", status), ("origin = ?", origin), ("id < ?", before_id)):
        if value is not None:
            where.append(cond)
            args.append(value)
    sql = f"SELECT {_SUMMARY_COLS} FROM episode_summary"
    sql += f" WHERE {' AND '.join(where)}" if where else ""
    sql += " ORDER BY id DESC" + (" LIMIT ?" if limit is not None else "")
    if limit is not None:
        args.append(int(limit))
    return _summaries(conn.execute(sql, args))


def episode_summary(conn: Conn, episode_id: int) -> EpisodeSummary | None:
    rows = _summaries(conn.execute(f"SELECT {_SUMMARY_COLS} FROM episode_summary WHERE id = ?", (episode_id,)))
    return rows[0] if rows else None


def _summaries(cur: sqlite3.Cursor) -> list[EpisodeSummary]:
    names = [d[0] for d in cur.description]
    return [msgspec.convert(dict(zip(names, row, strict=True)), EpisodeSummary, strict=False)
            for row in cur.fetchall()]


def usage(conn: Conn, episode_id: int) -> Usage:
    """Reported lengths where the server gave them, else the stored token arrays' lengths."""
    row = conn.execute(
        "SELECT coalesce(sum(coalesce(prompt_tokens, prompt_prefix + coalesce(n_prompt_ids, 0))), 0),"
        " coalesce(sum(coalesce(completion_tokens, n_completion_ids, 0)), 0)"
        " FROM turns WHERE episode_id = ?", (episode_id,)).fetchone()
    prompt, completion = int(row[0]), int(row[1])
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


def status_counts(conn: Conn) -> dict[str, int]:
    """{status: episodes} over the whole store."""
    return {s: n for s, n in conn.execute("SELECT status, count(*) FROM episodes GROUP BY status")}


def turn_counts(conn: Conn, episode_id: int) -> dict[str, Any]:
    """Turns and tool calls stored for an episode (the crash test compares them across a restart)."""
    turns = conn.execute("SELECT count(*), coalesce(sum(n_completion_ids), 0) FROM turns WHERE episode_id = ?",
                         (episode_id,)).fetchone()
    calls = conn.execute("SELECT count(*) FROM tool_calls WHERE episode_id = ?", (episode_id,)).fetchone()
    return {"turns": int(turns[0]), "completion_ids": int(turns[1]), "tool_calls": int(calls[0])}
