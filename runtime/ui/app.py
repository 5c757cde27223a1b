"""The viewer as a Starlette app, mounted by runtime/server.py at /ui (behind its Guard):

    GET /ui/, /ui/episodes        episodes, newest first (?problem= &level= &status= &origin= &policy=
                                  &reward_min= &reward_max= &page= &per_page=)
    GET /ui/episodes/{id}         one episode: evaluations, transcript, diffs
    GET /ui/problems              problems with episodes (?level=)
    GET /ui/problems/{id}         one problem: reward history, best verified solution
    GET /ui/training              per policy version curves, train_steps metrics (?run= &stage=)
    GET /ui/static/{name}         style.css, charts.js and the vendored uPlot (MIT, uPlot.LICENSE)

Read-only: every page reads the store through Store.read, once per request. A bad parameter is a
400 page, something the store does not hold a 404 page. The pages run no inline script, and the
Content-Security-Policy forbids it, so text that escaped the escaping still could not run.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Awaitable, Callable
from functools import cache

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from runtime.store import Store
from runtime.ui import episode, episodes, problems, training
from runtime.ui.html import el, page
from runtime.ui.params import BadRequest, NotFound

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
                               " connect-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
"""Sent with every page."""

TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".LICENSE": "text/plain; charset=utf-8"}


def html_response(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=HEADERS)


def error_page(status: int, title: str, message: str) -> HTMLResponse:
    body = el("div", el("p", message), el("p", el("a", "back to the episodes", href="/ui/episodes")),
              class_="error-box")
    return html_response(page(f"{status} · {title}", body), status)


async def _answer(make: Callable[[], Awaitable[str]]) -> Response:
    try:
        return html_response(await make())
    except BadRequest as exc:
        return error_page(400, "bad request", str(exc))
    except NotFound as exc:
        return error_page(404, "not found", str(exc))


@cache
def static_files() -> dict[str, tuple[bytes, str]]:
    """name -> (content, media type) of everything in static/ (read once)."""
    folder = importlib.resources.files("runtime.ui") / "static"
    out = {}
    for entry in folder.iterdir():
        suffix = next((s for s in TYPES if entry.name.endswith(s)), None)
        if entry.is_file() and suffix is not None:
            out[entry.name] = (entry.read_bytes(), TYPES[suffix])
    return out


def make_ui(store: Store) -> Starlette:
    """The /ui app on `store` (reads only)."""

    async def list_episodes(request: Request) -> Response:
        return await _answer(lambda: episodes.render(store, request.query_params))

    async def one_episode(request: Request) -> Response:
        return await _answer(lambda: episode.render(store, request.path_params["id"]))

    async def list_problems(request: Request) -> Response:
        return await _answer(lambda: problems.render_list(store, request.query_params))

    async def one_problem(request: Request) -> Response:
        return await _answer(lambda: problems.render_one(store, request.path_params["problem_id"],
                                                         request.query_params))

    async def train(request: Request) -> Response:
        return await _answer(lambda: training.render(store, request.query_params))

    async def static(request: Request) -> Response:
        found = static_files().get(request.path_params["name"])
        if found is None:
            return error_page(404, "not found", f"no static file {request.path_params['name']!r}")
        return Response(found[0], media_type=found[1],
                        headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"})

    async def not_found(request: Request, exc: Exception) -> Response:
        return error_page(404, "not found", f"no page {request.url.path}")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return error_page(405, "method not allowed", f"{request.method} is not allowed: the viewer only reads")

    routes = [Route("/", list_episodes), Route("/episodes", list_episodes), Route("/episodes/{id}", one_episode),
              Route("/problems", list_problems), Route("/problems/{problem_id}", one_problem),
              Route("/training", train), Route("/static/{name}", static)]
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed})
