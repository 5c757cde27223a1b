"""The trainer's math as pure tensor functions (DESIGN §9, STYLE 4): GAE that skips masked tokens,
the clipped policy loss with an asymmetric clip, the truncated importance weight, the clipped
value loss, KL estimators, entropy, and log-probabilities of chosen tokens without materialising
the full-vocabulary logits.

Conventions: `mask` is 1 (True) on sampled tokens and 0 on prompt and tool-output tokens; every
per-token function returns 0 where the mask is 0. Shapes are given as `# (B, T)`; functions that
only combine tensors elementwise accept any shape as long as all arguments share it.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import Tensor

KLEstimator = Literal["k1", "k2", "k3"]


# ------------------------------------------------------------------------------ reductions


def masked_sum(x: Tensor, mask: Tensor) -> Tensor:
    """Sum of x where mask is set (a 0-d tensor)."""
    return torch.where(mask.bool(), x, torch.zeros_like(x)).sum()


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean of x where mask is set (0 when the mask is empty)."""
    m = mask.bool()
    return masked_sum(x, m) / m.sum().clamp(min=1)


def masked_whiten(x: Tensor, mask: Tensor, eps: float = 1e-8) -> Tensor:
    """(x - mean) / std over the masked entries; 0 where the mask is 0."""
    m = mask.bool()
    mean = masked_mean(x, m)
    var = masked_mean((x - mean) ** 2, m)
    return torch.where(m, (x - mean) * torch.rsqrt(var + eps), torch.zeros_like(x))


# ------------------------------------------------------------------------------------- GAE


