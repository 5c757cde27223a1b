"""The reads the trainer needs (trainer/, DESIGN §9-10): plain `fn(conn)` functions, run through
`Store.read(fn)` (one read transaction each), so the trainer writes no SQL of its own.

    latest_policy_version   the newest policy version recorded
    trainable_episodes      finished, trainable, graded episodes to train on, and how many are stale
    turn_tokens             the token data of their turns, for rebuilding the sequences, and
                            whether each tool call was malformed (the RFT filter)
    curriculum_problems     the problem set the scheduler draws from, with tier and level
    graded_rewards          every graded episode's reward, newest first (curriculum statistics)
    final_speedups          the final evaluations' speedups of the episodes a step consumed
    last_train_step         the last step a run recorded
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from runtime.store.rows import GRADED, EpisodeRow, ToolCallSpec
from runtime.store.sql import EPISODE_COLUMNS, Conn, typed_rows, unpack_ids, unpack_logprobs

PARAMS = 500
"""Ids per `IN (...)` list (SQLite's host-parameter limit)."""


class TurnTokens(msgspec.Struct, kw_only=True):
    """The token data of one logged LLM call: the columns of a TurnRow the trainer reads (not
    its text or messages, which a step's thousands of turns need not carry)."""

    index: int
    """0-based position in the episode."""
    prompt_prefix: int
    """Tokens kept from the previous context + completion."""
    prompt_ids: list[int] | None
    """New prompt tokens (None: the server returned none)."""
    completion_ids: list[int] | None
    """Sampled tokens (None: the server returned none)."""
    logprobs: list[float] | None
    """Behaviour logprob of each sampled token (None: not logged)."""
    temperature: float
    """Sampling temperature of the call (1.0 when not logged, or not positive)."""
    tool_calls: list[ToolCallSpec]
    """Parsed tool calls as logged."""
    malformed: list[bool | None] = msgspec.field(default_factory=list)
    """Per tool call, by position: the episode loop's verdict stored with it (tool_calls.malformed);
    None, or a position past the list's end: none recorded (a store before schema 6, or a call
    that never ran: one after a `submit` in the same reply)."""


class ProblemTier(msgspec.Struct, kw_only=True, frozen=True):
    """A problem of the problem set, with what its curriculum tier is taken from."""

    id: str
    """Problem content hash."""
    tier: int | None
    """Curriculum difficulty tier (None when unknown)."""
    level: int | None
    """KernelBench level (None when unknown)."""


def latest_policy_version(conn: Conn) -> int:
    """Newest policy version in the store (0 when none is recorded)."""
    row = conn.execute("SELECT max(version) FROM policies").fetchone()
    return 0 if row is None or row[0] is None else int(row[0])


def trainable_episodes(conn: Conn, *, min_version: int | None, exclude: set[int],
                       limit: int | None) -> tuple[list[EpisodeRow], int]:
    """Finished, trainable episodes with a GRADED status, not in `exclude`, oldest first (at
    most `limit`), and how many more were dropped as stale (policy version below `min_version`;
    a NULL version counts as 0)."""
    marks = ", ".join("?" * len(GRADED))
    cur = conn.execute(f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE finished IS NOT NULL AND trainable = 1"
                       f" AND status IN ({marks}) ORDER BY id", GRADED)
    fresh: list[EpisodeRow] = []
    stale = 0
    for e in typed_rows(cur, EpisodeRow):
        if e.id in exclude:
            continue
        if min_version is not None and (e.policy_version or 0) < min_version:
            stale += 1
            continue
        fresh.append(e)
    return (fresh if limit is None else fresh[:limit]), stale


def _temperature(sampling: bytes | str) -> float:
    temp = msgspec.json.decode(sampling).get("temperature")
    return 1.0 if not isinstance(temp, int | float) or temp <= 0 else float(temp)


def turn_tokens(conn: Conn, episode_ids: Sequence[int]) -> dict[int, list[TurnTokens]]:
    """Token data of the episodes' turns, by episode id, in turn order."""
    out: dict[int, list[TurnTokens]] = {i: [] for i in episode_ids}
    ids = list(episode_ids)
    for s in range(0, len(ids), PARAMS):
        part = ids[s:s + PARAMS]
        cur = conn.execute(
            "SELECT episode_id, idx, prompt_prefix, prompt_ids, completion_ids, logprobs, sampling,"
            f" tool_calls FROM turns WHERE episode_id IN ({', '.join('?' * len(part))})"
            " ORDER BY episode_id, idx", part)
        by_turn: dict[tuple[int, int], TurnTokens] = {}
        for eid, idx, prefix, p_ids, c_ids, lps, sampling, calls in cur:
            specs = msgspec.json.decode(calls, type=list[ToolCallSpec])
            turn = TurnTokens(
                index=idx, prompt_prefix=prefix, prompt_ids=unpack_ids(p_ids),
                completion_ids=unpack_ids(c_ids), logprobs=unpack_logprobs(lps),
                temperature=_temperature(sampling), tool_calls=specs, malformed=[None] * len(specs))
            out[eid].append(turn)
            by_turn[eid, idx] = turn
        flags = conn.execute(
            "SELECT c.episode_id, t.idx, c.idx, c.malformed FROM tool_calls AS c JOIN turns AS t ON t.id = c.turn_id"
            f" WHERE c.episode_id IN ({', '.join('?' * len(part))}) AND c.malformed IS NOT NULL", part)
        for eid, turn_idx, call_idx, malformed in flags:
            turn = by_turn[eid, turn_idx]
            if call_idx < len(turn.malformed):  # the loop stores call k of the turn's tool_calls as idx k
                turn.malformed[call_idx] = bool(malformed)
    return out


def curriculum_problems(conn: Conn) -> list[ProblemTier]:
    """The problems the scheduler draws from, by id: all but those that arrived over HTTP or
    through `kagent eval` (sources `request`, `evaluation`)."""
    cur = conn.execute("SELECT id, tier, level FROM problems WHERE source NOT IN ('request', 'evaluation')"
                       " ORDER BY id")
    return [ProblemTier(id=i, tier=t, level=v) for i, t, v in cur]


def graded_rewards(conn: Conn) -> list[tuple[str, float]]:
    """(problem id, reward) of every finished episode with a reward, any origin, newest first."""
    cur = conn.execute("SELECT problem_id, reward FROM episodes WHERE finished IS NOT NULL"
                       " AND reward IS NOT NULL ORDER BY finished DESC, id DESC")
    return [(pid, float(reward)) for pid, reward in cur]


def final_speedups(conn: Conn, episode_ids: Sequence[int]) -> list[tuple[float | None, float | None]]:
    """(speedup over eager, over torch.compile) of every final evaluation of the episodes (None:
    not measured)."""
    if not episode_ids:
        return []
    marks = ", ".join("?" * len(episode_ids))
    return [(e, c) for e, c in conn.execute(
        f"SELECT speedup_eager, speedup_compile FROM evaluations WHERE mode = 'final'"
        f" AND episode_id IN ({marks})", list(episode_ids))]


def last_train_step(conn: Conn, run: str, stage: str) -> int | None:
    """The highest step the store records for the run's stage (None: none)."""
    row = conn.execute("SELECT max(step) FROM train_steps WHERE run = ? AND stage = ?", (run, stage)).fetchone()
    return None if row[0] is None else int(row[0])
