"""The per-episode workspace: the only files an agent can reach, and the rules for reaching them.

```
model.py        reference problem (mode 0o444; never writable through skills)
model_new.py    the agent's ModelNew (starts as a template that explains the ABI)
kernels/        the agent's sources: *.cu *.cuh *.cpp *.h *.hpp, no subfolders (the build reads only kernels/)
```

Every skill goes through `Workspace.resolve`, which refuses absolute paths, `..`, NUL bytes,
symbolic links anywhere on the path and anything outside the areas above. Errors are
`WorkspaceError`s whose message tells the model what to do instead.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from types import TracebackType

import msgspec

from skills.evaluator.atomic import write_atomic

MODEL = "model.py"
MODEL_NEW = "model_new.py"
KERNELS = "kernels"
KERNEL_SUFFIXES = (".cu", ".cuh", ".cpp", ".h", ".hpp")
# The harness puts its own kagent.h on the include path; a local copy would shadow it for
# `#include "kagent.h"` (quote includes search the including file's folder first).
RESERVED_KERNEL_NAMES = frozenset({"kagent.h"})
MAX_PATH_CHARS = 256
# First character excludes '.' (hidden files, '..') and '-' (names read as compiler flags).
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
_HINT = re.compile(r"[^A-Za-z0-9_-]+")

MODEL_NEW_TEMPLATE = """\
# model_new.py: replace this template with your ModelNew (the system prompt has a full example).
# 1. Put kernels in kernels/*.cu; each file starts with #include "kagent.h" and exports host
#    launchers such as: KAGENT_EXPORT void swish(const float* x, float* y, int64_t n) { ... }
# 2. Here, `from kagent_ext import ops` and call ops.swish(x, y, x.numel()) with contiguous
#    tensors whose dtypes match the pointer types (Python ints/floats fill scalar arguments).
# 3. Allocate outputs with torch.empty / torch.empty_like; no torch compute ops in forward.
# 4. Keep Model's constructor arguments and parameter names (Model's state_dict is loaded).
import torch


class ModelNew(torch.nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *inputs):
        raise NotImplementedError("ModelNew.forward is not written yet")
