"""/ui/episodes/{id}: one episode. The header (problem, outcome, time, tokens), every evaluation
with its details, then the transcript: per turn the messages the model read, what it said, each
tool call with its arguments and result, and the files the turn changed as diffs."""

from __future__ import annotations

from urllib.parse import quote

import msgspec

from runtime.store import EpisodeDetail, Message, Store, ToolCallRow, TurnRow
from runtime.store.queries import EpisodeSummary, episode_summary
from runtime.store.sql import select_episode
from runtime.transcript import completion_tokens, prompt_tokens
from runtime.ui import evaluation
from runtime.ui.files import FileChange, changes_by_turn, diff_lines
from runtime.ui.html import Safe, el, join, num, page, pre, seconds, table, when, yes
from runtime.ui.params import NotFound, to_int

FOLD_LINES = 12
"""Argument values longer than this many lines are folded."""


async def render(store: Store, id_text: str) -> str:
    eid = to_int(id_text, "episode id", low=1)
    detail, summary = await store.read(lambda c: (select_episode(c, eid), episode_summary(c, eid)))
    if detail is None or summary is None:
        raise NotFound(f"no episode {eid}")
    by_call: dict[int | None, list[int]] = {}
    for ev in detail.evaluations:
        by_call.setdefault(ev.tool_call_id, []).append(ev.id)
    calls: dict[int, list[ToolCallRow]] = {}
    for call in detail.tool_calls:
        calls.setdefault(call.turn_id, []).append(call)
    changed = changes_by_turn(detail.tool_calls)
    turns = [turn_section(t, calls.get(t.id or 0, []), changed.get(t.id or 0, []), by_call) for t in detail.turns]
    body = join([
        header(detail, summary),
        el("h2", f"evaluations ({len(detail.evaluations)})"),
        evaluation.summary_table(detail.evaluations) if detail.evaluations else el("p", "none stored", class_="muted"),
        el("h2", f"transcript ({len(detail.turns)} turns, {len(detail.tool_calls)} tool calls)"),
        *turns,
        el("h2", "evaluation details") if detail.evaluations else "",
        *(evaluation.details(ev, open_=ev.tool_call_id is None) for ev in detail.evaluations),
    ])
    return page(f"Episode {eid} · {detail.problem.name}", body, section="episodes")


def _sum(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def header(d: EpisodeDetail, s: EpisodeSummary) -> Safe:
    e, p = d.episode, d.problem
    split = (f" (LLM {seconds(e.policy_seconds)}, tools {seconds(e.tool_seconds)})"
             if e.policy_seconds is not None and e.tool_seconds is not None else "")
    prompt = _sum([prompt_tokens(t) for t in d.turns])
    completion = _sum([completion_tokens(t) for t in d.turns])
    facts: list[tuple[str, object]] = [
        ("problem", join([el("a", p.name, href=f"/ui/problems/{quote(p.id)}"),
                          f" · level {num(p.level)} · {p.source} · {p.precision or 'precision unknown'}"])),
        ("status", join([el("span", e.status, class_="ok" if e.status == "submitted" else "bad"),
                         f" · trainable {'yes' if e.trainable else 'no'}"])),
        ("reward", num(e.reward)),
        ("final speedups", f"vs eager {num(s.speedup_eager)} · vs torch.compile {num(s.speedup_compile)}"),
        ("origin", e.origin), ("policy version", num(e.policy_version)),
        ("started", when(e.started)), ("took", (seconds(s.seconds) if s.seconds is not None else "still running") + split),
        ("tokens", f"{num(prompt)} prompt + {num(completion)} completion"
                   f" · {sum(len(t.completion_ids or ()) for t in d.turns)} sampled token ids stored"),
    ]
    if e.error:
        facts.append(("error", el("span", e.error, class_="bad")))
    return evaluation.dl(facts)


def message(m: Message) -> Safe:
    text = m.content or ""
    if m.role == "system":
        return el("details", el("summary", f"system prompt ({len(text)} characters)"), pre(text))
    return join([el("div", m.role, class_="role"), pre(text)])


def arguments(call: ToolCallRow) -> Safe:
    """Arguments as a table when they are a JSON object (multi-line values in a box), else raw."""
    try:
        args = msgspec.json.decode(call.args)
    except msgspec.DecodeError:
        return join([el("span", "arguments are not JSON:", class_="bad"), pre(call.args)])
    if not isinstance(args, dict):
        return pre(call.args)
    rows = []
    for key, value in args.items():
        text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
        rows.append([el("code", key), _value(text)])
    return table(["argument", "value"], rows, class_="args") if rows else el("span", "no arguments", class_="muted")


def _value(text: str) -> Safe:
    """Short values inline, multi-line ones in a box; long ones folded (a written file's text is
    shown again in the turn's diff)."""
    lines = text.count("\n") + 1
    if lines == 1 and len(text) <= 120:
        return el("code", text)
    if lines <= FOLD_LINES:
        return pre(text)
    return el("details", el("summary", f"{lines} lines, {len(text)} characters"), pre(text))


def call_block(call: ToolCallRow, evaluations: list[int]) -> Safe:
    links = join((el("a", f"evaluation {i}", href=f"#evaluation-{i}") for i in evaluations), " · ")
    return el("div",
              el("div", el("span", call.skill, class_="name"), " ", yes(call.ok), f" · {seconds(call.duration)}",
                 join([" · ", links]) if evaluations else ""),
              arguments(call), el("div", "result", class_="role"), pre(call.result),
              class_="call", id=f"call-{call.id}")


def diff(change: FileChange) -> Safe:
    lines = []
    for line in diff_lines(change):
        kind = ("file" if line.startswith(("---", "+++")) else "hunk" if line.startswith("@@")
                else "add" if line.startswith("+") else "del" if line.startswith("-") else None)
        lines.append(el("span", line or " ", class_=kind))
    what = "new file" if change.before is None else "deleted" if change.after is None else "changed"
    return join([el("div", el("code", change.path), f" ({what})", class_="file-label"),
                 el("pre", *lines, class_="diff")])


def turn_section(turn: TurnRow, calls: list[ToolCallRow], changed: list[FileChange],
                 by_call: dict[int | None, list[int]]) -> Safe:
    head = (f"turn {turn.index} · policy v{num(turn.policy_version)} · {num(prompt_tokens(turn))} prompt +"
            f" {num(completion_tokens(turn))} completion tokens · finish {turn.finish_reason or '—'}"
            f" · {seconds(turn.duration)}")
    parts: list[object] = [el("h3", head)]
    parts += [message(m) for m in turn.messages if m.role != "tool"]  # tool results show with their calls
    if turn.text.strip():
        parts += [el("div", "assistant", class_="role"), pre(turn.text)]
    answered = {c.call_id for c in calls}
    parts += [call_block(c, by_call.get(c.id, [])) for c in calls]
    parts += [el("div", el("span", spec.name, class_="name"), " (no result stored)", pre(spec.arguments), class_="call")
              for spec in turn.tool_calls if spec.id not in answered]
    if changed:
        parts += [el("div", f"files changed in turn {turn.index}", class_="role"), *(diff(c) for c in changed)]
    return el("section", *parts, class_="turn", id=f"turn-{turn.index}")

