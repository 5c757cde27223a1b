"""The trainer's settings: one flat Struct (STYLE 6). Every field is a `python -m trainer.run`
flag (`max_staleness` -> `--max-staleness`); the line under each field is its help text, read
from this file, so the flags, their help and docs/trainer.md cannot drift apart (a test checks
the doc names every flag)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any, Literal

import msgspec

from runtime.config import field_docs

Stage = Literal["rft", "value", "ppo"]



MODEL_PRESETS: dict[str, dict[str, Any]] = {
    # A random-weight qwen2 built in code, for a quick start offline: its vocabulary is the
    # scripted policy server's toy tokenizer (runtime/fakes/scripted.py: 3 special ids, then the 256
    # UTF-8 bytes), so it trains on the demo episodes as they were logged.
    "tiny": dict(model_type="qwen2", hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, vocab_size=259, tie_word_embeddings=True,
                 max_position_embeddings=32768),
}
"""--model names built in code (no download), each a transformers config."""

class TrainConfig(msgspec.Struct, kw_only=True, frozen=True):
    """Everything `python -m trainer.run` reads."""

    db: str
    """SQLite store the daemon writes (episodes in, policies / train_steps / curriculum out)."""
    model: str
    """Base policy: a transformers checkpoint folder, or a model config JSON (random init; tests)."""
    stage: Stage = "ppo"
    """rft: SFT on good episodes; value: critic pretraining (actor frozen); ppo: actor + critic."""
    rft_trainer: Literal["kagent", "trl"] = "kagent"
    """rft: the update's code: kagent (packed rows, per-document attention) or trl (trl.SFTTrainer on the same token ids as a pre-tokenized dataset; one process)."""
    out: str = "checkpoints"
    """Checkpoint folder of this run: step_N/ (+ STABLE) for rft/ppo, critic_N/ for value."""
    run: str | None = None
    """Run name in train_steps (default: the resolved --out path)."""
    critic: str | None = None
    """Critic to start from: a value-stage critic_N/ or ppo step_N/ folder (default: --model's weights + a zero value head)."""
    lora: bool = False
    """Train LoRA adapters (peft) instead of all weights; step_N/ then holds a vLLM-loadable adapter."""
    adapter: str | None = None
    """With --lora: start from this adapter (e.g. an rft step_N/) instead of fresh LoRA weights."""
    lora_rank: int = 16
    """LoRA rank."""
    lora_alpha: int = 32
    """LoRA alpha (scale = alpha / rank)."""
    lora_dropout: float = 0.0
    """LoRA dropout."""
    lora_targets: str = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"
    """Comma-separated module names LoRA wraps (or all-linear)."""
    dtype: Literal["auto", "bf16", "fp32"] = "auto"
    """Weights and compute dtype (auto: bf16 on CUDA, fp32 on CPU)."""
    grad_checkpointing: bool = False
    """Recompute activations in backward (less memory, ~25% slower)."""
    compile: bool | None = None
    """torch.compile each layer's MLP and RMSNorms (dynamic shapes): fuses their elementwise work (H200: the actor update 1.31-1.33x the plain step with it, 1.14x without); compiling takes tens of seconds at start. Unset: on with CUDA unless accelerate runs FSDP (not measured together), off on CPU."""
    max_len: int = 8192
    """Tokens per packed row; longer episodes keep their first max_len tokens."""
    micro_batch: int = 1
    """Packed rows per forward/backward pass (lower it when out of memory)."""
    mini_batches: int = 1
    """Optimizer steps per epoch over a step's rows."""
    epochs: int = 1
    """Passes over a step's rows (every stage)."""
    lr: float = 1e-6
    """Actor learning rate (AdamW)."""
    critic_lr: float = 5e-6
    """Critic learning rate (AdamW)."""
    weight_decay: float = 0.0
    """AdamW weight decay (actor and critic)."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip per model."""
    gamma: float = 1.0
    """GAE discount."""
    lam: float = 0.95
    """GAE lambda."""
    clip_low: float = 0.2
    """PPO ratio clip below 1 (epsilon_low)."""
    clip_high: float = 0.28
    """PPO ratio clip above 1 (epsilon_high)."""
    old_logprobs: Literal["behaviour", "trainer"] = "behaviour"
    """PPO's old policy: behaviour = logged serving logprobs (DESIGN); trainer = trainer logprobs at first sight, times the truncated weight min(pi_old/mu, --is-cap)."""
    is_cap: float = 3.0
    """Truncated importance weight cap: behaviour mode caps the weight of negative-advantage tokens at it (dual clip); trainer mode truncates pi_old/mu at it."""
    value_clip: float | None = 0.2
    """Value-loss clip around the first-sight values (None: plain squared error)."""
    kl_coef: float = 0.0
    """Weight of KL(actor || reference) in the policy loss (> 0 loads a frozen reference)."""
    kl_estimator: Literal["k1", "k2", "k3"] = "k3"
    """KL estimator for the penalty and the metrics."""
    entropy_coef: float = 0.0
    """Entropy bonus weight in the policy loss."""
    rft_min_reward: float = 0.0
    """RFT keeps episodes whose reward is above this."""
    loop_repeats: int = 3
    """RFT drops an episode repeating one completion or tool call this many times."""
    max_staleness: int = 4
    """ppo/value: drop episodes more than this many policy versions behind the newest (rft ignores it)."""
    min_episodes: int = 32
    """New usable episodes to wait for before a step."""
    max_episodes: int | None = None
    """At most this many episodes per step, oldest first (default: all new ones)."""
    poll_seconds: float = 10.0
    """Seconds between looks at the store while waiting."""
    wait_timeout: float | None = None
    """Exit (status 0, saying so) after waiting this many seconds without a step (default: wait forever)."""
    max_steps: int | None = None
    """Stop after this many steps of this run, counting resumed ones (default: run forever)."""
    seed: int = 0
    """Seed (random init from a config JSON, value head, row order)."""
    logits_chunk: int = 4096
    """Tokens per chunk of the vocabulary projection (full logits are never materialised)."""
    keep_checkpoints: int | None = 3
    """Resume state (optimizer, critic) kept in the newest N step folders; older ones keep only the policy."""
    tensorboard: bool = True
    """Write TensorBoard logs to <out>/tb."""
    progress: bool = True
    """Show a progress bar (stderr)."""
    curriculum: bool = True
    """Update the curriculum weights in the store after each step."""
    curriculum_window: int = 16
    """Recent episodes per problem behind its success rate."""
    curriculum_advance_at: float = 0.6
    """A tier counts as passed when its recent pass rate reaches this; the next tier opens."""
    curriculum_min_weight: float = 0.05
    """Floor of a problem's weight (problems without learning signal sink to it, never to 0)."""
    curriculum_min_tier_share: float = 0.05
    """Each tier's least share of the total weight (no tier starves)."""


