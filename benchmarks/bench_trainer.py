"""Trainer throughput: one PPO update (actor, critic, reference) vs a plain transformers training
step, in one run, on a Qwen2.5-1.5B-shaped random model (built from its config in code; nothing
is downloaded).

    python benchmarks/bench_trainer.py                       # H200: ~2-3 minutes
    python benchmarks/bench_trainer.py --tiny                # CPU smoke run: seconds
    accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no \
        --dynamo_backend no benchmarks/bench_trainer.py --single benchmarks/results/trainer-h200.json
    ... the same ... benchmarks/bench_trainer.py --fsdp --single benchmarks/results/trainer-h200.json
    accelerate launch --multi_gpu --num_processes 2 ... benchmarks/bench_trainer.py --tiny   # 2 CPU processes

Several processes (accelerate launch): each rank trains on rows of its own (the plain step: a
random row per rank; PPO: rows[rank::world]), gradients are all-reduced (DDP through
accelerator.prepare; --fsdp: FSDP2, each decoder layer and the value head a unit), each timed call
starts after a barrier; a part's time is the slowest rank's median, its tokens (and FLOPs) are
summed over the ranks, so tokens/s counts every GPU; MFU is per GPU; peak memory is reported per
rank (peak_gib: the largest). With --single (a 1-GPU result): scaling efficiency = tokens/s on N
GPUs / (N x tokens/s on 1 GPU). After each part the JSON is rewritten ("finished": false until
the end), so a run cut short still leaves what it measured.

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
document forward (x3 with backward). Peak memory is measured per part (allocator peak; none on
CPU).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
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
from runtime.store import EpisodeRow as EpisodeRef  # noqa: E402
from trainer.algos import clipped_policy_loss, clipped_value_loss  # noqa: E402
from trainer.config import TrainConfig  # noqa: E402
from trainer.data import Doc, EpisodeTokens, make_batch, pack  # noqa: E402
from trainer.models import ATTN, Actor, Critic, compile_blocks, prepare, register_attention  # noqa: E402
from trainer.update import Models, gae_flat, train_step  # noqa: E402

PEAK_TFLOPS = 989.0
QWEN_1_5B = dict(model_type="qwen2", hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                 num_attention_heads=12, num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True,
                 rope_theta=1_000_000.0, max_position_embeddings=32768, rms_norm_eps=1e-6)
TINY = dict(QWEN_1_5B, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=512, max_position_embeddings=4096)
NAMES = {"actor": "actor update", "critic": "critic update", "reference": "reference forward",
         "ppo": "ppo update (all)"}


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


def timed(fn: Callable[[], Any], acc: Any, warmup: int, iters: int) -> tuple[float, float | None]:
    """This rank's median seconds per call and the allocator's peak (GiB) while running it. Every
    timed call starts after a barrier, so the ranks' calls overlap and the slowest rank's median is
    the wall time of a data-parallel step."""
    device = acc.device
    for _ in range(warmup):
        fn()
    sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for _ in range(iters):
        acc.wait_for_everyone()
        t = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t)
    peak = torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None
    return float(np.median(times)), peak


def gathered(acc: Any, mine: dict[str, Any]) -> list[dict[str, Any]]:
    """Every rank's dict, in rank order (on every rank)."""
    if acc.num_processes == 1:
        return [mine]
    from accelerate.utils import gather_object

    return sorted(gather_object([mine]), key=lambda r: r["rank"])


def weights_digest(model: Any) -> float | None:
    """A float64 checksum of a replicated model's weights (None when sharded: FSDP)."""
    from torch.distributed.tensor import DTensor

    total = 0.0
    for i, p in enumerate(model.parameters()):
        if isinstance(p, DTensor):
            return None
        total += float(p.detach().double().sum()) * (1 + i % 7)
    return total


