"""The store's records (DESIGN §7): the msgspec row Structs, the Literal modes and the errors.

The SQL that writes and reads them is in runtime/store/sql.py; the Store in runtime/store/store.py
(the package, runtime.store, exports all of these).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

import msgspec

from skills.evaluator.results import EvalResult

EpisodeStatus = Literal["running", "submitted", "turn_limit", "token_limit", "time_limit",
                        "malformed_limit", "policy_error", "error", "cancelled", "interrupted"]
"""Why an episode ended (`running` until it does; `interrupted`: the daemon died under it, or
stopped during one of its LLM calls, and it waits for a re-run)."""
GRADED: tuple[EpisodeStatus, ...] = ("submitted", "turn_limit", "token_limit", "time_limit", "malformed_limit")
"""The endings that get a final evaluation, whose reward is the episode's: the statuses an
episode is training data with (running, interrupted, error, cancelled, policy_error are not)."""
Origin = Literal["rollout", "request", "replay"]
"""Why an episode ran: a training rollout, an HTTP request, or `kagent replay`."""
TrainStage = Literal["rft", "value", "ppo"]


class StoreError(Exception):
    """A store operation failed; the message says why."""


class StoreInUse(StoreError):
    """Another process holds the store open for writing (a flock on the database file)."""


class StoreBusy(StoreError):
    """The database stayed locked by another connection longer than busy_timeout."""


class StoreWriteFailed(StoreError):
    """SQLite could not write (disk full, I/O error); the transaction was rolled back."""


class StoreSchemaError(StoreError):
    """The file's schema is not one this code can use."""


# ---------------------------------------------------------------------------------------- rows


class ProblemRow(msgspec.Struct, kw_only=True):
    """A problem the daemon knows (from the problems folder, an HTTP request or an evaluation)."""

    id: str
    """Content hash of the problem source."""
    name: str
    """Name, e.g. `level1/01_relu`."""
    source: str
    """Where it came from: `kagent`, `kernelbench`, `synth`, `request`, `evaluation`, ..."""
    level: int | None = None
    """KernelBench level (None when unknown)."""
    path: str | None = None
    """File relative to the problems root (None when it arrived over HTTP)."""
    precision: str | None = None
    """Precision policy (fp32, tf32, bf16, fp16; None when unknown)."""
    tier: int | None = None
    """Curriculum difficulty tier (None when unknown)."""
    code: str | None = None
    """The problem source (None when only the path is known)."""
    manifest: str | None = None
    """The manifest row as JSON (skills.problem.ManifestRow), None when there is none."""


class PolicyRow(msgspec.Struct, kw_only=True):
    """A policy version: the base model (0) or a published checkpoint."""

    version: int
    """Monotonic version number."""
    path: str
    """Checkpoint directory or model name."""
    created: float
    """Unix time it was recorded."""


class EpisodeRow(msgspec.Struct, kw_only=True):
    """One episode: an agent working one problem. The one episode record: the store's reads,
    the scheduler and the trainer all pass this (the defaults are what `Store.start_episode`
    gives a new one, for rows made outside the store, e.g. a benchmark's synthetic episodes)."""

    id: int
    """Row id."""
    problem_id: str
    """Problem it worked on."""
    policy_version: int | None
    """Policy version when it started (None when the policy is not versioned)."""
    origin: Origin = "rollout"
    """Why it ran."""
    status: EpisodeStatus
    """How it ended (`running` until it does)."""
    reward: float | None
    """Reward of the final evaluation (None until graded, or when not graded)."""
    trainable: bool = True
    """Usable for training (False e.g. when the endpoint returned no token ids)."""
    started: float = msgspec.field(default_factory=time.time)
    """Unix time it started."""
    finished: float | None = None
    """Unix time it ended (None while running)."""
    policy_seconds: float | None = None
    """Seconds spent in LLM calls (set when it ends)."""
    tool_seconds: float | None = None
    """Seconds spent in tool calls (set when it ends)."""
    error: str | None = None
    """Why it ended badly (None when it did not)."""


class ToolCallSpec(msgspec.Struct, frozen=True):
    """A tool call as the model wrote it (parsed from its output)."""

    id: str
    """The call's id (the tool message answers with it)."""
    name: str
    """Tool name as written (may name no skill)."""
    arguments: str
    """Arguments as written (usually JSON; may be malformed)."""