def discounted_reverse_cumsum(x: Tensor, discount: float, block: int = 64) -> Tensor:
    """y[b, t] = sum_{k >= t} discount^(k - t) * x[b, k].   # (B, T) -> (B, T)

    Blocked: one (block x block) matmul gives the sums inside each block, a short reverse loop
    over blocks carries them across, so a row of 8k tokens costs 128 small steps, not 8k."""
    b, t = x.shape
    if t == 0:
        return x.clone()
    nb = -(-t // block)
    xp = torch.nn.functional.pad(x.to(torch.float64), (0, nb * block - t)).view(b, nb, block)
    i = torch.arange(block, device=x.device)
    diff = (i[:, None] - i[None, :]).to(torch.float64)  # diff[i, j] = i - j
    kernel = torch.where(diff >= 0, torch.full_like(diff, discount) ** diff.clamp(min=0), torch.zeros_like(diff))
    local = xp @ kernel  # local[b, n, j] = sum_{i >= j in block n} discount^(i - j) x[b, n, i]
    tail = torch.full((block,), discount, dtype=torch.float64, device=x.device) ** (block - i).to(torch.float64)
    out = torch.empty_like(local)
    carry = torch.zeros(b, dtype=torch.float64, device=x.device)  # y at the first element of the next block
    for n in range(nb - 1, -1, -1):
        out[:, n] = local[:, n] + tail[None, :] * carry[:, None]
        carry = out[:, n, 0]
    return out.reshape(b, nb * block)[:, :t].to(x.dtype)


def gae(rewards: Tensor, values: Tensor, mask: Tensor, *, gamma: float = 1.0,
        lam: float = 0.95) -> tuple[Tensor, Tensor]:
    """Generalised advantage estimation over the sampled tokens of each row.   # (B, T) each

    Each row is one episode. Masked (prompt, tool-output) positions are skipped: the "next
    state" of a sampled token is the next *sampled* token of the row, and the value after the
    last sampled token is 0 (the episode ended; its reward sits on that token). Returns
    (advantages, returns), both 0 where the mask is 0; returns = advantages + values."""
    m = mask.bool()
    b, t = rewards.shape
    # Compact each row's sampled tokens to the left (stable, so their order is kept).
    order = torch.argsort((~m).to(torch.int8), dim=1, stable=True)
    count = m.sum(dim=1)
    pos = torch.arange(t, device=rewards.device)[None, :]
    valid = pos < count[:, None]
    r = torch.where(valid, rewards.gather(1, order), torch.zeros_like(rewards))
    v = torch.where(valid, values.gather(1, order), torch.zeros_like(values))
    next_v = torch.nn.functional.pad(v[:, 1:], (0, 1))
    next_v = torch.where(pos + 1 < count[:, None], next_v, torch.zeros_like(next_v))
    delta = torch.where(valid, r + gamma * next_v - v, torch.zeros_like(r))
    adv_c = discounted_reverse_cumsum(delta, gamma * lam)
    adv = torch.zeros_like(rewards).scatter(1, order, torch.where(valid, adv_c, torch.zeros_like(adv_c)))
    adv = torch.where(m, adv, torch.zeros_like(adv))
    return adv, torch.where(m, adv + values, torch.zeros_like(values))


# ---------------------------------------------------------------------------------- losses


def truncated_is_weight(old_logprobs: Tensor, behaviour_logprobs: Tensor, cap: float) -> Tensor:
    """min(pi_old / mu, cap), detached: the importance weight of the trainer's old policy over
    the behaviour (serving) policy, truncated so a token the server found unlikely cannot blow
    up the update.   # any shape"""
    return torch.exp(old_logprobs.detach() - behaviour_logprobs).clamp(max=cap)


def clipped_policy_loss(logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor, mask: Tensor, *,
                        clip_low: float = 0.2, clip_high: float = 0.28,
                        dual_clip: float | None = None) -> tuple[Tensor, Tensor]:
    """PPO's clipped surrogate per token, with an asymmetric clip range.   # (B, T) each

    ratio = exp(logprobs - old_logprobs); loss = max(-A * ratio, -A * clip(ratio, 1 - clip_low,
    1 + clip_high)). `dual_clip` c (> 1) caps the loss of negative-advantage tokens at -A * c,
    which bounds the weight of tokens whose ratio is far above 1 (the one case the PPO clip leaves
    unbounded). Returns (loss, clipped): per-token loss (0 where masked) and whether the clip was
    the active branch there."""
    m = mask.bool()
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = -advantages * ratio
    clipped_ratio = ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    loss = torch.maximum(unclipped, -advantages * clipped_ratio)
    is_clipped = (-advantages * clipped_ratio) > unclipped
    if dual_clip is not None:
        cap = -advantages * dual_clip
        capped = (advantages < 0) & (loss > cap)
        loss = torch.where(capped, cap, loss)
        is_clipped = is_clipped | capped
    return torch.where(m, loss, torch.zeros_like(loss)), is_clipped & m


def clipped_value_loss(values: Tensor, old_values: Tensor, returns: Tensor, mask: Tensor, *,
                       clip: float | None = 0.2) -> Tensor:
    """0.5 * max((V - R)^2, (V_clipped - R)^2) per token, V_clipped = V_old + clamp(V - V_old,
    -clip, clip); `clip=None` gives the plain squared error.   # (B, T) each"""
    loss = (values - returns) ** 2
    if clip is not None:
        v_clip = old_values + (values - old_values).clamp(-clip, clip)
        loss = torch.maximum(loss, (v_clip - returns) ** 2)
    return torch.where(mask.bool(), 0.5 * loss, torch.zeros_like(loss))


def sft_loss(logprobs: Tensor, mask: Tensor) -> Tensor:
    """Negative log-likelihood per sampled token (RFT).   # (B, T) each"""
    return torch.where(mask.bool(), -logprobs, torch.zeros_like(logprobs))


def kl_estimate(logprobs: Tensor, ref_logprobs: Tensor, mask: Tensor,
                kind: KLEstimator = "k3") -> Tensor:
    """Per-token estimate of KL(pi || ref) from tokens sampled from pi (Schulman's k1, k2, k3):
    k1 = log pi - log ref; k2 = (log pi - log ref)^2 / 2; k3 = ref/pi - 1 - log(ref/pi) (>= 0,
    unbiased, low variance).   # (B, T) each"""
    log_ratio = logprobs - ref_logprobs
    if kind == "k1":
        kl = log_ratio
    elif kind == "k2":
        kl = 0.5 * log_ratio ** 2
    elif kind == "k3":
        kl = torch.expm1(-log_ratio) + log_ratio
    else:
        raise ValueError(f"unknown KL estimator {kind!r}: use k1, k2 or k3")
    return torch.where(mask.bool(), kl, torch.zeros_like(kl))


def entropy_from_logits(logits: Tensor) -> Tensor:
    """Entropy of softmax(logits) over the last dimension, in float32.   # (..., V) -> (...)"""
    z = logits.float()
    logp = torch.log_softmax(z, dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)


# -------------------------------------------------- log-probabilities without full logits


class _ChunkedLogprobs(torch.autograd.Function):
    """log softmax(h W^T / tau)[target] and the entropy, a chunk of rows at a time.

    Only one (chunk, V) block of logits exists at once, in forward and in backward (which
    recomputes it), so a 152k vocabulary costs chunk * V * 4 bytes instead of N * V * 4. The
    temperature scales the rows of h before the matmul (h / tau) W^T = (h W^T) / tau, which
    costs N * H work instead of N * V."""

    @staticmethod
    def forward(ctx: Any, hidden: Tensor, weight: Tensor, targets: Tensor, inv_temps: Tensor,
                chunk: int) -> tuple[Tensor, Tensor]:
        n = hidden.shape[0]
        hs = hidden * inv_temps[:, None].to(hidden.dtype)
        logp = torch.empty(n, dtype=torch.float32, device=hidden.device)
        ent = torch.empty(n, dtype=torch.float32, device=hidden.device)
        for s in range(0, n, chunk):
            z = (hs[s:s + chunk] @ weight.t()).float()
            lse = torch.logsumexp(z, dim=-1)
            logp[s:s + chunk] = z.gather(1, targets[s:s + chunk, None]).squeeze(1) - lse
            p = torch.softmax(z, dim=-1)  # one fused pass (z - lse would be another (chunk, V) tensor)
            ent[s:s + chunk] = lse - torch.bmm(p[:, None, :], z[:, :, None]).view(-1)  # H = lse - sum p z
        ctx.save_for_backward(hs, weight, targets, inv_temps, ent)
        ctx.chunk = chunk
        ctx.set_materialize_grads(False)  # an unused output (usually the entropy) gets None, not zeros
        return logp, ent

    @staticmethod
    def backward(ctx: Any, g_logp: Tensor | None, g_ent: Tensor | None
                 ) -> tuple[Tensor | None, Tensor | None, None, None, None]:
        hs, weight, targets, inv_temps, ent = ctx.saved_tensors
        chunk: int = ctx.chunk
        n = hs.shape[0]
        d_hidden = torch.empty_like(hs) if ctx.needs_input_grad[0] else None
        d_weight: Tensor | None = None
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            z = (hs[s:e] @ weight.t()).float()
            dz = torch.softmax(z, dim=-1)  # p, turned into d loss / dz in place
            if g_ent is not None:  # d H / dz = -p * (log p + H)
                lse = torch.logsumexp(z, dim=-1, keepdim=True)
                dz_ent = dz * (z - lse + ent[s:e, None]) * -g_ent[s:e, None]
            if g_logp is not None:  # d logp / dz = onehot(target) - p
                dz.mul_(-g_logp[s:e, None]).scatter_add_(1, targets[s:e, None], g_logp[s:e, None])
            else:
                dz.zero_()
            if g_ent is not None:
                dz += dz_ent
            dz_low = dz.to(hs.dtype)
            del z, dz
            if d_hidden is not None:  # through hs = h / tau
                d_hidden[s:e] = (dz_low @ weight) * inv_temps[s:e, None].to(hs.dtype)
            if ctx.needs_input_grad[1]:
                dw = dz_low.t() @ hs[s:e]
                # one chunk (the usual case) stays in the weight's dtype; several add up in float32
                d_weight = dw if d_weight is None else d_weight.float() + dw.float()
        if d_weight is not None:
            d_weight = d_weight.to(weight.dtype)
        return d_hidden, d_weight, None, None, None


def chosen_logprobs(hidden: Tensor, weight: Tensor, targets: Tensor, temps: Tensor | None = None,
                    chunk: int = 4096) -> tuple[Tensor, Tensor]:
    """Log-probability of each target token and the entropy of each next-token distribution,
    from hidden states and the output embedding, without the (N, V) logits.
    hidden (N, H), weight (V, H), targets (N,), temps (N,) sampling temperature per token ->
    (logprobs (N,), entropy (N,)) in float32; both differentiable."""
    inv = torch.ones(hidden.shape[0], dtype=torch.float32, device=hidden.device) if temps is None \
        else 1.0 / temps.float()
    out: tuple[Tensor, Tensor] = _ChunkedLogprobs.apply(  # type: ignore[no-untyped-call]
        hidden, weight, targets, inv, chunk)
    return out
