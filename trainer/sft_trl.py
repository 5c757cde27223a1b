"""RFT through TRL: the logged token ids as a pre-tokenized dataset, trained by `trl.SFTTrainer`.

Rows: one per document of an RFT episode (trainer.data: the episode's token sequence, cut into
documents where the server re-rendered the conversation), with
  input_ids        the document's token ids, exactly as logged (nothing is re-tokenized);
  completion_mask  1 on the tokens the policy sampled, 0 on prompt and tool output;
  labels           input_ids where the mask is 1, -100 elsewhere: TRL's contract for a
                   pre-tokenized row (SFTTrainer uses `labels` as is, so the loss is on the
                   policy's tokens whatever `completion_only_loss` says).
`kagent episodes export --format trl` writes them (JSONL or Parquet, `datasets.load_dataset`
reads both); `python -m trainer.run --stage rft --rft-trainer trl` trains on them in its loop,
with the trainer's optimizer (its AdamW state carries over from step to step and into step_N/).

The update is TRL's (HF Trainer): rows padded on the right, one token-mean NLL over the labels
of an optimizer step, gradient accumulation to `--mini-batches` steps per epoch. Unlike the
built-in RFT update it does not pack rows (`--micro-batch` rows are padded to the longest),
and it runs on one process. The attention is still the trainer's per-document SDPA
(trainer.models): causal over the padded row, which for right padding is the same as masking
the pads.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import msgspec
from anyio import to_thread

from runtime.store import Conn, EpisodeRow, Store
from runtime.store.training import trainable_episodes, turn_tokens
from trainer.data import Doc, EpisodeTokens, build_episode, rft_keep

IGNORE = -100
"""The label of a token outside the loss (transformers' and TRL's convention)."""


class TrlRow(msgspec.Struct, kw_only=True):
    """One pre-tokenized training row (a document of an episode)."""

    episode_id: int
    """Episode it comes from."""
    document: int
    """0-based document of the episode (a new one where the server re-rendered the prompt)."""
    problem_id: str
    """Problem the episode worked on."""
    reward: float
    """The episode's reward."""
    input_ids: list[int]
    """Token ids as logged."""
    completion_mask: list[int]
    """1 on tokens the policy sampled (trained), 0 on prompt and tool output."""
    labels: list[int]
    """input_ids where completion_mask is 1, -100 elsewhere."""


def doc_row(ep: EpisodeTokens, k: int, doc: Doc) -> TrlRow:
    ids = doc.ids.tolist()
    mask = doc.sampled.astype(int).tolist()
    return TrlRow(episode_id=ep.ref.id, document=k, problem_id=ep.ref.problem_id, reward=ep.reward,
                  input_ids=ids, completion_mask=mask,
                  labels=[t if m else IGNORE for t, m in zip(ids, mask, strict=True)])


def episode_rows(episodes: Sequence[EpisodeTokens]) -> list[TrlRow]:
    """Rows of the episodes, one per document that holds a sampled token."""
    return [doc_row(ep, k, d) for ep in episodes for k, d in enumerate(ep.docs) if d.sampled.any()]


def rft_rows(conn: Conn, refs: Sequence[EpisodeRow], *, min_reward: float = 0.0, loop_repeats: int = 3,
             max_len: int | None = None) -> list[TrlRow]:
    """The rows of those of `refs` that are RFT data (reward above `min_reward`, no loop, no
    malformed call: trainer.run's rft selection). `max_len`: keep each episode's first max_len
    tokens (default: whole)."""
    turns = turn_tokens(conn, [r.id for r in refs])
    kept: list[EpisodeTokens] = []
    for ref in refs:
        if rft_keep(ref, turns[ref.id], min_reward=min_reward, loop_repeats=loop_repeats) is not None:
            continue
        built = build_episode(ref, turns[ref.id], max_len=max_len or 2**62, vocab_size=2**31, need_logprobs=False)
        if isinstance(built, EpisodeTokens):
            kept.append(built)
    return episode_rows(kept)


async def export(store: Store, path: Path, *, min_reward: float = 0.0, chunk: int = 64) -> tuple[int, int]:
    """Write the store's RFT rows to `path`: Parquet when it ends in .parquet, else JSONL (both
    load with `datasets.load_dataset`). Through a temporary file and a rename, like every export.
    Returns (rows, episodes)."""
    refs, _ = await store.read(lambda c: trainable_episodes(c, min_version=None, exclude=set(), limit=None))
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    parquet = path.suffix.lower() == ".parquet"
    rows = episodes = 0
    try:
        sink = _ParquetSink(tmp) if parquet else _JsonlSink(tmp)
        try:
            for start in range(0, len(refs), chunk):
                part = refs[start:start + chunk]
                got = await store.read(lambda c, p=part: rft_rows(c, p, min_reward=min_reward))  # type: ignore[misc]
                await to_thread.run_sync(sink.write, got)
                rows += len(got)
                episodes += len({r.episode_id for r in got})
        finally:
            await to_thread.run_sync(sink.close)
        await anyio.Path(tmp).rename(path)
    finally:
        await anyio.Path(tmp).unlink(missing_ok=True)
    return rows, episodes


