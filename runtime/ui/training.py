"""/ui/training: what each policy version achieved (mean reward, pass rate, geometric-mean
speedups, as curves over the versions) and the trainer's `train_steps` metrics of one run and
stage (losses, KL, clip fraction, reward and pass rate, as curves over the steps)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import get_args

from runtime.store import PolicyRow, Store, TrainStage, TrainStepRow, queries
from runtime.store.queries import PolicyStats
from runtime.store.sql import select_policies, select_train_steps
from runtime.ui.charts import ChartData, chart, points
from runtime.ui.html import Safe, el, join, num, page, table, url, when
from runtime.ui.params import NotFound, Query

STAGES = get_args(TrainStage)

GROUPS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("loss", lambda n: "loss" in n or n == "nll"),
    ("KL", lambda n: "kl" in n),
    ("clip fraction", lambda n: n.startswith("clip") or n == "is_truncated"),
    ("reward and pass rate", lambda n: n in ("reward", "pass_rate")),
)
"""The step charts: a metric goes to the first group whose test it passes; the rest are tabled."""


async def render(store: Store, params: Mapping[str, str]) -> str:
    q = Query(params, ("run", "stage"))
    run, stage = q.text("run"), q.choice("stage", STAGES)
    stats, steps, policies = await store.read(lambda c: (queries.policy_stats(c), select_train_steps(c),
                                                         select_policies(c)))
    runs = run_index(steps)
    chosen = [s for s in steps if (run is None or s.run == run) and (stage is None or s.stage == stage)]
    if (run is not None or stage is not None) and not chosen:
        asked = " and ".join(f"{k} {v!r}" for k, v in (("run", run), ("stage", stage)) if v is not None)
        raise NotFound(f"no train steps for {asked}")
    if chosen:  # a run without a stage, or a stage without a run: the newest step's run and stage
        newest = chosen[-1]
        chosen = [s for s in chosen if s.run == newest.run and s.stage == newest.stage]
    body = [el("h2", "per policy version"), el("div", *version_charts(stats), class_="charts"),
            version_table(stats, policies), el("h2", "trainer runs"), runs_table(runs, chosen)]
    if chosen:
        body += [el("h2", f"run {chosen[0].run} · stage {chosen[0].stage} · {len(chosen)} steps"),
                 el("div", *step_charts(chosen), class_="charts"), other_metrics(chosen)]
    return page("Training", join(body), section="training", charts=True)


def version_charts(stats: list[PolicyStats]) -> list[Safe]:
    versioned = [s for s in stats if s.policy_version is not None]
    xs = [float(s.policy_version or 0) for s in versioned]

    def one(title: str, y: str, *series: tuple[str, list[float | None]]) -> Safe:
        x, lines = points(xs, *series)
        return chart(title, ChartData(x_label="policy version", y_label=y, x=x, series=lines, integer_x=True),
                     empty="no finished episodes of a versioned policy yet")
    return [one("mean reward", "reward", ("mean reward", [s.mean_reward for s in versioned])),
            one("pass rate", "share passed", ("pass rate", [s.pass_rate for s in versioned])),
            one("speedup of passed episodes (geometric mean)", "speedup",
                ("vs eager", [s.speedup_eager for s in versioned]),
                ("vs torch.compile", [s.speedup_compile for s in versioned]))]


def version_table(stats: list[PolicyStats], policies: list[PolicyRow]) -> Safe:
    paths = {p.version: p for p in policies}
    return table(["policy", "checkpoint", "recorded", "episodes", "graded", "mean reward", "pass rate", "vs eager",
                  "vs compile"], ([
        el("a", num(s.policy_version), href=url("/ui/episodes", policy=s.policy_version)),
        paths[s.policy_version].path if s.policy_version in paths else "—",
        when(paths[s.policy_version].created) if s.policy_version in paths else "—",
        s.episodes, s.graded, num(s.mean_reward), num(s.pass_rate), num(s.speedup_eager), num(s.speedup_compile)]
        for s in stats), class_="versions")


def run_index(steps: list[TrainStepRow]) -> dict[tuple[str, str], list[TrainStepRow]]:
    out: dict[tuple[str, str], list[TrainStepRow]] = {}
    for s in steps:
        out.setdefault((s.run, s.stage), []).append(s)
    return out


def runs_table(runs: dict[tuple[str, str], list[TrainStepRow]], chosen: list[TrainStepRow]) -> Safe:
    if not runs:
        return el("p", "no train steps recorded yet (python -m trainer.run writes one row per step)", class_="muted")
    here = (chosen[0].run, chosen[0].stage) if chosen else None
    return table(["run", "stage", "steps", "first", "last", "policy versions published"], ([
        el("a", run, href=url("/ui/training", run=run, stage=stage), class_="here" if (run, stage) == here else None),
        stage, len(rows), when(rows[0].created), when(rows[-1].created),
        ", ".join(str(s.policy_version) for s in rows if s.policy_version is not None) or "—"]
        for (run, stage), rows in runs.items()), class_="runs")


def step_charts(steps: list[TrainStepRow]) -> list[Safe]:
    names = sorted({n for s in steps for n in s.metrics})
    xs = [float(s.step) for s in steps]
    out = []
    for title, _ in GROUPS:
        mine = [n for n in names if _group(n) == title]
        x, lines = points(xs, *((n, [s.metrics.get(n) for s in steps]) for n in mine))
        out.append(chart(title, ChartData(x_label="step", y_label=title, x=x, series=lines, integer_x=True),
                         empty=f"no {title} metric in these steps"))
    return out


def _group(name: str) -> str | None:
    return next((title for title, test in GROUPS if test(name)), None)


def other_metrics(steps: list[TrainStepRow]) -> Safe:
    names = sorted({n for s in steps for n in s.metrics if _group(n) is None})
    if not names:
        return Safe("")
    last = steps[-1]
    rows = [[n, num(last.metrics.get(n), 5)] for n in names]
    return join([el("h3", f"other metrics at step {last.step}"), table(["metric", "value"], rows)])
