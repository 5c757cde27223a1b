"""One training step of each stage on packed rows: PPO (critic, reference, actor per micro-batch),
RFT (SFT on sampled tokens) and value pretraining (critic only).

Per micro-batch of PPO, with no extra passes: the critic's forward gives the values; GAE over the
micro-batch's episodes (whole episodes are never split across rows) gives advantages and
returns; the value loss goes backward; the reference (if any) runs forward without gradients;
the actor's forward gives the logprobs and the policy loss goes backward. What a later epoch
needs of the first pass (values, advantages, first-sight logprobs, reference logprobs) is
cached per micro-batch.

Losses are token means over a whole mini-batch: each micro-batch's token sum is divided by the
mini-batch's sampled-token count across all data-parallel ranks, so gradient accumulation and
DDP averaging give exactly the mean over the mini-batch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import msgspec
import torch
from torch import Tensor

from trainer.algos import (
    clipped_policy_loss,
    clipped_value_loss,
    gae,
    kl_estimate,
    sft_loss,
    truncated_is_weight,
)
from trainer.config import TrainConfig
from trainer.data import Batch, EpisodeTokens, make_batch
from trainer.models import Actor, trainable

Tick = Callable[[int], None]


class Models(msgspec.Struct, kw_only=True):
    """What a step trains; `accelerator` wraps the models for data parallelism."""

    accelerator: Any
    """accelerate.Accelerator."""
    actor: Any = None
    """The (prepared) Actor, None in the value stage."""
    critic: Any = None
    """The (prepared) Critic, None in the rft stage."""
    reference: Actor | None = None
    """A frozen reference copy (full fine-tuning with --kl-coef > 0)."""
    actor_opt: torch.optim.Optimizer | None = None
    """Actor optimizer."""
    critic_opt: torch.optim.Optimizer | None = None
    """Critic optimizer."""


class _First(msgspec.Struct, kw_only=True):
    """What the first pass over a micro-batch computed, for later epochs."""

    old_values: Tensor | None = None
    advantages: Tensor | None = None
    returns: Tensor | None = None
    first_logprobs: Tensor | None = None
    ref_logprobs: Tensor | None = None
    updated: bool = False
    """An optimizer step of this training step came before the first pass."""


class _Sums:
    """Token-weighted sums of per-token statistics, reduced across ranks at the end. A statistic
    is averaged over the tokens of its group: `all` (every pass), `first` (first passes over
    each micro-batch) or `exact` (first passes made before the step's first optimizer update,
    where the trainer's policy is exactly the one that sampled on-policy episodes)."""

    def __init__(self) -> None:
        self.values: dict[str, Tensor | float] = {}
        self.group: dict[str, str] = {}

    def add(self, name: str, value: Tensor | float, group: str = "all") -> None:
        # sums stay on the device until the end of the step: a float() here would stall the GPU
        v = value.detach().sum().double() if isinstance(value, Tensor) else float(value)
        self.values[name] = self.values.get(name, 0.0) + v
        self.group[name] = group


def micro_batches(rows: list[list[EpisodeTokens]], cfg: TrainConfig, accelerator: Any) -> list[Batch]:
    """This rank's micro-batches (rows[rank::world], `micro_batch` rows each), padded with
    zero-weight fillers so every rank runs the same number of passes (DDP needs that)."""
    world, rank = accelerator.num_processes, accelerator.process_index
    counts = [math.ceil(len(rows[r::world]) / cfg.micro_batch) for r in range(world)]
    mine = rows[rank::world] or rows[:1]
    out = [make_batch(mine[i:i + cfg.micro_batch], accelerator.device)
           for i in range(0, len(rows[rank::world]), cfg.micro_batch)]
    while len(out) < max(counts):
        filler = make_batch(mine[:1], accelerator.device)
        filler.weight = 0.0
        out.append(filler)
    return out


def _backward(loss: Tensor) -> None:
    loss.backward()  # type: ignore[no-untyped-call]


def gae_flat(batch: Batch, values: Tensor, cfg: TrainConfig) -> tuple[Tensor, Tensor]:
    """Advantages and returns (N,) from values (N,), episode by episode."""
    v, mask = batch.per_episode(values.detach().float())
    r, _ = batch.per_episode(batch.rewards)
    adv, ret = gae(r, v, mask, gamma=cfg.gamma, lam=cfg.lam)
    return batch.flat(adv), batch.flat(ret)


def _schedule(n: int, cfg: TrainConfig, epoch: int, seed: int) -> list[list[int]]:
    """Micro-batch indices per mini-batch for one epoch (same on every rank)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    order = torch.randperm(n, generator=g).tolist()
    k = min(cfg.mini_batches, n)
    return [order[i * n // k:(i + 1) * n // k] for i in range(k)]


def _global_tokens(batches: list[Batch], accelerator: Any) -> float:
    local = sum(float(len(b.targets)) * b.weight for b in batches)
    t = torch.tensor([local], device=accelerator.device, dtype=torch.float64)
    return float(accelerator.reduce(t, reduction="sum").item()) if accelerator.num_processes > 1 else local


def _optimizer_step(model: Any, opt: torch.optim.Optimizer, cfg: TrainConfig, accelerator: Any) -> Tensor:
    params = trainable(model)
    norm = accelerator.clip_grad_norm_(params, cfg.max_grad_norm)
    opt.step()
    opt.zero_grad(set_to_none=True)
    if hasattr(norm, "full_tensor"):  # a DTensor under FSDP2
        norm = norm.full_tensor()
    return torch.as_tensor(norm).detach()


def _critic_pass(models: Models, b: Batch, first: _First, cfg: TrainConfig, scale: float,
                 sums: _Sums) -> None:
    values = models.critic(b.input_ids, b.position_ids, b.doc_lens, b.pred_pos)
    w = b.weight
    if first.old_values is None:
        first.old_values = values.detach()
        first.advantages, first.returns = gae_flat(b, values, cfg)
        # on data the critic has not been trained on yet: its error as it generalises
        sums.add("value_mc_mse", (_mc_returns(b) - values.detach()) ** 2 * w, "first")
        sums.add("first_tokens", float(len(values)) * w, "count")
    assert first.returns is not None
    ones = torch.ones_like(values, dtype=torch.bool)
    loss = clipped_value_loss(values, first.old_values, first.returns, ones, clip=cfg.value_clip)
    _backward(loss.sum() * scale)
    sums.add("value_loss", loss * w)
    sums.add("value_mse", (first.returns - values.detach()) ** 2 * w)
    sums.add("values", values.detach() * w)
    sums.add("returns", first.returns * w)
    sums.add("advantages", first.advantages * w if first.advantages is not None else 0.0)


def _mc_returns(b: Batch) -> Tensor:
    """The Monte-Carlo return of each token with gamma = 1: its episode's reward."""
    r, mask = b.per_episode(b.rewards)
    total = r.sum(dim=1, keepdim=True).expand_as(r)
    return total[mask]


def _actor_pass(models: Models, b: Batch, first: _First, cfg: TrainConfig, scale: float,
                sums: _Sums) -> None:
    actor = models.actor
    if cfg.kl_coef > 0 and first.ref_logprobs is None:
        with torch.no_grad():
            ref = models.reference or models.accelerator.unwrap_model(actor)
            ctx = models.accelerator.unwrap_model(actor).reference() if models.reference is None else nullcontext()
            with ctx:
                first.ref_logprobs = ref(b.input_ids, b.position_ids, b.doc_lens, b.pred_pos, b.targets, b.temps)[0]
    logp, ent = actor(b.input_ids, b.position_ids, b.doc_lens, b.pred_pos, b.targets, b.temps)
    exact = first.first_logprobs is None and not first.updated
    if first.first_logprobs is None:
        first.first_logprobs = logp.detach()
    assert first.advantages is not None
    ones = torch.ones_like(logp, dtype=torch.bool)
    is_w = None
    if cfg.old_logprobs == "behaviour":
        old = b.behaviour
        loss, clipped = clipped_policy_loss(logp, old, first.advantages, ones, clip_low=cfg.clip_low,
                                            clip_high=cfg.clip_high, dual_clip=cfg.is_cap)
    else:
        old = first.first_logprobs
        is_w = truncated_is_weight(old, b.behaviour, cfg.is_cap)
        loss, clipped = clipped_policy_loss(logp, old, first.advantages, ones, clip_low=cfg.clip_low,
                                            clip_high=cfg.clip_high)
        loss = loss * is_w
    total = loss
    if first.ref_logprobs is not None:
        kl = kl_estimate(logp, first.ref_logprobs, ones, cfg.kl_estimator)
        total = total + cfg.kl_coef * kl
        sums.add("kl_ref", kl.detach() * b.weight)
    if cfg.entropy_coef:
        total = total - cfg.entropy_coef * ent
    _backward(total.sum() * scale)
    _policy_stats(sums, b, logp.detach(), first.first_logprobs, ent.detach(), loss.detach(), clipped,
                  cfg, is_w, exact)


def _policy_stats(sums: _Sums, b: Batch, logp: Tensor, first_logp: Tensor, ent: Tensor, loss: Tensor,
                  clipped: Tensor, cfg: TrainConfig, is_w: Tensor | None, exact: bool) -> None:
    w = b.weight
    ones = torch.ones_like(logp, dtype=torch.bool)
    sums.add("policy_loss", loss * w)
    sums.add("clip_frac", clipped.float() * w)
    sums.add("entropy", ent * w)
    if exact:  # trainer vs serving on the same tokens with the same weights
        log_r = logp - b.behaviour
        sums.add("mismatch_kl", kl_estimate(b.behaviour, logp, ones, "k3") * w, "exact")
        sums.add("mismatch_abs", log_r.abs() * w, "exact")
        sums.add("is_truncated", (log_r > math.log(cfg.is_cap)).float() * w, "exact")
        sums.add("exact_tokens", float(len(logp)) * w, "count")
    sums.add("ratio", torch.exp(logp - (b.behaviour if cfg.old_logprobs == "behaviour" else first_logp)) * w)
    sums.add("kl_behaviour", kl_estimate(logp, b.behaviour, ones, "k3") * w)
    if is_w is not None:
        sums.add("is_weight", is_w * w)


def _rft_pass(models: Models, b: Batch, scale: float, sums: _Sums) -> None:
    logp, ent = models.actor(b.input_ids, b.position_ids, b.doc_lens, b.pred_pos, b.targets, b.temps)
    loss = sft_loss(logp, torch.ones_like(logp, dtype=torch.bool))
    _backward(loss.sum() * scale)
    sums.add("nll", loss.detach() * b.weight)
    sums.add("entropy", ent.detach() * b.weight)


def train_step(models: Models, rows: list[list[EpisodeTokens]], cfg: TrainConfig, *, step: int,
               tick: Tick | None = None) -> dict[str, float]:
    """One step of cfg.stage over the rows: epochs x mini_batches optimizer steps.
    Returns token means of the per-token statistics, grad norms, tokens and timing."""
    acc = models.accelerator
    batches = micro_batches(rows, cfg, acc)
    cache = [_First() for _ in batches]
    updated = False
    sums = _Sums()
    norms: dict[str, list[Tensor]] = {"grad_norm_actor": [], "grad_norm_critic": []}
    start, tokens, sampled = time.perf_counter(), 0, 0.0
    for epoch in range(cfg.epochs):
        for group in _schedule(len(batches), cfg, epoch, cfg.seed + step):
            chosen = [batches[i] for i in group]
            scale = acc.num_processes / max(_global_tokens(chosen, acc), 1.0)
            for k, i in enumerate(group):
                b = batches[i]
                cache[i].updated = cache[i].updated or updated
                sync = k == len(group) - 1
                _micro(models, b, cache[i], cfg, scale * b.weight, sums, sync)
                tokens += b.n_tokens if b.weight else 0
                sampled += len(b.targets) * b.weight
                if tick is not None:
                    tick(b.n_tokens)
            if models.critic is not None and models.critic_opt is not None:
                norms["grad_norm_critic"].append(_optimizer_step(models.critic, models.critic_opt, cfg, acc))
            if models.actor is not None and models.actor_opt is not None and cfg.stage != "value":
                norms["grad_norm_actor"].append(_optimizer_step(models.actor, models.actor_opt, cfg, acc))
            updated = True
    if acc.device.type == "cuda":
        torch.cuda.synchronize(acc.device)  # the kernels queued by the step are part of its time
    seconds = time.perf_counter() - start
    return _finish(sums, norms, sampled, tokens, seconds, acc)


def _micro(models: Models, b: Batch, first: _First, cfg: TrainConfig, scale: float, sums: _Sums,
           sync: bool) -> None:
    acc = models.accelerator
    critic_ctx = acc.no_sync(models.critic) if models.critic is not None and not sync else nullcontext()
    actor_ctx = acc.no_sync(models.actor) if models.actor is not None and not sync else nullcontext()
    if cfg.stage == "rft":
        with actor_ctx:
            _rft_pass(models, b, scale, sums)
        return
    with critic_ctx:
        _critic_pass(models, b, first, cfg, scale, sums)
    if cfg.stage == "ppo":
        with actor_ctx:
            _actor_pass(models, b, first, cfg, scale, sums)


def _finish(sums: _Sums, norms: dict[str, list[Tensor]], sampled: float, tokens: int, seconds: float,
            acc: Any) -> dict[str, float]:
    names = sorted(sums.values)
    vec = torch.stack([torch.as_tensor(sums.values[n], dtype=torch.float64, device=acc.device) for n in names]
                      + [torch.tensor(x, dtype=torch.float64, device=acc.device) for x in (sampled, float(tokens))])
    if acc.num_processes > 1:
        vec = acc.reduce(vec, reduction="sum")
    total_sampled, total_tokens = float(vec[-2]), float(vec[-1])
    counts = {"all": total_sampled}
    for group in ("exact", "first"):
        if f"{group}_tokens" in names:
            counts[group] = float(vec[names.index(f"{group}_tokens")])
    out = {n: float(vec[i]) / max(counts[sums.group[n]], 1.0) for i, n in enumerate(names)
           if sums.group[n] != "count"}
    for name, values in norms.items():
        if values:
            out[name] = float(torch.stack([v.float() for v in values]).mean())
    out.update(tokens=total_tokens, sampled_tokens=total_sampled, step_seconds=seconds,
               tokens_per_s=total_tokens / seconds if seconds > 0 else 0.0)
    return out