class _JsonlSink:
    def __init__(self, path: Path) -> None:
        self.f = open(path, "wb")  # closed by close()

    def write(self, rows: list[TrlRow]) -> None:
        self.f.write(b"".join(msgspec.json.encode(r) + b"\n" for r in rows))

    def close(self) -> None:
        self.f.close()


class _ParquetSink:
    def __init__(self, path: Path) -> None:
        from runtime.store.export import load_pyarrow

        self.pa, pq = load_pyarrow()
        pa = self.pa
        self.schema = pa.schema([
            ("episode_id", pa.int64()), ("document", pa.int64()), ("problem_id", pa.string()),
            ("reward", pa.float64()), ("input_ids", pa.list_(pa.int32())),
            ("completion_mask", pa.list_(pa.int8())), ("labels", pa.list_(pa.int32()))])
        self.writer = pq.ParquetWriter(str(path), self.schema)

    def write(self, rows: list[TrlRow]) -> None:
        if rows:
            self.writer.write_table(self.pa.Table.from_pylist(msgspec.to_builtins(rows), schema=self.schema))

    def close(self) -> None:
        self.writer.close()


def placeholder_tokenizer() -> Any:
    """A tokenizer with a pad token only: SFTTrainer needs one to pad pre-tokenized rows, and a
    model built from a config (the `tiny` preset, a config JSON) comes without. Id 0 pads; the
    padded positions are masked out of the attention and the loss."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(vocab={"<pad>": 0}, unk_token="<pad>"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>")  # type: ignore[no-untyped-call]


def tokenizer_for(model_spec: str) -> Any:
    """The model folder's tokenizer (its pad token, else its eos, pads), else the placeholder."""
    folder = Path(model_spec)
    if folder.is_dir() and (folder / "tokenizer_config.json").is_file():
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(folder))
    return placeholder_tokenizer()


def checkpointing(on: bool) -> dict[str, Any]:
    """The activation-checkpointing argument by the name this transformers knows: 5.x renamed
    `gradient_checkpointing` (TRL's default True) and warns at the old name."""
    from transformers import TrainingArguments

    known = TrainingArguments.__dataclass_fields__
    return {"activation_checkpointing" if "activation_checkpointing" in known else "gradient_checkpointing": on}


def sft_config(out: Path, *, rows: int, micro_batch: int, mini_batches: int, epochs: int, max_len: int,
               max_grad_norm: float, bf16: bool, grad_checkpointing: bool, seed: int) -> Any:
    """The SFTConfig of one trainer step: the dataset's labels as the loss mask, no saving, no
    logging of its own, a constant learning rate (the optimizer's)."""
    import torch
    from trl import SFTConfig  # type: ignore[attr-defined]  # trl's lazy module exports it

    cuda = torch.cuda.is_available()
    steps_per_epoch = max(1, min(mini_batches, math.ceil(rows / micro_batch)))
    return SFTConfig(
        output_dir=str(out), per_device_train_batch_size=micro_batch,
        gradient_accumulation_steps=max(1, math.ceil(rows / micro_batch / steps_per_epoch)),
        num_train_epochs=epochs, max_length=max_len, max_grad_norm=max_grad_norm,
        lr_scheduler_type="constant", warmup_steps=0, bf16=bf16, **checkpointing(grad_checkpointing),
        save_strategy="no", eval_strategy="no", logging_strategy="no", report_to="none", disable_tqdm=True,
        dataloader_num_workers=0, dataloader_pin_memory=cuda, use_cpu=not cuda, seed=seed,
        shuffle_dataset=False, packing=False, padding_free=False)


def train_rows(model: Any, optimizer: Any, rows: Sequence[TrlRow], cfg: Any, *, tokenizer: Any,
               step: int) -> dict[str, float]:
    """One trainer step (`cfg`: TrainConfig) with SFTTrainer over the rows; returns the metrics
    trainer.run records (`nll`: TRL's mean training loss over the step's optimizer steps)."""
    import torch
    from datasets import Dataset
    from trl import SFTTrainer  # type: ignore[attr-defined]  # trl's lazy module exports it

    data = Dataset.from_list([{"input_ids": r.input_ids, "labels": r.labels} for r in rows])
    sampled = float(sum(sum(r.completion_mask) for r in rows))
    tokens = float(sum(len(r.input_ids) for r in rows))
    bf16 = next(model.parameters()).dtype == torch.bfloat16
    with tempfile.TemporaryDirectory(prefix="kagent-trl-") as out:
        args = sft_config(Path(out), rows=len(rows), micro_batch=cfg.micro_batch, mini_batches=cfg.mini_batches,
                          epochs=cfg.epochs, max_len=cfg.max_len, max_grad_norm=cfg.max_grad_norm, bf16=bf16,
                          grad_checkpointing=cfg.grad_checkpointing, seed=cfg.seed + step)
        constant = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
        trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer,
                             optimizers=(optimizer, constant))
        start = time.perf_counter()
        result = trainer.train()
        seconds = time.perf_counter() - start
    return {"nll": float(result.training_loss), "optimizer_steps": float(result.global_step),
            "tokens": tokens, "sampled_tokens": sampled, "step_seconds": seconds,
            "tokens_per_s": tokens / seconds if seconds > 0 else 0.0}
