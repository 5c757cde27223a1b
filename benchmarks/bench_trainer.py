"""Trainer throughput: one PPO update (actor, critic, reference) vs a plain transformers training
step, in one run, on a Qwen2.5-1.5B-shaped random model (built from its config in code; nothing
is downloaded).

    python benchmarks/bench_trainer.py                       # H200: ~2-3 minutes
    python benchmarks/bench_trainer.py --tiny                # CPU smoke run: seconds
    accelerate launch --num_processes 2 benchmarks/bench_trainer.py --single benchmarks/results/trainer-h200.json

Rows:
- plain step: AutoModelForCausalLM, SDPA attention, bf16 weights, fused AdamW, one row of
  --seq tokens (one sequence), `model(ids, labels=ids).loss.backward()`, optimizer step; no
  gradient checkpointing. The issue's reference point.
- actor update: our actor on packed multi-turn rows of --seq tokens (several episodes per row,
  per-document attention, log-probabilities of the sampled tokens only, from chunks of the
  vocabulary projection), clipped policy loss, backward, fused AdamW step.
- critic update: forward, GAE, clipped value loss, backward, AdamW step.
- reference forward: logprobs of the sampled tokens, no gradients.
- ppo update: trainer.update.train_step over the same rows (critic, reference, actor and both
  optimizer steps): the real code path end to end.
tokens/s counts the tokens of the rows (prompt, tool output and sampled tokens alike). MFU =
model FLOPs / time / 989 TFLOP/s (H200 dense bf16): 6 x matmul parameters x tokens for forward
+ backward (2x for forward only), the LM head over the positions that reach it (all tokens in the
plain step, the sampled ones in ours), and causal attention 2 x n^2 x hidden per layer and
document forward (x3 with backward). Peak memory is measured per part (allocator peak).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import RESULTS, environment, table  # noqa: E402
from trainer.algos import clipped_policy_loss, clipped_value_loss  # noqa: E402
from trainer.config import TrainConfig  # noqa: E402
from trainer.data import Doc, EpisodeRef, EpisodeTokens, make_batch, pack  # noqa: E402
from trainer.models import ATTN, Actor, Critic, compile_blocks, register_attention  # noqa: E402
from trainer.update import Models, gae_flat, train_step  # noqa: E402

PEAK_TFLOPS = 989.0
QWEN_1_5B = dict(model_type="qwen2", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                 num_attention_heads=12, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True,
                 rope_theta=1_000_000.0, max_position_embeddings=32768, rms_norm_eps=1e-6)
TINY = dict(QWEN_1_5B, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=512, max_position_embeddings=4096)


def qwen_config(shape: dict[str, Any]) -> Any:
    from transformers import AutoConfig

    raw = dict(shape)
    return AutoConfig.for_model(raw.pop("model_type"), **raw)


# ------------------------------------------------------------------------------- FLOPs


def layer_params(c: Any) -> int:
    """Matmul parameters of the decoder layers (what 6 x params x tokens counts)."""
    h, i = c.hidden_size, c.intermediate_size
    hd = h // c.num_attention_heads
    q, kv = c.num_attention_heads * hd, c.num_key_value_heads * hd
    return int(c.num_hidden_layers * (h * q + 2 * h * kv + q * h + 3 * h * i))


def attn_fwd_flops(c: Any, doc_lens: list[int]) -> float:
    q = c.num_attention_heads * (c.hidden_size // c.num_attention_heads)
    return float(sum(2.0 * n * n * q for n in doc_lens) * c.num_hidden_layers)


def flops(c: Any, part: str, tokens: int, head_tokens: int, doc_lens: list[int]) -> float:
    dense, head, attn = layer_params(c) * tokens, c.vocab_size * c.hidden_size * head_tokens, attn_fwd_flops(c, doc_lens)
    return {"plain": 6 * dense + 6 * head + 3 * attn, "actor": 6 * dense + 6 * head + 3 * attn,
            "critic": 6 * dense + 3 * attn, "reference": 2 * dense + 2 * head + attn}[part]


# ------------------------------------------------------------------------------ timing


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], Any], device: torch.device, warmup: int, iters: int) -> tuple[float, float | None]:
    """Median seconds per call and the allocator's peak (GiB) while running it."""
    for _ in range(warmup):
        fn()
    sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    return float(np.median(times)), peak