"""


class WorkspaceError(Exception):
    """A refused or failed workspace operation; the message is meant for the model."""


def _default_root() -> str:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(state, "kagent", "workspaces")


class WorkspaceConfig(msgspec.Struct, kw_only=True, frozen=True):
    """Where workspaces live and how much an agent may write into one.

    root: parent folder of the per-episode workspaces ($XDG_STATE_HOME/kagent/workspaces).
    quota_bytes: total bytes allowed in model_new.py plus everything under kernels/.
    max_file_bytes: largest single file the agent may write, in bytes.
    max_files: most files allowed in model_new.py plus kernels/ together.
    """

    root: str = msgspec.field(default_factory=_default_root)
    quota_bytes: int = 8 * 2**20
    max_file_bytes: int = 512 * 2**10
    max_files: int = 64


class Workspace:
    """One episode's folder. Create with `Workspace.create`, reopen with `Workspace.open`."""

    def __init__(self, path: Path, config: WorkspaceConfig) -> None:
        # Resolved once, so the root itself may sit below a symlink (e.g. /tmp on macOS);
        # everything below it is checked component by component in `resolve`.
        self.path = Path(path).resolve()
        self.config = config

    @classmethod
    def create(
        cls, problem_source: str, *, config: WorkspaceConfig, name_hint: str = ""
    ) -> Workspace:
        """A fresh, uniquely named workspace under `config.root` holding `problem_source`."""
        root = Path(config.root).expanduser()
        root.mkdir(parents=True, exist_ok=True)
        hint = _HINT.sub("-", name_hint).strip("-")[:40]
        path = Path(tempfile.mkdtemp(prefix=f"{hint or 'ws'}-", dir=root))
        ws = cls(path, config)
        ws.model_path.write_text(problem_source, encoding="utf-8")
        ws.model_path.chmod(0o444)
        ws.model_new_path.write_text(MODEL_NEW_TEMPLATE, encoding="utf-8")
        ws.kernels_dir.mkdir()
        return ws

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, config: WorkspaceConfig | None = None
    ) -> Workspace:
        """An existing workspace (a folder holding model.py), e.g. for `kagent eval DIR`."""
        ws = cls(Path(path), config or WorkspaceConfig())
        if not ws.path.is_dir():
            raise WorkspaceError(f"{path} is not a folder")
        if not ws.model_path.is_file():
            raise WorkspaceError(f"{path} holds no {MODEL}")
        return ws

    @property
    def model_path(self) -> Path:
        return self.path / MODEL

    @property
    def model_new_path(self) -> Path:
        return self.path / MODEL_NEW

    @property
    def kernels_dir(self) -> Path:
        return self.path / KERNELS

    def __repr__(self) -> str:
        return f"Workspace({str(self.path)!r})"

    def normalize(self, rel: str) -> str:
        """`rel` in canonical form ('./kernels//a.cu' -> 'kernels/a.cu'); checks syntax only."""
        return "/".join(_split(rel))

    def relpath(self, path: Path) -> str:
        """`path` (as returned by `resolve`) relative to the workspace, with '/' separators."""
        return path.relative_to(self.path).as_posix()

    # -- path rules --------------------------------------------------------------------------

    def resolve(self, rel: str, *, for_write: bool) -> Path:
        """The absolute path for `rel`, or WorkspaceError when the rules refuse it.

        Readable: model.py, model_new.py, kernels/**. Writable: model_new.py and
        kernels/NAME or kernels/DIR/NAME with a source suffix. A file to be written need not
        exist; one to be read must.
        """
        parts = _split(rel)
        _check_area(parts, for_write=for_write)
        current = self.path
        for i, part in enumerate(parts):
            current = current / part
            shown = "/".join(parts[: i + 1])
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                if for_write:
                    return self.path.joinpath(*parts)
                raise WorkspaceError(
                    f"{'/'.join(parts)} does not exist; list_files shows the workspace files"
                ) from None
            if stat.S_ISLNK(st.st_mode):
                raise WorkspaceError(f"{shown} is a symbolic link; links are not allowed")
            last = i == len(parts) - 1
            if not last and not stat.S_ISDIR(st.st_mode):
                raise WorkspaceError(f"{shown} is not a folder")
            if last and for_write and not stat.S_ISREG(st.st_mode):
                raise WorkspaceError(f"{shown} is a folder or special file, not a file")
        return current

    # -- file operations ---------------------------------------------------------------------

    def read_text(self, rel: str) -> str:
        """The UTF-8 text of a readable file."""
        path = self.resolve(rel, for_write=False)
        shown = self.relpath(path)
        data = _read_regular(path, shown)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise WorkspaceError(
                f"{shown} is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                "only text files can be read"
            ) from None

    def write_text(self, rel: str, text: str) -> int:
        """Write `text` as UTF-8, atomically, within the size limits; returns the bytes written."""
        path = self.resolve(rel, for_write=True)
        shown = self.relpath(path)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise WorkspaceError(
                f"content for {shown} is not valid text ({e.reason} at character {e.start})"
            ) from None
        cfg = self.config
        if len(data) > cfg.max_file_bytes:
            raise WorkspaceError(
                f"{shown} would be {len(data)} bytes; one file may hold at most "
                f"{cfg.max_file_bytes} bytes. Split the code over several files."
            )
        files = dict(self._agent_files())
        old = files.get(shown)
        if old is None and len(files) >= cfg.max_files:
            raise WorkspaceError(
                f"the workspace already holds {len(files)} files, the limit is {cfg.max_files}; "
                "write into an existing file instead"
            )
        total = sum(files.values()) - (old or 0) + len(data)
        if total > cfg.quota_bytes:
            raise WorkspaceError(
                f"writing {len(data)} bytes to {shown} would bring model_new.py and kernels/ to "
                f"{total} bytes, over the quota of {cfg.quota_bytes} bytes; shorten your files"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data, mode=0o644)
        return len(data)

    def delete(self, rel: str) -> int:
        """Remove one of the agent's files under kernels/; returns the bytes it held. model.py is
        the reference and model_new.py is what gets graded (write_file replaces it), so neither
        can be deleted; folders are refused (a file at a time, so nothing goes by accident)."""
        parts = _split(rel)
        if parts == [MODEL]:
            raise WorkspaceError("model.py is the reference problem and is read-only; it cannot be deleted")
        if parts == [MODEL_NEW]:
            raise WorkspaceError(
                "model_new.py is what gets graded and cannot be deleted; "
                "overwrite it with write_file instead"
            )
        if parts[0] != KERNELS:
            raise WorkspaceError(
                f"{'/'.join(parts)} is outside the agent's files: only files under kernels/ can be deleted"
            )
        path = self.resolve(rel, for_write=False)
        shown = self.relpath(path)
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            raise WorkspaceError(f"{shown} is a folder; delete the files in it one at a time")
        if not stat.S_ISREG(st.st_mode):
            raise WorkspaceError(f"{shown} is not a regular file")
        os.unlink(path)
        return st.st_size

    def usage(self) -> int:
        """Bytes held in model_new.py and kernels/ (what the quota counts)."""
        return sum(size for _, size in self._agent_files())

    def list(self) -> builtins.list[tuple[str, int]]:
        """(relative path, size) of model.py, model_new.py and every file under kernels/, sorted."""
        files = self._agent_files()
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(self.model_path)
            if stat.S_ISREG(st.st_mode):
                files.append((MODEL, st.st_size))
        return sorted(files)

    def untouched(self) -> bool:
        """model_new.py is still the template and kernels/ holds nothing: the agent wrote nothing."""
        if [rel for rel, _ in self.list() if rel != MODEL] != [MODEL_NEW]:
            return False
        return self.read_text(MODEL_NEW) == MODEL_NEW_TEMPLATE

    def snapshot(self, dest: Path) -> Workspace:
        """Copy model.py, model_new.py and kernels/ (regular files only) into an empty `dest`."""
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        if any(dest.iterdir()):
            raise FileExistsError(f"snapshot destination {dest} is not empty")
        (dest / KERNELS).mkdir()
        for rel, _ in self.list():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            _copy_regular(self.path / rel, target)
        if (dest / MODEL).exists():
            (dest / MODEL).chmod(0o444)
        return Workspace.open(dest, config=self.config)

    def variant_snapshot(self, rel: str, dest: Path) -> Workspace:
        """A workspace in an empty `dest` holding this workspace's model.py (the reference is never
        the variant's) and the model_new.py and kernels/ of the folder `rel` inside this workspace:
        a variant to time against the workspace (profile's `against`). The folder must lie inside
        the workspace, with no link on the way or in it."""
        parts = _split(rel)
        shown = "/".join(parts)
        folder = self.path
        for i, part in enumerate(parts):
            folder = folder / part
            st = _lstat(folder, f"folder {shown} does not exist in the workspace")
            at = "/".join(parts[: i + 1])
            if stat.S_ISLNK(st.st_mode):
                raise WorkspaceError(f"{at} is a symbolic link; links are not allowed")
            if not stat.S_ISDIR(st.st_mode):
                raise WorkspaceError(f"{at} is not a folder; give a folder holding model_new.py and kernels/")
        new = _lstat(folder / MODEL_NEW, f"{shown} holds no {MODEL_NEW}: a variant folder holds its own"
                                         f" {MODEL_NEW} and, optionally, {KERNELS}/")
        if not stat.S_ISREG(new.st_mode):
            raise WorkspaceError(f"{shown}/{MODEL_NEW} is not a regular file")
        files = [MODEL_NEW]
        kernels = folder / KERNELS
        if os.path.lexists(kernels):
            if kernels.is_symlink() or not kernels.is_dir():
                raise WorkspaceError(f"{shown}/{KERNELS} is not a folder (links are not allowed)")
            for dirpath, _, filenames in os.walk(kernels):  # does not follow links
                for name in filenames:
                    path = Path(dirpath) / name
                    if not stat.S_ISREG(os.lstat(path).st_mode):
                        raise WorkspaceError(f"{shown}/{path.relative_to(folder).as_posix()} is not a regular file")
                    files.append(path.relative_to(folder).as_posix())
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        if any(dest.iterdir()):
            raise FileExistsError(f"snapshot destination {dest} is not empty")
        (dest / KERNELS).mkdir()
        _copy_regular(self.model_path, dest / MODEL)
        (dest / MODEL).chmod(0o444)
        for name in files:
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            _copy_regular(folder / name, dest / name)
        return Workspace.open(dest, config=self.config)

    def cleanup(self) -> None:
        """Delete the workspace folder (restoring write bits first); safe to call twice."""
        if not os.path.lexists(self.path):
            return
        _make_writable(self.path)
        for dirpath, dirnames, filenames in os.walk(self.path):
            # Top-down walk: fix each folder before os.walk lists it. Links are skipped so a
            # planted link can never get a file outside the workspace chmodded.
            for name in dirnames + filenames:
                _make_writable(Path(dirpath) / name)
        shutil.rmtree(self.path)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()

    def _agent_files(self) -> builtins.list[tuple[str, int]]:
        """(relative path, size) of the regular files the agent owns: model_new.py, kernels/**."""
        files: builtins.list[tuple[str, int]] = []
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(self.model_new_path)
            if stat.S_ISREG(st.st_mode):
                files.append((MODEL_NEW, st.st_size))
        if not self.kernels_dir.is_dir() or self.kernels_dir.is_symlink():
            return files
        for dirpath, _, filenames in os.walk(self.kernels_dir):  # does not follow links
            for name in filenames:
                path = Path(dirpath) / name
                st = os.lstat(path)
                if stat.S_ISREG(st.st_mode):
                    files.append((self.relpath(path), st.st_size))
        return files


