"""trainer.data on a real store: which episodes are chosen (finished, trainable, graded, fresh),
sequences rebuilt from the logged token ids (token-in, re-rendered prefixes, full prompts), masks,
rewards, the truncation rule, corrupt and out-of-vocabulary episodes, RFT filters, packing,
micro-batches, and per-document attention against separate forward passes."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
import torch

from runtime.store import EpisodeRow, ProblemRow, Store, ToolCallRow, ToolCallSpec, TurnRow
from runtime.store.training import (
    TurnTokens,
    latest_policy_version,
    trainable_episodes,
    turn_tokens,
)
from trainer.data import DataError, EpisodeTokens, Skip, build_episode, make_batch, pack, rft_keep
from trainer.models import ATTN, load_causal_lm

P = ProblemRow(id="p1", name="level1/a", source="kagent", level=1, tier=1)

TurnSpec = tuple[int, list[int], list[int]]  # prompt_prefix, prompt_ids, completion_ids


async def _episode(store: Store, turns: list[TurnSpec], *, version: int | None = 0, status: str = "submitted",
                   reward: float | None = 1.0, trainable: bool = True, calls: list[list[ToolCallSpec]] | None = None,
                   logprobs: Any = "auto") -> int:
    eid = await store.start_episode(P.id, policy_version=version, trainable=trainable)
    for i, (prefix, prompt, completion) in enumerate(turns):
        lps = [-0.1 * (k + 1) for k in range(len(completion))] if logprobs == "auto" else logprobs
        await store.add_turn(TurnRow(episode_id=eid, index=i, text=f"t{i}", prompt_prefix=prefix, prompt_ids=prompt,
                                     completion_ids=completion, logprobs=lps, sampling={"temperature": 0.7},
                                     tool_calls=(calls or [[]] * len(turns))[i]))
    if status != "running":
        await store.finish_episode(eid, status, reward=reward)  # type: ignore[arg-type]
    return eid


def _db(tmp_path: Path, fill: Any) -> Path:
    db = tmp_path / "k.db"

    async def go() -> None:
        async with Store.open(db) as store:
            await store.upsert_problem(P)
            for v in range(6):
                await store.add_policy(v, f"v{v}")
            await fill(store)

    anyio.run(go)
    return db


def _sub(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


def _read(db: Path, fn: Any) -> Any:
    async def go() -> Any:
        async with Store.open(db, readonly=True) as store:
            return await store.read(fn)

    return anyio.run(go)


def _built(db: Path, *, max_len: int = 1000, vocab: int = 100, need_logprobs: bool = True) -> list[EpisodeTokens | Skip]:
    def fn(conn: Any) -> list[EpisodeTokens | Skip]:
        refs, _ = trainable_episodes(conn, min_version=None, exclude=set(), limit=None)
        turns = turn_tokens(conn, [r.id for r in refs])
        return [build_episode(r, turns[r.id], max_len=max_len, vocab_size=vocab, need_logprobs=need_logprobs)
                for r in refs]

    return _read(db, fn)  # type: ignore[no-any-return]


def test_selection_keeps_finished_trainable_graded_fresh_episodes(tmp_path: Path) -> None:
    ids: dict[str, int] = {}

    async def fill(store: Store) -> None:
        t = [(0, [1, 2], [3, 4])]
        ids["good"] = await _episode(store, t, version=5)
        ids["old"] = await _episode(store, t, version=1)
        ids["null_version"] = await _episode(store, t, version=None)
        ids["limit"] = await _episode(store, t, version=4, status="turn_limit", reward=-1.0)
        await _episode(store, t, status="running")
        await _episode(store, t, status="error", reward=None)
        await _episode(store, t, status="cancelled", reward=None)
        await _episode(store, t, status="policy_error", reward=None)
        await _episode(store, t, trainable=False)

    db = _db(tmp_path, fill)
    assert _read(db, latest_policy_version) == 5
    refs, stale = _read(db, lambda c: trainable_episodes(c, min_version=3, exclude=set(), limit=None))
    assert [r.id for r in refs] == [ids["good"], ids["limit"]]
    assert stale == 2  # version 1 and the NULL version (counted as 0)
    refs, stale = _read(db, lambda c: trainable_episodes(c, min_version=None, exclude={ids["good"]}, limit=2))
    assert [r.id for r in refs] == [ids["old"], ids["null_version"]] and stale == 0
    assert refs[1].policy_version is None  # the row as stored; staleness counts it as 0


def test_token_in_episode_is_one_sequence_with_masked_tool_output(tmp_path: Path) -> None:
    async def fill(store: Store) -> None:
        # turn 1 keeps the whole context (prompt 3 + completion 2 = 5) and adds tool output [20, 21]
        await _episode(store, [(0, [10, 11, 12], [30, 31]), (5, [20, 21], [32, 33, 34])], reward=2.0)

    (ep,) = _built(_db(tmp_path, fill))
    assert isinstance(ep, EpisodeTokens) and len(ep.docs) == 1 and not ep.truncated
    d = ep.docs[0]
    assert d.ids.tolist() == [10, 11, 12, 30, 31, 20, 21, 32, 33, 34]
    assert d.sampled.astype(int).tolist() == [0, 0, 0, 1, 1, 0, 0, 1, 1, 1]
    np.testing.assert_allclose(d.behaviour[d.sampled], [-0.1, -0.2, -0.1, -0.2, -0.3], rtol=1e-6)
    np.testing.assert_allclose(d.temps[d.sampled], 0.7, rtol=1e-6)
    assert (d.temps[~d.sampled] == 1.0).all()
    b = make_batch([[ep]])
    assert b.input_ids[0, b.pred_pos + 1].tolist() == b.targets.tolist() == [30, 31, 32, 33, 34]
    assert b.rewards.tolist() == [0, 0, 0, 0, 2.0]  # the reward on the last sampled token
    assert b.position_ids[0].tolist() == list(range(10)) and b.doc_lens == (10,)


def test_rerendered_prefix_continues_in_a_new_document(tmp_path: Path) -> None:
    async def fill(store: Store) -> None:
        # turn 1 keeps only 4 of the 5 tokens (the server re-rendered); turn 2 restarts (prefix 0)
        await _episode(store, [(0, [10, 11, 12], [30, 31]), (4, [20], [32]), (0, [10, 40], [33])])

    (ep,) = _built(_db(tmp_path, fill))
    assert isinstance(ep, EpisodeTokens)
    assert [d.ids.tolist() for d in ep.docs] == [[10, 11, 12, 30, 31], [10, 11, 12, 30, 20, 32], [10, 40, 33]]
    assert [d.sampled.astype(int).tolist() for d in ep.docs] == [[0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 1], [0, 0, 1]]
    b = make_batch([[ep]])
    assert b.doc_lens == (5, 6, 3)
    assert b.position_ids[0].tolist() == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 0, 1, 2]
    assert b.targets.tolist() == [30, 31, 32, 33] and b.rewards.tolist() == [0, 0, 0, 1.0]
    assert b.input_ids[0, b.pred_pos + 1].tolist() == b.targets.tolist()


def test_truncation_keeps_the_head_and_moves_the_reward(tmp_path: Path) -> None:
    async def fill(store: Store) -> None:
        await _episode(store, [(0, [10, 11], [30, 31, 32]), (5, [20, 21], [33, 34])], reward=3.0)

    (ep,) = _built(_db(tmp_path, fill), max_len=6)
    assert isinstance(ep, EpisodeTokens) and ep.truncated and ep.length == 6
    assert ep.docs[0].ids.tolist() == [10, 11, 30, 31, 32, 20]
    b = make_batch([[ep]])
    assert b.targets.tolist() == [30, 31, 32] and b.rewards.tolist() == [0, 0, 3.0]
    (skip,) = _built(_db(_sub(tmp_path, "x"), fill), max_len=2)
    # the whole budget went to the prompt (2 tokens before the first sampled one): said so
    assert isinstance(skip, Skip) and skip.reason == "prompt_over_max_len" and skip.detail == "2"


def test_corrupt_episodes_are_skipped_with_a_reason(tmp_path: Path) -> None:
    async def fill(store: Store) -> None:
        await _episode(store, [(0, [1], [2]), (9, [3], [4])])  # prefix beyond the context
        await _episode(store, [(0, [1], [2])], logprobs=[float("nan")])
        await _episode(store, [(0, [1], [2])], logprobs=None)
        await _episode(store, [(0, [1], [2])], reward=None)  # graded status, no reward
        await _episode(store, [])
        eid = await store.start_episode(P.id, policy_version=0)  # turn indices 0 and 2
        for i in (0, 2):
            await store.add_turn(TurnRow(episode_id=eid, index=i, text="", prompt_ids=[1], completion_ids=[2],
                                         logprobs=[-1.0]))
        await store.finish_episode(eid, "submitted", reward=1.0)
        eid = await store.start_episode(P.id, policy_version=0)  # no token ids logged
        await store.add_turn(TurnRow(episode_id=eid, index=0, text="hi"))
        await store.finish_episode(eid, "submitted", reward=1.0)

    got = _built(_db(tmp_path, fill))
    assert all(isinstance(s, Skip) for s in got)
    assert [s.reason for s in got if isinstance(s, Skip)] == [
        "corrupt", "corrupt", "no_logprobs", "ungraded", "no_turns", "corrupt", "corrupt"]
    assert "prompt_prefix 9 > context 2" in got[0].detail  # type: ignore[union-attr]
    # RFT needs no behaviour logprobs
    assert isinstance(_built(_db(_sub(tmp_path, "r"), fill), need_logprobs=False)[2], EpisodeTokens)


def test_token_ids_outside_the_vocabulary_name_the_episode(tmp_path: Path) -> None:
    async def fill(store: Store) -> None:
        await _episode(store, [(0, [1, 2], [3])])
        await _episode(store, [(0, [1, 2], [151_000])])

    with pytest.raises(DataError, match=r"episode 2 \(problem p1\): token id 151000 is outside the model's"
                                        r" vocabulary \(0\.\.99\)"):
        _built(_db(tmp_path, fill))


def _ref(i: int, reward: float = 1.0, status: str = "submitted") -> EpisodeRow:
    return EpisodeRow(id=i, problem_id="p", policy_version=0, status=status, reward=reward)  # type: ignore[arg-type]


def test_rft_filters_low_reward_loops_and_malformed_calls(tmp_path: Path) -> None:
    def turn(i: int, completion: list[int], calls: list[ToolCallSpec]) -> TurnTokens:
        return TurnTokens(index=i, prompt_prefix=0, prompt_ids=[1], completion_ids=completion, logprobs=None,
                          temperature=1.0, tool_calls=calls)

    ok_call = ToolCallSpec(id="a", name="read_file", arguments=json.dumps({"path": "model.py"}))
    good = [turn(0, [5, 6], [ok_call]), turn(1, [7], [ToolCallSpec(id="b", name="submit", arguments="{}")])]
    assert rft_keep(_ref(1), good, min_reward=0.0, loop_repeats=3) is None
    assert rft_keep(_ref(1, reward=0.0), good, min_reward=0.0, loop_repeats=3).reason == "low_reward"  # type: ignore[union-attr]
    loop = [turn(i, [5, 6], [ok_call]) for i in range(3)]
    assert rft_keep(_ref(1), loop, min_reward=0.0, loop_repeats=3).reason == "looping"  # type: ignore[union-attr]
    assert rft_keep(_ref(1), loop[:2], min_reward=0.0, loop_repeats=3) is None
    unknown = [turn(0, [5], [ToolCallSpec(id="a", name="rm_rf", arguments="{}")])]
    skip = rft_keep(_ref(1), unknown, min_reward=0.0, loop_repeats=3)
    assert skip is not None and skip.reason == "malformed" and "rm_rf" in skip.detail
    bad_json = [turn(0, [5], [ToolCallSpec(id="a", name="read_file", arguments="{path: model.py")])]
    skip = rft_keep(_ref(1), bad_json, min_reward=0.0, loop_repeats=3)
    assert skip is not None and skip.reason == "malformed" and "not valid JSON" in skip.detail
    assert rft_keep(_ref(1, status="malformed_limit"), good, min_reward=0.0, loop_repeats=3).reason == "malformed"  # type: ignore[union-attr]


def _rft(db: Path) -> dict[int, Skip | None]:
    """rft_keep of every candidate episode, read from the store as trainer.run reads it."""
    def fn(conn: Any) -> dict[int, Skip | None]:
        refs, _ = trainable_episodes(conn, min_version=None, exclude=set(), limit=None)
        turns = turn_tokens(conn, [r.id for r in refs])
        return {r.id: rft_keep(r, turns[r.id], min_reward=0.0, loop_repeats=3) for r in refs}

    return _read(db, fn)  # type: ignore[no-any-return]


def test_rft_takes_the_malformed_verdict_stored_with_each_call_without_the_skills(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The episode loop stores its verdict per call (migration 0006); the trainer reads it and
    loads no skill for it. A call that never ran (after a submit in the same reply) has no
    verdict: that one is judged by the skills, as before."""
    read = ToolCallSpec(id="a", name="read_file", arguments=json.dumps({"path": "model.py"}))
    submit = ToolCallSpec(id="b", name="submit", arguments="{}")
    stray = ToolCallSpec(id="c", name="rm_rf", arguments="{}")
    ids: dict[str, int] = {}

    async def logged(store: Store, calls: list[ToolCallSpec], verdicts: list[bool]) -> int:
        eid = await store.start_episode(P.id, policy_version=0)
        turn = await store.add_turn(TurnRow(episode_id=eid, index=0, text="t", prompt_ids=[1, 2], completion_ids=[3, 4],
                                            logprobs=[-0.1, -0.2], tool_calls=calls))
        for k, (call, bad) in enumerate(zip(calls, verdicts, strict=False)):  # calls past the verdicts never ran
            await store.add_tool_call(ToolCallRow(turn_id=turn, episode_id=eid, index=k, call_id=call.id, skill=call.name,
                                                  args=call.arguments, ok=not bad, result="r", malformed=bad))
        await store.finish_episode(eid, "submitted", reward=1.0)
        return eid

    async def fill(store: Store) -> None:
        ids["good"] = await logged(store, [read, submit], [False, False])
        # a decodable read_file the loop still refused (e.g. not among the tools it offered)
        ids["refused"] = await logged(store, [read, submit], [True, False])
        ids["stray"] = await logged(store, [submit, stray], [False])

    db = _db(tmp_path, fill)
    flags = _read(db, lambda c: {e: [t.malformed for t in ts] for e, ts in turn_tokens(c, list(ids.values())).items()})
    assert flags == {ids["good"]: [[False, False]], ids["refused"]: [[True, False]], ids["stray"]: [[False, None]]}

    import skills

    def no_skills() -> None:
        raise AssertionError("the trainer loaded the skills for calls with a stored verdict")

    with monkeypatch.context() as m:
        m.setattr(skills, "load_skills", no_skills)
        refs = _read(db, lambda c: trainable_episodes(c, min_version=None, exclude={ids["stray"]}, limit=None)[0])
        turns = _read(db, lambda c: turn_tokens(c, [r.id for r in refs]))
        kept = {r.id: rft_keep(r, turns[r.id], min_reward=0.0, loop_repeats=3) for r in refs}
    assert kept[ids["good"]] is None
    refused = kept[ids["refused"]]
    assert refused is not None and refused.reason == "malformed" and "call 0 ('read_file')" in refused.detail
    stray_skip = _rft(db)[ids["stray"]]  # its second call has no verdict: the skills judge it
    assert stray_skip is not None and stray_skip.reason == "malformed" and "unknown tool 'rm_rf'" in stray_skip.detail


