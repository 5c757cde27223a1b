"""`kagent episodes show`: an episode as a readable transcript.

Header (problem, outcome, time, tokens), then per turn what the model said, each tool call with
its arguments and the result the model read (compile errors, test results, timings), and at the
end the final evaluation with its speedups and reward. Long texts are cut (head and tail kept)
unless `full`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from runtime.store import EpisodeDetail, Message, ToolCallRow, TurnRow
from skills.evaluator.report import format_result
from skills.evaluator.results import EvalResult

RULE = "─" * 78


def _cut(text: str, max_lines: int, full: bool) -> str:
    lines = text.rstrip().splitlines()
    if full or len(lines) <= max_lines:
        return "\n".join(lines)
    head = max_lines * 2 // 3
    tail = max_lines - head
    return "\n".join([*lines[:head], f"[... {len(lines) - max_lines} lines cut; --full shows all ...]",
                      *lines[-tail:]])


def _chars(text: str, limit: int, full: bool) -> str:
    if full or len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def _num(value: float | None, fmt: str = "{:g}") -> str:
    return "—" if value is None else fmt.format(value)


def header(detail: EpisodeDetail) -> list[str]:
    e, p = detail.episode, detail.problem
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.started))
    took = f"{e.finished - e.started:.1f} s" if e.finished is not None else "still running"
    split = (f" (policy {e.policy_seconds:.1f} s, tools {e.tool_seconds:.1f} s)"
             if e.policy_seconds is not None and e.tool_seconds is not None else "")
    sampled = sum(len(t.completion_ids or ()) for t in detail.turns)
    prompt = _total(prompt_tokens(t) for t in detail.turns)
    completion = _total(completion_tokens(t) for t in detail.turns)
    missing = sum(t.completion_ids is None for t in detail.turns)
    lines = [
        f"episode {e.id} · {p.name} (problem {p.id}) · origin {e.origin} · policy v{_num(e.policy_version)}",
        f"status {e.status} · reward {_num(e.reward)} · trainable {'yes' if e.trainable else 'no'}"
        f" · started {when} · {took}{split}",
        f"{len(detail.turns)} turns · {len(detail.tool_calls)} tool calls · {_token_counts(prompt, completion)}"
        f" · {sampled} sampled token ids stored"
        + (f" · {missing} turns without token ids" if missing else ""),
    ]
    if e.error:
        lines.append(f"error: {e.error}")
    return lines


def prompt_tokens(turn: TurnRow) -> int | None:
    """The turn's prompt length as the server reported it, else as the stored ids give it, else
    None: the convention of the store's episode_summary view (migration 0004)."""
    if turn.prompt_tokens is not None:
        return turn.prompt_tokens
    return turn.prompt_prefix + len(turn.prompt_ids) if turn.prompt_ids is not None else None


def completion_tokens(turn: TurnRow) -> int | None:
    """The turn's completion length: reported, else the stored ids' count, else None."""
    if turn.completion_tokens is not None:
        return turn.completion_tokens
    return len(turn.completion_ids) if turn.completion_ids is not None else None


def _total(counts: Iterable[int | None]) -> int | None:
    """SQL's sum: the known counts added up, None when none is known."""
    known = [c for c in counts if c is not None]
    return sum(known) if known else None


def _token_counts(prompt: int | None, completion: int | None) -> str:
    if prompt is None and completion is None:
        return "tokens not reported"
    return " + ".join([f"{'not reported' if prompt is None else prompt} prompt",
                       f"{'not reported' if completion is None else completion} completion tokens"])


def _message(m: Message, full: bool) -> str:
    text = m.content or ""
    if m.role == "system":
        return f"[system] {len(text)} characters (SKILL.md + problem){'' if not full else chr(10) + text}"
    return f"[{m.role}]\n" + _indent(_cut(text, 20, full))


def _tokens(turn: TurnRow) -> str:
    ids = turn.completion_ids
    if ids is None:
        return "    token ids: none returned (turn not trainable)"
    shown = ", ".join(map(str, ids[:24])) + (", ..." if len(ids) > 24 else "")
    lp = turn.logprobs or []
    mean = f", mean logprob {sum(lp) / len(lp):.3f}" if lp else ""
    return (f"    prompt: {turn.prompt_prefix} carried + {len(turn.prompt_ids or [])} new ids;"
            f" sampled {len(ids)} ids [{shown}]{mean}")


def _call(call: ToolCallRow, full: bool) -> list[str]:
    state = "ok" if call.ok else "FAILED"
    took = f" {call.duration:.2f} s" if call.duration is not None else ""
    return [f"  → {call.skill}({_chars(call.args, 160, full)})  {state}{took}",
            _indent(_cut(call.result, 30, full), "      ")]


def turn_lines(turn: TurnRow, calls: list[ToolCallRow], *, full: bool, tokens: bool) -> list[str]:
    lines = [f"── turn {turn.index} · policy v{_num(turn.policy_version)} · {_token_counts(prompt_tokens(turn), completion_tokens(turn))}"
             f" · finish {turn.finish_reason or '—'}"
             f" · {_num(turn.duration, '{:.2f}')} s"]
    lines += [_message(m, full) for m in turn.messages if m.role != "tool"]
    if turn.text.strip():
        lines.append("[assistant]\n" + _indent(_cut(turn.text, 25, full)))
    if tokens:
        lines.append(_tokens(turn))
    unanswered = {c.id for c in turn.tool_calls} - {c.call_id for c in calls}
    for call in calls:
        lines += _call(call, full)
    for spec in turn.tool_calls:
        if spec.id in unanswered:
            lines.append(f"  → {spec.name}({_chars(spec.arguments, 160, full)})  (no result stored)")
    return lines


def final_evaluation(detail: EpisodeDetail) -> EvalResult | None:
    finals = [ev.result for ev in detail.evaluations if ev.result.mode == "final" and ev.tool_call_id is None]
    return finals[-1] if finals else None


def render(detail: EpisodeDetail, *, full: bool = False, tokens: bool = False) -> str:
    """The whole transcript as text."""
    by_turn: dict[int | None, list[ToolCallRow]] = {}
    for call in detail.tool_calls:
        by_turn.setdefault(call.turn_id, []).append(call)
    out = [*header(detail), RULE]
    for turn in detail.turns:
        out += turn_lines(turn, by_turn.get(turn.id, []), full=full, tokens=tokens)
    out.append(RULE)
    final = final_evaluation(detail)
    if final is None:
        out.append("final evaluation: none stored" + (" (episode still running)"
                                                      if detail.episode.status == "running" else ""))
    else:
        out.append("final evaluation:")
        out.append(_indent(format_result(final), "  "))
    return "\n".join(out) + "\n"