def _split(rel: str) -> list[str]:
    """Check the syntax of a relative path and return its components."""
    if not isinstance(rel, str):
        raise WorkspaceError("path must be a string")
    if "\x00" in rel:
        raise WorkspaceError("path contains a NUL byte")
    if not rel.strip():
        raise WorkspaceError("path is empty; use a path such as kernels/add.cu")
    if len(rel) > MAX_PATH_CHARS:
        raise WorkspaceError(f"path is longer than {MAX_PATH_CHARS} characters")
    if rel.startswith(("/", "~")) or re.match(r"[A-Za-z]:", rel):
        raise WorkspaceError(
            f"{rel!r} is an absolute path; use a path relative to the workspace, "
            "such as model_new.py or kernels/add.cu"
        )
    if "\\" in rel:
        raise WorkspaceError(f"{rel!r} contains '\\'; separate folders with '/'")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise WorkspaceError(
            f"{rel!r} contains '..'; use paths inside the workspace such as kernels/add.cu"
        )
    if not parts:
        raise WorkspaceError(f"{rel!r} names the workspace itself; list_files shows its files")
    for part in parts:
        if not _NAME.fullmatch(part):
            raise WorkspaceError(
                f"{part!r} is not an allowed file or folder name: use letters, digits, '_', '-' "
                "and '.', starting with a letter, digit or '_' (at most 100 characters)"
            )
    return parts


