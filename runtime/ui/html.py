"""HTML built by construction: every value is escaped unless it is `Safe` (made by `el`, `join`
or `esc` itself), so text from the store (the agent's output, tool results, problem names) can
never become markup. Plus the page layout and the number formats the pages share."""

from __future__ import annotations

import html
import importlib.resources
import math
import time
from collections.abc import Iterable
from functools import cache
from string import Template
from urllib.parse import urlencode

import msgspec


class Safe(str):
    """Markup that is already escaped."""

    __slots__ = ()


Child = object
"""Anything `esc` takes: Safe passes as it is, None is nothing, everything else is str()-ed."""


def esc(value: Child) -> Safe:
    if isinstance(value, Safe):
        return value
    if value is None:
        return Safe("")
    return Safe(html.escape(str(value), quote=True))


def join(parts: Iterable[Child], sep: str = "") -> Safe:
    return Safe(esc(sep).join(esc(p) for p in parts))


VOID = frozenset({"br", "hr", "img", "input", "meta", "link"})


def el(tag: str, *children: Child, **attrs: str | int | float | bool | None) -> Safe:
    """`<tag attrs>children</tag>`. `class_` is `class`, `_` in names is `-`; True is a bare
    attribute, None and False leave it out."""
    parts = [tag]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        name = key.rstrip("_").replace("_", "-")
        parts.append(name if value is True else f'{name}="{esc(value)}"')
    opening = f"<{' '.join(parts)}>"
    if tag in VOID:
        return Safe(opening)
    return Safe(f"{opening}{join(children)}</{tag}>")


def json_script(value: object, class_: str) -> Safe:
    """Data for the page's scripts: JSON inside <script type="application/json">, with <, > and &
    written as JSON escapes so no text can close the element."""
    text = msgspec.json.encode(value).decode()
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Safe(f'<script type="application/json" class="{esc(class_)}">{text}</script>')


def url(path: str, **query: str | int | float | None) -> str:
    """`path?query` without the None and empty values."""
    q = {k: v for k, v in query.items() if v is not None and v != ""}
    return f"{path}?{urlencode(q)}" if q else path


def table(head: Iterable[Child], rows: Iterable[Iterable[Child]], *, class_: str | None = None) -> Safe:
    return el("table", el("thead", el("tr", *(el("th", h) for h in head))),
              el("tbody", *(el("tr", *(el("td", c) for c in row)) for row in rows)), class_=class_)


def pre(text: str | None, *, class_: str | None = None) -> Safe:
    return el("pre", text or "", class_=class_)


# ----------------------------------------------------------------------------- formats


def num(value: float | int | None, digits: int = 3) -> str:
    """A number for people: `—` when not measured, `g` format otherwise."""
    if value is None:
        return "—"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def speedup(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"


def when(ts: float | None) -> Safe:
    if ts is None:
        return esc("—")
    text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
    return el("time", text, datetime=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(ts)))


def yes(flag: bool) -> Safe:
    return el("span", "yes" if flag else "no", class_="ok" if flag else "bad")


# ------------------------------------------------------------------------------ layout


NAV = (("episodes", "/ui/episodes"), ("problems", "/ui/problems"), ("training", "/ui/training"))


@cache
def _template() -> Template:
    return Template((importlib.resources.files("runtime.ui") / "templates" / "page.html").read_text(encoding="utf-8"))


def page(title: str, body: Child, *, section: str | None = None, charts: bool = False) -> str:
    """The whole document: layout, navigation, then `body`; `charts` loads uPlot and charts.js."""
    nav = join(el("a", name, href=href, class_="here" if name == section else None) for name, href in NAV)
    scripts = join([el("script", src="/ui/static/uPlot.iife.min.js"), el("script", src="/ui/static/charts.js")]
                   ) if charts else Safe("")
    return _template().substitute(title=esc(title), nav=nav, main=esc(body), scripts=scripts)