def in_sync(acc: Any, *models: Any) -> bool | None:
    """Whether every rank holds the same weights after the timed updates. The ranks train on
    different rows, so their replicas agree only if the gradients were all-reduced."""
    if acc.num_processes == 1:
        return None  # nothing to compare (and no float64 pass over every weight)
    digests = [weights_digest(m) for m in models]
    if any(d is None for d in digests):
        return None
    ranks = gathered(acc, {"rank": acc.process_index, "digests": digests})
    return all(r["digests"] == ranks[0]["digests"] for r in ranks)


class Parts:
    """Per-part results gathered over the ranks; rank 0 prints each and rewrites the JSON."""

    def __init__(self, acc: Any, write: Callable[[list[dict[str, Any]], bool], Any]) -> None:
        self.acc, self.write = acc, write
        self.parts: list[dict[str, Any]] = []

    def measure(self, part: str, fn: Callable[[], Any], warmup: int, iters: int, tokens: int, flops: float,
                **extra: Any) -> None:
        t, peak = timed(fn, self.acc, warmup, iters)
        self.add(part, dict(rank=self.acc.process_index, tokens=tokens, seconds=t, peak_gib=peak, flops=flops,
                            **extra))

    def add(self, part: str, mine: dict[str, Any]) -> None:
        ranks = gathered(self.acc, mine)
        world = len(ranks)
        seconds = max(r["seconds"] for r in ranks)
        tokens, f = sum(r["tokens"] for r in ranks), sum(r["flops"] for r in ranks)
        peaks = [r["peak_gib"] for r in ranks if r["peak_gib"] is not None]
        out = dict(part=part, tokens=tokens, seconds=seconds, peak_gib=max(peaks) if peaks else None, flops=f,
                   tokens_per_s=tokens / seconds, tokens_per_s_per_gpu=tokens / seconds / world,
                   tflops=f / seconds / 1e12, mfu=f / seconds / 1e12 / PEAK_TFLOPS / world)
        for key in ("sampled_tokens", "docs"):
            if key in mine:
                out[key] = sum(r[key] for r in ranks)
        out["ranks"] = ranks
        self.parts.append(out)
        if self.acc.is_main_process:
            peak = " / ".join(f"{r['peak_gib']:.1f}" for r in ranks) if peaks else "-"
            print(f"{part}: {out['tokens_per_s']:.0f} tokens/s on {world} process(es), {seconds * 1e3:.1f} ms,"
                  f" peak GiB per rank {peak}", flush=True)
            self.write(self.parts, False)


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


