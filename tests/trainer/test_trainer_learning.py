"""Proof that the trainer learns (issue 6), on CPU in CI time.

A tiny randomly initialised Qwen2-shaped causal LM (2 layers, hidden 64, vocabulary 64) and a
word-level tokenizer, both built here. The toy task: two turns; the policy writes 6 tokens, a
"tool" answers with 4 random tokens (masked out of training), the policy writes 6 more. The
reward, verifiable from the tokens, is the fraction of the 12 written tokens that are "good"
(ids 4..19): about 0.25 for a random policy. Episodes are sampled from the current policy (real
behaviour logprobs) and written through the store API exactly as the daemon writes them
(token-in: turn 1's prompt_prefix is the whole previous context, prompt_ids only the tool
output). Checked: PPO raises the expected reward by a wide margin; RFT raises the likelihood of
the episodes it keeps (and drops looping / malformed ones); value pretraining lowers the value
error; resuming from a checkpoint continues bit-identically; LoRA publishes a vLLM-style adapter.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest
import torch

from runtime.store import ProblemRow, Store, ToolCallSpec, TurnRow
from trainer.config import TrainConfig
from trainer.run import train

V, BOS, TOOL = 64, 1, 3
GOOD = range(4, 20)
PROMPT, ANSWER, TOOL_LEN = 4, 6, 4
PROBLEMS = [ProblemRow(id=f"p{i}", name=f"level1/toy{i}", source="kagent", level=1, tier=1 + i // 2)
            for i in range(4)]
TINY = dict(model_type="qwen2", hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=V, tie_word_embeddings=True, max_position_embeddings=128,
            bos_token_id=BOS, eos_token_id=2, pad_token_id=0)


def tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<bos>": 1, "<eos>": 2, "<tool>": 3} | {f"w{i}": i for i in range(4, V)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")


@pytest.fixture(scope="module")
def base_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny model + tokenizer saved as a transformers checkpoint folder."""
    from transformers import AutoConfig, AutoModelForCausalLM

    folder = tmp_path_factory.mktemp("base")
    raw = dict(TINY)
    config = AutoConfig.for_model(raw.pop("model_type"), **raw)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tok = tokenizer()
    assert tok("w4 w5 <tool>")["input_ids"] == [4, 5, 3]
    tok.save_pretrained(folder)
    return folder