# ------------------------------------------------------------------------------ flags


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _add(parser: argparse.ArgumentParser, field: msgspec.inspect.Field, help_text: str) -> None:
    typ = field.type
    optional = False
    if isinstance(typ, msgspec.inspect.UnionType):
        rest = [t for t in typ.types if not isinstance(t, msgspec.inspect.NoneType)]
        optional, typ = True, rest[0]
    default = None if field.default is msgspec.NODEFAULT else field.default
    kw: dict[str, Any] = {"dest": field.name, "help": f"{help_text} (default: {default})"}
    if field.required:
        kw.update(required=True, help=help_text)
    if isinstance(typ, msgspec.inspect.BoolType):
        parser.add_argument(flag(field.name), action=argparse.BooleanOptionalAction, default=default, help=kw["help"])
        return
    if isinstance(typ, msgspec.inspect.LiteralType):
        kw["choices"] = list(typ.values)
    conv: Any = {msgspec.inspect.IntType: int, msgspec.inspect.FloatType: float}.get(type(typ), str)
    kw["type"] = (lambda s, c=conv: None if s.lower() == "none" else c(s)) if optional else conv
    parser.add_argument(flag(field.name), default=default, **kw)


def parser(prog: str = "python -m trainer.run", description: str | None = None) -> argparse.ArgumentParser:
    """argparse for TrainConfig (optional settings also take the word `none`)."""
    p = argparse.ArgumentParser(prog=prog, description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    helps = field_docs(TrainConfig)
    info = msgspec.inspect.type_info(TrainConfig)
    assert isinstance(info, msgspec.inspect.StructType)
    for f in info.fields:
        _add(p, f, helps.get(f.name, ""))
    return p


def parse_args(argv: list[str] | None = None, description: str | None = None) -> TrainConfig:
    """Flags -> a validated TrainConfig (argparse exits with a usage message on bad input)."""
    p = parser(description=description)
    ns = vars(p.parse_args(argv))
    cfg = msgspec.convert(ns, TrainConfig)
    problem = validate(cfg)
    if problem:
        p.error(problem)
    return cfg


def validate(cfg: TrainConfig) -> str | None:
    """Why the settings cannot work together, or None."""
    positive = {"max_len": cfg.max_len, "micro_batch": cfg.micro_batch, "mini_batches": cfg.mini_batches,
                "epochs": cfg.epochs, "min_episodes": cfg.min_episodes, "logits_chunk": cfg.logits_chunk,
                "loop_repeats": cfg.loop_repeats, "lora_rank": cfg.lora_rank}
    for name, value in positive.items():
        if value < 1:
            return f"{flag(name)} must be at least 1 (got {value})"
    if cfg.keep_checkpoints is not None and cfg.keep_checkpoints < 1:
        return "--keep-checkpoints must be at least 1 (the newest checkpoint is the resume point) or none"
    if cfg.max_staleness < 0:
        return f"--max-staleness must be >= 0 (got {cfg.max_staleness})"
    if not 0 <= cfg.clip_low < 1 or cfg.clip_high < 0:
        return "--clip-low must be in [0, 1) and --clip-high >= 0"
    if cfg.is_cap <= 1:
        return f"--is-cap must be above 1 (got {cfg.is_cap})"
    if cfg.model not in MODEL_PRESETS and not Path(cfg.model).exists() and not re.fullmatch(r"[\w.-]+/[\w.-]+", cfg.model):
        return (f"--model {cfg.model}: no such file or folder (a preset: {', '.join(MODEL_PRESETS)}; a transformers checkpoint folder, a"
                " config JSON, or a Hugging Face model id)")
    if cfg.rft_trainer == "trl" and cfg.stage != "rft":
        return f"--rft-trainer trl trains the rft stage only (got --stage {cfg.stage})"
    if cfg.adapter is not None and not (cfg.lora and (Path(cfg.adapter) / "adapter_config.json").is_file()):
        return f"--adapter {cfg.adapter}: needs --lora and a folder holding adapter_config.json"
    if cfg.critic is not None and not Path(cfg.critic).is_dir():
        return f"--critic {cfg.critic}: no such folder (a critic_N/ or step_N/ checkpoint)"
    return None
