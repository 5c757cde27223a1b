"""trainer.algos against plain-loop references (STYLE 4): GAE skipping masked tokens, the
discounted sums behind it, the clipped policy loss (asymmetric, dual clip), the truncated
importance weight, the clipped value loss, KL estimators, entropy, and log-probabilities from
chunks of the vocabulary projection (values and gradients against full logits)."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.algos import (
    chosen_logprobs,
    clipped_policy_loss,
    clipped_value_loss,
    discounted_reverse_cumsum,
    entropy_from_logits,
    gae,
    kl_estimate,
    masked_mean,
    masked_whiten,
    sft_loss,
    truncated_is_weight,
)


def loop_gae(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float,
             lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    adv = torch.zeros_like(rewards)
    b, t = rewards.shape
    for i in range(b):
        idx = [j for j in range(t) if mask[i, j]]
        last = 0.0
        for k in reversed(range(len(idx))):
            j = idx[k]
            next_v = float(values[i, idx[k + 1]]) if k + 1 < len(idx) else 0.0
            delta = float(rewards[i, j]) + gamma * next_v - float(values[i, j])
            last = delta + gamma * lam * last
            adv[i, j] = last
    ret = torch.where(mask, adv + values, torch.zeros_like(values))
    return adv, ret


@pytest.mark.parametrize("t", [1, 5, 64, 65, 200])
@pytest.mark.parametrize("discount", [1.0, 0.95, 0.5])
def test_discounted_reverse_cumsum_matches_loop(t: int, discount: float) -> None:
    x = torch.randn(3, t, generator=torch.Generator().manual_seed(t), dtype=torch.float64)
    want = torch.zeros_like(x)
    for i in range(3):
        acc = 0.0
        for j in reversed(range(t)):
            acc = float(x[i, j]) + discount * acc
            want[i, j] = acc
    torch.testing.assert_close(discounted_reverse_cumsum(x, discount), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(("gamma", "lam"), [(1.0, 0.95), (0.99, 0.9), (1.0, 1.0), (1.0, 0.0)])
def test_gae_skips_masked_tokens_like_the_loop(gamma: float, lam: float) -> None:
    g = torch.Generator().manual_seed(1)
    b, t = 4, 150
    mask = torch.rand(b, t, generator=g) < 0.6
    mask[3] = False  # a row with no sampled token
    values = torch.randn(b, t, generator=g)
    rewards = torch.zeros(b, t)
    for i in range(3):  # reward on each row's last sampled token
        rewards[i, int(mask[i].nonzero().max())] = float(i) - 1.0
    adv, ret = gae(rewards, values, mask, gamma=gamma, lam=lam)
    want_adv, want_ret = loop_gae(rewards, values, mask, gamma, lam)
    torch.testing.assert_close(adv, want_adv, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ret, want_ret, rtol=1e-5, atol=1e-5)
    assert (adv[~mask] == 0).all() and (ret[~mask] == 0).all()


def test_gae_with_lambda_one_gives_monte_carlo_returns() -> None:
    mask = torch.tensor([[0, 1, 1, 0, 0, 1, 1, 0]], dtype=torch.bool)
    rewards = torch.zeros(1, 8)
    rewards[0, 6] = 2.0
    values = torch.randn(1, 8)
    _, ret = gae(rewards, values, mask, gamma=1.0, lam=1.0)
    torch.testing.assert_close(ret[mask], torch.full((4,), 2.0))
    # tool tokens between sampled ones do not break the chain: the advantage of token 2 uses V(5)
    adv, _ = gae(rewards, values, mask, gamma=1.0, lam=0.0)
    torch.testing.assert_close(adv[0, 2], values[0, 5] - values[0, 2])


def loop_policy_loss(logp: list[float], old: list[float], adv: list[float], lo: float, hi: float,
                     dual: float | None) -> tuple[list[float], list[bool]]:
    losses, clipped = [], []
    for lp, o, a in zip(logp, old, adv, strict=True):
        r = math.exp(lp - o)
        rc = min(max(r, 1 - lo), 1 + hi)
        loss = max(-a * r, -a * rc)
        was = -a * rc > -a * r
        if dual is not None and a < 0 and loss > -a * dual:
            loss, was = -a * dual, True
        losses.append(loss)
        clipped.append(was)
    return losses, clipped


@pytest.mark.parametrize("dual", [None, 3.0])
def test_clipped_policy_loss_matches_loop(dual: float | None) -> None:
    g = torch.Generator().manual_seed(2)
    n = 400
    logp = -torch.rand(n, generator=g) * 3
    old = logp + torch.randn(n, generator=g) * 0.8  # ratios from ~0.1 to ~10
    adv = torch.randn(n, generator=g)
    mask = torch.rand(n, generator=g) < 0.8
    loss, clipped = clipped_policy_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.28, dual_clip=dual)
    want, want_clipped = loop_policy_loss(logp.tolist(), old.tolist(), adv.tolist(), 0.2, 0.28, dual)
    w = torch.tensor(want)
    torch.testing.assert_close(loss, torch.where(mask, w, torch.zeros_like(w)), rtol=1e-5, atol=1e-6)
    assert clipped.tolist() == [c and m for c, m in zip(want_clipped, mask.tolist(), strict=True)]
    assert clipped.any() and not clipped.all()


def test_asymmetric_clip_lets_good_tokens_rise_further() -> None:
    adv = torch.ones(2)
    old = torch.zeros(2)
    logp = torch.log(torch.tensor([1.25, 1.35]))  # inside eps_high, beyond it
    loss, clipped = clipped_policy_loss(logp, old, adv, torch.ones(2, dtype=torch.bool))
    assert clipped.tolist() == [False, True]
    torch.testing.assert_close(loss, torch.tensor([-1.25, -1.28]))


def test_policy_gradient_vanishes_only_where_clipped() -> None:
    logp = torch.log(torch.tensor([1.5, 1.0, 0.5])).requires_grad_()
    adv = torch.tensor([1.0, 1.0, -1.0])
    loss, clipped = clipped_policy_loss(logp, torch.zeros(3), adv, torch.ones(3, dtype=torch.bool))
    loss.sum().backward()
    assert logp.grad is not None
    assert logp.grad[0] == 0 and logp.grad[1] != 0 and logp.grad[2] == 0  # 0.5 < 0.8 with A < 0: clipped
    assert clipped.tolist() == [True, False, True]


def test_truncated_is_weight() -> None:
    old = torch.tensor([0.0, -1.0, -5.0])
    mu = torch.tensor([-1.0, -1.0, -0.5])
    w = truncated_is_weight(old.requires_grad_(), mu, cap=2.0)
    want = [min(math.exp(o - m), 2.0) for o, m in zip(old.tolist(), mu.tolist(), strict=True)]
    torch.testing.assert_close(w, torch.tensor(want))
    assert not w.requires_grad


@pytest.mark.parametrize("clip", [None, 0.2])
def test_clipped_value_loss_matches_loop(clip: float | None) -> None:
    g = torch.Generator().manual_seed(3)
    v, old, ret = torch.randn(100, generator=g), torch.randn(100, generator=g), torch.randn(100, generator=g)
    mask = torch.rand(100, generator=g) < 0.7
    got = clipped_value_loss(v, old, ret, mask, clip=clip)
    for i in range(100):
        want = (v[i] - ret[i]) ** 2
        if clip is not None:
            vc = old[i] + min(max(float(v[i] - old[i]), -clip), clip)
            want = max(float(want), (vc - float(ret[i])) ** 2)
        assert math.isclose(float(got[i]), 0.5 * float(want) if mask[i] else 0.0, rel_tol=1e-5, abs_tol=1e-6)


@pytest.mark.parametrize("kind", ["k1", "k2", "k3"])
def test_kl_estimators_match_loop(kind: str) -> None:
    g = torch.Generator().manual_seed(4)
    lp, ref = -torch.rand(50, generator=g) * 4, -torch.rand(50, generator=g) * 4
    mask = torch.ones(50, dtype=torch.bool)
    got = kl_estimate(lp, ref, mask, kind)  # type: ignore[arg-type]
    for i in range(50):
        d = float(lp[i] - ref[i])
        want = {"k1": d, "k2": 0.5 * d * d, "k3": math.exp(-d) - 1 + d}[kind]
        assert math.isclose(float(got[i]), want, rel_tol=1e-5, abs_tol=1e-6)


def test_k3_is_an_unbiased_kl_estimate() -> None:
    """Sampling from p, mean k3 approaches KL(p || q) (and k3 is never negative)."""
    g = torch.Generator().manual_seed(5)
    p = torch.softmax(torch.randn(10, generator=g), 0)
    q = torch.softmax(torch.randn(10, generator=g), 0)
    x = torch.multinomial(p, 200_000, replacement=True, generator=g)
    est = kl_estimate(p.log()[x], q.log()[x], torch.ones_like(x, dtype=torch.bool), "k3")
    exact = float((p * (p.log() - q.log())).sum())
    assert (est >= 0).all()
    assert abs(float(est.mean()) - exact) < 0.02 * max(exact, 0.1)


def test_entropy_from_logits_matches_loop() -> None:
    z = torch.randn(4, 30)
    got = entropy_from_logits(z)
    for i in range(4):
        p = [math.exp(v) for v in z[i].tolist()]
        s = sum(p)
        want = -sum(pi / s * math.log(pi / s) for pi in p)
        assert math.isclose(float(got[i]), want, rel_tol=1e-5)


def test_masked_reductions_and_sft_loss() -> None:
    x = torch.tensor([1.0, 2.0, 3.0, 100.0])
    m = torch.tensor([1, 1, 1, 0], dtype=torch.bool)
    assert float(masked_mean(x, m)) == 2.0
    w = masked_whiten(x, m)
    assert abs(float(w[:3].mean())) < 1e-6 and float(w[3]) == 0.0
    torch.testing.assert_close(sft_loss(-x, m), torch.tensor([1.0, 2.0, 3.0, 0.0]))


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_chosen_logprobs_match_full_logits(chunk: int) -> None:
    g = torch.Generator().manual_seed(6)
    n, h, v = 23, 16, 50
    hidden = torch.randn(n, h, generator=g, dtype=torch.float64).float().requires_grad_()
    weight = torch.randn(v, h, generator=g).requires_grad_()
    targets = torch.randint(0, v, (n,), generator=g)
    temps = torch.rand(n, generator=g) + 0.5
    lp, ent = chosen_logprobs(hidden, weight, targets, temps, chunk=chunk)
    gl, ge = torch.randn(n, generator=g), torch.randn(n, generator=g)
    (lp * gl + ent * ge).sum().backward()
    grads = hidden.grad.clone(), weight.grad.clone()  # type: ignore[union-attr]

    h2, w2 = hidden.detach().clone().requires_grad_(), weight.detach().clone().requires_grad_()
    logits = (h2 @ w2.t()) / temps[:, None]
    want_lp = torch.log_softmax(logits, -1).gather(1, targets[:, None]).squeeze(1)
    want_ent = entropy_from_logits(logits)
    (want_lp * gl + want_ent * ge).sum().backward()
    torch.testing.assert_close(lp, want_lp, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ent, want_ent, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grads[0], h2.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(grads[1], w2.grad, rtol=1e-4, atol=1e-5)


def test_chosen_logprobs_without_entropy_gradient_and_frozen_weight() -> None:
    hidden = torch.randn(5, 8, requires_grad=True)
    weight = torch.randn(11, 8)  # frozen (LoRA keeps the embedding fixed)
    targets = torch.tensor([0, 3, 10, 2, 2])
    lp, _ = chosen_logprobs(hidden, weight, targets, chunk=2)
    lp.sum().backward()
    h2 = hidden.detach().clone().requires_grad_()
    torch.log_softmax(h2 @ weight.t(), -1).gather(1, targets[:, None]).sum().backward()
    torch.testing.assert_close(hidden.grad, h2.grad, rtol=1e-5, atol=1e-6)