def load_policy(path: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()


def reward_of(tokens: list[int]) -> float:
    return sum(t in GOOD for t in tokens) / len(tokens)


@torch.no_grad()
def sample(model: Any, prompts: torch.Tensor, n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """n tokens after each prompt (B, T) -> (ids (B, n), behaviour logprobs (B, n))."""
    ids, lps = prompts, []
    for _ in range(n):
        logp = torch.log_softmax(model(input_ids=ids).logits[:, -1].float(), dim=-1)
        nxt = torch.multinomial(logp.exp(), 1, generator=g)
        lps.append(logp.gather(1, nxt))
        ids = torch.cat([ids, nxt], dim=1)
    return ids[:, prompts.shape[1]:], torch.cat(lps, dim=1)


def rollouts(model: Any, n: int, seed: int, markers: tuple[int, ...] | None = None) -> list[dict[str, Any]]:
    """n two-turn toy episodes sampled from the model (`markers`: prompt token 1 drawn from these)."""
    g = torch.Generator().manual_seed(seed)
    prompt = torch.cat([torch.full((n, 1), BOS), torch.randint(20, V, (n, PROMPT - 1), generator=g)], dim=1)
    if markers is not None:
        prompt[:, 1] = torch.tensor(markers)[torch.randint(0, len(markers), (n,), generator=g)]
    c0, l0 = sample(model, prompt, ANSWER, g)
    tool = torch.cat([torch.full((n, 1), TOOL), torch.randint(4, V, (n, TOOL_LEN - 1), generator=g)], dim=1)
    c1, l1 = sample(model, torch.cat([prompt, c0, tool], dim=1), ANSWER, g)
    return [dict(prompt=prompt[i].tolist(), c0=c0[i].tolist(), l0=l0[i].tolist(), tool=tool[i].tolist(),
                 c1=c1[i].tolist(), l1=l1[i].tolist(), reward=reward_of(c0[i].tolist() + c1[i].tolist()))
            for i in range(n)]


async def write_episodes(store: Store, eps: list[dict[str, Any]], version: int, **extra: Any) -> list[int]:
    """Through the store API, as the daemon logs a token-in episode."""
    tok = tokenizer()
    ids = []
    for k, e in enumerate(eps):
        problem = PROBLEMS[k % len(PROBLEMS)].id
        eid = await store.start_episode(problem, policy_version=version)
        call = ToolCallSpec(id=f"c{k}", name="run_tests", arguments="{}")
        await store.add_turn(TurnRow(episode_id=eid, index=0, text=tok.decode(e["c0"]), policy_version=version,
                                     prompt_prefix=0, prompt_ids=e["prompt"], completion_ids=e["c0"],
                                     logprobs=e["l0"], sampling={"temperature": 1.0}, tool_calls=[call],
                                     finish_reason="tool_calls"))
        await store.add_turn(TurnRow(episode_id=eid, index=1, text=tok.decode(e["c1"]), policy_version=version,
                                     prompt_prefix=PROMPT + ANSWER, prompt_ids=e["tool"], completion_ids=e["c1"],
                                     logprobs=e["l1"], sampling={"temperature": 1.0}, finish_reason="stop",
                                     tool_calls=e.get("calls", [])))
        await store.finish_episode(eid, e.get("status", "submitted"), reward=e["reward"])
        ids.append(eid)
    return ids


def new_store(db: Path) -> None:
    async def go() -> None:
        async with Store.open(db) as store:
            await store.upsert_problems(PROBLEMS)
            await store.add_policy(0, "base")

    anyio.run(go)


def with_store(db: Path, fn: Any) -> Any:
    async def go() -> Any:
        async with Store.open(db, lock=False) as store:
            return await fn(store)

    return anyio.run(go)


def config(db: Path, model: Path, out: Path, **kw: Any) -> TrainConfig:
    base: dict[str, Any] = dict(db=str(db), model=str(model), out=str(out), max_len=256, progress=False,
                                tensorboard=False, poll_seconds=0.05, wait_timeout=0.0, seed=0)
    return msgspec.convert(base | kw, TrainConfig)


def run_train(cfg: TrainConfig) -> int:
    return anyio.run(train, cfg)  # type: ignore[no-any-return]


def expected_reward(model: Any, seed: int = 123, n: int = 400) -> float:
    return float(np.mean([e["reward"] for e in rollouts(model, n, seed)]))


def test_ppo_raises_the_expected_reward(tmp_path: Path, base_model: Path) -> None:
    db, out = tmp_path / "k.db", tmp_path / "ppo"
    new_store(db)
    before = expected_reward(load_policy(base_model))
    policy, version = load_policy(base_model), 0
    iterations = 8
    for it in range(iterations):
        eps = rollouts(policy, 64, seed=it)
        with_store(db, lambda s, e=eps, v=version: write_episodes(s, e, v))
        cfg = config(db, base_model, out, stage="ppo", min_episodes=64, max_steps=it + 1, lr=2e-3,
                     critic_lr=2e-3, epochs=2, mini_batches=2, max_staleness=0)
        assert run_train(cfg) == it + 1
        version = it + 1
        policy = load_policy(out / f"step_{it + 1}")  # what the daemon would hot-load
    after = expected_reward(policy)
    assert after > before + 0.2, f"expected reward {before:.3f} -> {after:.3f}"
    steps = with_store(db, lambda s: s.list_train_steps())
    assert [s.step for s in steps] == list(range(1, iterations + 1))
    assert [s.policy_version for s in steps] == list(range(1, iterations + 1))
    assert all(len(s.episodes) == 64 for s in steps) and len({e for s in steps for e in s.episodes}) == 64 * iterations
    first, last = steps[0].metrics, steps[-1].metrics
    assert last["reward"] > first["reward"] + 0.15
    for key in ("clip_frac", "entropy", "value_loss", "mismatch_kl", "grad_norm_actor", "tokens_per_s", "kl_behaviour"):
        assert key in last and np.isfinite(last[key]), key
    assert first["mismatch_abs"] < 0.02  # measured before the step's first update
    policies = with_store(db, lambda s: s.list_policies())
    assert policies[-1].path == str((out / f"step_{iterations}").resolve())
    weights = with_store(db, lambda s: s.curriculum_weights())
    assert set(weights) == {p.id for p in PROBLEMS} and all(w > 0 for w in weights.values())
    for name in ("tokenizer.json", "tokenizer_config.json", "model.safetensors", "config.json", "STABLE"):
        assert (out / f"step_{iterations}" / name).is_file(), name


def nll(model: Any, eps: list[dict[str, Any]]) -> float:
    """Mean negative log-likelihood of the sampled tokens of the episodes under the model."""
    total, n = 0.0, 0
    with torch.no_grad():
        for e in eps:
            seq = torch.tensor([e["prompt"] + e["c0"] + e["tool"] + e["c1"]])
            logp = torch.log_softmax(model(input_ids=seq).logits[0, :-1].float(), -1)
            lp = logp.gather(1, seq[0, 1:, None]).squeeze(1)
            sampled = list(range(PROMPT - 1, PROMPT - 1 + ANSWER)) + \
                list(range(PROMPT + ANSWER + TOOL_LEN - 1, PROMPT + 2 * ANSWER + TOOL_LEN - 1))
            total -= float(lp[sampled].sum())
            n += len(sampled)
    return total / n


def test_rft_raises_the_likelihood_of_kept_episodes(tmp_path: Path, base_model: Path) -> None:
    db, out = tmp_path / "k.db", tmp_path / "rft"
    new_store(db)
    base = load_policy(base_model)
    eps = rollouts(base, 48, seed=7)
    for e in eps:
        e["reward"] = 1.0 if e["reward"] >= 0.25 else -1.0
    eps[0]["reward"] = eps[1]["reward"] = 1.0
    eps[0]["calls"] = [ToolCallSpec(id="x", name="no_such_tool", arguments="{}")]  # malformed
    eps[1]["c1"] = eps[1]["c0"]  # the same completion twice ...
    eps[1]["calls"] = [ToolCallSpec(id="y", name="run_tests", arguments="{}")]  # ... and the same call twice
    ids = with_store(db, lambda s: write_episodes(s, eps, 0))
    cfg = config(db, base_model, out, stage="rft", min_episodes=48, max_steps=1, lr=3e-3, epochs=4,
                 mini_batches=2, loop_repeats=2)
    assert run_train(cfg) == 1
    kept = [e for e in eps[2:] if e["reward"] > 0]
    dropped = [e for e in eps[2:] if e["reward"] <= 0]
    tuned = load_policy(out / "step_1")
    assert nll(tuned, kept) < nll(base, kept) - 0.3
    (step,) = with_store(db, lambda s: s.list_train_steps())
    assert sorted(step.episodes) == sorted(ids[2 + i] for i, e in enumerate(eps[2:]) if e["reward"] > 0)
    m = step.metrics
    assert m["skipped_malformed"] == 1 and m["skipped_looping"] == 1 and m["skipped_low_reward"] == len(dropped)
    assert m["episodes"] == len(kept) and step.policy_version == 1


def test_value_pretraining_lowers_the_value_error(tmp_path: Path, base_model: Path) -> None:
    """Reward +1 when the prompt's second token is 20, -1 when it is 21: the critic can see it."""
    db, out = tmp_path / "k.db", tmp_path / "value"
    new_store(db)
    base = load_policy(base_model)
    steps = 6
    for it in range(steps):
        eps = rollouts(base, 32, seed=100 + it, markers=(20, 21))
        for e in eps:
            e["reward"] = 1.0 if e["prompt"][1] == 20 else -1.0
        with_store(db, lambda s, e=eps: write_episodes(s, e, 0))
    cfg = config(db, base_model, out, stage="value", min_episodes=32, max_episodes=32, max_steps=steps,
                 critic_lr=3e-3, epochs=3, mini_batches=2, lam=1.0)
    assert run_train(cfg) == steps
    rows = with_store(db, lambda s: s.list_train_steps())
    # value_mc_mse is measured on each step's fresh episodes before that step's updates
    first, last = rows[0].metrics["value_mc_mse"], rows[-1].metrics["value_mc_mse"]
    assert first > 0.8 and last < 0.5 * first, (first, last)
    assert all(r.policy_version is None for r in rows)
    assert (out / f"critic_{steps}" / "critic" / "value_head.safetensors").is_file()
    assert not list(out.glob("step_*"))  # the value stage publishes no policy


def _state(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    out = {f"actor.{k}": v for k, v in load_file(str(folder / "model.safetensors")).items()}
    out |= {f"critic.{k}": v for k, v in load_file(str(folder / "critic" / "model.safetensors")).items()}
    return out | {f"head.{k}": v for k, v in load_file(str(folder / "critic" / "value_head.safetensors")).items()}


def test_resume_continues_identically(tmp_path: Path, base_model: Path) -> None:
    cfg_json = tmp_path / "tiny.json"
    cfg_json.write_text(json.dumps(TINY))
    db = tmp_path / "k.db"
    new_store(db)
    policy = load_policy(base_model)
    eps = rollouts(policy, 96, seed=5)
    with_store(db, lambda s: write_episodes(s, eps, 0))
    shutil.copy(db, tmp_path / "k2.db")
    common = dict(stage="ppo", min_episodes=32, max_episodes=32, lr=1e-3, critic_lr=1e-3, epochs=2, mini_batches=2,
                  max_staleness=10, keep_checkpoints=1)
    assert run_train(config(db, cfg_json, tmp_path / "a", max_steps=3, **common)) == 3
    db2 = tmp_path / "k2.db"
    assert run_train(config(db2, cfg_json, tmp_path / "b", max_steps=1, **common)) == 1
    assert run_train(config(db2, cfg_json, tmp_path / "b", max_steps=3, **common)) == 3
    a, b = _state(tmp_path / "a" / "step_3"), _state(tmp_path / "b" / "step_3")
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    ma = [s.metrics for s in with_store(db, lambda s: s.list_train_steps())]
    mb = [s.metrics for s in with_store(db2, lambda s: s.list_train_steps())]
    for x, y in zip(ma, mb, strict=True):
        assert {k: v for k, v in x.items() if "second" not in k and "per_s" not in k} == \
            {k: v for k, v in y.items() if "second" not in k and "per_s" not in k}
    # keep_checkpoints=1: older steps keep the policy, not the resume state
    assert (tmp_path / "b" / "step_1" / "model.safetensors").is_file()
    assert not (tmp_path / "b" / "step_1" / "optimizer.pt").exists()
    assert not (tmp_path / "b" / "step_1" / "critic").exists()


def test_lora_publishes_a_vllm_style_adapter(tmp_path: Path, base_model: Path) -> None:
    db, out = tmp_path / "k.db", tmp_path / "lora"
    new_store(db)
    eps = rollouts(load_policy(base_model), 32, seed=9)
    with_store(db, lambda s: write_episodes(s, eps, 0))
    cfg = config(db, base_model, out, stage="ppo", lora=True, lora_rank=4, lora_targets="all-linear",
                 min_episodes=32, max_steps=1, lr=1e-2, kl_coef=0.1, epochs=2)
    assert run_train(cfg) == 1
    step = out / "step_1"
    assert (step / "adapter_config.json").is_file() and (step / "adapter_model.safetensors").is_file()
    assert not (step / "model.safetensors").exists()
    assert json.loads((step / "STABLE").read_text())["kind"] == "lora"
    from trainer.models import load_lora

    tuned = load_lora(load_policy(base_model), step).eval()  # peft's PeftModel.from_pretrained
    ids = torch.tensor([eps[0]["prompt"] + eps[0]["c0"]])
    with torch.no_grad():
        assert (tuned(input_ids=ids).logits - load_policy(base_model)(input_ids=ids).logits).abs().max() > 1e-4
    (row,) = with_store(db, lambda s: s.list_train_steps())
    assert 0 < row.metrics["kl_ref"] < 1.0  # the reference is the base (adapters off); epoch 2 moved away
    # one mini-batch: every first pass sees the weights the episodes were sampled with (LoRA B = 0),
    # so the trainer's logprobs must match the sampler's: sequences, masks and positions line up
    assert row.metrics["mismatch_abs"] < 1e-4 and row.metrics["is_truncated"] == 0
    # a new run can start from that adapter (rft -> ppo): its first passes no longer match the base
    cont = config(db, base_model, tmp_path / "cont", stage="ppo", lora=True, lora_rank=4, adapter=str(step),
                  min_episodes=32, max_steps=1, max_staleness=10)
    with_store(db, lambda s: write_episodes(s, eps, 0))
    assert run_train(cont) == 1
    rows = with_store(db, lambda s: s.list_train_steps(str((tmp_path / "cont").resolve())))
    assert rows[0].metrics["mismatch_abs"] > 1e-3