class Message(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A chat message added to the conversation (system, user or tool result)."""

    role: Literal["system", "user", "assistant", "tool"]
    """Author."""
    content: str | None = None
    """Text (None for an assistant message with only tool calls)."""
    tool_calls: list[ToolCallSpec] | None = None
    """Assistant messages: the calls made."""
    tool_call_id: str | None = None
    """Tool messages: the call answered."""


class TurnRow(msgspec.Struct, kw_only=True):
    """One LLM call. The context of turn k is (context + completion of turn k-1) cut to
    `prompt_prefix` tokens, then `prompt_ids`: with token-in generation the prefix is the whole
    previous context and `prompt_ids` holds only the rendered new messages."""

    episode_id: int
    """Episode it belongs to."""
    index: int
    """0-based position in the episode."""
    text: str
    """The generated text."""
    policy_version: int | None = None
    """Policy version that generated it (None when not versioned)."""
    messages: list[Message] = msgspec.field(default_factory=list)
    """Messages added to the conversation before this call (turn 0: system and user)."""
    prompt_prefix: int = 0
    """Tokens carried over from the previous turn's context + completion (0: full prompt here)."""
    prompt_ids: list[int] | None = None
    """Prompt token ids after the prefix (None when the endpoint returned none)."""
    completion_ids: list[int] | None = None
    """Sampled token ids (None when the endpoint returned none)."""
    logprobs: list[float] | None = None
    """Behaviour logprob of each sampled token (None when not returned)."""
    sampling: dict[str, float | int | str | bool | None] = msgspec.field(default_factory=dict)
    """Sampling parameters as sent (temperature, top_p, max_tokens, seed, ...)."""
    finish_reason: str | None = None
    """Why generation stopped, as the server said (stop, length, tool_calls, ...)."""
    tool_calls: list[ToolCallSpec] = msgspec.field(default_factory=list)
    """Tool calls parsed from the output."""
    prompt_tokens: int | None = None
    """Prompt length the server reported."""
    completion_tokens: int | None = None
    """Completion length the server reported."""
    duration: float | None = None
    """Seconds the call took."""
    created: float = msgspec.field(default_factory=time.time)
    """Unix time of the call."""
    id: int | None = None
    """Row id (None before it is stored)."""


class ToolCallRow(msgspec.Struct, kw_only=True):
    """One executed tool call and its result."""

    turn_id: int
    """Turn whose output made the call."""
    episode_id: int
    """Episode (denormalised for queries)."""
    index: int
    """Position among the turn's calls."""
    skill: str
    """Name as the model wrote it."""
    args: str
    """Arguments as the model wrote them."""
    ok: bool
    """The skill ran and succeeded (False for unknown skills, bad arguments, failures)."""
    result: str
    """Text returned to the model."""
    call_id: str | None = None
    """The call's id (None when the model gave none)."""
    record: Any = None
    """The skill's structured record (any msgspec-encodable value; read back as plain JSON)."""
    duration: float | None = None
    """Seconds the skill took."""
    malformed: bool | None = None
    """The episode loop judged the call malformed (unparsable, a tool it was not offered, arguments
    the skill cannot decode) and answered it without running anything; None: not recorded (rows
    from before schema 6, or written by something other than the episode loop)."""
    created: float = msgspec.field(default_factory=time.time)
    """Unix time it finished."""
    id: int | None = None
    """Row id (None before it is stored)."""


class EvaluationRow(msgspec.Struct, kw_only=True):
    """A stored evaluation."""

    id: int
    """Row id."""
    episode_id: int | None
    """Episode it graded (None: graded outside an episode)."""
    tool_call_id: int | None
    """Tool call that asked for it (None for the final grading)."""
    created: float
    """Unix time it was stored."""
    result: EvalResult
    """The whole result."""


class EpisodeDetail(msgspec.Struct, kw_only=True):
    """An episode with everything logged under it, in order."""

    episode: EpisodeRow
    """The episode."""
    problem: ProblemRow
    """Its problem."""
    turns: list[TurnRow]
    """LLM calls by index."""
    tool_calls: list[ToolCallRow]
    """Tool calls by turn, then index."""
    evaluations: list[EvaluationRow]
    """Evaluations in the order they were stored."""


class CurriculumRow(msgspec.Struct, kw_only=True):
    """Per-problem statistics and sampling weight (DESIGN §10)."""

    problem_id: str
    """Problem."""
    tier: int
    """Difficulty tier."""
    attempts: int = 0
    """Episodes finished on it."""
    successes: int = 0
    """Episodes with a positive reward."""
    mean_reward: float | None = None
    """Mean reward (None before the first attempt)."""
    recent_success: float | None = None
    """Success rate over the trainer's recent window (None before the first attempt)."""
    weight: float = 1.0
    """Sampling weight (relative; 0 = never sample)."""
    updated: float = msgspec.field(default_factory=time.time)
    """Unix time of the update."""


class TrainStepRow(msgspec.Struct, kw_only=True):
    """What one trainer step consumed and produced."""

    run: str
    """Trainer run name (its output directory)."""
    stage: TrainStage
    """Training stage."""
    step: int
    """Step number within the run and stage."""
    episodes: list[int]
    """Episode ids consumed."""
    metrics: dict[str, float]
    """Scalar metrics (reward, kl, clip_frac, ...)."""
    policy_version: int | None = None
    """Policy version this step published (None: none)."""
    created: float = msgspec.field(default_factory=time.time)
    """Unix time of the step."""
    id: int | None = None
    """Row id (None before it is stored)."""


def problem_path(folder: Path, name: str) -> Path:
    """Where a problem's source goes for an evaluation: named after the problem (`level1/07_gelu`
    -> `07_gelu.py`), since evaluation results carry the file's stem."""
    return folder / f"{name.rsplit('/', 1)[-1] or 'problem'}.py"