def test_a_store_from_before_the_verdict_column_trains_with_the_old_decision(tmp_path: Path) -> None:
    """A schema-5 store (no tool_calls.malformed) migrated to 6: its calls read NULL, and the RFT
    filter decides with the skills as it did before (an unknown tool is malformed, a good call
    is not)."""
    from runtime.store.sql import migrations, pack_ids, pack_logprobs, statements

    db = tmp_path / "old.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for number, sql in migrations()[:5]:
        for stmt in statements(sql):
            conn.execute(stmt)
        conn.execute(f"PRAGMA user_version = {number}")
    conn.execute("INSERT INTO problems (id, name, source, added, updated) VALUES ('p1', 'level1/a', 'kagent', 0, 0)")
    for eid, name, args in ((1, "read_file", '{"path": "model.py"}'), (2, "rm_rf", "{}")):
        conn.execute("INSERT INTO episodes (id, problem_id, policy_version, status, reward, started, finished)"
                     " VALUES (?, 'p1', NULL, 'submitted', 1.0, 0, 1)", (eid,))
        calls = json.dumps([{"id": "a", "name": name, "arguments": args}])
        conn.execute("INSERT INTO turns (id, episode_id, idx, prompt_ids, completion_ids, logprobs, text, tool_calls,"
                     " created) VALUES (?, ?, 0, ?, ?, ?, 't', ?, 0)",
                     (eid, eid, pack_ids([1, 2]), pack_ids([3, 4]), pack_logprobs([-0.1, -0.2]), calls))
        conn.execute("INSERT INTO tool_calls (turn_id, episode_id, idx, call_id, skill, args, ok, result, created)"
                     " VALUES (?, ?, 0, 'a', ?, ?, 1, 'r', 0)", (eid, eid, name, args))
    conn.close()

    async def migrate() -> list[bool | None]:
        async with Store.open(db) as store:  # migrates to the latest schema
            detail = await store.get_episode(1)
            assert detail is not None
            return [c.malformed for c in detail.tool_calls]

    assert anyio.run(migrate) == [None]
    assert _read(db, lambda c: [t.malformed for t in turn_tokens(c, [1])[1]]) == [[None]]
    kept = _rft(db)
    assert kept[1] is None
    assert kept[2] is not None and kept[2].reason == "malformed" and "unknown tool 'rm_rf'" in kept[2].detail


