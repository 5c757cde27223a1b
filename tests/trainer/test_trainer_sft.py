"""RFT through TRL (trainer/sft_trl.py) on CPU, with a tiny random qwen2 and a word-level
tokenizer built here: `kagent episodes export --format trl` writes rows that
`datasets.load_dataset` reads and `trl.SFTTrainer` trains on (the loss falls on a small overfit
set); tokens outside the policy's (prompt, tool output) carry no loss; and
`trainer.run --stage rft --rft-trainer trl` runs a step of its loop through SFTTrainer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
import torch

from runtime import cli
from runtime.store import ProblemRow, Store, TurnRow
from trainer import checkpoint as ckpt
from trainer.config import TrainConfig
from trainer.run import train
from trainer.sft_trl import checkpointing

pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")

V = 40
TINY = dict(model_type="qwen2", hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=V, tie_word_embeddings=True, max_position_embeddings=128)
PROBLEM = ProblemRow(id="p", name="level1/p", source="kagent", level=1, tier=1)
# (first prompt, completion, tool output, completion, reward): two turns each
EPISODES = [([1, 5, 6, 7], [10, 11, 12, 13], [30, 31, 32], [14, 15, 2], 1.0),
            ([1, 8, 9], [16, 17, 18], [33, 34], [19, 20, 21, 2], 2.0),
            ([1, 6, 6, 6, 6], [22, 23], [35, 36, 37, 38], [24, 25, 26, 2], 1.5),
            ([1, 7, 7], [27, 28, 29], [30], [2], -1.0)]  # reward not above 0: not RFT data


def tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<bos>": 1, "<eos>": 2} | {f"w{i}": i for i in range(3, V)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")


def tiny_model(seed: int = 0) -> Any:
    from transformers import AutoConfig, AutoModelForCausalLM

    raw = dict(TINY)
    config = AutoConfig.for_model(raw.pop("model_type"), **raw)
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")


def make_store(tmp_path: Path) -> Path:
    db = tmp_path / "k.db"

    async def go() -> None:
        async with Store.open(db) as store:
            await store.upsert_problem(PROBLEM)
            await store.add_policy(0, "base")
            for prompt, c0, tool, c1, reward in EPISODES:
                eid = await store.start_episode(PROBLEM.id, policy_version=0)
                await store.add_turn(TurnRow(episode_id=eid, index=0, text="", prompt_ids=prompt,
                                             completion_ids=c0, logprobs=[-1.0] * len(c0)))
                await store.add_turn(TurnRow(episode_id=eid, index=1, text="", prompt_prefix=len(prompt) + len(c0),
                                             prompt_ids=tool, completion_ids=c1, logprobs=[-1.0] * len(c1)))
                await store.finish_episode(eid, "submitted", reward=reward)

    anyio.run(go)
    return db


def sft_args(out: Path, *, epochs: int = 1, lr: float = 1e-3, dataset_kwargs: dict[str, Any] | None = None) -> Any:
    from trl import SFTConfig

    return SFTConfig(output_dir=str(out), per_device_train_batch_size=1, num_train_epochs=epochs, learning_rate=lr,
                     dataset_kwargs=dataset_kwargs,
                     lr_scheduler_type="constant", max_length=128, bf16=False, use_cpu=True,
                     **checkpointing(False), save_strategy="no", logging_strategy="no", report_to="none",
                     disable_tqdm=True, dataloader_num_workers=0, dataloader_pin_memory=False, seed=0)


def sft_trainer(model: Any, data: Any, out: Path, **kw: Any) -> Any:
    from trl import SFTTrainer

    return SFTTrainer(model=model, args=sft_args(out, **kw), train_dataset=data, processing_class=tokenizer())


def eval_loss(trainer: Any, rows: list[dict[str, Any]]) -> float:
    return float(trainer.evaluate(datasets.Dataset.from_list(rows))["eval_loss"])


def test_trl_export_loads_in_datasets_and_sfttrainer_overfits_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    db = make_store(tmp_path)
    out = tmp_path / "rft.jsonl"
    assert cli.main(["episodes", "export", "--db", str(db), "--format", "trl", "--out", str(out)]) == 0
    assert "exported 3 rows of 3 episodes" in capsys.readouterr().out

    data = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    assert data.num_rows == 3 and data[0]["episode_id"] == 1 and data[0]["reward"] == 1.0
    prompt, c0, tool, c1, _ = EPISODES[0]
    assert data[0]["input_ids"] == prompt + c0 + tool + c1  # the logged ids, one sequence
    assert data[0]["completion_mask"] == [0] * 4 + [1] * 4 + [0] * 3 + [1] * 3
    assert data[0]["labels"] == [-100] * 4 + c0 + [-100] * 3 + c1

    parquet = tmp_path / "rft.parquet"
    assert cli.main(["episodes", "export", "--db", str(db), "--format", "trl", "--out", str(parquet)]) == 0
    same = datasets.load_dataset("parquet", data_files=str(parquet), split="train", cache_dir=str(tmp_path / "cache"))
    assert same.to_list() == data.to_list()

    trainer = sft_trainer(tiny_model(), data, tmp_path / "trl", epochs=30)
    rows = [{"input_ids": r["input_ids"], "labels": r["labels"]} for r in data]
    before = eval_loss(trainer, rows)
    # the rows as they are, TRL's preparation skipped: the same labels, the same loss
    skipping = sft_trainer(tiny_model(), data, tmp_path / "skip", dataset_kwargs={"skip_prepare_dataset": True})
    assert eval_loss(skipping, rows) == pytest.approx(before, rel=1e-6)
    trainer.train()
    after = eval_loss(trainer, rows)
    assert after < 0.5 * before, (before, after)


def test_tokens_off_the_policy_carry_no_loss(tmp_path: Path) -> None:
    """A row and the same row with its trailing tool output (after the last sampled token, so no
    sampled token sees it) replaced: the same loss. The control: the same change with those tokens
    labelled changes the loss, so the comparison can fail."""
    trainer = sft_trainer(tiny_model(), datasets.Dataset.from_list([{"input_ids": [1, 2], "labels": [1, 2]}]),
                          tmp_path / "trl")
    ids = [1, 5, 6, 10, 11, 12, 30, 31, 32]
    mask = [0, 0, 0, 1, 1, 1, 0, 0, 0]
    other = ids[:6] + [33, 34, 35]

    def row(input_ids: list[int], labelled: list[int]) -> dict[str, Any]:
        return {"input_ids": input_ids, "labels": [t if m else -100 for t, m in zip(input_ids, labelled, strict=True)]}

    masked = eval_loss(trainer, [row(ids, mask)])
    assert eval_loss(trainer, [row(other, mask)]) == pytest.approx(masked, rel=1e-6, abs=0)
    everything = [0] + [1] * 8
    assert eval_loss(trainer, [row(other, everything)]) != pytest.approx(eval_loss(trainer, [row(ids, everything)]),
                                                                         rel=1e-3)


def test_trainer_run_rft_step_through_trl(tmp_path: Path) -> None:
    db = make_store(tmp_path)
    model = tmp_path / "tiny.json"
    model.write_text(json.dumps(TINY))
    cfg = msgspec.convert(dict(db=str(db), model=str(model), stage="rft", rft_trainer="trl", out=str(tmp_path / "o"),
                               min_episodes=3, max_steps=1, epochs=2, lr=1e-3, progress=False, tensorboard=False,
                               curriculum=False), TrainConfig)
    assert anyio.run(train, cfg) == 1
    folder = ckpt.step_dir(tmp_path / "o", "rft", 1)
    for name in ("config.json", "model.safetensors", "STABLE", ckpt.OPTIMIZER):
        assert (folder / name).is_file(), name
    assert torch.load(folder / ckpt.OPTIMIZER, weights_only=True)["actor"]["state"]  # AdamW state kept

    async def steps() -> Any:
        async with Store.open(db, readonly=True) as store:
            return await store.list_train_steps(), await store.list_policies()

    (step,), policies = anyio.run(steps)
    assert step.stage == "rft" and step.episodes == [1, 2, 3]  # the reward -1 episode is not RFT data
    assert step.metrics["nll"] > 0 and step.metrics["rows"] == 3 and step.metrics["sampled_tokens"] == 20
    assert step.metrics["optimizer_steps"] == 2  # --mini-batches 1, --epochs 2
    assert [p.path for p in policies][-1] == str(folder)
