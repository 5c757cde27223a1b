"""python -m trainer.run: the episodes the daemon logs -> a better policy (DESIGN §9).

    loop:
      1. wait until the store holds --min-episodes new usable episodes (finished, trainable,
         graded; ppo/value: not more than --max-staleness policy versions old);
      2. sequences from the logged token ids (mask 1 on sampled tokens, 0 on prompt and tool
         output, the reward on the last sampled token), packed into rows of --max-len tokens;
      3. one step of the stage:
           rft    SFT on episodes with reward > --rft-min-reward, loops and malformed tool calls
                  dropped; loss on sampled tokens only (--rft-trainer trl: through trl.SFTTrainer
                  on the same ids as a pre-tokenized dataset, trainer/sft_trl.py)
           value  the critic regresses GAE(gamma, lambda) targets; the actor is not loaded
           ppo    per micro-batch: critic forward -> GAE (skipping tool tokens) -> clipped value
                  loss; reference forward (if --kl-coef > 0); actor forward -> clipped policy
                  loss (eps_low 0.2 / eps_high 0.28; old policy = the logged behaviour logprobs,
                  truncated importance weight, see --old-logprobs); AdamW steps
      4. step_N/ (full safetensors or a LoRA adapter), then STABLE, then the new policy version
         in the store: the daemon hot-loads it;
      5. metrics to TensorBoard (<out>/tb) and train_steps; curriculum weights to the store.
    Restarted with the same --out, it resumes from the newest complete checkpoint.

    python -m trainer.run --db ~/.local/state/kagent/kagent.db --model Qwen/Qwen2.5-1.5B-Instruct \\
        --stage ppo --lora --out checkpoints/ppo
    accelerate launch --num_processes 2 -m trainer.run --db ... --model ... --stage ppo
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections import Counter
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import torch
from anyio import to_thread

from runtime.store import Conn, EpisodeRow, Store, StoreError, TrainStepRow
from runtime.store.training import (
    final_speedups,
    last_train_step,
    latest_policy_version,
    trainable_episodes,
    turn_tokens,
)
from trainer import checkpoint as ckpt
from trainer.config import TrainConfig, parse_args
from trainer.curriculum import CurriculumConfig
from trainer.curriculum import update as update_curriculum
from trainer.data import DataError, EpisodeTokens, Skip, build_episode, pack, rft_keep
from trainer.models import (
    ModelError,
    build_actor,
    build_critic,
    build_reference,
    compute_dtype,
    critic_source,
    optimizer,
    prepare,
    save_actor,
    save_critic,
    trainable,
    vocab_size,
)
from trainer.update import Models, train_step

log = logging.getLogger("trainer")


class TrainerError(Exception):
    """The trainer cannot go on; the message says why and what to change."""


class Selection(msgspec.Struct, kw_only=True):
    """Episodes chosen for the next step (rank 0 chooses, every rank uses the same)."""

    refs: list[EpisodeRow]
    """Chosen episodes, oldest first."""
    stale: int
    """Unconsumed episodes dropped as too old."""
    latest: int
    """Newest policy version in the store."""


@contextmanager
def oom_guard(cfg: TrainConfig) -> Any:
    try:
        yield
    except torch.OutOfMemoryError as exc:
        raise TrainerError(
            f"out of memory in the {cfg.stage} step ({str(exc).splitlines()[0]}). Lower --micro-batch"
            f" (now {cfg.micro_batch}) or --max-len (now {cfg.max_len}), or add --grad-checkpointing"
            f"{'' if cfg.lora else ' or --lora'}.") from exc


class Trainer:
    """Models, optimizers and the run's state; `step` trains, `save` writes step_N/."""

    def __init__(self, cfg: TrainConfig, acc: Any, models: Models, state: ckpt.TrainerState,
                 vocab: int) -> None:
        self.cfg, self.acc, self.models, self.state, self.vocab = cfg, acc, models, state, vocab
        self.out = Path(cfg.out)
        self.last_wait = ""
        self._tokenizer: Any = None

    @classmethod
    def create(cls, cfg: TrainConfig) -> Trainer:
        from accelerate import Accelerator

        if not Path(cfg.db).is_file():  # before loading any model: fail in a second, not a minute
            raise TrainerError(f"--db {cfg.db}: no such file (the daemon's store; kagentd creates it)")
        acc = Accelerator(cpu=not torch.cuda.is_available())
        if cfg.rft_trainer == "trl" and acc.num_processes > 1:
            raise TrainerError(f"--rft-trainer trl runs on one process (accelerate started {acc.num_processes});"
                               " use --rft-trainer kagent for data parallelism")
        torch.manual_seed(cfg.seed)
        out = Path(cfg.out)
        other = ckpt.other_stage(out, cfg.stage)
        if other is not None:
            raise TrainerError(f"{out} holds a {other} run; give the {cfg.stage} stage its own --out")
        found = ckpt.stable(out, cfg.stage)
        resume = found[-1][1] if found else None
        if resume is not None:
            state = ckpt.read_state(resume)
            if state.lora != cfg.lora:
                raise TrainerError(f"{resume} was trained {'with' if state.lora else 'without'} --lora;"
                                   " resume it the same way or use a new --out")
            _check_resume(resume, _is_fsdp(acc))
            log.info("resuming from %s (step %d, %d episodes seen)", resume, state.step, len(state.seen))
        else:
            state = ckpt.TrainerState(run=cfg.run or str(out.resolve()), stage=cfg.stage, step=0, lora=cfg.lora)
        models, vocab = _build(cfg, acc, resume)
        if acc.is_main_process:
            log.info("%s stage on %d process(es) (%s), device %s, %s", cfg.stage, acc.num_processes,
                     acc.distributed_type, acc.device, "LoRA" if cfg.lora else "full weights")
        return cls(cfg, acc, models, state, vocab)

    # -- data

    def select(self, conn: Conn) -> Selection:
        latest = latest_policy_version(conn)
        floor = None if self.cfg.stage == "rft" else latest - self.cfg.max_staleness
        refs, stale = trainable_episodes(conn, min_version=floor, exclude=set(self.state.seen),
                                         limit=self.cfg.max_episodes)
        return Selection(refs=refs, stale=stale, latest=latest)

    def load(self, conn: Conn, sel: Selection) -> tuple[list[EpisodeTokens], list[Skip]]:
        turns = turn_tokens(conn, [r.id for r in sel.refs])
        episodes: list[EpisodeTokens] = []
        skips: list[Skip] = []
        for ref in sel.refs:
            skip = None
            if self.cfg.stage == "rft":
                skip = rft_keep(ref, turns[ref.id], min_reward=self.cfg.rft_min_reward,
                                loop_repeats=self.cfg.loop_repeats)
            built = skip or build_episode(ref, turns[ref.id], max_len=self.cfg.max_len, vocab_size=self.vocab,
                                          need_logprobs=self.cfg.stage == "ppo")
            if isinstance(built, Skip):
                skips.append(built)
            else:
                episodes.append(built)
        return episodes, skips

    # -- training

    def step(self, episodes: list[EpisodeTokens]) -> dict[str, float]:
        if self.cfg.rft_trainer == "trl":
            return self._trl_step(episodes)
        rows = pack(episodes, self.cfg.max_len)
        with oom_guard(self.cfg), _progress(self.cfg, self.acc, self.state.step + 1) as tick:
            metrics = train_step(self.models, rows, self.cfg, step=self.state.step, tick=tick)
        metrics["rows"] = float(len(rows))
        self.state.step += 1
        return metrics

    def _trl_step(self, episodes: list[EpisodeTokens]) -> dict[str, float]:
        """The rft step through trl.SFTTrainer (trainer/sft_trl.py), on the actor's model and optimizer."""
        from trainer import sft_trl

        rows = sft_trl.episode_rows(episodes)
        if self._tokenizer is None:
            self._tokenizer = sft_trl.tokenizer_for(self.cfg.model)
        with oom_guard(self.cfg):
            metrics = sft_trl.train_rows(self.acc.unwrap_model(self.models.actor).lm, self.models.actor_opt, rows,
                                         self.cfg, tokenizer=self._tokenizer, step=self.state.step)
        metrics["rows"] = float(len(rows))
        self.state.step += 1
        return metrics

    def save(self) -> Path:
        """step_N/ (critic_N/ in the value stage), sealed with STABLE; rank 0 writes."""
        acc, m = self.acc, self.models
        folder = ckpt.step_dir(self.out, self.cfg.stage, self.state.step)
        fsdp = _is_fsdp(acc)
        # under FSDP the weights are gathered in full to rank 0 (what vLLM loads), the optimizer
        # states stay sharded: each rank writes its own part to optimizer/
        actor_sd = acc.get_state_dict(m.actor) if m.actor is not None and fsdp else None
        critic_sd = acc.get_state_dict(m.critic) if m.critic is not None and fsdp else None
        if acc.is_main_process:
            ckpt.begin(folder)
        if fsdp:
            acc.wait_for_everyone()  # begin() may remove a leftover folder: no rank writes before
            ckpt.save_shards(folder / ckpt.SHARDS, _pairs(m))
        if acc.is_main_process:
            if m.actor is not None:
                save_actor(acc.unwrap_model(m.actor), folder, model_spec=self.cfg.model,
                           state_dict=_strip(actor_sd, "lm."))
            if m.critic is not None:
                save_critic(acc.unwrap_model(m.critic), folder / "critic", state_dict=critic_sd)
            if not fsdp:
                opts = {k: o.state_dict() for k, o in (("actor", m.actor_opt), ("critic", m.critic_opt)) if o}
                torch.save(opts, folder / ckpt.OPTIMIZER)
            kind = "critic" if self.cfg.stage == "value" else "lora" if self.cfg.lora else "full"
            ckpt.seal(folder, self.state, kind)
            ckpt.prune(self.out, self.cfg.stage, self.cfg.keep_checkpoints)
        acc.wait_for_everyone()
        return folder


