"""`kagent bench --policy-url`: K agent episodes per problem against an OpenAI-compatible endpoint,
through kagentd's episode loop, skills, evaluator and store (in process), one BenchRow each.

The episodes are stored in the run's own store (OUT/episodes.db unless --db), origin `request`;
their final evaluations give the rows. An episode the policy server never answered (policy_error),
one that hit a runtime bug (error) and one whose final evaluation was an environment fault are
faults: counted apart, retried with --retry-faults.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import msgspec

from runtime.bench import Job
from runtime.bench_rows import BenchRow, fault_row, row_from_result
from runtime.episode import run_episode
from runtime.policy import Policy
from runtime.settings import SchedulerConfig
from runtime.slots import EvalSlots, LeasedEvaluator
from runtime.store import Store
from runtime.store.queries import usage
from runtime.store.rows import ProblemRow
from skills.evaluator.config import EvalConfig
from skills.workspace import WorkspaceConfig

PROBLEM_SOURCE = "bench"
"""ProblemRow.source of the problems a bench run stores."""
NOT_GRADED = frozenset({"policy_error", "error"})
"""Episode endings with no final evaluation that are not the agent's doing."""


class EpisodeRunner:
    """Runs one job as an episode and turns its outcome into a row."""

    def __init__(self, *, store: Store, policy: Policy, sched: SchedulerConfig, config: EvalConfig,
                 slots: EvalSlots, compile_limiter: anyio.CapacityLimiter, workspace_root: Path | None = None) -> None:
        self.store, self.policy, self.sched, self.config, self.slots = store, policy, sched, config, slots
        self.compile_limiter = compile_limiter
        root = workspace_root or (Path(sched.workspace_root) if sched.workspace_root else None)
        self.workspace = WorkspaceConfig(root=str(root)) if root else WorkspaceConfig()
        self.cache = store.baseline_cache()

    def _evaluator(self, problem_file: Path) -> LeasedEvaluator:
        return LeasedEvaluator(problem_file, self.config, cache=self.cache, slots=self.slots,
                               compile_limiter=self.compile_limiter)

    async def grade(self, job: Job) -> BenchRow:
        p = job.problem
        source = await anyio.Path(p.path).read_text(encoding="utf-8")
        problem = ProblemRow(id=p.id, name=p.name, source=PROBLEM_SOURCE, level=p.level, code=source)
        await self.store.upsert_problem(problem)
        began = time.monotonic()
        outcome = await run_episode(
            store=self.store, policy=self.policy, problem=problem, source=source, make_evaluator=self._evaluator,
            limits=self.sched.limits, workspace=self.workspace,
            origin="request", tools=self.sched.tools)
        tokens = await self.store.read(lambda c: usage(c, outcome.episode_id))
        episode = {"episode_id": outcome.episode_id, "episode_status": outcome.status, "turns": outcome.turns,
                   "prompt_tokens": tokens.prompt_tokens, "completion_tokens": tokens.completion_tokens}
        if outcome.evaluation is None:
            why = outcome.error or outcome.status
            row = fault_row(problem=p.name, problem_id=p.id, level=p.level, attempt=job.attempt,
                            fault=f"episode {outcome.status}: {why}", seconds=time.monotonic() - began)
            if outcome.status not in NOT_GRADED:  # cannot happen today: every other ending is graded
                row = msgspec.structs.replace(row, fault=None, error=why)
        else:
            row = row_from_result(outcome.evaluation, problem=p.name, problem_id=p.id, level=p.level,
                                  attempt=job.attempt, solution=None, seconds=time.monotonic() - began)
        return msgspec.structs.replace(row, **episode)
