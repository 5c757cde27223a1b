"""Episodes from the store -> token sequences -> packed micro-batches (DESIGN §8-9).

Selection: finished, trainable episodes with a graded status (submitted, turn/token/time limit,
malformed limit) and a reward; `--max-staleness` drops episodes whose policy version is more than
that many versions behind the newest one in the store (NULL versions count as 0). The store reads
them (runtime/store/training.py: `trainable_episodes`, `turn_tokens`); this module holds no SQL.

Sequences come from the logged token ids only; nothing is re-tokenized. Turn k's context is
(context + completion of turn k-1)[:prompt_prefix] + prompt_ids, so with token-in logging (prefix
= the whole previous context) an episode is one sequence: prompt, completion, tool results,
completion, ... When a turn keeps less than the whole previous context (the server re-rendered
the conversation), the episode continues in a new *document*: the kept prefix (mask 0, already
trained in the earlier document) + the new prompt + the new completion. Mask is 1 on sampled
tokens, 0 on prompt and tool output; the episode's reward sits on its last sampled token.

Long episodes (stated rule): an episode longer than `max_len` tokens keeps its first `max_len`
tokens (whole documents in order, the one crossing the limit cut); sampled tokens beyond are not
trained, and the reward moves to the last kept sampled token (the outcome is still the
episode's). Truncated episodes are counted (`truncated`).

Packing: episodes (all their documents together) go into rows of at most `max_len` tokens,
first-fit by decreasing length. A micro-batch concatenates whole rows into one sequence with no
padding at all; attention stays inside each document (trainer.models: per-document attention).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import numpy as np
import torch

from runtime.store import EpisodeRow, ToolCallSpec
from runtime.store.training import TurnTokens


class DataError(Exception):
    """Logged data the trainer cannot use at all (e.g. token ids outside the vocabulary)."""


class Doc(msgspec.Struct, kw_only=True):
    """One linear token sequence of an episode (attention never crosses documents)."""

    ids: np.ndarray
    """Token ids (int64)."""
    sampled: np.ndarray
    """1 where the token was sampled by the policy and is trained (bool)."""
    behaviour: np.ndarray
    """Behaviour logprob at sampled tokens, 0 elsewhere (float32)."""
    temps: np.ndarray
    """Sampling temperature at sampled tokens, 1 elsewhere (float32)."""


class EpisodeTokens(msgspec.Struct, kw_only=True):
    """An episode ready for training."""

    ref: EpisodeRow
    """Which episode."""
    docs: list[Doc]
    """Its documents, in order."""
    truncated: bool
    """Cut to max_len."""

    @property
    def length(self) -> int:
        return sum(len(d.ids) for d in self.docs)

    @property
    def reward(self) -> float:
        return 0.0 if self.ref.reward is None else self.ref.reward


class Skip(msgspec.Struct, kw_only=True, frozen=True):
    """An episode left out of a step, and why."""

    episode_id: int
    """Episode id."""
    reason: str
    """Short reason (counted per reason in the metrics)."""
    detail: str = ""
    """Specifics for the log (prompt_over_max_len: the tokens before the first sampled one)."""


# ------------------------------------------------------------------------- sequences


class _DocBuilder:
    """Accumulates one document's arrays."""

    def __init__(self, prefix: list[int]) -> None:
        self.ids: list[int] = list(prefix)
        self.sampled: list[bool] = [False] * len(prefix)
        self.behaviour: list[float] = [0.0] * len(prefix)
        self.temps: list[float] = [1.0] * len(prefix)

    def add(self, ids: list[int], sampled: bool, logprobs: list[float] | None = None,
            temperature: float = 1.0) -> None:
        self.ids += ids
        self.sampled += [sampled] * len(ids)
        self.behaviour += logprobs if logprobs is not None else [0.0] * len(ids)
        self.temps += [temperature if sampled else 1.0] * len(ids)

    def done(self) -> Doc:
        sampled = np.asarray(self.sampled, dtype=bool)
        if len(sampled):
            sampled[0] = False  # a document's first token has no context to be predicted from
        return Doc(ids=np.asarray(self.ids, dtype=np.int64), sampled=sampled,
                   behaviour=np.asarray(self.behaviour, dtype=np.float32),
                   temps=np.asarray(self.temps, dtype=np.float32))


