"""Workspace file skills: read_file, write_file, edit_file, delete_file, list_files.

All file access goes through `Workspace` (path rules, limits, atomic writes); the blocking file
I/O runs in a worker thread.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated

import anyio.to_thread
import msgspec

from skills.base import SkillArgs, SkillContext, SkillResult, register
from skills.workspace import MODEL, Workspace

# Room kept for read_file's header and footer (beside two copies of the path).
_READ_FRAME_CHARS = 120


# -- records (one per skill, stored with the tool call) --------------------------------------


class ReadFileRecord(msgspec.Struct, kw_only=True):
    """A successful read_file.

    path: workspace-relative path that was read.
    first_line: first line shown (1-based).
    last_line: last line shown (1-based; first_line - 1 for an empty file).
    total_lines: lines in the file.
    bytes: size of the file in bytes (UTF-8).
    """

    path: str
    first_line: int
    last_line: int
    total_lines: int
    bytes: int


class WriteFileRecord(msgspec.Struct, kw_only=True):
    """A successful write_file.

    path: workspace-relative path that was written.
    bytes: bytes written.
    created: True when the file did not exist before.
    """

    path: str
    bytes: int
    created: bool


class EditFileRecord(msgspec.Struct, kw_only=True):
    """A successful edit_file.

    path: workspace-relative path that was edited.
    replacements: occurrences of `old` that were replaced.
    first_line: line where the first replacement starts (1-based).
    bytes: size of the file after the edit.
    """

    path: str
    replacements: int
    first_line: int
    bytes: int


class DeleteFileRecord(msgspec.Struct, kw_only=True):
    """A successful delete_file."""

    path: str
    """Workspace-relative path that was deleted."""
    bytes: int
    """Size the file had (freed from the quota)."""


class ListFilesRecord(msgspec.Struct, kw_only=True):
    """A list_files call.

    files: (path, size in bytes) of every listed file, sorted by path.
    usage_bytes: bytes counted against the quota (model_new.py and kernels/).
    quota_bytes: the quota.
    """

    files: list[tuple[str, int]]
    usage_bytes: int
    quota_bytes: int


# -- arguments -------------------------------------------------------------------------------

Path_ = Annotated[
    str,
    msgspec.Meta(
        description="Path relative to the workspace: model.py, model_new.py or kernels/NAME"
    ),
]


class ReadFileArgs(SkillArgs):
    """Arguments of read_file."""

    path: Path_
    offset_line: Annotated[int, msgspec.Meta(ge=1, description="First line to show (1-based)")] = 1
    max_lines: Annotated[int, msgspec.Meta(ge=1, le=2000, description="Most lines to show")] = 400


class WriteFileArgs(SkillArgs):
    """Arguments of write_file."""

    path: Annotated[
        str,
        msgspec.Meta(
            description="model_new.py, or kernels/NAME or kernels/DIR/NAME ending in "
            ".cu, .cuh, .cpp, .cc, .h or .hpp"
        ),
    ]
    content: Annotated[str, msgspec.Meta(description="The complete new content of the file")]


class EditFileArgs(SkillArgs):
    """Arguments of edit_file."""

    path: Annotated[str, msgspec.Meta(description="model_new.py or a file under kernels/")]
    old: Annotated[
        str,
        msgspec.Meta(
            description="Exact text to replace, whitespace included; must be unique "
            "in the file unless replace_all is true"
        ),
    ]
    new: Annotated[str, msgspec.Meta(description="Text to put in its place")]
    replace_all: Annotated[
        bool, msgspec.Meta(description="Replace every occurrence instead of exactly one")
    ] = False


class DeleteFileArgs(SkillArgs):
    """Arguments of delete_file."""

    path: Annotated[str, msgspec.Meta(description="A file under kernels/, e.g. kernels/old.cu")]


class ListFilesArgs(SkillArgs):
    """Arguments of list_files (none)."""


# -- skills ----------------------------------------------------------------------------------


class ReadFile:
    name = "read_file"
    description = (
        "Read a text file of the workspace (model.py, model_new.py, kernels/...) with line "
        "numbers. Long files are shown in pages; the output says which offset_line comes next."
    )
    Args = ReadFileArgs

    async def run(self, args: ReadFileArgs, ctx: SkillContext) -> SkillResult:
        ws = ctx.workspace
        path = ws.normalize(args.path)
        text = await anyio.to_thread.run_sync(ws.read_text, args.path)
        size = len(text.encode("utf-8"))
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()  # a final newline ends the last line; it does not start a new one
        total = len(lines)
        if total == 0:
            record = ReadFileRecord(path=path, first_line=1, last_line=0, total_lines=0, bytes=0)
            return SkillResult(text=f"{path} is empty (0 bytes)", ok=True, record=record)
        if args.offset_line > total:
            return SkillResult(
                text=f"{path} has {total} lines; offset_line must be between 1 and {total}",
                ok=False,
            )
        width = max(4, len(str(total)))
        budget = ctx.max_output_chars - _READ_FRAME_CHARS - 2 * len(path)
        shown: list[str] = []
        used = 0
        first = args.offset_line
        for n in range(first, min(total, first + args.max_lines - 1) + 1):
            line = f"{n:>{width}}| {lines[n - 1]}"
            if shown and used + len(line) + 1 > budget:
                break  # whole lines only; the footer says where to continue
            shown.append(line)
            used += len(line) + 1
        last = first + len(shown) - 1
        header = f"{path}: lines {first}-{last} of {total}"
        if last < total:
            footer = (
                f"[{total - last} more lines; continue with "
                f"read_file(path={path!r}, offset_line={last + 1})]"
            )
        else:
            footer = "[end of file]"
        record = ReadFileRecord(
            path=path, first_line=first, last_line=last, total_lines=total, bytes=size
        )
        return SkillResult(text="\n".join([header, *shown, footer]), ok=True, record=record)


class WriteFile:
    name = "write_file"
    description = (
        "Create or overwrite model_new.py or a source file under kernels/ (.cu .cuh .cpp .cc "
        ".h .hpp, one level of subfolders) with the given content."
    )
    Args = WriteFileArgs

    async def run(self, args: WriteFileArgs, ctx: SkillContext) -> SkillResult:
        ws = ctx.workspace
        path = ws.normalize(args.path)
        n, created = await anyio.to_thread.run_sync(_write, ws, args.path, args.content)
        record = WriteFileRecord(path=path, bytes=n, created=created)
        return SkillResult(text=f"wrote {n} bytes to {path}", ok=True, record=record)


class EditFile:
    name = "edit_file"
    description = (
        "Replace an exact piece of text in model_new.py or a file under kernels/. `old` must "
        "match the file exactly (whitespace included) and occur once, unless replace_all is true."
    )
    Args = EditFileArgs

    async def run(self, args: EditFileArgs, ctx: SkillContext) -> SkillResult:
        ws = ctx.workspace
        path = ws.normalize(args.path)
        # Resolve for writing first, so editing model.py is refused as read-only.
        await anyio.to_thread.run_sync(partial(ws.resolve, args.path, for_write=True))
        if args.old == "":
            return SkillResult(text="old is empty; give the exact text to replace", ok=False)
        if args.old == args.new:
            return SkillResult(text="old and new are the same; nothing to change", ok=False)
        text = await anyio.to_thread.run_sync(ws.read_text, args.path)
        count = text.count(args.old)
        if count == 0:
            return SkillResult(
                text=f"old text not found in {path}; read_file it and copy the exact text "
                "(indentation and line breaks included)",
                ok=False,
            )
        if count > 1 and not args.replace_all:
            return SkillResult(
                text=f"old text occurs {count} times in {path}; include more surrounding lines "
                "to make it unique, or set replace_all to true",
                ok=False,
            )
        first_line = text.count("\n", 0, text.index(args.old)) + 1
        new_text = text.replace(args.old, args.new)
        n = await anyio.to_thread.run_sync(ws.write_text, args.path, new_text)
        plural = "occurrence" if count == 1 else "occurrences"
        record = EditFileRecord(path=path, replacements=count, first_line=first_line, bytes=n)
        return SkillResult(
            text=f"replaced {count} {plural} in {path} (first at line {first_line}); "
            f"the file is now {n} bytes",
            ok=True,
            record=record,
        )


class DeleteFile:
    name = "delete_file"
    description = (
        "Delete one file under kernels/ (an old kernel the build should no longer compile). "
        "model.py and model_new.py cannot be deleted; folders are refused."
    )
    Args = DeleteFileArgs

    async def run(self, args: DeleteFileArgs, ctx: SkillContext) -> SkillResult:
        ws = ctx.workspace
        path = ws.normalize(args.path)
        n = await anyio.to_thread.run_sync(ws.delete, args.path)
        record = DeleteFileRecord(path=path, bytes=n)
        return SkillResult(text=f"deleted {path} ({n} bytes)", ok=True, record=record)


class ListFiles:
    name = "list_files"
    description = (
        "List the workspace files with their sizes, and how much of the space quota "
        "model_new.py and kernels/ use."
    )
    Args = ListFilesArgs

    async def run(self, args: ListFilesArgs, ctx: SkillContext) -> SkillResult:
        ws = ctx.workspace
        files = await anyio.to_thread.run_sync(ws.list)
        text = format_listing(ws, files)
        usage = sum(size for rel, size in files if rel != MODEL)
        record = ListFilesRecord(files=files, usage_bytes=usage, quota_bytes=ws.config.quota_bytes)
        return SkillResult(text=text, ok=True, record=record)


def format_listing(ws: Workspace, files: list[tuple[str, int]]) -> str:
    """One line per file (size, path, note), then the quota line."""
    cfg = ws.config
    width = max([len(f"{size:,}") for _, size in files] + [5])
    lines = []
    for rel, size in files:
        note = "  (reference, read-only)" if rel == MODEL else ""
        lines.append(f"{size:>{width},} B  {rel}{note}")
    if not any(rel.startswith("kernels/") for rel, _ in files):
        lines.append(f"{'':>{width}}    kernels/ (empty)")
    own = [size for rel, size in files if rel != MODEL]
    lines.append(
        f"quota: {sum(own):,} of {cfg.quota_bytes:,} bytes used, {len(own)} of {cfg.max_files} "
        f"files (at most {cfg.max_file_bytes:,} bytes per file)"
    )
    return "\n".join(lines)


def _write(ws: Workspace, rel: str, content: str) -> tuple[int, bool]:
    """Write a file; returns (bytes written, whether the file is new)."""
    created = not ws.resolve(rel, for_write=True).exists()
    return ws.write_text(rel, content), created


READ_FILE = register(ReadFile())
WRITE_FILE = register(WriteFile())
EDIT_FILE = register(EditFile())
DELETE_FILE = register(DeleteFile())
LIST_FILES = register(ListFiles())