def plain_step(config: Any, seq: int, dtype: torch.dtype, acc: Any, warmup: int, iters: int,
               parts: Parts) -> bool | None:
    device = acc.device
    model = new_model(config, "sdpa", dtype, device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=True)
    model, opt = prepare(acc, model, opt)  # DDP (or FSDP) under accelerate launch, as the PPO models
    g = torch.Generator(device="cpu").manual_seed(1000 + acc.process_index)  # a row of its own per rank
    ids = torch.randint(0, config.vocab_size, (1, seq), generator=g).to(device)

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    parts.measure("plain step", step, warmup, iters, seq, flops(config, "plain", seq, seq, [seq]))
    return in_sync(acc, model)


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
        opt_a = torch.optim.AdamW(actor.parameters(), lr=1e-6, fused=True)
        opt_c = torch.optim.AdamW(critic.parameters(), lr=1e-6, fused=True)
        self.actor, self.opt_a = prepare(acc, actor, opt_a)  # one model per prepare (FSDP2), as trainer.run
        self.critic, self.opt_c = prepare(acc, critic, opt_c)
        self.cfg = TrainConfig(db="-", model="-", stage="ppo", max_len=max(e.length for r in rows for e in r),
                               kl_coef=1e-3, progress=False, tensorboard=False)
        self.models = Models(accelerator=acc, actor=self.actor, critic=self.critic, reference=self.reference,
                             actor_opt=self.opt_a, critic_opt=self.opt_c)
        self.rows, self.acc = rows, acc
        self.batches = [make_batch([r], device) for r in mine]
        g = torch.Generator(device="cpu").manual_seed(acc.process_index)
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
              checkpointing: bool, compiled: bool, parts: Parts, actor_only: bool = False) -> bool | None:
    world = acc.num_processes
    rows = packed_rows(seq, n_rows * world, config.vocab_size)
    mine = rows[acc.process_index::world]  # what trainer.update.micro_batches gives this rank
    ppo = Ppo(config, rows, mine, dtype, acc, checkpointing)
    tokens = sum(e.length for r in mine for e in r)
    head = sum(int(d.sampled.sum()) for r in mine for e in r for d in e.docs)
    docs = [len(d.ids) for r in mine for e in r for d in e.docs]
    ids = sorted(e.ref.id for r in mine for e in r)
    f = {p: flops(config, p, tokens, head, docs) for p in ("actor", "critic", "reference")}
    f["ppo"] = sum(f.values())
    for part, fn in (("actor", ppo.actor_update), ("critic", ppo.critic_update),
                     ("reference", ppo.reference_forward), ("ppo", ppo.ppo_update)):
        if actor_only and part != "actor":
            continue
        extra = dict(sampled_tokens=head, docs=len(docs), episodes=ids) if part == "actor" else {}
        parts.measure(NAMES[part], fn, warmup, iters, tokens, f[part], **extra)
    synced = in_sync(acc, ppo.actor, ppo.critic)
    if compiled:  # the same actor after --compile (trainer.models.compile_blocks); warm-up compiles
        compile_blocks(acc.unwrap_model(ppo.actor).lm)
        parts.measure("actor update (--compile)", ppo.actor_update, warmup + 1, iters, tokens, f["actor"])
    del ppo
    free()
    return synced


ORDER = ["plain step", "actor update", "actor update (--compile)", "critic update", "reference forward",
         "ppo update (all)"]


def launch_command(world: int) -> str:
    """The command that started this run: $KAGENT_LAUNCH (the launcher, as gpu_train2.sh sets it)
    + this script's arguments; else the arguments alone, prefixed with what accelerate passed on."""
    args = " ".join([os.path.relpath(sys.argv[0]) if os.path.isabs(sys.argv[0]) else sys.argv[0], *sys.argv[1:]])
    if os.environ.get("KAGENT_LAUNCH"):
        return f"{os.environ['KAGENT_LAUNCH']} {args}"
    if world > 1 or "ACCELERATE_MIXED_PRECISION" in os.environ:
        return (f"accelerate launch --num_processes {world} --mixed_precision"
                f" {os.environ.get('ACCELERATE_MIXED_PRECISION', 'no')} {args}")
    return f"{Path(sys.executable).name} {args}"


def check_single(path: Path, seq: int, model: dict[str, Any], rows: int) -> dict[str, Any]:
    """The 1-GPU result to compare with; refused (before any work) if it is of another shape."""
    try:
        one: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--single {path}: {exc}") from exc
    theirs = (one.get("world"), one.get("seq"), one.get("model"), one.get("rows_per_gpu"))
    if theirs != (1, seq, model, rows):
        raise SystemExit(f"--single {path}: a run of world {theirs[0]}, seq {theirs[1]}, rows {theirs[3]},"
                         f" {'the same' if theirs[2] == model else 'another'} model; this run: world 1 expected,"
                         f" seq {seq}, rows {rows}")
    return one


