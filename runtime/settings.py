"""The settings Structs of the runtime's components, in a module that imports no torch, openai
or skills worker code, so that `runtime.config` (and with it `kagentd status`/`stop` and the
`kagent episodes` commands) loads fast. This is their one home: everything imports them from here.
tests/system/test_light_imports.py keeps this module torch-free.
"""

from __future__ import annotations

from typing import Literal

import msgspec

# skills.evaluator.config is torch-free at import time (tests/system/test_light_imports.py checks it).
from skills.evaluator.config import EvalConfig

TokenMode = Literal["token_in", "chat"]
"""token_in: chat completions for turn 0, then completions on token ids; chat: always chat."""


class PolicyConfig(msgspec.Struct, kw_only=True, frozen=True):
    """How the runtime reaches the policy server."""

    name: str = "openai"
    """Client class by name (runtime.policy.POLICIES)."""
    base_url: str = "http://127.0.0.1:8000/v1"
    """OpenAI-compatible endpoint, including /v1."""
    model: str = "policy"
    """Model name to request (vllm serve ... --served-model-name policy); a LoRA adapter's name after a hot-load."""
    api_key: str = "EMPTY"
    """Bearer token for the policy server."""
    temperature: float = 1.0
    """Sampling temperature (1.0: sample the policy as trained)."""
    top_p: float = 1.0
    """Nucleus sampling threshold."""
    max_tokens: int = 8192
    """Most tokens generated per turn (also bounded by the episode's context limit)."""
    seed: int | None = None
    """Sampling seed sent with each call (None: the server's choice)."""
    timeout_s: float = 600.0
    """Seconds one HTTP call may take before it counts as a timeout (and is retried)."""
    retries: int = 4
    """Retries of a call after 429, 5xx, 408/409, timeouts and connection errors."""
    backoff_s: float = 1.0
    """First retry delay; doubles each retry."""
    backoff_max_s: float = 30.0
    """Longest retry delay."""
    token_mode: TokenMode = "token_in"
    """token_in (exact token context, completions API after turn 0) or chat (messages every turn)."""
    renderer: Literal["server", "hf"] = "server"
    """How new messages become token ids: the server's POST /tokenize, or a local HF tokenizer."""
    tokenizer: str | None = None
    """Hugging Face tokenizer for renderer "hf" (None: the model name)."""
    tool_parser: str = "hermes"
    """Parser for tool calls in raw completion text (runtime.tokens.TOOL_PARSERS)."""
    logprobs: bool = True
    """Ask for the behaviour logprob of each sampled token."""


class EpisodeLimits(msgspec.Struct, kw_only=True, frozen=True):
    """When an episode stops."""

    max_turns: int = 150
    """LLM calls per episode (turn_limit)."""
    max_context_tokens: int = 65536
    """Prompt + completion tokens of one call (token_limit); keep within the server's max_model_len."""
    max_seconds: float = 3600.0
    """Wall time of the agent's loop (time_limit); a tool call already running finishes first."""
    max_malformed: int = 10
    """Malformed tool calls (and replies without any) tolerated; one more ends it (malformed_limit)."""
    max_tool_output_chars: int = 8000
    """Tool output returned to the model is cut to this many characters."""


class SchedulerConfig(msgspec.Struct, kw_only=True, frozen=True):
    """How many episodes run, where they evaluate, and where rollouts come from."""

    gpu_slots: int = 1
    """Exclusive GPU evaluation slots (eval.backend cuda): slot i uses GPU gpus[i]."""
    gpus: list[str] | None = None
    """CUDA_VISIBLE_DEVICES per slot (None: "0" .. gpu_slots-1)."""
    cpu_slots: int = 1
    """Exclusive evaluation slots on eval.backend cpu (timed OpenMP code wants every core)."""
    compile_workers: int = 0
    """Builds at once (0 = CPU cores)."""
    max_in_flight: int = 8
    """Episodes running at once (requests and rollouts together)."""
    max_in_flight_per_version: int = 64
    """Rollouts running under the current policy version at once."""
    max_rollouts_per_version: int | None = None
    """Rollouts started under one policy version before new ones wait for the next (None: no cap)."""
    rollouts: bool = False
    """True: draw rollout jobs from the curriculum continuously."""
    problems_dir: str = "problems"
    """The problems folder (levelN/*.py) rollouts are drawn from."""
    workspace_root: str | None = None
    """Parent folder of episode workspaces (None: $XDG_STATE_HOME/kagent/workspaces)."""
    limits: EpisodeLimits = msgspec.field(default_factory=EpisodeLimits)
    """Per-episode turn, token, time and malformed-call limits."""
    eval: EvalConfig = msgspec.field(default_factory=EvalConfig)
    """Evaluation settings, eval.backend among them (the GPU is set per slot)."""
    warm_workers: bool = True
    """Keep each slot's next evaluation workers started ahead of time."""
    tools: list[str] | None = None
    """Skills offered to the agent (None: every registered skill)."""
    executor: Literal["local", "ray"] = "local"
    """Where evaluation slots run: local (this machine's GPUs, or cpu_slots) or ray (one Ray actor per slot on any node of a Ray cluster: the [ray] settings, docs/ray.md)."""
    problem_check_timeout_s: float = 120.0
    """A request's problem is loaded and checked in a child process; it is killed after this long."""
    problem_check_memory_mb: int = 4096
    """Address space (MiB) that child may map beyond the interpreter and torch."""
    request_attempts: int = 3
    """Episodes tried for one request when the policy server fails."""
    request_retry_budget_s: float = 60.0
    """After a request's first policy error, how long it may wait for the server and retry; then it is answered 502 with the cause."""
    policy_backoff_s: float = 2.0
    """First wait after a policy error before anything new starts; doubles per failure."""
    policy_backoff_max_s: float = 60.0
    """Longest such wait."""
    curriculum_refresh_s: float = 30.0
    """Seconds between reads of the store's curriculum weights."""
    seed: int | None = None
    """Seed of the curriculum's sampling (None: random)."""


class RayConfig(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Evaluation slots as Ray actors (scheduler.executor = "ray"; runtime/ray_executor.py, docs/ray.md)."""

    address: str = "local"
    """local: start a Ray instance on this machine for the daemon's run; auto: join the cluster this node runs (`ray start`); host:port or ray://host:10001: join that cluster."""
    namespace: str = "kagent"
    """Ray namespace of the evaluation actors (`kagentd status` lists their names; ray.get_actor(name, namespace=...) finds them)."""
    slots_per_gpu: int = 1
    """Evaluation actors per GPU on cuda, each asking Ray for 1/slots_per_gpu of a GPU (above 1, timings share a device)."""
    gpus: int | None = None
    """GPUs of the cluster to take on cuda (None: every GPU the cluster has when the daemon starts); on cpu, scheduler.cpu_slots actors of one CPU each."""
    attempts: int = 3
    """Actors one evaluation is tried on when the actor running it dies; after the last, it is an environment fault (reward None)."""
    eval_timeout_s: float = 3600.0
    """Longest one evaluation may take on an actor; then the actor is killed and the evaluation re-run on another."""
    start_timeout_s: float = 300.0
    """How long the daemon waits at start for its actors to be placed and ready; those still pending then are dropped."""
    probe_s: float = 10.0
    """Seconds between pings of idle actors, so a dead one leaves the rotation before an evaluation is sent to it."""


def server_root(base_url: str) -> str:
    """`http://host:8000/v1` -> `http://host:8000`: where vLLM's /tokenize and LoRA routes sit."""
    return base_url.rstrip("/").removesuffix("/v1")
