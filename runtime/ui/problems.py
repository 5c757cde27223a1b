"""/ui/problems: every problem that has episodes, summed up; /ui/problems/{id}: one problem's
reward history (a chart and a table) and its best verified solution with the files that earned it."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote

from runtime.store import Conn, EpisodeDetail, ProblemRow, Store, queries
from runtime.store.queries import ProblemStats, RewardPoint, VerifiedSolution
from runtime.store.sql import select_episode, select_problems
from runtime.ui.charts import ChartData, chart, points
from runtime.ui.evaluation import dl
from runtime.ui.files import Files, replay
from runtime.ui.html import Safe, el, join, num, page, pre, speedup, table, url, when, yes
from runtime.ui.params import BadRequest, NotFound, Query


async def render_list(store: Store, params: Mapping[str, str]) -> str:
    level = Query(params, ("level",)).integer("level", low=0, high=1000)
    rows = [r for r in await store.read(queries.problem_stats) if level is None or r.level == level]
    what = f"{len(rows)} problems with episodes" + ("" if level is None else f" at level {level}")
    return page("Problems", join([el("p", what, class_="muted"), problem_table(rows)]), section="problems")


def _rate(part: int, whole: int) -> str:
    return "—" if not whole else f"{100 * part / whole:.0f}%"


def problem_table(rows: list[ProblemStats]) -> Safe:
    head = ["problem", "level", "source", "episodes", "graded", "passed", "pass rate", "mean reward", "best reward",
            "best vs eager", "last started"]
    return table(head, ([
        el("a", r.name, href=f"/ui/problems/{quote(r.problem_id)}"), num(r.level), r.source,
        el("a", r.episodes, href=url("/ui/episodes", problem=r.name)), r.graded, r.passed, _rate(r.passed, r.graded),
        num(r.mean_reward), num(r.best_reward), speedup(r.best_speedup_eager), when(r.last_started)]
        for r in rows), class_="problems")


class _Found:
    """What one problem's page reads, in one read transaction."""

    def __init__(self, conn: Conn, problem_id: str) -> None:
        rows = select_problems(conn, problem_id)
        self.problem: ProblemRow | None = rows[0] if rows else None
        self.history: list[RewardPoint] = queries.problem_history(conn, problem_id)
        self.best: VerifiedSolution | None = queries.best_verified(conn, problem_id)
        self.episode: EpisodeDetail | None = None if self.best is None else select_episode(conn, self.best.episode_id)


async def render_one(store: Store, problem_id: str, params: Mapping[str, str]) -> str:
    Query(params, ())
    if not problem_id or len(problem_id) > 200:
        raise BadRequest(f"problem id must be 1 to 200 characters, got {len(problem_id)}")
    found = await store.read(lambda c: _Found(c, problem_id))
    if found.problem is None:
        raise NotFound(f"no problem {problem_id!r}")
    p = found.problem
    h = found.history
    graded = [x for x in h if x.reward is not None]
    facts: list[tuple[str, object]] = [
        ("id", p.id), ("level", num(p.level)), ("source", p.source), ("file", p.path or "—"),
        ("precision", p.precision or "—"), ("tier", num(p.tier)),
        ("episodes", el("a", len(h), href=url("/ui/episodes", problem=p.name))),
        ("passed", f"{sum(x.passed for x in graded)} of {len(graded)} graded")]
    body = [dl(facts), el("h2", "reward history"), el("div", *history_charts(h), class_="charts"),
            history_table(h), el("h2", "best verified solution"), best_section(found)]
    if p.code:
        body += [el("h2", "problem source"), el("details", el("summary", "model.py"), pre(p.code))]
    return page(f"Problem {p.name}", join(body), section="problems", charts=bool(h))


def history_charts(h: list[RewardPoint]) -> list[Safe]:
    xs = [x.started for x in h]
    x, series = points(xs, ("reward", [x.reward for x in h]))
    rewards = chart("reward per episode", ChartData(x_label="started", y_label="reward", x=x, series=series, time=True))
    x, series = points(xs, ("vs eager", [x.speedup_eager if x.passed else None for x in h]),
                       ("vs torch.compile", [x.speedup_compile if x.passed else None for x in h]))
    speed = chart("speedup of passed episodes", ChartData(x_label="started", y_label="speedup", x=x, series=series,
                                                         time=True))
    return [rewards, speed]


def history_table(h: list[RewardPoint]) -> Safe:
    return table(["episode", "started", "policy", "status", "reward", "passed", "vs eager", "vs compile"], ([
        el("a", x.episode_id, href=f"/ui/episodes/{x.episode_id}"), when(x.started), num(x.policy_version), x.status,
        num(x.reward), yes(x.passed), speedup(x.speedup_eager), speedup(x.speedup_compile)] for x in reversed(h)),
        class_="history")


def best_section(found: _Found) -> Safe:
    best, episode = found.best, found.episode
    if best is None or episode is None:
        return el("p", "no evaluation of this problem has passed yet", class_="muted")
    # The workspace as that evaluation graded it: after the tool call that asked for it, or at the end.
    files: Files = replay(episode.tool_calls, until=best.tool_call_id)
    where = "the final grading" if best.tool_call_id is None else f"a {best.mode} call"
    facts: list[tuple[str, object]] = [
        ("verified by", join([el("a", f"evaluation {best.evaluation_id}",
                                  href=f"/ui/episodes/{best.episode_id}#evaluation-{best.evaluation_id}"),
                              f" ({where}) in ", el("a", f"episode {best.episode_id}",
                                                    href=f"/ui/episodes/{best.episode_id}")])),
        ("vs eager", speedup(best.speedup_eager)), ("vs torch.compile", speedup(best.speedup_compile))]
    shown = [join([el("h3", el("code", path)), pre(text)]) for path, text in sorted(files.items())]
    return join([dl(facts), *shown])