def _check_area(parts: list[str], *, for_write: bool) -> None:
    """Refuse paths outside model.py, model_new.py and kernels/ (for writes: the write rules)."""
    shown = "/".join(parts)
    if parts == [MODEL]:
        if for_write:
            raise WorkspaceError(
                "model.py is the reference problem and is read-only; "
                "write your ModelNew to model_new.py and your sources under kernels/"
            )
        return
    if parts == [MODEL_NEW]:
        return
    if parts[0] != KERNELS:
        verb = "written" if for_write else "read"
        what = "model_new.py" if for_write else "model.py, model_new.py"
        raise WorkspaceError(
            f"{shown} is outside the agent's files: only {what} and files under kernels/ "
            f"can be {verb}"
        )
    if not for_write:
        return
    if len(parts) == 1:
        raise WorkspaceError("kernels is a folder; write a file inside it, such as kernels/add.cu")
    if len(parts) > 2:
        # The build compiles and hashes kernels/* only: a file in a subfolder would be ignored.
        raise WorkspaceError(f"{shown} is in a subfolder: put every source directly in kernels/")
    name = parts[-1]
    if not name.endswith(KERNEL_SUFFIXES):
        raise WorkspaceError(
            f"{shown} has a suffix the build does not use; files under kernels/ must end in "
            + ", ".join(KERNEL_SUFFIXES)
        )
    if name in RESERVED_KERNEL_NAMES:
        raise WorkspaceError(
            f"{name} is provided by the harness and cannot be replaced; pick another name"
        )




def _lstat(path: Path, missing: str) -> os.stat_result:
    """os.lstat, with WorkspaceError(`missing`) when nothing is there."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        raise WorkspaceError(missing) from None


def _read_regular(path: Path, shown: str) -> bytes:
    """The bytes of a regular file, opened without following links."""
    # O_NOFOLLOW closes the gap between resolve's lstat and the open; O_NONBLOCK keeps a FIFO
    # from hanging the open (it is then refused as not a regular file).
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise WorkspaceError(f"{shown} does not exist") from None
    except OSError as e:
        raise WorkspaceError(f"{shown} cannot be read: {e.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise WorkspaceError(f"{shown} is a folder; list_files shows its files")
        if not stat.S_ISREG(mode):
            raise WorkspaceError(f"{shown} is not a regular file")
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        return f.read()


def _copy_regular(src: Path, dst: Path) -> None:
    """Copy one regular file without following links (a link swapped in fails the open)."""
    dst.write_bytes(_read_regular(src, str(src)))


def _make_writable(path: Path) -> None:
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        os.chmod(path, st.st_mode | stat.S_IRWXU)
    elif stat.S_ISREG(st.st_mode):
        os.chmod(path, st.st_mode | stat.S_IWUSR)