def make_accelerator(fsdp: bool) -> Any:
    from accelerate import Accelerator

    plugin = None
    if fsdp:
        from accelerate.utils import FullyShardedDataParallelPlugin

        # FSDP2, full sharding; trainer.models.prepare makes each decoder layer and the value head a unit
        plugin = FullyShardedDataParallelPlugin(fsdp_version=2, auto_wrap_policy="transformer_based_wrap",
                                                reshard_after_forward=True, cpu_ram_efficient_loading=False,
                                                state_dict_type="SHARDED_STATE_DICT")
    acc = Accelerator(cpu=not torch.cuda.is_available(), fsdp_plugin=plugin)
    if fsdp and not getattr(acc, "is_fsdp2", False):
        raise SystemExit(f"--fsdp: accelerate runs {acc.distributed_type}, not FSDP: it shards only on GPUs"
                         " (MULTI_GPU), so start this with `accelerate launch --multi_gpu --num_processes N` on a"
                         " machine with N GPUs")
    return acc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="tiny model (2 layers, hidden 64), rows of 256 (seconds on CPU)")
    ap.add_argument("--seq", type=int, default=None, help="tokens per row (default 8192; --tiny: 256)")
    ap.add_argument("--rows", type=int, default=1,
                    help="packed rows per update and GPU (1: one row and one optimizer step, like the plain step)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed calls per part (default 2; --tiny: 1)")
    ap.add_argument("--iters", type=int, default=None, help="timed calls per part, median reported (default 3; --tiny: 2)")
    ap.add_argument("--dtype", choices=["auto", "bf16", "fp32"], default="auto",
                    help="weights and compute (auto: bf16 on GPU, fp32 on CPU; bf16 on CPU checks the GPU's dtypes)")
    ap.add_argument("--grad-checkpointing", action="store_true", help="checkpoint the actor and critic")
    ap.add_argument("--skip-plain", action="store_true", help="do not time the plain step")
    ap.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                    help="also time the actor with --compile (default: on, off with --tiny or --fsdp)")
    ap.add_argument("--actor-only", action="store_true",
                    help="time only the plain step and the actor update (and its --compile variant)")
    ap.add_argument("--fsdp", action="store_true",
                    help="shard the models with FSDP2 (accelerate's plugin) instead of DDP; GPUs only")
    ap.add_argument("--single", type=Path, default=None, help="1-GPU result JSON: report the scaling efficiency")
    ap.add_argument("--out", default=None,
                    help="result name (default trainer-h200 / trainer-h200xN[-fsdp] / trainer-tiny[xN])")
    ap.add_argument("--results-dir", type=Path, default=RESULTS, help="where the JSON goes")
    a = ap.parse_args(argv)
    shape = TINY if a.tiny else QWEN_1_5B
    seq = a.seq or (256 if a.tiny else 8192)
    one = check_single(a.single, seq, shape, a.rows) if a.single is not None else None
    acc = make_accelerator(a.fsdp)
    world = acc.num_processes
    config = qwen_config(shape)
    a.warmup, a.iters = a.warmup if a.warmup is not None else (1 if a.tiny else 2), a.iters or (2 if a.tiny else 3)
    dtype = torch.bfloat16 if a.dtype == "bf16" or (a.dtype == "auto" and acc.device.type != "cpu") else torch.float32
    if one is not None and one.get("dtype", str(dtype)) != str(dtype):
        raise SystemExit(f"--single {a.single}: a {one['dtype']} run; this one is {dtype}")
    suffix = "" if world == 1 else f"x{world}{'-fsdp' if a.fsdp else ''}"
    name = a.out or (f"trainer-tiny{suffix}" if a.tiny else f"trainer-h200{suffix}")
    path = a.results_dir / f"{name}.json"
    head = dict(environment(), command=launch_command(world), world=world,
                distributed_type=str(acc.distributed_type), fsdp=a.fsdp, seq=seq, rows_per_gpu=a.rows,
                dtype=str(dtype), grad_checkpointing=a.grad_checkpointing, model=shape, peak_tflops=PEAK_TFLOPS)
    if acc.is_main_process:
        print(f"{head['command']}\n{world} process(es), {acc.distributed_type}, {acc.device.type}, {dtype}", flush=True)

    synced: dict[str, bool | None] = {}  # per model: replicas identical on every rank after the updates

    def write(parts: list[dict[str, Any]], finished: bool) -> dict[str, Any]:
        """Rank 0: the JSON with what is measured so far; returns the summary."""
        ordered = sorted(parts, key=lambda p: ORDER.index(p["part"]))
        summary = summarise(ordered, world, one, synced)
        a.results_dir.mkdir(parents=True, exist_ok=True)
        payload = dict(head, finished=finished, parts=ordered, **{k: v for k, v in summary.items() if k != "lines"})
        path.write_text(json.dumps(payload, indent=1, default=str) + "\n")
        return summary

    results = Parts(acc, write)
    torch.manual_seed(0)
    if not a.skip_plain:
        synced["plain step"] = plain_step(config, seq, dtype, acc, a.warmup, a.iters, results)
    acc.free_memory()  # accelerate holds the prepared plain model; drop it before the PPO models
    free()
    compiled = a.compile if a.compile is not None else not (a.tiny or a.fsdp)
    synced["ppo"] = ppo_parts(config, seq, a.rows, dtype, acc, a.warmup, a.iters, a.grad_checkpointing, compiled,
                              results, actor_only=a.actor_only)
    if not acc.is_main_process:
        return 0
    summary = write(results.parts, True)
    parts = sorted(results.parts, key=lambda p: ORDER.index(p["part"]))
    print(table(["part", "tokens", "ms", "tokens/s", "tokens/s/GPU", "TFLOP/s", "MFU", "peak GiB", "vs plain"],
                [[p["part"], p["tokens"], p["seconds"] * 1e3, p["tokens_per_s"], p["tokens_per_s_per_gpu"], p["tflops"],
                  f"{p['mfu']:.1%}", p["peak_gib"], p["vs_plain"]] for p in parts]))
    for line in summary["lines"]:
        print(line)
    print(f"wrote {path}")
    return 0


