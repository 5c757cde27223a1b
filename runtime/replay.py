"""`kagent replay EPISODE`: re-run a logged episode's tool calls in a fresh workspace and sandbox,
and compare each result with the logged one.

The calls run in their logged order through the same skills (`call_skill`) and the same evaluator
the daemon uses, on a new workspace made from the stored problem source. What is compared:

    every call      the ok flag
    file skills     the exact text returned (reads, writes, edits and listings are deterministic)
    compile         build success
    run_tests, profile   compiled, correct, and the names of the checks that fired

Timings differ from run to run and are shown, never compared. `--skip-timing` replays profile
calls as run_tests (correctness only), which is much faster on the cpu backend. The replay is
not stored (the store may be held by a running daemon); it only reads the store.
"""

from __future__ import annotations

import shutil
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import msgspec

from runtime.store import EpisodeDetail, ToolCallRow, problem_path
from skills import load_skills
from skills.base import SkillContext, SkillResult, call_skill
from skills.evaluator.baselines import BaselineCache
from skills.evaluator.config import EvalConfig
from skills.local_evaluator import LocalEvaluator
from skills.workspace import Workspace, WorkspaceConfig

FILE_SKILLS = frozenset({"read_file", "write_file", "edit_file", "list_files"})
EVAL_SKILLS = frozenset({"run_tests", "profile"})


class Facts(msgspec.Struct, kw_only=True):
    """What is compared of one tool call's result."""

    ok: bool
    """The call succeeded."""
    compiled: bool | None = None
    """compile / run_tests / profile: the kernels built."""
    correct: bool | None = None
    """run_tests / profile: every output within budget."""
    flags: list[str] | None = None
    """run_tests / profile: checks that fired."""
    text: str | None = None
    """File skills: the text returned."""
    speedup: float | None = None
    """profile: speedup over eager (shown, not compared)."""


class ReplayRow(msgspec.Struct, kw_only=True):
    """One replayed call next to its logged original."""

    turn: int
    """Turn index."""
    index: int
    """Position in the turn."""
    skill: str
    """Skill called."""
    logged: Facts
    """From the store."""
    replayed: Facts
    """From this run."""
    differences: list[str]
    """Facts that differ (empty: the call reproduced)."""
    note: str = ""
    """How the call was replayed (e.g. profile as run_tests)."""


def facts(skill: str, ok: bool, text: str, record: Any) -> Facts:
    """The comparable facts of a result; `record` as plain JSON (a stored record, or a live one
    passed through msgspec.to_builtins)."""
    f = Facts(ok=ok)
    rec = record if isinstance(record, dict) else {}
    if skill in FILE_SKILLS:
        f.text = text
    elif skill == "compile":
        f.compiled = rec.get("ok") if rec else None
    elif skill in EVAL_SKILLS and rec:
        f.compiled, f.correct = rec.get("compiled"), rec.get("correct")
        f.flags = sorted(fl.get("name", "?") for fl in rec.get("flags", []))
        speed = {s.get("baseline"): s.get("value") for s in rec.get("speedups", [])}
        f.speedup = speed.get("eager")
    return f


def compare(skill: str, logged: Facts, replayed: Facts, *, skip_timing: bool) -> list[str]:
    names = ["ok", "compiled", "correct", "flags", "text"]
    if skill == "profile" and skip_timing:
        names = ["compiled", "correct"]  # a profile's ok also covers its timing checks
    diffs = []
    for name in names:
        a, b = getattr(logged, name), getattr(replayed, name)
        if a is not None and a != b:
            diffs.append(name)
    return diffs


def _problem_file(detail: EpisodeDetail, folder: Path) -> Path:
    """The stored problem source in a file named as the daemon names it."""
    if detail.problem.code is None:
        raise ValueError(f"problem {detail.problem.name} ({detail.problem.id}) has no stored source; cannot replay")
    path = problem_path(folder, detail.problem.name)
    path.write_text(detail.problem.code, encoding="utf-8")
    return path


class Replayer:
    """Runs an episode's calls again, one by one."""

    def __init__(self, detail: EpisodeDetail, *, eval_config: EvalConfig, cache: BaselineCache | None,
                 skip_timing: bool = False, max_output_chars: int = 8000) -> None:
        load_skills()
        self.detail = detail
        self.eval_config = eval_config
        self.cache = cache
        self.skip_timing = skip_timing
        self.max_output_chars = max_output_chars

    async def _call(self, call: ToolCallRow, ctx: SkillContext) -> tuple[SkillResult, str]:
        if call.skill == "profile" and self.skip_timing:
            # profile's arguments (against, repeats) are not run_tests': it checks the workspace alone.
            return await call_skill("run_tests", {}, ctx), "profile replayed as run_tests"
        return await call_skill(call.skill, call.args, ctx), ""

    async def run(self) -> list[ReplayRow]:
        turns = {t.id: t.index for t in self.detail.turns}
        tmp = Path(await anyio.to_thread.run_sync(partial(tempfile.mkdtemp, prefix="kagent-replay-")))
        try:
            problem = await anyio.to_thread.run_sync(_problem_file, self.detail, tmp)
            ws = await anyio.to_thread.run_sync(partial(
                Workspace.create, self.detail.problem.code or "", config=WorkspaceConfig(root=str(tmp / "ws")),
                name_hint="replay"))
            ctx = SkillContext(workspace=ws, max_output_chars=self.max_output_chars,
                               evaluator=LocalEvaluator(problem, self.eval_config, cache=self.cache))
            rows = []
            for call in self.detail.tool_calls:
                result, note = await self._call(call, ctx)
                record = msgspec.to_builtins(result.record) if result.record is not None else None
                logged = facts(call.skill, call.ok, call.result, call.record)
                replayed = facts(call.skill, result.ok, result.text, record)
                rows.append(ReplayRow(turn=turns.get(call.turn_id, -1), index=call.index, skill=call.skill,
                                      logged=logged, replayed=replayed, note=note,
                                      differences=compare(call.skill, logged, replayed, skip_timing=self.skip_timing)))
            return rows
        finally:
            await anyio.to_thread.run_sync(partial(shutil.rmtree, tmp, ignore_errors=True))


def _cell(f: Facts) -> str:
    parts = ["ok" if f.ok else "FAILED"]
    if f.compiled is not None:
        parts.append("built" if f.compiled else "build failed")
    if f.correct is not None:
        parts.append("correct" if f.correct else "incorrect")
    if f.flags:
        parts.append("flags " + ",".join(f.flags))
    if f.speedup is not None:
        parts.append(f"{f.speedup:.2f}x eager")
    return ", ".join(parts)


def table_rows(rows: list[ReplayRow]) -> list[tuple[str, str, str, str, str]]:
    """(turn.call, skill, logged, replayed, verdict) per call, for the CLI's table."""
    out = []
    for r in rows:
        verdict = "same" if not r.differences else "DIFFERS: " + ", ".join(r.differences)
        if r.note:
            verdict += f" ({r.note})"
        out.append((f"{r.turn}.{r.index}", r.skill, _cell(r.logged), _cell(r.replayed), verdict))
    return out