def _tokens(i: int, n: int) -> EpisodeTokens:
    from trainer.data import Doc

    sampled = np.zeros(n, dtype=bool)
    sampled[n // 2:] = True
    return EpisodeTokens(ref=_ref(i, reward=float(i)), truncated=False, docs=[Doc(
        ids=np.arange(n, dtype=np.int64) % 50, sampled=sampled, behaviour=np.full(n, -1.0, dtype=np.float32),
        temps=np.ones(n, dtype=np.float32))])


def test_packing_fills_rows_without_splitting_episodes() -> None:
    rng = np.random.default_rng(0)
    eps = [_tokens(i, int(rng.integers(5, 90))) for i in range(60)]
    rows = pack(eps, 100)
    assert sorted(e.ref.id for r in rows for e in r) == list(range(60))
    assert all(sum(e.length for e in r) <= 100 for r in rows)
    total = sum(e.length for e in eps)
    assert len(rows) <= math.ceil(total / 100) + 3  # first-fit decreasing wastes little
    assert [[e.ref.id for e in r] for r in pack(eps, 100)] == [[e.ref.id for e in r] for r in rows]
    b = make_batch(rows[:2])
    assert b.n_tokens == sum(e.length for r in rows[:2] for e in r) and sum(b.doc_lens) == b.n_tokens
    assert b.ep_counts == [e.length - e.length // 2 for r in rows[:2] for e in r]
    padded, mask = b.per_episode(b.rewards)
    assert padded.shape == (len(b.ep_counts), max(b.ep_counts)) and int(mask.sum()) == len(b.targets)
    assert padded.sum(dim=1).tolist() == [float(e.ref.id) for r in rows[:2] for e in r]


def test_document_attention_matches_separate_forward_passes(tmp_path: Path) -> None:
    cfg = tmp_path / "tiny.json"
    cfg.write_text(json.dumps(dict(model_type="qwen2", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=50,
                                   max_position_embeddings=128)))
    lm = load_causal_lm(str(cfg), dtype=torch.float32, seed=0)
    assert lm.config._attn_implementation == ATTN
    eps = [_tokens(1, 9), _tokens(2, 14), _tokens(3, 5)]
    b = make_batch([eps])
    with torch.no_grad():
        packed = lm(input_ids=b.input_ids, position_ids=b.position_ids, doc_lens=b.doc_lens).logits[0]
        alone = torch.cat([lm(input_ids=torch.from_numpy(e.docs[0].ids)[None]).logits[0] for e in eps])
        crossed = lm(input_ids=b.input_ids, position_ids=b.position_ids).logits[0]  # one document: leaks
    torch.testing.assert_close(packed, alone, rtol=1e-4, atol=1e-5)
    assert (crossed[9:] - alone[9:]).abs().max() > 1e-3