def _is_fsdp(acc: Any) -> bool:
    return "FSDP" in str(acc.distributed_type)


def _pairs(m: Models) -> dict[str, tuple[Any, Any]]:
    """The prepared (model, optimizer) of actor and critic, by the name their states are saved under."""
    pairs = {"actor": (m.actor, m.actor_opt), "critic": (m.critic, m.critic_opt)}
    return {k: (model, opt) for k, (model, opt) in pairs.items() if model is not None and opt is not None}


def _strip(sd: dict[str, torch.Tensor] | None, prefix: str) -> dict[str, torch.Tensor] | None:
    return None if sd is None else {k.removeprefix(prefix): v for k, v in sd.items()}


def _build(cfg: TrainConfig, acc: Any, resume: Path | None) -> tuple[Models, int]:
    dtype = compute_dtype(cfg, acc.device)
    actor = critic = reference = None
    if cfg.stage in ("rft", "ppo"):
        actor = build_actor(cfg, dtype=dtype, resume=resume).to(acc.device)
        actor.train()
    if cfg.stage in ("value", "ppo"):
        source = resume / "critic" if resume is not None else \
            critic_source(Path(cfg.critic)) if cfg.critic else None
        critic = build_critic(cfg, dtype=dtype, source=source).to(acc.device)
        critic.train()
    if cfg.stage == "ppo" and cfg.kl_coef > 0 and not cfg.lora:
        reference = build_reference(cfg, dtype=dtype).to(acc.device)
    vocab = vocab_size(actor.lm if actor is not None else critic.backbone)  # type: ignore[union-attr]
    actor_opt = optimizer(trainable(actor), lr=cfg.lr, weight_decay=cfg.weight_decay) if actor else None
    critic_opt = optimizer(trainable(critic), lr=cfg.critic_lr, weight_decay=cfg.weight_decay) if critic else None
    fsdp = _is_fsdp(acc)
    if resume is not None and not fsdp:
        states = torch.load(resume / ckpt.OPTIMIZER, map_location=acc.device, weights_only=True)
        for name, opt in (("actor", actor_opt), ("critic", critic_opt)):
            if opt is not None and name in states:
                opt.load_state_dict(states[name])
    if actor is not None and cfg.rft_trainer != "trl":  # trl: SFTTrainer prepares them itself
        actor, actor_opt = prepare(acc, actor, actor_opt)
    if critic is not None:
        critic, critic_opt = prepare(acc, critic, critic_opt)
    models = Models(accelerator=acc, actor=actor, actor_opt=actor_opt, critic=critic, critic_opt=critic_opt,
                    reference=reference)
    if resume is not None and fsdp:  # into the sharded optimizers: after prepare
        ckpt.load_shards(resume / ckpt.SHARDS, _pairs(models))
    return models, vocab