def summarise(parts: list[dict[str, Any]], world: int, single: dict[str, Any] | None,
              synced: dict[str, bool | None]) -> dict[str, Any]:
    """Ratios to the plain step (also set as each part's vs_plain), scaling against the 1-GPU
    result, and whether the replicas stayed identical; `lines` says it in words."""
    by = {p["part"]: p for p in parts}
    out: dict[str, Any] = {"lines": []}
    for p in parts:
        p["vs_plain"] = p["tokens_per_s"] / by["plain step"]["tokens_per_s"] if "plain step" in by else None
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
        one = {p["part"]: p for p in single["parts"]}
        scaling = {k: dict(tokens_per_s_1gpu=one[k]["tokens_per_s"], tokens_per_s=by[k]["tokens_per_s"],
                           tokens_per_s_per_gpu=by[k]["tokens_per_s_per_gpu"],
                           efficiency=by[k]["tokens_per_s"] / (world * one[k]["tokens_per_s"]))
                   for k in by if k in one}
        out["scaling"] = scaling
        out["scaling_efficiency"] = {k: v["efficiency"] for k, v in scaling.items()}
        out["single"] = dict(date=single.get("date"), command=single.get("command"))
        for k, v in scaling.items():
            out["lines"].append(f"{k}: {world} GPUs {v['tokens_per_s']:,.0f} tokens/s ({v['tokens_per_s_per_gpu']:,.0f}"
                                f" per GPU), 1 GPU {v['tokens_per_s_1gpu']:,.0f}: scaling efficiency"
                                f" {v['efficiency']:.1%}")
    if world > 1 and synced:
        out["weights_in_sync"] = dict(synced)
        out["lines"].append("replicas after the timed updates: " + ", ".join(
            f"{k} {'sharded (FSDP), not compared' if v is None else 'identical on every rank' if v else 'DIFFER'}"
            for k, v in synced.items()))
    if any(math.isnan(p["seconds"]) for p in parts):
        out["lines"].append("some parts did not run")
    return out


if __name__ == "__main__":
    sys.exit(main())
