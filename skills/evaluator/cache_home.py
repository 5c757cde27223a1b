"""Where kagent keeps what it caches for the user (standard library only: the judge imports it)."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache(name: str) -> Path:
    """$XDG_CACHE_HOME/kagent/NAME, else ~/.cache/kagent/NAME: private to the user (never a
    world-writable /tmp, where another user could plant entries)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "kagent" / name