def new_model(config: Any, attn: str, dtype: torch.dtype, device: torch.device, base: bool = False) -> Any:
    from transformers import AutoModel, AutoModelForCausalLM

    cls = AutoModel if base else AutoModelForCausalLM
    with torch.device(device):  # initialise on the device: a 1.5B model in seconds
        return cls.from_config(config, attn_implementation=attn, dtype=dtype)


def free() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# -------------------------------------------------------------------------- workloads


def plain_step(config: Any, seq: int, dtype: torch.dtype, acc: Any, warmup: int, iters: int) -> dict[str, Any]:
    device = acc.device
    model = new_model(config, "sdpa", dtype, device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=device.type == "cuda" or None)
    model, opt = acc.prepare(model, opt)  # DDP under accelerate launch, as the PPO models
    ids = torch.randint(0, config.vocab_size, (1, seq), device=device, generator=None)

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    t, peak = timed(step, device, warmup, iters)
    return dict(part="plain step", tokens=seq, seconds=t, peak_gib=peak,
                flops=flops(config, "plain", seq, seq, [seq]))


def episodes(seq: int, n: int, vocab: int, seed: int) -> list[EpisodeTokens]:
    """Synthetic multi-turn episodes scaled to rows of `seq` tokens: a prompt of 10-25% of a row,
    2-6 turns of completion (1-9%) + tool output (0.6-6%); ~40% of the tokens sampled."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        ids, sampled = [rng.integers(0, vocab, int(seq * rng.uniform(0.10, 0.25)))], []
        sampled.append(np.zeros(len(ids[0]), dtype=bool))
        for _ in range(int(rng.integers(2, 7))):
            c = rng.integers(0, vocab, int(seq * rng.uniform(0.012, 0.09)))
            t = rng.integers(0, vocab, int(seq * rng.uniform(0.006, 0.06)))
            ids += [c, t]
            sampled += [np.ones(len(c), dtype=bool), np.zeros(len(t), dtype=bool)]
        flat, mask = np.concatenate(ids).astype(np.int64)[:seq], np.concatenate(sampled)[:seq]
        mask[0] = False
        doc = Doc(ids=flat, sampled=mask, behaviour=np.full(len(flat), -1.0, dtype=np.float32),
                  temps=np.ones(len(flat), dtype=np.float32))
        out.append(EpisodeTokens(ref=EpisodeRef(id=i, problem_id="bench", policy_version=0, status="submitted",
                                                reward=float(rng.integers(-1, 4))), docs=[doc], truncated=False))
    return out


def packed_rows(seq: int, rows: int, vocab: int) -> list[list[EpisodeTokens]]:
    """The `rows` fullest rows of packed synthetic episodes."""
    packed = pack(episodes(seq, rows * 8, vocab, seed=0), seq)
    return sorted(packed, key=lambda r: -sum(e.length for e in r))[:rows]


class Ppo:
    """Actor, critic and reference on the device, as trainer.run builds them."""

    def __init__(self, config: Any, rows: list[list[EpisodeTokens]], mine: list[list[EpisodeTokens]],
                 dtype: torch.dtype, acc: Any, checkpointing: bool) -> None:
        register_attention()
        device = acc.device
        actor = Actor(new_model(config, ATTN, dtype, device), chunk=4096)
        critic = Critic(new_model(config, ATTN, dtype, device, base=True), config.hidden_size).to(device)
        self.reference = Actor(new_model(config, ATTN, dtype, device), chunk=4096).requires_grad_(False).eval()
        if checkpointing:
            for m in (actor.lm, critic.backbone):
                m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        fused = device.type == "cuda" or None
        opt_a = torch.optim.AdamW(actor.parameters(), lr=1e-6, fused=fused)
        opt_c = torch.optim.AdamW(critic.parameters(), lr=1e-6, fused=fused)
        self.actor, self.opt_a, self.critic, self.opt_c = acc.prepare(actor, opt_a, critic, opt_c)
        self.cfg = TrainConfig(db="-", model="-", stage="ppo", max_len=max(e.length for r in rows for e in r),
                               kl_coef=1e-3, progress=False, tensorboard=False)
        self.models = Models(accelerator=acc, actor=self.actor, critic=self.critic, reference=self.reference,
                             actor_opt=self.opt_a, critic_opt=self.opt_c)
        self.rows, self.acc = rows, acc
        self.batches = [make_batch([r], device) for r in mine]
        g = torch.Generator(device="cpu").manual_seed(0)
        self.adv = [torch.randn(len(b.targets), generator=g).to(device) for b in self.batches]

    def _sync_last(self, model: Any, i: int) -> Any:
        """DDP all-reduces the gradients on the last row's backward only, as train_step does."""
        return nullcontext() if i == len(self.batches) - 1 else self.acc.no_sync(model)

    def actor_update(self) -> None:
        for i, (b, adv) in enumerate(zip(self.batches, self.adv, strict=True)):
            with self._sync_last(self.actor, i):
                logp, _ = self.actor(b.input_ids, b.position_ids, b.doc_lens, b.pred_pos, b.targets, b.temps)
                loss, _ = clipped_policy_loss(logp, b.behaviour, adv, torch.ones_like(adv, dtype=torch.bool))
                (loss.sum() / len(adv)).backward()
        self.opt_a.step()
        self.opt_a.zero_grad(set_to_none=True)

    def critic_update(self) -> None:
        for i, b in enumerate(self.batches):
            with self._sync_last(self.critic, i):
                values = self.critic(b.input_ids, b.position_ids, b.doc_lens, b.pred_pos)
                _, ret = gae_flat(b, values, self.cfg)
                loss = clipped_value_loss(values, values.detach(), ret, torch.ones_like(ret, dtype=torch.bool))
                (loss.sum() / len(ret)).backward()
        self.opt_c.step()
        self.opt_c.zero_grad(set_to_none=True)

    @torch.no_grad()
    def reference_forward(self) -> None:
        for b in self.batches:
            self.reference(b.input_ids, b.position_ids, b.doc_lens, b.pred_pos, b.targets, b.temps)

    def ppo_update(self) -> None:
        train_step(self.models, self.rows, self.cfg, step=0)