def _check_resume(resume: Path, fsdp: bool) -> None:
    """The checkpoint holds the optimizer states in the form this run reads (full or sharded)."""
    full, shards = resume / ckpt.OPTIMIZER, resume / ckpt.SHARDS
    want, other = (shards, full) if fsdp else (full, shards)
    if want.exists():
        return
    if other.exists():
        raise TrainerError(
            f"{resume} was written {'without' if fsdp else 'under'} FSDP ({other.name} holds its optimizer states);"
            f" resume it {'without' if fsdp else 'with'} --use_fsdp, or use a new --out")
    raise TrainerError(f"{want} is missing (pruned?); resume needs the newest checkpoint's optimizer state")


@contextmanager
def _progress(cfg: TrainConfig, acc: Any, step: int) -> Any:
    if not (cfg.progress and acc.is_main_process):
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(f"step {step} ({cfg.stage})"), BarColumn(),
                  TextColumn("{task.fields[tokens]} tokens"), TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task("step", total=None, tokens=0)
        seen = [0]

        def tick(tokens: int) -> None:
            seen[0] += tokens
            bar.update(task, advance=1, tokens=seen[0])

        yield tick


# ---------------------------------------------------------------------------- the loop


def _agree(acc: Any, value: Any) -> Any:
    """Rank 0's value on every rank."""
    if acc.num_processes == 1:
        return value
    from accelerate.utils import broadcast_object_list

    box = [value]
    broadcast_object_list(box, from_process=0)
    return box[0]