def episode_docs(ref: EpisodeRow, turns: list[TurnTokens], *, need_logprobs: bool) -> list[Doc] | Skip:
    """The episode's documents from its turns, or why it cannot be used."""
    if not turns:
        return Skip(episode_id=ref.id, reason="no_turns")
    if [t.index for t in turns] != list(range(len(turns))):
        return Skip(episode_id=ref.id, reason="corrupt", detail="turn indices are not 0..n-1")
    docs: list[Doc] = []
    cur = _DocBuilder([])
    for t in turns:
        if t.prompt_ids is None or t.completion_ids is None:
            return Skip(episode_id=ref.id, reason="corrupt", detail=f"turn {t.index} has no token ids")
        lps = t.logprobs
        if lps is not None and (len(lps) != len(t.completion_ids) or not all(map(math.isfinite, lps))):
            return Skip(episode_id=ref.id, reason="corrupt",
                        detail=f"turn {t.index}: behaviour logprobs missing, non-finite or mis-sized")
        if need_logprobs and lps is None:
            return Skip(episode_id=ref.id, reason="no_logprobs", detail=f"turn {t.index}")
        if t.prompt_prefix > len(cur.ids):
            return Skip(episode_id=ref.id, reason="corrupt",
                        detail=f"turn {t.index}: prompt_prefix {t.prompt_prefix} > context {len(cur.ids)}")
        if t.prompt_prefix < len(cur.ids):  # the server re-rendered: continue in a new document
            docs.append(cur.done())
            cur = _DocBuilder(cur.ids[:t.prompt_prefix])
        cur.add(t.prompt_ids, sampled=False)
        cur.add(t.completion_ids, sampled=True, logprobs=lps, temperature=t.temperature)
    docs.append(cur.done())
    return [d for d in docs if len(d.ids)]


def check_vocab(ref: EpisodeRow, docs: list[Doc], vocab_size: int) -> None:
    """Raise DataError naming the episode when a token id does not fit the model."""
    for d in docs:
        if len(d.ids) and (int(d.ids.min()) < 0 or int(d.ids.max()) >= vocab_size):
            bad = int(d.ids.max()) if int(d.ids.max()) >= vocab_size else int(d.ids.min())
            raise DataError(f"episode {ref.id} (problem {ref.problem_id}): token id {bad} is outside the"
                            f" model's vocabulary (0..{vocab_size - 1}); was it generated by another"
                            " model or tokenizer? Point --model at the policy's model.")


def truncate(docs: list[Doc], max_len: int) -> tuple[list[Doc], bool]:
    """The first max_len tokens of the episode (the stated rule in the module docstring)."""
    kept: list[Doc] = []
    room = max_len
    for d in docs:
        if room <= 0:
            return kept, True
        if len(d.ids) <= room:
            kept.append(d)
            room -= len(d.ids)
            continue
        kept.append(Doc(ids=d.ids[:room], sampled=d.sampled[:room], behaviour=d.behaviour[:room],
                        temps=d.temps[:room]))
        return kept, True
    return kept, False


def build_episode(ref: EpisodeRow, turns: list[TurnTokens], *, max_len: int, vocab_size: int,
                  need_logprobs: bool) -> EpisodeTokens | Skip:
    """Token sequences of one episode, truncated to max_len; a Skip when it is unusable.
    Raises DataError for token ids outside the vocabulary."""
    if ref.reward is None:
        return Skip(episode_id=ref.id, reason="ungraded")
    docs = episode_docs(ref, turns, need_logprobs=need_logprobs)
    if isinstance(docs, Skip):
        return docs
    check_vocab(ref, docs, vocab_size)
    before = sum(int(d.sampled.argmax()) if d.sampled.any() else len(d.ids) for d in docs[:1])
    docs, cut = truncate(docs, max_len)
    if not any(d.sampled.any() for d in docs):
        if cut:  # the whole budget went to the prompt: say so, and how long it is
            return Skip(episode_id=ref.id, reason="prompt_over_max_len", detail=str(before))
        return Skip(episode_id=ref.id, reason="no_sampled_tokens")
    return EpisodeTokens(ref=ref, docs=docs, truncated=cut)


