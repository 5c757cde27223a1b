"""The progress of a `kagent bench` run on stderr: a rich bar with the ETA, passes and faults so far,
and one line per finished row (kept above the bar; plain lines when stderr is not a terminal)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from runtime.bench_report import summary
from runtime.bench_rows import BenchRow


class Bar:
    """What the runner reports to: `built` after each load_inline build ahead, `row` after each row."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress = progress
        self.task: TaskID = progress.add_task("bench", total=total, passed=0, faults=0)
        self.build_task: TaskID | None = None
        self.passed = 0
        self.faults = 0

    def builds(self, total: int) -> None:
        """`total` load_inline solutions are about to be built ahead."""
        if total:
            self.build_task = self.progress.add_task("load_inline built ahead", total=total, passed="-", faults="-")

    async def built(self, _job: object) -> None:
        if self.build_task is not None:
            self.progress.advance(self.build_task)

    async def row(self, row: BenchRow) -> None:
        self.passed += row.passed
        self.faults += row.fault is not None
        self.progress.console.print(summary(row), highlight=False, markup=False)
        self.progress.update(self.task, advance=1, passed=self.passed, faults=self.faults)


@contextmanager
def progress(total: int, *, disable: bool) -> Iterator[Bar]:
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("passed {task.fields[passed]} faults {task.fields[faults]}"), TimeElapsedColumn(),
               TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, console=console, disable=disable, transient=False) as p:
        yield Bar(p, total)
