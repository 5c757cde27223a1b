"""Charts: a <figure> that static/charts.js draws with uPlot, holding its data as JSON and as a
table (what a reader without JavaScript, or a test, sees)."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from runtime.ui.html import Safe, el, json_script, num, table, when


class Series(msgspec.Struct, kw_only=True):
    """One line of a chart."""

    label: str
    """Legend text."""
    values: list[float | None]
    """One value per x (None: a gap)."""


class ChartData(msgspec.Struct, kw_only=True):
    """What charts.js reads."""

    x_label: str
    """Name of the x axis."""
    y_label: str
    """Name of the y axis."""
    x: list[float]
    """x values, ascending."""
    series: list[Series]
    """The lines."""
    time: bool = False
    """x holds Unix times."""
    integer_x: bool = False
    """x holds whole numbers (policy versions, steps): ticks at whole numbers only."""


def chart(title: str, data: ChartData, *, empty: str = "nothing recorded yet") -> Safe:
    """The figure, or a line saying why there is none (no value to draw)."""
    if not any(v is not None for s in data.series for v in s.values):
        return el("figure", el("figcaption", title), el("p", empty, class_="muted"), class_="chart empty")
    head = [data.x_label, *(s.label for s in data.series)]
    rows = [[when(x) if data.time else num(x, 6), *(num(s.values[i], 4) for s in data.series)]
            for i, x in enumerate(data.x)]
    return el("figure", el("figcaption", title), el("div", class_="plot"), json_script(data, "chart-data"),
              el("details", el("summary", "data"), table(head, rows)), class_="chart")


def points(xs: Sequence[float], *series: tuple[str, Sequence[float | None]]) -> tuple[list[float], list[Series]]:
    """x values and series, sorted by x."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    return [float(xs[i]) for i in order], [Series(label=label, values=[values[i] for i in order])
                                           for label, values in series]