def _open_store(cfg: TrainConfig, acc: Any) -> AbstractAsyncContextManager[Store]:
    # The daemon holds the store's lock; the trainer shares the file without it (SQLite
    # serialises the writes). Only rank 0 writes.
    return Store.open(cfg.db, lock=False, readonly=not acc.is_main_process)


def episode_outcomes(conn: Conn, ids: list[int]) -> dict[str, float]:
    """Geometric-mean speedups of the final evaluations of the episodes (where measured)."""
    out: dict[str, float] = {}
    rows = final_speedups(conn, ids)
    for i, name in enumerate(("speedup_eager", "speedup_compile")):
        vals = [v for r in rows if (v := r[i]) is not None and v > 0]
        if vals:
            out[name] = math.exp(sum(math.log(v) for v in vals) / len(vals))
    return out


def episode_metrics(episodes: list[EpisodeTokens], skips: list[Skip], sel: Selection) -> dict[str, float]:
    rewards = [e.reward for e in episodes]
    m: dict[str, float] = {
        "episodes": float(len(episodes)), "stale": float(sel.stale), "skipped": float(len(skips)),
        "truncated": float(sum(e.truncated for e in episodes)), "policy_version_latest": float(sel.latest)}
    if rewards:
        m["reward"] = sum(rewards) / len(rewards)
        m["pass_rate"] = sum(r > 0 for r in rewards) / len(rewards)
        m["staleness"] = sum(sel.latest - (e.ref.policy_version or 0) for e in episodes) / len(episodes)
    for reason, n in Counter(s.reason for s in skips).items():
        m[f"skipped_{reason}"] = float(n)
    return m


