"""Query parameters and path parts of the viewer's pages, checked: a bad value or an unknown name
is a `BadRequest` (a 400 page that says which and why), something the store does not hold a
`NotFound` (404). An empty value is the same as none (what an HTML form sends for a blank field)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

MAX_ID = 2**63 - 1
"""SQLite's INTEGER."""
_INT = re.compile(r"[+-]?[0-9]{1,30}")


class BadRequest(Exception):
    """A query parameter or path part the page cannot use; the message says which and why."""


class Query:
    """The page's parameters; names outside `allowed` are refused."""

    def __init__(self, params: Mapping[str, str], allowed: Iterable[str]) -> None:
        self.allowed = sorted(allowed)
        unknown = sorted(set(params) - set(self.allowed))
        if unknown:
            raise BadRequest(f"unknown parameter {', '.join(map(repr, unknown))}; this page takes: "
                             f"{', '.join(self.allowed) or 'none'}")
        self.values = {k: v.strip() for k, v in params.items() if v.strip()}

    def text(self, key: str, *, max_chars: int = 200) -> str | None:
        value = self.values.get(key)
        if value is not None and len(value) > max_chars:
            raise BadRequest(f"{key} must be at most {max_chars} characters, got {len(value)}")
        return value

    def integer(self, key: str, *, low: int, high: int = MAX_ID, default: int | None = None) -> int | None:
        value = self.values.get(key)
        if value is None:
            return default
        return to_int(value, key, low=low, high=high)

    def number(self, key: str) -> float | None:
        value = self.values.get(key)
        if value is None:
            return None
        try:
            out = float(value)
        except ValueError:
            raise BadRequest(f"{key} must be a number, got {value!r}") from None
        if not math.isfinite(out):
            raise BadRequest(f"{key} must be a finite number, got {value!r}")
        return out

    def choice(self, key: str, valid: Iterable[str]) -> str | None:
        value = self.values.get(key)
        options = sorted(valid)
        if value is not None and value not in options:
            raise BadRequest(f"{key} {value!r} is not one of: {', '.join(options)}")
        return value


def to_int(value: str, what: str, *, low: int, high: int = MAX_ID) -> int:
    """`value` as an integer from `low` to `high`; `what` names it in the error."""
    if not _INT.fullmatch(value):
        raise BadRequest(f"{what} must be an integer, got {value!r}")
    out = int(value)
    if not low <= out <= high:
        raise BadRequest(f"{what} must be from {low} to {high}, got {out}")
    return out


class NotFound(Exception):
    """The page names an episode or problem the store does not hold; the message says which."""
