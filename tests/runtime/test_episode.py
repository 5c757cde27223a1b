"""The episode loop end to end: scripted policy over real HTTP, real skills, real SQLite, and (for
the relu episode) real g++ builds and sandboxed evaluation workers on the cpu backend.

The token-in contract is checked from the store: each turn's context is rebuilt the way the
trainer rebuilds it ((previous context + completion)[:prompt_prefix] + prompt_ids) and compared
with the prompt the server actually received.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from runtime.episode import EpisodeEvent, EpisodeOutcome, run_episode
from runtime.fakes.scripted import decode, encode, logprob, render, scripted_server
from runtime.policy import make_policy
from runtime.prompts import opening_messages
from runtime.settings import EpisodeLimits, PolicyConfig
from runtime.store import EpisodeDetail, ProblemRow, Store
from skills import load_skills
from skills.base import tool_schemas
from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.problem import source_id
from skills.evaluator.sandbox import SandboxConfig
from skills.local_evaluator import LocalEvaluator
from skills.workspace import WorkspaceConfig

ROOT = Path(__file__).resolve().parents[2]
RELU = ROOT / "problems" / "level1" / "01_relu.py"
RELU_SCRIPT = ROOT / "runtime" / "fakes" / "scripts" / "cpu_relu.json"
SOLUTION = ROOT / "problems" / "solutions" / "cpu" / "level1" / "01_relu"
LIST = {"content": "", "tool_calls": [{"name": "list_files"}]}


class Run:
    """What one episode left behind."""

    def __init__(self, outcome: EpisodeOutcome, detail: EpisodeDetail, log: dict[str, Any],
                 events: list[EpisodeEvent], db: Path, workspaces: Path) -> None:
        self.outcome, self.detail, self.log, self.events, self.db, self.workspaces = outcome, detail, log, events, db, workspaces


def episode(tmp_path: Path, script: Any, *, build_cache: Path | None = None, limits: EpisodeLimits | None = None,
            policy: dict[str, Any] | None = None, cancel_after: float | None = None, **server: Any) -> Run:
    """Run one episode on level1/01_relu against a scripted server; return what it stored."""
    load_skills()
    source = RELU.read_text()
    problem = ProblemRow(id=source_id(source), name="level1/01_relu", source="kagent", level=1, code=source)
    cfg = EvalConfig(backend="cpu", baselines=["eager"], timing=TimingConfig(target_seconds=0.05, max_calls=60, min_calls=10),
                     build=BuildConfig(backend="cpu", cache_dir=str(build_cache or tmp_path / "build")),
                     sandbox=SandboxConfig(allow_unsafe=True))
    events: list[EpisodeEvent] = []
    tmp_path.mkdir(parents=True, exist_ok=True)
    db, workspaces = tmp_path / "kagent.db", tmp_path / "ws"
    result: dict[str, Any] = {}

    async def on_event(event: EpisodeEvent) -> None:
        events.append(event)

    async def main() -> None:
        async with scripted_server(script, **server) as url, Store.open(db) as store:
            pol = make_policy(PolicyConfig(base_url=url, max_tokens=4096, backoff_s=0.01, **(policy or {})))
            await store.upsert_problem(problem)
            try:
                async def go() -> None:
                    result["outcome"] = await run_episode(
                        store=store, policy=pol, problem=problem, source=source,
                        make_evaluator=lambda path: LocalEvaluator(path, cfg, cache=store.baseline_cache()),
                        limits=limits or EpisodeLimits(), workspace=WorkspaceConfig(root=str(workspaces)),
                        on_event=on_event)

                if cancel_after is None:
                    await go()
                else:
                    with anyio.move_on_after(cancel_after):
                        await go()
                async with httpx.AsyncClient() as http:
                    result["log"] = (await http.get(url.removesuffix("/v1") + "/_scripted/log")).json()
                result["detail"] = await store.get_episode(1)
            finally:
                await pol.aclose()

    anyio.run(main)
    return Run(result.get("outcome"), result["detail"], result["log"], events, db, workspaces)  # type: ignore[arg-type]


def check_token_contract(run: Run) -> None:
    """Every stored turn rebuilds to exactly the prompt the server saw, with its sampled ids and logprobs."""
    requests = run.log["requests"]
    assert len(requests) == len(run.detail.turns)
    context: list[int] = []
    completion: list[int] = []
    for turn, req in zip(run.detail.turns, requests, strict=True):
        assert turn.prompt_ids is not None and turn.completion_ids is not None and turn.logprobs is not None
        context = (context + completion)[: turn.prompt_prefix] + turn.prompt_ids
        assert context == req["prompt_ids"], f"turn {turn.index}: rebuilt context differs from the server's prompt"
        completion = turn.completion_ids
        assert completion == req["completion_ids"]
        assert turn.logprobs == pytest.approx([logprob(t, i) for i, t in enumerate(completion)], rel=1e-6)
    assert [t.sampling["mode"] for t in run.detail.turns] == ["chat"] + ["token_in"] * (len(requests) - 1)


def test_cpu_relu_episode_is_submitted_verified_and_fully_stored(tmp_path: Path, build_cache_dir: Path) -> None:
    run = episode(tmp_path, RELU_SCRIPT, build_cache=build_cache_dir)
    out, detail = run.outcome, run.detail
    assert out.status == "submitted", out.error
    assert out.reward is not None and out.reward >= 1
    assert out.verified_by == "final" and out.evaluation is not None and out.evaluation.correct
    assert out.files == {"kernels/relu.cpp": (SOLUTION / "kernels" / "relu.cpp").read_text(),
                         "model_new.py": (SOLUTION / "model_new.py").read_text()}
    assert out.speedup_eager is not None and out.speedup_eager > 0 and out.trainable and out.turns == 6
    ep = detail.episode
    assert (ep.status, ep.reward, ep.trainable, ep.origin) == ("submitted", out.reward, True, "rollout")
    assert ep.finished is not None and ep.policy_seconds is not None and ep.tool_seconds is not None
    assert [c.skill for c in detail.tool_calls] == ["read_file", "write_file", "write_file", "compile", "run_tests",
                                                    "profile", "submit"]
    assert [(c.index, c.ok) for c in detail.tool_calls if c.skill == "write_file"] == [(0, True), (1, True)]
    assert all(c.ok for c in detail.tool_calls) and all(c.malformed is False for c in detail.tool_calls)
    assert [e.result.mode for e in detail.evaluations] == ["test", "profile", "final"]
    assert [e.tool_call_id is None for e in detail.evaluations] == [False, False, True]
    assert detail.evaluations[-1].result.reward == out.reward
    assert detail.turns[0].messages[0].role == "system" and "model.py" in (detail.turns[0].messages[1].content or "")
    assert [m.role for m in detail.turns[2].messages] == ["tool", "tool"]  # both write_file results, in order
    check_token_contract(run)
    with sqlite3.connect(run.db) as conn:  # plain SQL sees the same
        assert conn.execute("SELECT status, turns, tool_calls FROM episode_summary").fetchone() == ("submitted", 6, 7)
        assert conn.execute("SELECT count(*) FROM evaluations WHERE episode_id = 1").fetchone() == (3,)
    assert [e.kind for e in run.events][:2] == ["started", "turn"] and run.events[-1].kind == "finished"
    assert any(e.kind == "evaluation" and e.reward == out.reward for e in run.events)
    assert list(run.workspaces.iterdir()) == []  # the workspace was removed


def test_malformed_calls_are_answered_counted_and_capped(tmp_path: Path) -> None:
    script = [
        {"raw": '<tool_call>{"name": "list_files", "arguments": {}</tool_call>'},  # bad JSON
        {"content": "", "tool_calls": [{"name": "launch_rockets"}]},  # no such tool
        {"content": "", "tool_calls": [{"name": "read_file", "arguments": {"paht": "model.py"}},  # bad args
                                       {"name": "list_files"}]},  # a good call in the same turn
        {"content": "I think I am done."},  # no tool call at all
        LIST,
    ]
    run = episode(tmp_path, script, limits=EpisodeLimits(max_malformed=3))
    out, calls = run.outcome, run.detail.tool_calls
    assert out.status == "malformed_limit" and "4 malformed" in (out.error or "")
    assert out.turns == 4 and out.reward == -1.0  # graded: the template was never replaced
    assert [(c.skill, c.ok) for c in calls] == [("list_files", False), ("launch_rockets", False),
                                                ("read_file", False), ("list_files", True)]
    assert [c.malformed for c in calls] == [True, True, True, False]  # the loop's verdict, stored with the call
    with sqlite3.connect(run.db) as conn:
        assert conn.execute("SELECT malformed FROM tool_calls ORDER BY id").fetchall() == [(1,), (1,), (1,), (0,)]
    assert "not valid JSON" in calls[0].result and "<tool_call>" in calls[0].result
    assert "unknown tool 'launch_rockets'; the tools are:" in calls[1].result and "write_file" in calls[1].result
    assert "invalid arguments" in calls[2].result and "path" in calls[2].result
    # The model read each answer: the next prompt the server received holds it.
    prompts = [decode(r["prompt_ids"]) for r in run.log["requests"]]
    assert "not valid JSON" in prompts[1] and "launch_rockets" in prompts[2] and "invalid arguments" in prompts[3]
    assert [m.role for m in run.detail.turns[3].messages] == ["tool", "tool"]  # both answers of turn 2
    assert run.detail.evaluations[-1].result.error == "model_new.py is still the template: nothing was written"
    check_token_contract(run)


def test_turn_limit_and_a_server_without_token_ids(tmp_path: Path) -> None:
    run = episode(tmp_path, [LIST], loop=True, token_ids=False, limits=EpisodeLimits(max_turns=3))
    out = run.outcome
    assert out.status == "turn_limit" and out.turns == 3 and out.reward == -1.0
    assert not out.trainable and not run.detail.episode.trainable
    assert all(t.completion_ids is None and t.prompt_ids is None for t in run.detail.turns)
    assert [r["endpoint"] for r in run.log["requests"]] == ["chat"] * 3  # never token-in without ids


def test_policy_failure_ends_the_episode_ungraded(tmp_path: Path) -> None:
    run = episode(tmp_path, [LIST], fail_first=100, fail_status=503, policy={"retries": 1})
    out = run.outcome
    assert out.status == "policy_error" and out.reward is None and out.evaluation is None
    assert "HTTP 503" in (out.error or "") and "gave up after 2 tries" in (out.error or "")
    assert run.detail.episode.error == out.error and run.detail.evaluations == [] and run.detail.turns == []


def test_time_and_token_limits(tmp_path: Path) -> None:
    slow = episode(tmp_path / "a", [LIST], loop=True, delay_s=1.0, limits=EpisodeLimits(max_seconds=0.5))
    assert slow.outcome.status == "time_limit" and slow.outcome.turns == 0 and slow.outcome.reward == -1.0

    load_skills()
    source = RELU.read_text()
    problem = ProblemRow(id=source_id(source), name="level1/01_relu", source="kagent")
    messages = [{"role": m.role, "content": m.content} for m in opening_messages(problem, source, "cpu")]
    first = len(encode(render(messages, tool_schemas(), add_generation_prompt=True)))
    tight = episode(tmp_path / "b", [{"content": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "model.py"}}]}],
                    loop=True, limits=EpisodeLimits(max_context_tokens=first + 300))
    assert tight.outcome.status == "token_limit" and tight.outcome.turns == 1
    assert "limit is" in (tight.outcome.error or "")


def test_cancelled_episode_is_marked(tmp_path: Path) -> None:
    run = episode(tmp_path, [LIST], loop=True, delay_s=5.0, cancel_after=0.5)
    assert run.outcome is None
    assert run.detail.episode.status == "cancelled" and run.detail.episode.finished is not None
    assert list(run.workspaces.iterdir()) == []