SKIP_HELP = {
    "prompt_over_max_len": "the first prompt alone fills --max-len",
    "low_reward": "reward not above --rft-min-reward",
    "no_sampled_tokens": "no token the policy sampled",
    "looping": "repeats itself --loop-repeats times",
    "malformed": "malformed tool calls",
    "ungraded": "no reward",
    "no_logprobs": "no behaviour logprobs (ppo needs them)",
}
"""What each skip reason means, in the log line of a step with nothing to train on."""


def none_usable(skips: list[Skip], cfg: TrainConfig) -> str:
    """One line: why every selected episode was left out, and what to change."""
    counts = Counter(s.reason for s in skips)
    parts = [f"{n} {reason}" + (f" ({SKIP_HELP[reason]})" if reason in SKIP_HELP else "")
             for reason, n in counts.most_common()]
    line = f"{len(skips)} episodes, none usable: {', '.join(parts)}"
    prompts = [int(s.detail) for s in skips if s.reason == "prompt_over_max_len" and s.detail.isdigit()]
    if prompts:
        line += (f"; the longest first prompt is {max(prompts)} tokens and --max-len is {cfg.max_len}:"
                 f" pass --max-len {max(prompts) + 1024} or more")
    return line


async def _next(trainer: Trainer, store: Store, waited: float) -> Selection | str:
    """A selection to train on, or 'wait' / 'stop' (rank 0 decides)."""
    cfg, acc = trainer.cfg, trainer.acc
    decision: Selection | str = "wait"
    if acc.is_main_process:
        sel = await store.read(trainer.select)
        if len(sel.refs) >= cfg.min_episodes:
            decision = sel
        else:
            msg = (f"waiting for episodes: have {len(sel.refs)} of {cfg.min_episodes} (--min-episodes) new usable"
                   f" in {cfg.db} ({sel.stale} stale dropped, newest policy version {sel.latest})")
            if msg != trainer.last_wait:
                until = ("pass --wait-timeout S to stop waiting" if cfg.wait_timeout is None
                         else f"giving up after --wait-timeout {cfg.wait_timeout:g} s")
                log.info("%s; looking again every %g s; %s", msg, cfg.poll_seconds, until)
                trainer.last_wait = msg
            if cfg.wait_timeout is not None and waited >= cfg.wait_timeout:
                log.info("no step after waiting %.0f s (--wait-timeout); exiting", waited)
                decision = "stop"
    return _agree(acc, decision)  # type: ignore[no-any-return]


async def _after_step(trainer: Trainer, store: Store, folder: Path, metrics: dict[str, float],
                      consumed: list[int], writer: Any) -> None:
    """Rank 0: policy version, train_steps row, curriculum, TensorBoard."""
    cfg, state = trainer.cfg, trainer.state
    version = None if cfg.stage == "value" else await ckpt.publish(store, folder)
    metrics.update(await store.read(lambda c: episode_outcomes(c, consumed)))
    if version is not None:
        metrics["policy_version"] = float(version)
    await store.add_train_step(TrainStepRow(run=state.run, stage=cfg.stage, step=state.step, episodes=consumed,
                                            metrics=metrics, policy_version=version))
    if cfg.curriculum:
        await update_curriculum(store, CurriculumConfig(
            window=cfg.curriculum_window, advance_at=cfg.curriculum_advance_at,
            min_weight=cfg.curriculum_min_weight, min_tier_share=cfg.curriculum_min_tier_share))
    if writer is not None:
        for name, value in metrics.items():
            writer.add_scalar(f"{cfg.stage}/{name}", value, state.step)
        writer.flush()
    keys = ("reward", "pass_rate", "policy_loss", "value_loss", "nll", "clip_frac", "entropy", "mismatch_kl",
            "tokens_per_s")
    shown = ", ".join(f"{k} {metrics[k]:.4g}" for k in keys if k in metrics)
    log.info("step %d: %d episodes; %s -> %s%s", state.step, len(consumed), shown, folder,
             "" if version is None else f" (policy version {version})")