def ppo_parts(config: Any, seq: int, n_rows: int, dtype: torch.dtype, acc: Any, warmup: int, iters: int,
              checkpointing: bool, compiled: bool) -> list[dict[str, Any]]:
    world = acc.num_processes
    rows = packed_rows(seq, n_rows * world, config.vocab_size)
    mine = rows[acc.process_index::world]
    ppo = Ppo(config, rows, mine, dtype, acc, checkpointing)
    tokens = sum(e.length for r in mine for e in r)
    head = sum(int(d.sampled.sum()) for r in mine for e in r for d in e.docs)
    docs = [len(d.ids) for r in mine for e in r for d in e.docs]
    out = []
    for part, fn in (("actor", ppo.actor_update), ("critic", ppo.critic_update),
                     ("reference", ppo.reference_forward), ("ppo", ppo.ppo_update)):
        t, peak = timed(fn, acc.device, warmup, iters)
        f = sum(flops(config, p, tokens, head, docs) for p in ("actor", "critic", "reference")) \
            if part == "ppo" else flops(config, part, tokens, head, docs)
        name = {"actor": "actor update", "critic": "critic update", "reference": "reference forward",
                "ppo": "ppo update (all)"}[part]
        out.append(dict(part=name, tokens=tokens, seconds=t, peak_gib=peak, flops=f))
    out[0]["sampled_tokens"], out[0]["docs"] = head, len(docs)
    if compiled:  # the same actor after --compile (trainer.models.compile_blocks); warm-up compiles
        compile_blocks(acc.unwrap_model(ppo.actor).lm)
        t, peak = timed(ppo.actor_update, acc.device, warmup + 1, iters)
        out.insert(1, dict(part="actor update (--compile)", tokens=tokens, seconds=t, peak_gib=peak,
                           flops=flops(config, "actor", tokens, head, docs)))
    del ppo
    free()
    return out