# ----------------------------------------------------------------------- RFT filters


def looping(turns: list[TurnTokens], repeats: int) -> bool:
    """The same completion, or the same tool call (name and arguments), `repeats` or more times."""
    completions: dict[tuple[int, ...], int] = {}
    calls: dict[tuple[str, str], int] = {}
    for t in turns:
        key = tuple(t.completion_ids or ())
        completions[key] = completions.get(key, 0) + 1
        for c in t.tool_calls:
            k = (c.name, c.arguments)
            calls[k] = calls.get(k, 0) + 1
    return max([*completions.values(), *calls.values(), 0]) >= repeats


def malformed_call(turns: list[TurnTokens]) -> str | None:
    """The first logged tool call that was malformed, or None. The verdict the episode loop stored
    with the call decides (TurnTokens.malformed: no skills needed). A call without one (a store
    before schema 6, a call after a `submit` that never ran) is judged as before: malformed when it
    names no skill or its arguments do not decode, as the daemon's skills read them (skills.base),
    which are loaded for it."""
    for t in turns:
        for k, c in enumerate(t.tool_calls):
            verdict = t.malformed[k] if k < len(t.malformed) else None
            if verdict is None:
                problem = _judged_by_skills(c)
                if problem is not None:
                    return f"turn {t.index}: {problem}"
            elif verdict:
                return f"turn {t.index}: call {k} ({c.name!r}) was malformed when the episode ran it"
    return None


def _judged_by_skills(call: ToolCallSpec) -> str | None:
    """Why a call names no skill or has arguments its skill cannot decode (None: neither)."""
    import skills
    from skills.base import SkillNotFound, decode_args, get_skill

    skills.load_skills()
    try:
        skill = get_skill(call.name)
    except SkillNotFound:
        return f"unknown tool {call.name!r}"
    problem = decode_args(skill, call.arguments)
    return problem if isinstance(problem, str) else None


def rft_keep(ref: EpisodeRow, turns: list[TurnTokens], *, min_reward: float, loop_repeats: int) -> Skip | None:
    """None when the episode is RFT data: reward above min_reward, no loop, no malformed call."""
    if ref.reward is None or ref.reward <= min_reward:
        return Skip(episode_id=ref.id, reason="low_reward")
    if ref.status == "malformed_limit":
        return Skip(episode_id=ref.id, reason="malformed", detail="ended on the malformed-call limit")
    if looping(turns, loop_repeats):
        return Skip(episode_id=ref.id, reason="looping")
    bad = malformed_call(turns)
    return None if bad is None else Skip(episode_id=ref.id, reason="malformed", detail=bad)


# --------------------------------------------------------------------------- packing


def pack(episodes: Sequence[EpisodeTokens], max_len: int) -> list[list[EpisodeTokens]]:
    """Rows of whole episodes, each at most max_len tokens: first fit by decreasing length
    (ties by episode id, so the packing is deterministic)."""
    rows: list[list[EpisodeTokens]] = []
    room: list[int] = []
    for ep in sorted(episodes, key=lambda e: (-e.length, e.ref.id)):
        for i, r in enumerate(room):
            if ep.length <= r:
                rows[i].append(ep)
                room[i] -= ep.length
                break
        else:
            rows.append([ep])
            room.append(max_len - ep.length)
    return rows


