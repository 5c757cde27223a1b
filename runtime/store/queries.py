"""Read-only SQL the daemon, the HTTP server, the CLI and the viewer need beyond the rows' own
reads (runtime/store/sql.py): plain `fn(conn)` functions, run through `Store.read(fn)` (one read
transaction each)."""

from __future__ import annotations

import math
import sqlite3
from typing import Any

import msgspec

from runtime.store.rows import EpisodeStatus, Origin
from runtime.store.sql import Conn


class EpisodeSummary(msgspec.Struct, kw_only=True):
    """One line per episode (the `episode_summary` view).

    Not the store's EpisodeRow: the view's row, with the columns it computes (the problem's name,
    wall time, counts, the final speedups), as GET /v1/episodes sends it and `kagent episodes
    list` and the viewer show it: a wire format of its own."""

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


# ------------------------------------------------------------------ the viewer (runtime/ui)


class EpisodeFilter(msgspec.Struct, kw_only=True, frozen=True):
    """Which episodes the viewer lists; None leaves a field unfiltered."""

    problem: str | None = None
    """Problem name, exact (e.g. `level1/01_relu`)."""
    level: int | None = None
    """KernelBench level of the problem."""
    status: EpisodeStatus | None = None
    """How it ended."""
    origin: Origin | None = None
    """Why it ran."""
    policy_version: int | None = None
    """Policy version when it started."""
    min_reward: float | None = None
    """Reward at least this (ungraded episodes drop out)."""
    max_reward: float | None = None
    """Reward at most this (ungraded episodes drop out)."""


def _filter_sql(f: EpisodeFilter) -> tuple[str, list[Any]]:
    where, args = [], []
    for cond, value in (("p.name = ?", f.problem), ("p.level = ?", f.level), ("e.status = ?", f.status),
                        ("e.origin = ?", f.origin), ("e.policy_version = ?", f.policy_version),
                        ("e.reward >= ?", f.min_reward), ("e.reward <= ?", f.max_reward)):
        if value is not None:
            where.append(cond)
            args.append(value)
    return (" WHERE " + " AND ".join(where)) if where else "", args


def filter_episodes(conn: Conn, f: EpisodeFilter, *, limit: int, offset: int) -> tuple[int, list[EpisodeSummary]]:
    """(episodes matching `f`, one page of them newest first). Call inside one read transaction."""
    where, args = _filter_sql(f)
    base = f"FROM episodes AS e JOIN problems AS p ON p.id = e.problem_id{where}"
    total = int(conn.execute(f"SELECT count(*) {base}", args).fetchone()[0])
    # The summary view computes its per-episode subqueries only for the page's ids.
    page = f"SELECT e.id {base} ORDER BY e.id DESC LIMIT ? OFFSET ?"
    rows = _summaries(conn.execute(f"SELECT {_SUMMARY_COLS} FROM episode_summary WHERE id IN ({page})"
                                   " ORDER BY id DESC", [*args, int(limit), int(offset)]))
    return total, rows


class FilterChoices(msgspec.Struct, kw_only=True):
    """The values the viewer's episode filters offer: those some episode has."""

    problems: list[str]
    """Problem names, sorted."""
    levels: list[int]
    """Levels, ascending."""
    policy_versions: list[int]
    """Policy versions, ascending."""


def filter_choices(conn: Conn) -> FilterChoices:
    names = [r[0] for r in conn.execute(
        "SELECT DISTINCT p.name FROM problems AS p WHERE p.id IN (SELECT problem_id FROM episodes) ORDER BY p.name")]
    levels = [r[0] for r in conn.execute(
        "SELECT DISTINCT p.level FROM problems AS p WHERE p.level IS NOT NULL"
        " AND p.id IN (SELECT problem_id FROM episodes) ORDER BY p.level")]
    versions = [r[0] for r in conn.execute(
        "SELECT DISTINCT policy_version FROM episodes WHERE policy_version IS NOT NULL ORDER BY policy_version")]
    return FilterChoices(problems=names, levels=levels, policy_versions=versions)


# The last final evaluation of episode e (the one its reward came from), and whether it passed:
# compiled, correct and no check fired (skills.reward.failed, in SQL).
_FINAL = ("LEFT JOIN evaluations AS f ON f.id = (SELECT max(id) FROM evaluations"
          " WHERE episode_id = e.id AND mode = 'final')")
_PASSED = "coalesce(f.compiled = 1 AND f.correct = 1 AND json_array_length(f.flags) = 0, 0)"


class ProblemStats(msgspec.Struct, kw_only=True):
    """One problem's episodes summed up."""

    problem_id: str
    """Problem content hash."""
    name: str
    """Problem name."""
    level: int | None
    """KernelBench level (None when unknown)."""
    source: str
    """Where the problem came from."""
    episodes: int
    """Episodes run on it (any status)."""
    graded: int
    """Episodes with a reward."""
    passed: int
    """Episodes whose final evaluation passed (compiled, correct, no flag)."""
    mean_reward: float | None
    """Mean reward of the graded episodes (None: none graded)."""
    best_reward: float | None
    """Highest reward (None: none graded)."""
    best_speedup_eager: float | None
    """Highest speedup over eager of a passed final evaluation (None: none passed)."""
    last_started: float
    """Unix time the newest episode started."""


