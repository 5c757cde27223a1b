"""/ui/episodes: every episode, newest first, with filters (problem, level, status, origin, policy
version, reward range) and pages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast, get_args

import msgspec

from runtime.store import EpisodeStatus, Origin, Store, queries
from runtime.store.queries import EpisodeFilter, EpisodeSummary, FilterChoices
from runtime.ui.html import Safe, el, esc, join, num, page, seconds, speedup, table, url, when
from runtime.ui.params import BadRequest, Query

STATUSES = get_args(EpisodeStatus)
ORIGINS = get_args(Origin)
PER_PAGE = 50
MAX_PER_PAGE = 500
PARAMS = ("problem", "level", "status", "origin", "policy", "reward_min", "reward_max", "page", "per_page")


class Listing(msgspec.Struct, kw_only=True, frozen=True):
    """What the page was asked for."""

    filter: EpisodeFilter
    """Which episodes."""
    page: int
    """1-based page number."""
    per_page: int
    """Episodes per page."""


def parse(params: Mapping[str, str]) -> Listing:
    q = Query(params, PARAMS)
    f = EpisodeFilter(
        problem=q.text("problem"), level=q.integer("level", low=0, high=1000),
        status=cast(EpisodeStatus | None, q.choice("status", STATUSES)),
        origin=cast(Origin | None, q.choice("origin", ORIGINS)),
        policy_version=q.integer("policy", low=0),
        min_reward=q.number("reward_min"), max_reward=q.number("reward_max"))
    if f.min_reward is not None and f.max_reward is not None and f.min_reward > f.max_reward:
        raise BadRequest(f"reward_min ({f.min_reward:g}) is above reward_max ({f.max_reward:g})")
    per_page = q.integer("per_page", low=1, high=MAX_PER_PAGE, default=PER_PAGE)
    number = q.integer("page", low=1, high=10**9, default=1)
    assert per_page is not None and number is not None
    return Listing(filter=f, page=number, per_page=per_page)


def query_of(listing: Listing, page_no: int | None = None) -> dict[str, str | int | float | None]:
    """The listing as query parameters (the defaults left out)."""
    f = listing.filter
    return {"problem": f.problem, "level": f.level, "status": f.status, "origin": f.origin,
            "policy": f.policy_version, "reward_min": f.min_reward, "reward_max": f.max_reward,
            "per_page": None if listing.per_page == PER_PAGE else listing.per_page,
            "page": None if (page_no or listing.page) == 1 else (page_no or listing.page)}


async def render(store: Store, params: Mapping[str, str]) -> str:
    listing = parse(params)
    offset = (listing.page - 1) * listing.per_page
    (total, rows), choices = await store.read(lambda c: (
        queries.filter_episodes(c, listing.filter, limit=listing.per_page, offset=offset),
        queries.filter_choices(c)))
    body = join([form(listing, choices), pager(listing, total, len(rows)), episode_table(rows),
                 pager(listing, total, len(rows)) if rows else ""])
    return page("Episodes", body, section="episodes")


def _select(name: str, label: str, options: list[str], chosen: object) -> Safe:
    chosen_text = None if chosen is None else str(chosen)
    opts = [el("option", "any", value="")]
    opts += [el("option", o, value=o, selected=o == chosen_text) for o in options]
    return el("label", label, el("select", *opts, name=name))


def form(listing: Listing, choices: FilterChoices) -> Safe:
    f = listing.filter
    problems = list(choices.problems)
    if f.problem is not None and f.problem not in problems:
        problems.append(f.problem)  # keep an unknown name visible: the list below is empty for it
    return el(
        "form",
        _select("problem", "problem", problems, f.problem),
        _select("level", "level", [str(v) for v in choices.levels], f.level),
        _select("status", "status", list(STATUSES), f.status),
        _select("origin", "origin", list(ORIGINS), f.origin),
        _select("policy", "policy version", [str(v) for v in choices.policy_versions], f.policy_version),
        el("label", "reward ≥", el("input", type="number", step="any", name="reward_min",
                                   value=None if f.min_reward is None else f"{f.min_reward:g}")),
        el("label", "reward ≤", el("input", type="number", step="any", name="reward_max",
                                   value=None if f.max_reward is None else f"{f.max_reward:g}")),
        el("label", "per page", el("input", type="number", min=1, max=MAX_PER_PAGE, name="per_page",
                                   value=listing.per_page)),
        el("button", "filter", type="submit"), el("a", "clear", href="/ui/episodes"),
        class_="filters", method="get", action="/ui/episodes")


def pager(listing: Listing, total: int, shown: int) -> Safe:
    first = (listing.page - 1) * listing.per_page + 1
    pages = max(1, -(-total // listing.per_page))
    if shown:
        where = f"episodes {first}–{first + shown - 1} of {total} · page {listing.page} of {pages}"
    elif total:
        where = f"page {listing.page} is past the last page ({pages}) of {total} episodes"
    else:
        where = "no episodes match"
    prev = (el("a", "← newer", href=url("/ui/episodes", **query_of(listing, listing.page - 1)), rel="prev")
            if listing.page > 1 else Safe(""))
    nxt = (el("a", "older →", href=url("/ui/episodes", **query_of(listing, listing.page + 1)), rel="next")
           if listing.page < pages else Safe(""))
    return el("div", prev, el("span", where, class_="where"), nxt, class_="pager")


def status_cell(status: str, error: str | None) -> Safe:
    good = status == "submitted"
    return el("span", status, class_="ok" if good else "bad" if status != "running" else None, title=error)


def episode_table(rows: list[EpisodeSummary]) -> Safe:
    if not rows:
        return Safe("")
    head = ["episode", "problem", "policy", "origin", "status", "reward", "vs eager", "vs compile", "turns",
            "tool calls", "completion tokens", "started", "took"]
    return table(head, ([
        el("a", r.id, href=f"/ui/episodes/{r.id}"),
        el("a", r.problem, href=f"/ui/problems/{r.problem_id}"),
        esc(num(r.policy_version)), r.origin, status_cell(r.status, r.error), num(r.reward),
        speedup(r.speedup_eager), speedup(r.speedup_compile), r.turns, r.tool_calls, num(r.completion_tokens),
        when(r.started), seconds(r.seconds)] for r in rows), class_="episodes")
