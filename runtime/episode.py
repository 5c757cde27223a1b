"""One episode (STYLE 1): `run` -> `step` -> `query` + `execute`, until an `EpisodeEnd` says why.

    run:     start the episode row, loop `step`, grade the workspace, finish the row
    step:    query (one LLM call, stored as a turn) + execute (each tool call, stored as it ends)
    ends:    submitted | turn_limit | token_limit | time_limit | malformed_limit | policy_error
             | error (a bug, logged) | cancelled (re-raised)
             | interrupted / cancelled (`stopping` set: kagentd stops; an LLM call in flight is
               cancelled at once, a tool call finishes first; see `on_stop`)

Malformed calls (bad JSON, unknown tool, bad arguments, a turn without any call) are answered
with a message the model can read and counted; more than `max_malformed` ends the episode.
Graded endings (everything but policy_error / error / cancelled) get a final evaluation of the
workspace as it is; its reward is the episode's reward. `run_episode` adds the workspace's life.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Literal

import anyio
import msgspec

from runtime.policy import ContextFull, EpisodePolicy, Generation, PolicyError
from runtime.prompts import MALFORMED_HINT, NO_TOOL_CALL, opening_messages
from runtime.settings import EpisodeLimits
from runtime.store import (
    GRADED,
    EpisodeStatus,
    Message,
    Origin,
    ProblemRow,
    ToolCallRow,
    ToolCallSpec,
    TrajectoryStore,
    TurnRow,
    problem_path,
)
from skills.ab import typical, workspace_evaluations
from skills.base import SkillContext, SkillResult, call_skill, decode_args, get_skill, tool_schemas
from skills.evaluator import reward
from skills.evaluator.api import Evaluator
from skills.evaluator.results import EvalResult, Speedup
from skills.evaluator.state import untouched_result
from skills.workspace import MODEL, Workspace, WorkspaceConfig

log = logging.getLogger("kagent.episode")


class EpisodeEvent(msgspec.Struct, kw_only=True):
    """Progress of an episode, for streaming to an HTTP client."""

    kind: Literal["started", "turn", "tool", "evaluation", "finished"]
    """What happened."""
    episode_id: int
    """Episode."""
    text: str
    """One human-readable progress line."""
    turn: int | None = None
    """Turn index (turn and tool events)."""
    skill: str | None = None
    """Tool called (tool events)."""
    ok: bool | None = None
    """The tool call or evaluation succeeded (tool and evaluation events)."""
    status: str | None = None
    """How the episode ended (finished events)."""
    reward: float | None = None
    """Reward (evaluation and finished events)."""


class EpisodeOutcome(msgspec.Struct, kw_only=True):
    """How an episode ended and what it produced.

    Not the store's EpisodeRow: what the loop hands its caller (the scheduler, the HTTP answer,
    `kagent bench`) when it ends, without reading its row back: the best verified solution and
    its evaluation beside the few row fields it knows (id, status, reward, trainable, error)."""

    episode_id: int
    """Episode row id."""
    problem_id: str
    """Problem it worked on."""
    status: str
    """episodes.status value."""
    reward: float | None
    """Reward of the final evaluation (None when not graded)."""
    trainable: bool
    """Every turn kept its token ids."""
    files: dict[str, str]
    """The best verified solution: model_new.py + kernels/* (empty when none was verified)."""
    verified_by: Literal["final", "test", "profile"] | None
    """Which evaluation verified `files` (None when empty)."""
    speedup_eager: float | None
    """Speedup of `files` over eager PyTorch (None when not timed)."""
    speedup_compile: float | None
    """Speedup of `files` over torch.compile (None when not timed)."""
    speedups: list[Speedup]
    """The speedups of `files` with their 95% intervals."""
    evaluation: EvalResult | None
    """The final evaluation (None when not graded)."""
    turns: int
    """LLM calls made."""
    error: str | None
    """Why it ended badly (None when it did not)."""
    seconds: float
    """Wall time of the episode."""


class EpisodeEnd(Exception):
    """Ends the loop; `status` is the episodes.status value."""

    def __init__(self, status: EpisodeStatus, detail: str | None = None) -> None:
        super().__init__(detail or status)
        self.status: EpisodeStatus = status
        self.detail = detail


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


OnEvent = Callable[[EpisodeEvent], Awaitable[None]]


class Episode:
    """An agent working one problem in one workspace."""

    def __init__(self, *, store: TrajectoryStore, policy: EpisodePolicy, problem: ProblemRow, source: str, workspace: Workspace,
                 evaluator: Evaluator, limits: EpisodeLimits, origin: Origin = "rollout",
                 on_event: OnEvent | None = None, tools: list[str] | None = None,
                 rerun_of: int | None = None, stopping: anyio.Event | None = None,
                 on_stop: Literal["interrupted", "cancelled"] = "interrupted") -> None:
        self.store, self.policy, self.problem, self.limits = store, policy, problem, limits
        self.rerun_of = rerun_of
        self.stopping = stopping
        self.on_stop: EpisodeStatus = on_stop
        self.workspace, self.evaluator, self.origin, self.on_event = workspace, evaluator, origin, on_event
        schemas = tool_schemas(tools, backend=evaluator.config.backend)
        self.tools = [s["function"]["name"] for s in schemas]
        messages = opening_messages(problem, source, evaluator.config.backend)
        self.conv = policy.conversation(messages, schemas, max_context_tokens=limits.max_context_tokens)
        self.ctx = SkillContext(workspace=workspace, evaluator=evaluator, max_output_chars=limits.max_tool_output_chars)
        self.id = 0
        self.turn = 0
        self.malformed = 0
        self.best = Best()
        self.deadline = 0.0

    async def run(self) -> EpisodeOutcome:
        began = time.monotonic()
        self.id = await self.store.start_episode(self.problem.id, policy_version=self.policy.version, origin=self.origin,
                                                 rerun_of=self.rerun_of)
        await self.emit("started", f"episode {self.id}: {self.problem.name} ({self.origin}, policy {self.policy.version})")
        self.deadline = anyio.current_time() + self.limits.max_seconds
        final: EvalResult | None = None
        try:
            try:
                while True:
                    await self.step()
            except EpisodeEnd as end:
                status, error = end.status, end.detail
            except ContextFull as exc:
                status, error = "token_limit", str(exc)
            except PolicyError as exc:
                status, error = "policy_error", exc.reason
            if status in GRADED:
                final = await self.grade()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self.store.finish_episode(self.id, "cancelled", reward=None, trainable=self.conv.trainable,
                                                error="cancelled while running")
            raise
        except Exception as exc:  # a bug in a skill or the runtime: this episode ends, the daemon does not
            log.exception("episode %d failed", self.id)
            status, error = "error", f"{type(exc).__name__}: {exc}"
        return await self.finish(status, final, error, time.monotonic() - began)

    async def step(self) -> None:
        if self.turn >= self.limits.max_turns:
            raise EpisodeEnd("turn_limit", f"{self.turn} turns, the limit")
        self.check_stopping()
        gen, turn_id = await self.query()
        await self.execute(gen, turn_id)

    def check_stopping(self) -> None:
        if self.stopping is not None and self.stopping.is_set():
            raise EpisodeEnd(self.on_stop, "kagentd stopped while the episode ran (LLM calls are not waited for)"
                             + ("; it is re-run at the next start" if self.on_stop == "interrupted" else ""))

    async def query(self) -> tuple[Generation, int]:
        with anyio.move_on_after(self.deadline - anyio.current_time()) as scope:
            gen = await self.generate()
        if scope.cancelled_caught:
            raise EpisodeEnd("time_limit", f"{self.limits.max_seconds:g} s of wall time, the limit")
        if gen is None:  # kagentd is stopping: the call was cancelled, not waited for
            self.check_stopping()
            raise AssertionError("the LLM call ended without an answer")
        row = TurnRow(
            episode_id=self.id, index=self.turn, text=gen.text, policy_version=gen.policy_version,
            messages=gen.messages, prompt_prefix=gen.prompt_prefix, prompt_ids=gen.prompt_ids,
            completion_ids=gen.completion_ids, logprobs=gen.logprobs, sampling=gen.sampling,
            finish_reason=gen.finish_reason, tool_calls=gen.tool_calls, prompt_tokens=gen.prompt_tokens,
            completion_tokens=gen.completion_tokens, duration=gen.duration)
        turn_id = await self.store.add_turn(row)
        self.turn += 1
        n = len(gen.completion_ids) if gen.completion_ids is not None else gen.completion_tokens
        names = ", ".join(c.name or "?" for c in gen.tool_calls) or "no tool call"
        await self.emit("turn", f"turn {row.index}: {n} tokens, {names}", turn=row.index)
        return gen, turn_id

    async def execute(self, gen: Generation, turn_id: int) -> None:
        if not gen.tool_calls:
            self.malformed += 1
            self.conv.add(Message(role="user", content=NO_TOOL_CALL))
        for index, call in enumerate(gen.tool_calls):
            result, malformed = await self.call(call, gen.parse_errors.get(call.id))
            row = ToolCallRow(turn_id=turn_id, episode_id=self.id, index=index, call_id=call.id, skill=call.name,
                              args=call.arguments, ok=result.ok, result=result.text, record=result.record,
                              duration=result.seconds, malformed=malformed)
            row_id = await self.store.add_tool_call(row)
            for evaluation in workspace_evaluations(result.record):  # an A/B profile's B is not the workspace
                await self.store.add_evaluation(evaluation, episode_id=self.id, tool_call_id=row_id)
            offer = typical(result.record)
            if offer is not None and passed(offer):  # Best keeps passed results only: skip reading otherwise
                self.best.offer(offer, await anyio.to_thread.run_sync(read_files, self.workspace))
            self.conv.add(Message(role="tool", content=result.text, tool_call_id=call.id))
            first = result.text.splitlines()[0] if result.text else ""
            await self.emit("tool", f"  {call.name or '?'}: {first[:160]}", turn=self.turn - 1,
                            skill=call.name, ok=result.ok)
            if result.ends_episode:
                raise EpisodeEnd("submitted")
        if self.malformed > self.limits.max_malformed:
            raise EpisodeEnd("malformed_limit", f"{self.malformed} malformed tool calls (limit {self.limits.max_malformed})")

    async def generate(self) -> Generation | None:
        """One LLM call; None when `stopping` is set first (the call is cancelled)."""
        if self.stopping is None:
            return await self.policy.generate(self.conv)
        stopping = self.stopping
        got: list[Generation] = []
        failed: list[Exception] = []
        async with anyio.create_task_group() as tg:
            async def call() -> None:
                try:
                    got.append(await self.policy.generate(self.conv))
                except Exception as exc:  # re-raised below, not as an ExceptionGroup
                    failed.append(exc)
                tg.cancel_scope.cancel()

            async def stop() -> None:
                await stopping.wait()
                tg.cancel_scope.cancel()
            tg.start_soon(call)
            tg.start_soon(stop)
        if failed:
            raise failed[0]
        return got[0] if got else None

    async def call(self, call: ToolCallSpec, parse_error: str | None) -> tuple[SkillResult, bool]:
        """Run one tool call; malformed ones are answered (and counted) without running anything.
        (The result, whether it was malformed: stored with the call, the trainer's RFT filter.)"""
        problem = parse_error and f"malformed tool call: {parse_error}.{MALFORMED_HINT}"
        if not problem and call.name not in self.tools:
            problem = f"unknown tool {call.name!r}; the tools are: {', '.join(self.tools)}."
        if not problem:
            decoded = decode_args(get_skill(call.name), call.arguments)
            problem = decoded if isinstance(decoded, str) else None
        if problem:
            self.malformed += 1
            return SkillResult(text=problem, ok=False), True
        return await call_skill(call.name, call.arguments, self.ctx), False

    async def grade(self) -> EvalResult:
        """The final evaluation of the workspace as it is now (stored with the episode)."""
        if await anyio.to_thread.run_sync(self.workspace.untouched):
            result = untouched_result(self.evaluator.config, problem=self.problem.name, problem_id=self.problem.id,
                                      precision=self.problem.precision)
        else:
            await self.emit("evaluation", "final evaluation running")
            result = await self.evaluator.evaluate(self.workspace.path, "final")
        await self.store.add_evaluation(result, episode_id=self.id)
        if passed(result):
            self.best.offer(result, await anyio.to_thread.run_sync(read_files, self.workspace))
        await self.emit("evaluation", f"final: reward {result.reward}, {result.error or 'evaluated'}".splitlines()[0],
                        ok=passed(result), reward=result.reward)
        return result

    async def finish(self, status: EpisodeStatus, final: EvalResult | None, error: str | None,
                     seconds: float) -> EpisodeOutcome:
        reward = final.reward if final is not None else None
        if final is not None and final.environment_fault is not None:
            # The environment could not grade the episode: no reward, and nothing to train on.
            self.conv.trainable = False
            error = f"not trainable: the final evaluation hit an environment fault: {final.environment_fault}"
        rerun = status == "interrupted" and self.origin != "replay"
        await self.store.finish_episode(self.id, status, reward=reward, trainable=self.conv.trainable, error=error,
                                        rerun_pending=rerun)
        best = self.best.evaluation
        out = EpisodeOutcome(
            episode_id=self.id, problem_id=self.problem.id, status=status, reward=reward,
            trainable=self.conv.trainable, files=self.best.files, verified_by=best.mode if best else None,
            speedup_eager=speedup(best, "eager"), speedup_compile=speedup(best, "compile"),
            speedups=self.best.speedups, evaluation=final, turns=self.turn, error=error, seconds=seconds)
        await self.emit("finished", f"episode {self.id} {status}: reward {reward}" + (f" ({error})" if error else ""),
                        status=status, reward=reward)
        return out

    async def emit(self, kind: Literal["started", "turn", "tool", "evaluation", "finished"], text: str,
                   **fields: object) -> None:
        if self.on_event is not None:
            await self.on_event(msgspec.convert({"kind": kind, "episode_id": self.id, "text": text, **fields},
                                                EpisodeEvent))


async def run_episode(*, store: TrajectoryStore, policy: EpisodePolicy, problem: ProblemRow, source: str,
                      make_evaluator: Callable[[Path], Evaluator], limits: EpisodeLimits,
                      workspace: WorkspaceConfig, origin: Origin = "rollout", on_event: OnEvent | None = None,
                      tools: list[str] | None = None, rerun_of: int | None = None,
                      stopping: anyio.Event | None = None,
                      on_stop: Literal["interrupted", "cancelled"] = "interrupted") -> EpisodeOutcome:
    """An episode in a fresh workspace (removed afterwards); `make_evaluator(problem file)`.
    `rerun_of`: the episode it re-runs (its row is inserted with the store's re-run mark cleared)."""
    ws = await anyio.to_thread.run_sync(partial(Workspace.create, source, config=workspace, name_hint=problem.name))
    # The evaluator reads the problem from a file named after it (results carry the file's stem).
    problem_dir = Path(await anyio.to_thread.run_sync(partial(tempfile.mkdtemp, prefix="kagent-problem-")))
    episode: Episode | None = None
    try:
        problem_file = problem_path(problem_dir, problem.name)
        await anyio.Path(problem_file).write_text(source, encoding="utf-8")
        episode = Episode(store=store, policy=policy, problem=problem, source=source, workspace=ws,
                          evaluator=make_evaluator(problem_file), limits=limits, origin=origin,
                          on_event=on_event, tools=tools, rerun_of=rerun_of, stopping=stopping, on_stop=on_stop)
        return await episode.run()
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(ws.cleanup)
            if episode is not None:  # the copies run_tests/profile kept (profile's last_passing)
                await anyio.to_thread.run_sync(episode.ctx.snapshots.cleanup)
            await anyio.to_thread.run_sync(partial(shutil.rmtree, problem_dir, ignore_errors=True))