def problem_stats(conn: Conn) -> list[ProblemStats]:
    """Every problem that has an episode, by name."""
    cur = conn.execute(
        "SELECT p.id AS problem_id, p.name, p.level, p.source, count(*) AS episodes,"
        " count(e.reward) AS graded, sum(" + _PASSED + ") AS passed, avg(e.reward) AS mean_reward,"
        " max(e.reward) AS best_reward,"
        " max(CASE WHEN " + _PASSED + " THEN f.speedup_eager END) AS best_speedup_eager,"
        " max(e.started) AS last_started"
        " FROM episodes AS e JOIN problems AS p ON p.id = e.problem_id " + _FINAL +
        " GROUP BY p.id ORDER BY p.name, p.id")
    names = [d[0] for d in cur.description]
    return [msgspec.convert(dict(zip(names, row, strict=True)), ProblemStats) for row in cur.fetchall()]


class RewardPoint(msgspec.Struct, kw_only=True):
    """One episode of a problem's reward history."""

    episode_id: int
    """Episode id."""
    started: float
    """Unix time it started."""
    policy_version: int | None
    """Policy version when it started."""
    status: EpisodeStatus
    """How it ended."""
    reward: float | None
    """Its reward (None: not graded)."""
    passed: bool
    """Its final evaluation passed."""
    speedup_eager: float | None
    """Speedup over eager of its final evaluation (None: not timed)."""
    speedup_compile: float | None
    """Speedup over torch.compile of its final evaluation (None: not timed)."""


def problem_history(conn: Conn, problem_id: str) -> list[RewardPoint]:
    """The problem's episodes, oldest first."""
    cur = conn.execute(
        "SELECT e.id AS episode_id, e.started, e.policy_version, e.status, e.reward, " + _PASSED + " AS passed,"
        " f.speedup_eager, f.speedup_compile FROM episodes AS e " + _FINAL +
        " WHERE e.problem_id = ? ORDER BY e.id", (problem_id,))
    names = [d[0] for d in cur.description]
    return [msgspec.convert(dict(zip(names, row, strict=True)), RewardPoint, strict=False) for row in cur.fetchall()]


class VerifiedSolution(msgspec.Struct, kw_only=True):
    """The evaluation that verified a problem's best solution."""

    evaluation_id: int
    """Evaluation row id."""
    episode_id: int
    """Episode whose workspace it graded."""
    tool_call_id: int | None
    """Tool call that asked for it (None: the episode's final grading)."""
    mode: str
    """test, profile or final."""
    speedup_eager: float | None
    """Speedup over eager (None: not timed)."""
    speedup_compile: float | None
    """Speedup over torch.compile (None: not timed)."""


def best_verified(conn: Conn, problem_id: str) -> VerifiedSolution | None:
    """The passed evaluation (any mode, in an episode) with the highest speedup over eager; untimed
    ones rank last, ties go to the newest."""
    cur = conn.execute(
        "SELECT id AS evaluation_id, episode_id, tool_call_id, mode, speedup_eager, speedup_compile"
        " FROM evaluations WHERE problem_id = ? AND episode_id IS NOT NULL AND compiled = 1 AND correct = 1"
        " AND json_array_length(flags) = 0"
        " ORDER BY speedup_eager IS NULL, speedup_eager DESC, id DESC LIMIT 1", (problem_id,))
    row = cur.fetchone()
    if row is None:
        return None
    names = [d[0] for d in cur.description]
    return msgspec.convert(dict(zip(names, row, strict=True)), VerifiedSolution)


class PolicyStats(msgspec.Struct, kw_only=True):
    """What the finished episodes of one policy version achieved."""

    policy_version: int | None
    """Policy version (None: episodes of an unversioned policy)."""
    episodes: int
    """Finished episodes."""
    graded: int
    """Of them, with a reward."""
    mean_reward: float | None
    """Mean reward of the graded ones (None: none graded)."""
    pass_rate: float | None
    """Share of the graded ones whose final evaluation passed (None: none graded)."""
    speedup_eager: float | None
    """Geometric mean speedup over eager of the passed ones (None: none timed)."""
    speedup_compile: float | None
    """Geometric mean speedup over torch.compile of the passed ones (None: none timed)."""


def _geomean(values: list[float]) -> float | None:
    positive = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, positive)) / len(positive)) if positive else None


def policy_stats(conn: Conn) -> list[PolicyStats]:
    """One row per policy version that has finished episodes, ascending (unversioned first)."""
    cur = conn.execute(
        "SELECT e.policy_version, e.reward, " + _PASSED + ", f.speedup_eager, f.speedup_compile"
        " FROM episodes AS e " + _FINAL + " WHERE e.status != 'running' ORDER BY e.policy_version, e.id")
    groups: dict[int | None, list[tuple[Any, ...]]] = {}
    for row in cur.fetchall():
        groups.setdefault(row[0], []).append(row)
    out = []
    for version, rows in groups.items():
        graded = [r for r in rows if r[1] is not None]
        passed = [r for r in graded if r[2]]
        out.append(PolicyStats(
            policy_version=version, episodes=len(rows), graded=len(graded),
            mean_reward=sum(r[1] for r in graded) / len(graded) if graded else None,
            pass_rate=len(passed) / len(graded) if graded else None,
            speedup_eager=_geomean([r[3] for r in passed if r[3] is not None]),
            speedup_compile=_geomean([r[4] for r in passed if r[4] is not None])))
    return out
