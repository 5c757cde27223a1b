"""Frozen copies of one episode's workspace, and the last one that passed.

run_tests and profile grade a copy of the workspace taken when the call starts; a copy that passed
(compiled, correct, no flag) is kept as the episode's "last passing" version, which
`profile(against="last_passing")` times against the workspace as it is now. The copies live in one
temporary folder that the episode owns: `runtime/episode.py` removes it when the episode ends; a
context nobody cleans up (a test, a replay) loses it when it is garbage-collected or the
interpreter exits.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path

from skills.workspace import Workspace


class Snapshots:
    """One episode's copies of its workspace (blocking file I/O: call from a worker thread)."""

    def __init__(self) -> None:
        self._root: Path | None = None
        self._taken = 0
        self.calls = 0
        """Evaluating calls (run_tests, profile) so far; the skills count them."""
        self.last_passing: Path | None = None
        """The kept copy that last passed (a workspace folder: model.py, model_new.py, kernels/)."""
        self.kept_by: str = ""
        """The skill whose evaluation of `last_passing` passed (`run_tests` or `profile`)."""
        self.kept_at: int = 0
        """The evaluating call (`calls` then) that kept it."""

    def folder(self) -> Path:
        """A new empty folder under the episode's temporary folder."""
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="kagent-snapshots-"))
            weakref.finalize(self, shutil.rmtree, self._root, True)
        self._taken += 1
        path = self._root / f"copy{self._taken}"
        path.mkdir()
        return path

    def take(self, ws: Workspace) -> Path:
        """A frozen copy of the workspace (model.py, model_new.py, kernels/)."""
        return ws.snapshot(self.folder()).path

    def keep(self, copy: Path, by: str) -> None:
        """`copy` passed under `by`: it becomes the last passing version (the previous one goes)."""
        old = self.last_passing
        self.last_passing, self.kept_by, self.kept_at = copy, by, self.calls
        if old is not None and old != copy:
            shutil.rmtree(old, ignore_errors=True)

    def drop(self, copy: Path) -> None:
        """Remove a copy that is not kept."""
        if copy != self.last_passing:
            shutil.rmtree(copy, ignore_errors=True)

    def cleanup(self) -> None:
        """Remove every copy (the episode ended); safe to call twice."""
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
        self._root, self.last_passing = None, None
