"""TRL's conversational form with tools (trainer/trl_messages.py): `kagent episodes export --format
trl-messages` on a real store writes rows that `datasets.load_dataset("json")` reads back exactly
(each call's arguments its own object, the tools the ones the episode loop offers), that TRL takes
for conversational, and that a chat template TRL ships renders with the tools, each call once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from runtime import cli
from runtime.store import Message, ProblemRow, Store, ToolCallRow, ToolCallSpec, TurnRow
from trainer.trl_messages import offered_tools

trl = pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")

PROBLEM = ProblemRow(id="p", name="level1/p", source="kagent", level=1, tier=1)
TOOLS = ["write_file", "compile", "run_tests", "submit"]
WRITE = '{"path": "model_new.py", "content": "x = 1"}'
OPENING = [Message(role="system", content="You write CUDA kernels."), Message(role="user", content="Make it fast.")]

# Per episode: (trainable, reward, turns); a turn: (raw text, [(call id, tool, arguments, result)]).
# A token_in turn's text holds the call's markup; a chat turn's text is the message content only.
Turns = list[tuple[str, list[tuple[str, str, str, str]]]]
GOOD: Turns = [
    (f'I will write it.\n<tool_call>\n{{"name": "write_file", "arguments": {WRITE}}}\n</tool_call>',
     [("c0", "write_file", WRITE, "wrote model_new.py")]),
    ("", [("c1", "compile", "{}", "built")]),
    ("Done.", [("c2", "submit", '{"summary": "fused"}', "submitted")]),
]
EPISODES: list[tuple[bool, float | None, Turns]] = [
    (True, 1.0, GOOD),
    (False, 0.5, [("", [("c0", "run_tests", "", "3/3 outputs correct")])]),  # no token ids: still exported
    (True, 2.0, [("", [("c0", "write_file", '{"path": ', "arguments are not valid JSON")])]),  # left out
    (True, 1.0, [("", [("c0", "ncu", "{}", "unknown tool 'ncu'")])]),  # not offered on cpu: left out
    (True, 0.0, GOOD),  # reward not above --min-reward 0: not exported
    (True, None, GOOD),  # still running: not exported
]


def make_store(tmp_path: Path) -> Path:
    db = tmp_path / "k.db"

    async def go() -> None:
        async with Store.open(db) as store:
            await store.upsert_problem(PROBLEM)
            await store.add_policy(0, "base")
            for trainable, reward, turns in EPISODES:
                eid = await store.start_episode(PROBLEM.id, policy_version=0, trainable=trainable)
                answers: list[Message] = OPENING
                for k, (text, calls) in enumerate(turns):
                    specs = [ToolCallSpec(id=i, name=n, arguments=a) for i, n, a, _ in calls]
                    tid = await store.add_turn(TurnRow(episode_id=eid, index=k, text=text, messages=answers,
                                                       tool_calls=specs))
                    for j, (i, n, a, result) in enumerate(calls):
                        await store.add_tool_call(ToolCallRow(turn_id=tid, episode_id=eid, index=j, skill=n, args=a,
                                                              ok=True, result=result, call_id=i))
                    answers = [Message(role="tool", content=r, tool_call_id=i) for i, _, _, r in calls]
                if reward is not None:
                    await store.finish_episode(eid, "submitted", reward=reward)

    anyio.run(go)
    return db


def export(tmp_path: Path, *extra: str) -> list[str]:
    config = tmp_path / "kagentd.toml"
    config.write_text(f'[scheduler]\ntools = {json.dumps(TOOLS)}\n[scheduler.eval]\nbackend = "cpu"\n')
    out = tmp_path / "conv.jsonl"
    return ["episodes", "export", "--config", str(config), "--db", str(tmp_path / "k.db"), "--format",
            "trl-messages", "--out", str(out), *extra]


def load(tmp_path: Path) -> Any:
    return datasets.load_dataset("json", data_files=str(tmp_path / "conv.jsonl"), split="train",
                                 cache_dir=str(tmp_path / "cache"))


def chat_tokenizer() -> Any:
    """A word-level tokenizer with the Qwen3 chat template TRL ships (no download)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(vocab={"<pad>": 0, "<|im_end|>": 1}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<pad>")  # type: ignore[no-untyped-call]
    fast.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    return fast


def test_export_writes_trl_conversations_with_tools(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    make_store(tmp_path)
    assert cli.main(export(tmp_path)) == 0
    printed = capsys.readouterr()
    assert "exported 2 episodes" in printed.out and "2 left out" in printed.out
    assert "episode 3 left out: turn 0: call c0: arguments are not JSON" in printed.err
    assert "episode 4 left out: turn 0: call c0: 'ncu' is not an offered tool" in printed.err

    data = load(tmp_path)
    assert data["episode_id"] == [1, 2] and data["reward"] == [1.0, 0.5]
    row = data[0]
    assert trl.data_utils.is_conversational(row)
    assert row["tools"] == offered_tools(TOOLS, "cpu")  # as the episode loop offers them, read back as written
    assert [t["function"]["name"] for t in row["tools"]] == TOOLS
    msgs = row["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert msgs[2]["content"] == "I will write it."  # the markup is the call, not the text
    assert msgs[2]["tool_calls"] == [{"id": "c0", "type": "function", "function": {
        "name": "write_file", "arguments": json.loads(WRITE)}}]
    assert msgs[3] == {"role": "tool", "content": "wrote model_new.py", "name": "write_file",
                       "tool_call_id": "c0"}
    assert msgs[4]["content"] == "" and msgs[4]["tool_calls"][0]["function"] == {"name": "compile", "arguments": {}}
    assert msgs[6]["tool_calls"][0]["function"]["arguments"] == {"summary": "fused"}  # ends on the assistant
    # each call's arguments keep their own keys (a merged schema would give write_file's to the others)
    assert data[1]["messages"][2]["tool_calls"][0]["function"] == {"name": "run_tests", "arguments": {}}

    text = chat_tokenizer().apply_chat_template(msgs, tools=row["tools"], tokenize=False)
    assert text.count('<tool_call>\n{"name": "') == 3  # once each (the system prompt's example has no name)
    assert f'<tool_call>\n{{"name": "write_file", "arguments": {WRITE}}}\n</tool_call>' in text
    assert "<tool_response>\nwrote model_new.py\n</tool_response>" in text
    assert all(json.dumps(t, ensure_ascii=False) in text for t in row["tools"])

    assert cli.main(export(tmp_path, "--trainable")) == 0
    assert load(tmp_path)["episode_id"] == [1]
    assert cli.main(export(tmp_path, "--trainable", "--min-reward", "1")) == 0
    assert "exported 0 episodes" in capsys.readouterr().out


def test_export_refuses_running_episodes_and_parquet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_store(tmp_path)
    assert cli.main(export(tmp_path, "--all")) == 2
    assert "drop --all" in capsys.readouterr().err
    args = export(tmp_path)
    args[args.index("--out") + 1] = str(tmp_path / "conv.parquet")
    assert cli.main(args) == 2
    assert "writes JSONL" in capsys.readouterr().err
    assert not (tmp_path / "conv.parquet").exists()


def test_sfttrainer_tokenizes_and_trains_on_the_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.trainer.test_trainer_sft import sft_args, tiny_model

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    make_store(tmp_path)
    assert cli.main(export(tmp_path)) == 0
    tok = chat_tokenizer()
    # TRL's training variant of the template marks the assistant's tokens, for assistant_only_loss
    tok.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3_training.jinja").read_text()
    args = sft_args(tmp_path / "trl")
    args.max_length, args.assistant_only_loss = 4096, True
    trainer = trl.SFTTrainer(model=tiny_model(), args=args, train_dataset=load(tmp_path), processing_class=tok)
    rows = trainer.train_dataset
    assert rows.num_rows == 2
    for r in rows:
        trained = sum(label != -100 for label in r["labels"])
        assert 0 < trained < len(r["input_ids"]) // 2  # the assistant's turns; not the tools, prompt or results
    assert trainer.train().training_loss > 0
