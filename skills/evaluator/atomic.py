"""One way to replace a file's content: readers see the old bytes or the new ones, never a part."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, parents: bool = False) -> None:
    """Write `data` to a temporary file beside `path`, then rename it over `path` (the temporary
    file is removed when anything fails). mode: the file's permissions (mkstemp's 0o600 otherwise);
    parents: create the folder first."""
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
