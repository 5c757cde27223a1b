"""`python -m trainer.run` as a process and the pieces around the loop: flags and their docs, bad
input (empty store, corrupt episodes, token ids outside the vocabulary, bad flags, out of
memory), checkpoint publishing against the daemon's naming, the curriculum, the benchmark's
CPU mode, and two data-parallel processes through `accelerate launch`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
import torch

from runtime.config import field_docs
from runtime.store import AsyncConn, CurriculumRow, ProblemRow, Store, TurnRow
from trainer import checkpoint as ckpt
from trainer.config import TrainConfig, flag, parse_args
from trainer.curriculum import (
    CurriculumConfig,
    ProblemStats,
    frontier,
    gather,
    tier_pass_rates,
    weights,
)
from trainer.curriculum import update as update_curriculum
from trainer.models import ModelError
from trainer.run import TrainerError, oom_guard, train

ROOT = Path(__file__).resolve().parents[2]
TINY = dict(model_type="qwen2", hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=64, tie_word_embeddings=True, max_position_embeddings=128)
P = [ProblemRow(id=f"p{i}", name=f"level{1 + i // 3}/x{i}", source="kagent", level=1 + i // 3, tier=1 + i // 3)
     for i in range(6)]


def make_store(tmp_path: Path, episodes: list[tuple[list[int], list[int], float]] | None = None) -> Path:
    db = tmp_path / "k.db"

    async def go() -> None:
        async with Store.open(db) as store:
            await store.upsert_problems(P)
            await store.add_policy(0, "base")
            for k, (prompt, completion, reward) in enumerate(episodes or []):
                eid = await store.start_episode(P[k % len(P)].id, policy_version=0)
                await store.add_turn(TurnRow(episode_id=eid, index=0, text="", prompt_ids=prompt,
                                             completion_ids=completion, logprobs=[-1.0] * len(completion)))
                await store.finish_episode(eid, "submitted", reward=reward)

    anyio.run(go)
    return db


def model_json(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    return path


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "trainer.run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)


# ------------------------------------------------------------------------------- flags


def test_every_flag_is_documented_with_help() -> None:
    doc = (ROOT / "docs" / "trainer.md").read_text()
    helps = field_docs(TrainConfig)
    names = list(msgspec.structs.fields(TrainConfig))
    assert len(names) > 40
    for f in names:
        assert helps.get(f.name), f"{f.name} has no help line"
        assert flag(f.name) in doc, f"{flag(f.name)} is not in docs/trainer.md"
    for extra in ("--window", "--advance-at", "--min-weight", "--min-tier-share", "--tiny"):
        assert extra in doc  # curriculum CLI and benchmark flags


def test_flags_parse_and_bad_values_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = model_json(tmp_path)
    cfg = parse_args(["--db", "x.db", "--model", str(m), "--stage", "rft", "--lora", "--max-steps", "3",
                      "--value-clip", "none", "--no-curriculum"])
    assert cfg.stage == "rft" and cfg.lora and cfg.max_steps == 3 and cfg.value_clip is None and not cfg.curriculum
    for argv, message in ((["--micro-batch", "0"], "--micro-batch must be at least 1"),
                          (["--stage", "sft"], "invalid choice: 'sft'"),
                          (["--is-cap", "0.5"], "--is-cap must be above 1"),
                          (["--model", str(tmp_path / "missing")], "no such file or folder")):
        with pytest.raises(SystemExit):
            parse_args(["--db", "x.db", "--model", str(m), *argv])
        assert message in capsys.readouterr().err


# --------------------------------------------------------------------------- bad input


def test_empty_store_waits_and_says_so(tmp_path: Path) -> None:
    db = make_store(tmp_path)
    r = run_cli("--db", str(db), "--model", str(model_json(tmp_path)), "--out", str(tmp_path / "out"),
                "--wait-timeout", "1", "--poll-seconds", "0.2", "--no-progress", "--no-tensorboard")
    assert r.returncode == 0, r.stderr
    assert "waiting for episodes: have 0 of 32 (--min-episodes) new usable" in r.stderr
    assert "--wait-timeout" in r.stderr
    assert "no step after waiting" in r.stderr and "--wait-timeout" in r.stderr
    assert r.stderr.count("waiting for episodes") == 1  # said once, not every poll


def test_missing_store_and_out_of_vocabulary_ids_are_clear_errors(tmp_path: Path) -> None:
    m = model_json(tmp_path)
    missing = msgspec.convert(dict(db=str(tmp_path / "none.db"), model=str(m), out=str(tmp_path / "o")), TrainConfig)
    with pytest.raises(TrainerError, match=r"none\.db: no such file \(the daemon's store"):
        anyio.run(train, missing)
    assert not (tmp_path / "none.db").exists()  # not created by the attempt
    db = make_store(tmp_path, [([1, 2], [3, 4], 1.0), ([1, 2], [5, 640], 1.0)])
    r = run_cli("--db", str(db), "--model", str(m), "--out", str(tmp_path / "o"), "--min-episodes", "2",
                "--no-progress", "--no-tensorboard")
    assert r.returncode == 2
    assert re.search(r"episode 2 \(problem p1\): token id 640 is outside the model's vocabulary \(0\.\.63\)", r.stderr)
    assert not (tmp_path / "o" / "step_1").exists()


def test_corrupt_episodes_are_skipped_and_counted(tmp_path: Path) -> None:
    good = [([1, 2, 3], [4, 5, 6], 1.0)] * 3
    db = make_store(tmp_path, good)

    async def corrupt() -> None:
        async with Store.open(db) as store:
            eid = await store.start_episode("p0", policy_version=0)
            await store.add_turn(TurnRow(episode_id=eid, index=0, text="", prompt_ids=[1], completion_ids=[2],
                                         logprobs=[float("inf")]))
            await store.finish_episode(eid, "submitted", reward=1.0)
            eid = await store.start_episode("p0", policy_version=0)
            await store.add_turn(TurnRow(episode_id=eid, index=0, text="no ids"))
            await store.finish_episode(eid, "turn_limit", reward=-1.0)
            for episode, speedup in ((1, 2.0), (2, 8.0), (3, None)):  # final evaluations (plain SQL)
                async def final(db: AsyncConn, e: int = episode, s: float | None = speedup) -> None:
                    await db.execute(
                        "INSERT INTO evaluations (episode_id, problem_id, mode, backend, compiled, correct, stage,"
                        " speedup_eager, torch_version, precision, result, created) VALUES"
                        " (?, 'p0', 'final', 'cpu', 1, 1, 'done', ?, '2', 'fp32', '{}', 0)", (e, s))
                await store.write(final)

    anyio.run(corrupt)
    cfg = msgspec.convert(dict(db=str(db), model=str(model_json(tmp_path)), out=str(tmp_path / "o"), min_episodes=5,
                               max_steps=1, progress=True, tensorboard=True), TrainConfig)
    assert anyio.run(train, cfg) == 1
    assert list((tmp_path / "o" / "tb").glob("events.out.tfevents.*"))

    async def steps() -> Any:
        async with Store.open(db, readonly=True) as store:
            return await store.list_train_steps()

    (step,) = anyio.run(steps)
    assert step.episodes == [1, 2, 3]
    assert step.metrics["skipped_corrupt"] == 2 and step.metrics["episodes"] == 3
    assert step.metrics["speedup_eager"] == pytest.approx(4.0) and "speedup_compile" not in step.metrics
    state = ckpt.read_state(tmp_path / "o" / "step_1")
    assert sorted(state.seen) == [1, 2, 3, 4, 5]  # the corrupt ones are not looked at again


def test_out_of_memory_names_the_flags_to_change(tmp_path: Path) -> None:
    cfg = msgspec.convert(dict(db="x", model="m", micro_batch=4, max_len=8192), TrainConfig)
    with pytest.raises(TrainerError, match=r"Lower --micro-batch \(now 4\) or --max-len \(now 8192\).*--lora"):
        with oom_guard(cfg):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")


def test_a_folder_holds_one_stage(tmp_path: Path) -> None:
    db = make_store(tmp_path, [([1, 2], [3, 4], 1.0)] * 2)
    base = dict(db=str(db), model=str(model_json(tmp_path)), out=str(tmp_path / "o"), min_episodes=2, max_steps=1,
                progress=False, tensorboard=False)
    assert anyio.run(train, msgspec.convert(base | {"stage": "rft"}, TrainConfig)) == 1
    with pytest.raises(TrainerError, match="holds a rft run; give the ppo stage its own --out"):
        anyio.run(train, msgspec.convert(base, TrainConfig))
    bad_critic = msgspec.convert(base | {"out": str(tmp_path / "v"), "critic": str(tmp_path / "o" / "step_1")},
                                 TrainConfig)
    with pytest.raises(ModelError, match=r"step_1 is not a critic \(no value_head.safetensors\)"):
        anyio.run(train, bad_critic)  # an rft step has no critic/
    shutil.rmtree(tmp_path / "o")  # the store still records step 1 of this run
    with pytest.raises(TrainerError, match=r"records rft steps up to 1 of run .* holds no checkpoint"):
        anyio.run(train, msgspec.convert(base | {"stage": "rft"}, TrainConfig))


# -------------------------------------------------------------------------- publishing


def test_publish_agrees_with_a_version_the_daemon_recorded(tmp_path: Path) -> None:
    db = make_store(tmp_path)
    a, b = tmp_path / "step_1", tmp_path / "step_2"
    a.mkdir()
    b.mkdir()

    async def go() -> list[int]:
        async with Store.open(db, lock=False) as store:
            await store.add_policy(1, str(a.resolve()))  # the hot-loader saw STABLE first
            return [await ckpt.publish(store, a), await ckpt.publish(store, b), await ckpt.publish(store, b)]

    assert anyio.run(go) == [1, 2, 2]


def test_stable_marker_is_written_last_and_unsealed_folders_are_ignored(tmp_path: Path) -> None:
    state = ckpt.TrainerState(run="r", stage="ppo", step=1, lora=False)
    folder = ckpt.step_dir(tmp_path, "ppo", 1)
    ckpt.begin(folder)
    (folder / "model.safetensors").write_bytes(b"x")
    assert ckpt.stable(tmp_path, "ppo") == []
    ckpt.seal(folder, state, "full")
    assert ckpt.stable(tmp_path, "ppo") == [(1, folder)]
    assert json.loads((folder / "STABLE").read_text())["kind"] == "full"
    ckpt.begin(ckpt.step_dir(tmp_path, "ppo", 2))  # died while writing step 2
    assert [n for n, _ in ckpt.stable(tmp_path, "ppo")] == [1]


# -------------------------------------------------------------------------- curriculum


def stats(pid: str, tier: int, rewards: list[float]) -> ProblemStats:
    return ProblemStats(problem_id=pid, tier=tier, attempts=len(rewards), successes=sum(r > 0 for r in rewards),
                        recent=rewards)


def test_curriculum_favours_learning_signal_and_never_starves() -> None:
    cfg = CurriculumConfig(advance_at=0.6, min_weight=0.05, min_tier_share=0.1)
    s = [stats("half", 1, [1, -1] * 4), stats("never", 1, [-1] * 8), stats("always", 1, [1] * 8),
         stats("new", 1, []), stats("t2", 2, []), stats("t3", 3, [])]
    w = weights(s, cfg)
    assert w["half"] > w["never"] and w["half"] > w["always"] and w["new"] >= w["half"]
    assert w["never"] > 0 and w["always"] > 0
    total = sum(w.values())
    assert abs(total / len(w) - 1) < 1e-9
    assert w["t2"] / total >= 0.1 - 1e-9 and w["t3"] / total >= 0.1 - 1e-9  # locked tiers keep their floor
    assert frontier(tier_pass_rates(s), 0.6) == 1


def test_curriculum_opens_the_next_tier_as_pass_rates_rise() -> None:
    cfg = CurriculumConfig(advance_at=0.6, min_tier_share=0.05)
    low = [stats("a", 1, [1, -1, -1, -1]), stats("b", 2, [])]
    high = [stats("a", 1, [1, 1, 1, -1]), stats("b", 2, [])]
    assert frontier(tier_pass_rates(low), 0.6) == 1 and frontier(tier_pass_rates(high), 0.6) == 2
    w_low, w_high = weights(low, cfg), weights(high, cfg)
    assert w_high["b"] / sum(w_high.values()) > 2 * w_low["b"] / sum(w_low.values())


def test_curriculum_in_the_store_is_what_the_scheduler_reads(tmp_path: Path) -> None:
    db = make_store(tmp_path, [([1], [2], 1.0), ([1], [2], -1.0), ([1], [2], 1.0), ([1], [2], -1.0)])

    async def go() -> tuple[list[CurriculumRow], dict[str, float], list[ProblemStats]]:
        async with Store.open(db, lock=False) as store:
            rows = await update_curriculum(store, CurriculumConfig(window=2))
            return rows, await store.curriculum_weights(), await store.read(lambda c: gather(c, 2))

    rows, weights_read, st = anyio.run(go)
    assert {r.problem_id: r.weight for r in rows} == weights_read and set(weights_read) == {p.id for p in P}
    by = {r.problem_id: r for r in rows}
    assert by["p0"].attempts == 1 and by["p0"].successes == 1 and by["p1"].recent_success == 0.0
    assert by["p4"].attempts == 0 and by["p4"].mean_reward is None and by["p4"].tier == 2
    assert len(st) == 6
    r = subprocess.run([sys.executable, "-m", "trainer.curriculum", "--db", str(db)], cwd=ROOT, capture_output=True,
                       text=True, timeout=60, check=False)
    assert r.returncode == 0 and "tier" in r.stdout and "share" in r.stdout, r.stderr


# ------------------------------------------------------------------------- benchmark, DDP


def test_benchmark_tiny_mode_runs_on_cpu(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "benchmarks/bench_trainer.py", "--tiny", "--results-dir", str(tmp_path),
                        "--out", "t"], cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((tmp_path / "t.json").read_text())
    parts = {p["part"]: p for p in res["parts"]}
    assert set(parts) == {"plain step", "actor update", "critic update", "reference forward", "ppo update (all)"}
    assert all(p["tokens_per_s"] > 0 and p["flops"] > 0 for p in parts.values())
    assert parts["actor update"]["sampled_tokens"] < parts["actor update"]["tokens"]
    assert "actor_vs_plain" in res and "actor update vs plain step" in r.stdout


@pytest.mark.slow
def test_two_processes_train_data_parallel(tmp_path: Path) -> None:
    """accelerate launch with 2 CPU processes (gloo): rank 0 chooses and writes, both train."""
    eps = [([1, 2, 3], [4 + k % 50, 5, 6, 7], float(k % 3 - 1)) for k in range(9)]
    db = make_store(tmp_path, eps)
    shutil.copy(db, tmp_path / "single.db")
    r = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
         "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "trainer.run", "--db", str(db), "--model",
         str(model_json(tmp_path)), "--out", str(tmp_path / "o"), "--min-episodes", "9", "--max-steps", "1",
         "--max-len", "16", "--no-progress", "--no-tensorboard", "--lr", "1e-3"],
        cwd=ROOT, capture_output=True, text=True, timeout=240, check=False, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr[-4000:]
    assert "ppo stage on 2 process(es) (DistributedType.MULTI_CPU)" in r.stderr
    assert (tmp_path / "o" / "step_1" / "STABLE").is_file()

    async def steps() -> Any:
        async with Store.open(db, readonly=True) as store:
            return await store.list_train_steps(), await store.list_policies()

    rows, policies = anyio.run(steps)
    assert len(rows) == 1 and sorted(rows[0].episodes) == list(range(1, 10)) and len(policies) == 2
    m = rows[0].metrics
    assert m["rows"] == 5 and m["tokens"] == 9 * 7  # 3 rows on rank 0, 2 + a zero-weight filler on rank 1
    # the same step in one process: token means over the whole mini-batch make them agree
    cfg = msgspec.convert(dict(db=str(tmp_path / "single.db"), model=str(model_json(tmp_path)),
                               out=str(tmp_path / "s"), min_episodes=9, max_steps=1, max_len=16, progress=False,
                               tensorboard=False, lr=1e-3), TrainConfig)
    assert anyio.run(train, cfg) == 1
    db_single = tmp_path / "single.db"

    async def single_steps() -> Any:
        async with Store.open(db_single, readonly=True) as store:
            return await store.list_train_steps()

    (one_row,) = anyio.run(single_steps)
    for key in ("grad_norm_actor", "grad_norm_critic", "policy_loss", "value_loss"):  # Adam hides a scale error
        assert abs(m[key] - one_row.metrics[key]) <= 1e-4 * abs(one_row.metrics[key]) + 1e-7, key
    from safetensors.torch import load_file

    for name in ("model.safetensors", "critic/model.safetensors"):
        two, one = load_file(str(tmp_path / "o" / "step_1" / name)), load_file(str(tmp_path / "s" / "step_1" / name))
        for k in one:
            torch.testing.assert_close(two[k], one[k], rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------------ quick start offline


def test_tiny_preset_trains_rft_offline(tmp_path: Path) -> None:
    """`--model tiny` is built in code (random weights, the scripted server's byte vocabulary):
    no hub, no download; one RFT step on logged ids, a checkpoint, a policy version."""
    prompt = [1, *range(3, 259), 2]  # every id of the scripted server's toy tokenizer
    db = make_store(tmp_path, [(prompt, [3 + ord(c) for c in "write_file"] + [2], 1.0)] * 2)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "trainer.run", "--db", str(db), "--model", "tiny", "--stage", "rft",
                        "--out", str(tmp_path / "rft"), "--min-episodes", "2", "--max-steps", "1", "--no-progress",
                        "--no-tensorboard"], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "rft" / "step_1" / "STABLE").is_file()
    assert "Traceback" not in r.stderr


def test_a_prompt_over_max_len_is_the_reason_given(tmp_path: Path) -> None:
    long_prompt = [3] * 9000
    db = make_store(tmp_path, [(long_prompt, [4, 5], 1.0), ([3, 4], [5, 6], 0.0)])
    r = run_cli("--db", str(db), "--model", "tiny", "--stage", "rft", "--out", str(tmp_path / "o"), "--min-episodes", "2",
                "--max-len", "4096", "--wait-timeout", "1", "--poll-seconds", "0.2", "--no-progress", "--no-tensorboard")
    assert r.returncode == 0, r.stderr
    assert ("2 episodes, none usable: 1 prompt_over_max_len (the first prompt alone fills --max-len),"
            " 1 low_reward (reward not above --rft-min-reward); the longest first prompt is 9000 tokens and"
            " --max-len is 4096: pass --max-len 10024 or more") in r.stderr, r.stderr


def test_a_model_that_cannot_be_fetched_is_one_line(tmp_path: Path) -> None:
    db = make_store(tmp_path, [([3, 4], [5, 6], 1.0)])
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "trainer.run", "--db", str(db), "--model", "no-such-org/no-such-model",
                        "--out", str(tmp_path / "o"), "--min-episodes", "1", "--no-progress", "--no-tensorboard"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2, r.stderr
    assert "--model no-such-org/no-such-model: cannot be loaded (" in r.stderr
    assert "the built-in preset `tiny`" in r.stderr and "Traceback" not in r.stderr