class Batch(msgspec.Struct, kw_only=True):
    """One micro-batch: whole rows concatenated into a single sequence (no padding).
    N = sampled tokens, grouped by episode in episode order; E = episodes."""

    input_ids: torch.Tensor
    """(1, T) token ids."""
    position_ids: torch.Tensor
    """(1, T) positions, restarting at 0 in every document."""
    doc_lens: tuple[int, ...]
    """Document lengths in order (sum = T)."""
    pred_pos: torch.Tensor
    """(N,) position whose hidden state predicts each sampled token (its position - 1)."""
    targets: torch.Tensor
    """(N,) the sampled token ids."""
    behaviour: torch.Tensor
    """(N,) behaviour logprobs."""
    temps: torch.Tensor
    """(N,) sampling temperatures."""
    rewards: torch.Tensor
    """(N,) the episode's reward on its last sampled token, 0 elsewhere."""
    ep_counts: list[int]
    """(E,) sampled tokens per episode."""
    ep_index: torch.Tensor
    """(N,) where each sampled token sits in the (E, L) per-episode grid, L = max(ep_counts)."""
    episode_ids: list[int]
    """(E,) episode ids."""
    weight: float = 1.0
    """1; 0 for a filler batch a data-parallel rank runs only to keep in step with the others."""

    @property
    def n_tokens(self) -> int:
        return int(self.input_ids.shape[1])

    def per_episode(self, flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(N,) -> (E, L) zero-padded, and its (E, L) mask (index writes: no host sync)."""
        e, width = len(self.ep_counts), max(self.ep_counts)
        padded = flat.new_zeros(e * width).index_put((self.ep_index,), flat).view(e, width)
        mask = torch.zeros(e * width, dtype=torch.bool, device=flat.device)
        mask[self.ep_index] = True
        return padded, mask.view(e, width)

    def flat(self, padded: torch.Tensor) -> torch.Tensor:
        """(E, L) -> (N,), the inverse of per_episode."""
        return padded.reshape(-1)[self.ep_index]


def make_batch(rows: Sequence[Sequence[EpisodeTokens]], device: torch.device | str = "cpu") -> Batch:
    """Concatenate rows of episodes into one micro-batch on `device`."""
    ids: list[np.ndarray] = []
    pos: list[np.ndarray] = []
    pred: list[np.ndarray] = []
    tgt: list[np.ndarray] = []
    beh: list[np.ndarray] = []
    tmp: list[np.ndarray] = []
    rew: list[np.ndarray] = []
    lens: list[int] = []
    counts: list[int] = []
    eids: list[int] = []
    offset = 0
    for row in rows:
        for ep in row:
            n_before = len(tgt)
            for d in ep.docs:
                ids.append(d.ids)
                pos.append(np.arange(len(d.ids)))
                lens.append(len(d.ids))
                where = np.nonzero(d.sampled)[0]
                pred.append(where - 1 + offset)
                tgt.append(d.ids[where])
                beh.append(d.behaviour[where])
                tmp.append(d.temps[where])
                offset += len(d.ids)
            n_ep = sum(len(t) for t in tgt[n_before:])
            r = np.zeros(n_ep, dtype=np.float32)
            r[-1] = ep.reward
            rew.append(r)
            counts.append(n_ep)
            eids.append(ep.ref.id)

    def cat(parts: list[np.ndarray], dtype: torch.dtype) -> torch.Tensor:
        return torch.from_numpy(np.concatenate(parts)).to(device=device, dtype=dtype)

    width = max(counts)
    grid = [np.arange(c) + i * width for i, c in enumerate(counts)]
    return Batch(input_ids=cat(ids, torch.long)[None], position_ids=cat(pos, torch.long)[None],
                 doc_lens=tuple(lens), pred_pos=cat(pred, torch.long), targets=cat(tgt, torch.long),
                 behaviour=cat(beh, torch.float32), temps=cat(tmp, torch.float32),
                 rewards=cat(rew, torch.float32), ep_counts=counts, ep_index=cat(grid, torch.long),
                 episode_ids=eids)