async def _check_run(store: Store, trainer: Trainer) -> None:
    """Refuse to renumber steps the store already records for this run (its --out lost them)."""
    state = trainer.state
    last = await store.read(lambda c: last_train_step(c, state.run, state.stage))
    if last is not None and last > state.step:
        raise TrainerError(
            f"the store records {state.stage} steps up to {last} of run {state.run!r}, but {trainer.out} holds"
            f" {'no checkpoint' if state.step == 0 else f'checkpoints only up to step {state.step}'}; restore"
            " the folder, or start a new run with another --out or --run")


async def train(cfg: TrainConfig) -> int:
    """Run the loop until --max-steps, --wait-timeout or cancellation; returns the step reached."""
    trainer = await to_thread.run_sync(Trainer.create, cfg)
    acc = trainer.acc
    writer = None
    if cfg.tensorboard and acc.is_main_process:
        from torch.utils.tensorboard import SummaryWriter
        writer = SummaryWriter(str(Path(cfg.out) / "tb"))
    async with _open_store(cfg, acc) as store:
        if acc.is_main_process:
            await _check_run(store, trainer)
        if acc.is_main_process and trainer.state.step and cfg.stage != "value":
            # the previous run may have died between STABLE and recording the version
            await ckpt.publish(store, ckpt.step_dir(trainer.out, cfg.stage, trainer.state.step))
        since = time.monotonic()
        while cfg.max_steps is None or trainer.state.step < cfg.max_steps:
            decision = await _next(trainer, store, time.monotonic() - since)
            if decision == "stop":
                break
            if not isinstance(decision, Selection):
                await anyio.sleep(cfg.poll_seconds)
                continue
            episodes, skips = await store.read(lambda c, s=decision: trainer.load(c, s))  # type: ignore[misc]
            trainer.state.seen.extend(r.id for r in decision.refs)
            for s in skips:
                log.debug("episode %d skipped: %s %s", s.episode_id, s.reason, s.detail)
            if not episodes:
                log.info("%s", none_usable(skips, cfg))
                continue
            metrics = await to_thread.run_sync(trainer.step, episodes)
            metrics.update(episode_metrics(episodes, skips, decision))
            folder = await to_thread.run_sync(trainer.save)
            if acc.is_main_process:
                await _after_step(trainer, store, folder, metrics, [e.ref.id for e in episodes], writer)
            since = time.monotonic()
    if writer is not None:
        writer.close()
    return trainer.state.step


TRAIN_EXTRA = ("transformers", "accelerate", "safetensors", "peft")
"""What `pip install 'kagent[train]'` adds and the trainer imports (tensorboard: with --tensorboard;
trl and datasets: with --rft-trainer trl)."""


def missing_extra(cfg: TrainConfig) -> list[str]:
    """The trainer's packages that are not installed."""
    import importlib.util

    wanted = [*TRAIN_EXTRA, *(["tensorboard"] if cfg.tensorboard else []),
              *(["trl", "datasets"] if cfg.rft_trainer == "trl" else [])]
    return [name for name in wanted if importlib.util.find_spec(name) is None]


def main(argv: list[str] | None = None) -> int:
    cfg = parse_args(argv, description=__doc__)
    if missing := missing_extra(cfg):
        sys.stderr.write(f"trainer: {', '.join(missing)} not installed: pip install 'kagent[train]'\n")
        return 2
    rank = int(os.environ.get("RANK", "0"))  # under accelerate launch / torchrun: only rank 0 talks
    logging.basicConfig(level=logging.INFO if rank == 0 else logging.WARNING, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    try:
        step = anyio.run(train, cfg)
    except (TrainerError, DataError, StoreError, ModelError) as exc:
        log.error("%s", exc)
        return 2
    except KeyboardInterrupt:
        log.info("interrupted; the last complete checkpoint stays the resume point")
        return 130
    log.info("done at step %d", step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