def report(parts: list[dict[str, Any]], world: int) -> list[list[Any]]:
    plain = next((p for p in parts if p["part"] == "plain step"), None)
    rows = []
    for p in parts:
        tps = p["tokens"] * world / p["seconds"]
        p["tokens_per_s"] = tps
        p["tflops"] = p["flops"] * world / p["seconds"] / 1e12
        p["mfu"] = p["tflops"] / PEAK_TFLOPS / world
        p["vs_plain"] = tps / plain["tokens_per_s"] if plain and "tokens_per_s" in plain else None
        rows.append([p["part"], p["tokens"], p["seconds"] * 1e3, tps, p["tflops"], f"{p['mfu']:.1%}",
                     p["peak_gib"], p["vs_plain"]])
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="tiny model, fp32, CPU-sized rows (seconds)")
    ap.add_argument("--seq", type=int, default=None, help="tokens per row (default 8192; --tiny: 256)")
    ap.add_argument("--rows", type=int, default=1,
                    help="packed rows per update and GPU (1: one row and one optimizer step, like the plain step)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed calls per part (default 2; --tiny: 1)")
    ap.add_argument("--iters", type=int, default=None, help="timed calls per part, median reported (default 3; --tiny: 2)")
    ap.add_argument("--grad-checkpointing", action="store_true", help="checkpoint the actor and critic")
    ap.add_argument("--skip-plain", action="store_true", help="do not time the plain step")
    ap.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                    help="also time the actor with --compile (default: on, off with --tiny)")
    ap.add_argument("--single", type=Path, default=None, help="1-GPU result JSON: report the scaling efficiency")
    ap.add_argument("--out", default=None, help="result name (default trainer-h200[-xN] / trainer-tiny)")
    ap.add_argument("--results-dir", type=Path, default=RESULTS, help="where the JSON goes")
    a = ap.parse_args(argv)
    from accelerate import Accelerator

    acc = Accelerator(cpu=not torch.cuda.is_available())
    world = acc.num_processes
    config = qwen_config(TINY if a.tiny else QWEN_1_5B)
    seq = a.seq or (256 if a.tiny else 8192)
    a.warmup, a.iters = a.warmup if a.warmup is not None else (1 if a.tiny else 2), a.iters or (2 if a.tiny else 3)
    dtype = torch.float32 if acc.device.type == "cpu" else torch.bfloat16
    torch.manual_seed(0)
    parts = [] if a.skip_plain else [plain_step(config, seq, dtype, acc, a.warmup, a.iters)]
    acc.free_memory()  # accelerate holds the prepared plain model; drop it before the PPO models
    free()
    compiled = a.compile if a.compile is not None else not a.tiny
    parts += ppo_parts(config, seq, a.rows, dtype, acc, a.warmup, a.iters, a.grad_checkpointing, compiled)
    rows = report(parts, world)
    if not acc.is_main_process:
        return 0
    print(table(["part", "tokens/GPU", "ms", "tokens/s", "TFLOP/s", "MFU", "peak GiB", "vs plain"], rows))
    summary = summarise(parts, world, a.single)
    for line in summary["lines"]:
        print(line)
    name = a.out or ("trainer-tiny" if a.tiny else f"trainer-h200{'' if world == 1 else f'-x{world}'}")
    payload = dict(environment(), world=world, seq=seq, rows_per_gpu=a.rows, dtype=str(dtype),
                   grad_checkpointing=a.grad_checkpointing, model=TINY if a.tiny else QWEN_1_5B,
                   peak_tflops=PEAK_TFLOPS, parts=parts, **{k: v for k, v in summary.items() if k != "lines"})
    a.results_dir.mkdir(parents=True, exist_ok=True)
    path = a.results_dir / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1, default=str) + "\n")
    print(f"wrote {path}")
    return 0


def summarise(parts: list[dict[str, Any]], world: int, single: Path | None) -> dict[str, Any]:
    by = {p["part"]: p for p in parts}
    out: dict[str, Any] = {"lines": []}
    if "plain step" in by:
        for part, key in (("actor update", "actor_vs_plain"), ("actor update (--compile)", "compiled_actor_vs_plain")):
            if part not in by:
                continue
            ratio = by[part]["tokens_per_s"] / by["plain step"]["tokens_per_s"]
            out[key] = ratio
            out["lines"].append(f"{part} vs plain step: {ratio:.2f}x tokens/s (target >= 1.3x:"
                                f" {'met' if ratio >= 1.3 else 'NOT met'})")
        out.update(target=1.3, target_met=max(out.get("actor_vs_plain", 0), out.get("compiled_actor_vs_plain", 0)) >= 1.3)
    if single is not None and world > 1:
        one = {p["part"]: p for p in json.loads(single.read_text())["parts"]}
        eff = {k: by[k]["tokens_per_s"] / (world * one[k]["tokens_per_s"]) for k in by if k in one}
        out["scaling_efficiency"] = eff
        out["lines"].append("scaling efficiency vs 1 GPU: " + ", ".join(f"{k} {v:.0%}" for k, v in eff.items()))
    if any(math.isnan(p["seconds"]) for p in parts):
        out["lines"].append("some parts did not run")
    return out


if __name__ == "__main__":
    sys.exit(main())
