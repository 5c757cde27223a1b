"""The files the agent wrote, replayed from its stored tool calls: the workspace starts with the
model_new.py template (skills.workspace), and each successful write_file, edit_file and
delete_file is applied in order, as the skill applied it. The store keeps no copy of the files,
so this is how the viewer shows them as diffs between turns and as a problem's best solution."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

import msgspec

from runtime.store import ToolCallRow
from skills.workspace import MODEL_NEW, MODEL_NEW_TEMPLATE

Files = dict[str, str]
"""Workspace-relative path -> text."""

EDITS = frozenset({"write_file", "edit_file", "delete_file"})


class FileChange(msgspec.Struct, kw_only=True, frozen=True):
    """One file's text before and after a turn."""

    path: str
    """Workspace-relative path."""
    before: str | None
    """Text before (None: it did not exist)."""
    after: str | None
    """Text after (None: deleted)."""


def start() -> Files:
    """A new episode's workspace (model.py is the reference and never changes)."""
    return {MODEL_NEW: MODEL_NEW_TEMPLATE}


def _args(call: ToolCallRow) -> dict[str, Any]:
    try:
        args = msgspec.json.decode(call.args)
    except msgspec.DecodeError:
        return {}
    return args if isinstance(args, dict) else {}


def _path(call: ToolCallRow, args: dict[str, Any]) -> str | None:
    # The record holds the path as the skill normalised it ('./kernels//a.cu' -> 'kernels/a.cu').
    record = call.record if isinstance(call.record, dict) else {}
    path = record.get("path", args.get("path"))
    return path if isinstance(path, str) else None


def apply(files: Files, call: ToolCallRow) -> bool:
    """Apply one tool call to `files` in place; True when it changed the workspace."""
    if not call.ok or call.skill not in EDITS:
        return False
    args = _args(call)
    path = _path(call, args)
    if path is None:
        return False
    if call.skill == "write_file" and isinstance(args.get("content"), str):
        files[path] = args["content"]
    elif call.skill == "edit_file" and isinstance(args.get("old"), str) and isinstance(args.get("new"), str):
        if path not in files:
            return False
        # The skill replaces every occurrence: one unless replace_all was set.
        files[path] = files[path].replace(args["old"], args["new"])
    elif call.skill == "delete_file":
        files.pop(path, None)
    else:
        return False
    return True


def replay(calls: Iterable[ToolCallRow], *, until: int | None = None) -> Files:
    """The workspace after every call (in stored order), or after the call with id `until`."""
    files = start()
    for call in calls:
        apply(files, call)
        if until is not None and call.id == until:
            break
    return files


def changes(before: Files, after: Files) -> list[FileChange]:
    """The files whose text differs, by path."""
    return [FileChange(path=p, before=before.get(p), after=after.get(p))
            for p in sorted(before.keys() | after.keys()) if before.get(p) != after.get(p)]


def changes_by_turn(calls: Iterable[ToolCallRow]) -> dict[int, list[FileChange]]:
    """turn id -> what that turn's calls changed (turns that changed nothing are left out)."""
    files = start()
    out: dict[int, list[FileChange]] = {}
    by_turn: dict[int, list[ToolCallRow]] = {}
    for call in calls:
        by_turn.setdefault(call.turn_id, []).append(call)
    for turn_id, turn_calls in by_turn.items():
        before = dict(files)
        for call in turn_calls:
            apply(files, call)
        found = changes(before, files)
        if found:
            out[turn_id] = found
    return out


def diff_lines(change: FileChange) -> list[str]:
    """A unified diff (3 lines of context), without trailing newlines."""
    a = [] if change.before is None else change.before.splitlines()
    b = [] if change.after is None else change.after.splitlines()
    old = "/dev/null" if change.before is None else f"a/{change.path}"
    new = "/dev/null" if change.after is None else f"b/{change.path}"
    return list(difflib.unified_diff(a, b, old, new, lineterm=""))
