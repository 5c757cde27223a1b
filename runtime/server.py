"""kagentd's HTTP API (Starlette on uvicorn), DESIGN §12.

    POST /v1/chat/completions     OpenAI-compatible; model `kagent`; the last user message holds a
                                  KernelBench module; the answer holds the best verified ModelNew,
                                  its kernels and speedups. `stream: true` -> SSE chunks.
    GET  /v1/models               the one model, `kagent`
    GET  /health                  daemon and scheduler status (what `kagentd status` prints)
    GET  /v1/episodes             episode summaries, newest first (?status= &origin= &limit= &before=)
    GET  /v1/episodes/{id}        one episode with turns (token ids), tool calls, evaluations
    GET  /v1/episodes/{id}/transcript   the readable transcript (text/plain)
    GET  /v1/export               finished episodes as JSONL (?trainable=true &all=true)
    GET  /ui/...                  the read-only viewer (runtime/ui; docs/viewer.md)

Every route needs `Authorization: Bearer <http.api_key>` when a key is set. Errors are OpenAI's
shape: `{"error": {"message", "type", "code", "param"}}` with a 4xx/5xx status.
"""

from __future__ import annotations

import hmac
import json
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, get_args

import anyio
import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from runtime.answer import RequestError, extract_module, last_user_text, render_answer
from runtime.config import HttpConfig
from runtime.episode import EpisodeEvent, EpisodeOutcome
from runtime.problem_check import ProblemRejected
from runtime.scheduler import Draining, SchedulerStatus
from runtime.store import EpisodeStatus, Origin, Store, queries
from runtime.store.export import iter_records
from runtime.stream_format import SEPARATOR
from runtime.transcript import render
from runtime.ui import BrowserAuth, make_ui
from skills.evaluator.problem import ProblemError, source_id

MODEL = "kagent"


class Service(Protocol):
    """What the server needs from the scheduler (runtime.scheduler.Scheduler)."""

    async def solve(self, source: str, *, name: str = "request",
                    on_event: Callable[[EpisodeEvent], Awaitable[None]] | None = None) -> EpisodeOutcome: ...

    def status(self) -> SchedulerStatus: ...


@dataclass
class ServerState:
    """Shared by the routes; the daemon mutates `http`, `draining` and `extra` while serving."""

    service: Service
    """The scheduler."""
    store: Store
    """The store (reads only)."""
    http: HttpConfig
    """Current HTTP settings (replaced on config reload)."""
    started: float = field(default_factory=time.time)
    """Unix time the daemon started."""
    draining: bool = False
    """Shutting down: new solve requests get 503."""
    extra: Callable[[], dict[str, Any]] = dict
    """More /health fields (hotload, config reload notes, paths), supplied by the daemon."""
    active: set[anyio.CancelScope] = field(default_factory=set)
    """Solve requests in progress (the daemon cancels them when the grace period is over)."""

    async def end_requests(self, timeout_s: float = 30.0) -> int:
        """Cancel every solve request in progress and wait until each has ended (its episode
        marked `cancelled`); returns how many there were. Runs before the store closes."""
        n = len(self.active)
        for scope in list(self.active):
            scope.cancel()
        with anyio.move_on_after(timeout_s):
            while self.active:  # noqa: ASYNC110 (each request removes itself when it ends)
                await anyio.sleep(0.02)
        return n


def _error(status: int, message: str, *, code: str | None = None, param: str | None = None,
           headers: dict[str, str] | None = None) -> Response:
    kind = "invalid_request_error" if status < 500 else "server_error"
    if status == 401:
        kind = "authentication_error"
    body = {"error": {"message": message, "type": kind, "code": code, "param": param}}
    return Response(msgspec.json.encode(body), status_code=status, media_type="application/json",
                    headers=headers)


def _json(value: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(value), status_code=status, media_type="application/json")


# ---------------------------------------------------------------------------- middleware


class Guard:
    """Bearer auth and the body size limit, before any route runs (pure ASGI: streams pass)."""

    def __init__(self, app: ASGIApp, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        http = self.state.http
        if http.api_key:
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), http.api_key.encode()):
                why = "missing" if "authorization" not in headers else "wrong"
                await _error(401, f"{why} API key: send `Authorization: Bearer <key>` (http.api_key)",
                             code="invalid_api_key", headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)
                return
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > http.max_body_bytes:
            await _error(413, f"request body of {int(length)} bytes exceeds the limit of {http.max_body_bytes}"
                              " bytes (http.max_body_bytes)", code="body_too_large")(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The body as a JSON object; 413 past `limit` bytes (chunked bodies are counted too)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise RequestError(413, f"request body exceeds the limit of {limit} bytes (http.max_body_bytes)",
                               code="body_too_large")
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"request body is not valid JSON: {exc}", code="invalid_json") from None
    except RecursionError:  # json.loads recurses once per nesting level
        raise RequestError(400, "request body is nested too deeply to parse", code="invalid_json") from None
    if not isinstance(data, dict):
        raise RequestError(400, "request body must be a JSON object", code="invalid_json")
    return data


# ------------------------------------------------------------------------------ solving


class SolveRequest(msgspec.Struct, kw_only=True):
    """A parsed chat completion request."""

    source: str
    """The KernelBench module."""
    name: str
    """Problem name for the store."""
    stream: bool
    """Answer as SSE chunks."""
    include_usage: bool
    """stream_options.include_usage: a last chunk with `usage`."""


def parse_solve(body: dict[str, Any]) -> SolveRequest:
    model = body.get("model")
    if model != MODEL:
        raise RequestError(404, f"model {model!r} is not served here; the only model is {MODEL!r}",
                           code="model_not_found", param="model")
    if body.get("n", 1) != 1:
        raise RequestError(400, "n must be 1: one episode answers one request", param="n")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise RequestError(400, "stream must be true or false", param="stream")
    options = body.get("stream_options") or {}
    check_sampling(body)
    source = extract_module(last_user_text(body.get("messages")))
    name = body.get("problem_name", f"request/{source_id(source)[:8]}")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise RequestError(400, "problem_name must be a non-empty string of at most 200 characters",
                           param="problem_name")
    return SolveRequest(source=source, name=name.strip(), stream=stream,
                        include_usage=bool(isinstance(options, dict) and options.get("include_usage")))


# OpenAI sampling fields a client may send: checked so a bad value is refused, not ignored. The
# episode samples with the daemon's policy.* settings (one policy, one behaviour for training).
_SAMPLING: dict[str, tuple[type, float, float]] = {
    "temperature": (float, 0.0, 2.0), "top_p": (float, 0.0, 1.0), "max_tokens": (int, 1, 2**31 - 1),
    "max_completion_tokens": (int, 1, 2**31 - 1), "presence_penalty": (float, -2.0, 2.0),
    "frequency_penalty": (float, -2.0, 2.0)}


def check_sampling(body: dict[str, Any]) -> None:
    """A 400 for a sampling field of the wrong type or out of OpenAI's range (None is absent)."""
    for key, (kind, low, high) in _SAMPLING.items():
        value = body.get(key)
        if value is None:
            continue
        ok_type = isinstance(value, int) if kind is int else isinstance(value, int | float)
        if isinstance(value, bool) or not ok_type or not low <= value <= high:
            what = "an integer" if kind is int else "a number"
            raise RequestError(400, f"{key} must be {what} from {low:g} to {high:g}, got {value!r}", param=key)


EPISODE_STATUSES = frozenset(get_args(EpisodeStatus))
ORIGINS = frozenset(get_args(Origin))
MAX_ID = 2**63 - 1  # SQLite's INTEGER


def _int_param(q: Any, key: str, default: int | None, low: int, high: int) -> int | None:
    if key not in q:
        return default
    try:
        value = int(q[key])
    except ValueError:
        raise RequestError(400, f"{key} must be an integer, got {q[key]!r}", param=key) from None
    if not low <= value <= high:
        raise RequestError(400, f"{key} must be from {low} to {high}, got {value}", param=key)
    return value


def _choice_param(q: Any, key: str, valid: frozenset[str]) -> str | None:
    value = q.get(key)
    if value is not None and value not in valid:
        raise RequestError(400, f"{key} {value!r} is not one of: {', '.join(sorted(valid))}", param=key)
    return value  # type: ignore[no-any-return]


class Solve:
    """One solve request as an ASGI response: runs the episode, watches for the client leaving,
    and answers with JSON or SSE. Headers wait for the episode to start, so a problem that does
    not load still gets a 400."""

    def __init__(self, state: ServerState, req: SolveRequest) -> None:
        self.state = state
        self.req = req
        self.id = f"chatcmpl-{uuid.uuid4().hex}"
        self.created = int(time.time())
        self.outcome: EpisodeOutcome | None = None
        self.error: BaseException | None = None
        self.sent = False

    async def _solve(self, events: anyio.abc.ObjectSendStream[EpisodeEvent]) -> None:
        async with events:
            async def on_event(ev: EpisodeEvent) -> None:
                await events.send(ev)
            try:
                self.outcome = await self.state.service.solve(self.req.source, name=self.req.name, on_event=on_event)
            except Exception as exc:  # reported to the client below: a 400 or an error chunk
                self.error = exc

    async def _watch_client(self, receive: Receive, scope: anyio.CancelScope) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                if self.state.http.cancel_on_disconnect:
                    scope.cancel()
                return

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        send_events, events = anyio.create_memory_object_stream[EpisodeEvent](1000)
        self.sent = False

        async def tracked(message: Message) -> None:
            self.sent = True
            await send(message)
        async with anyio.create_task_group() as tg:
            self.state.active.add(tg.cancel_scope)
            try:
                tg.start_soon(self._solve, send_events)
                tg.start_soon(self._watch_client, receive, tg.cancel_scope)
                async with events:
                    if self.req.stream:
                        await self._stream(events, tracked)
                    else:
                        async for _ in events:
                            pass
                        await self._reply(tracked)
                tg.cancel_scope.cancel()
            finally:
                self.state.active.discard(tg.cancel_scope)
        if self.outcome is None and self.error is None:  # cancelled: the daemon stopped, or the client left
            await self._cancelled(send)

    async def _cancelled(self, send: Send) -> None:
        failure = _error(503, "kagentd stopped before the episode finished (it is stored as cancelled)",
                         code="cancelled")
        if not self.sent:
            await failure({"type": "http"}, _no_receive, send)
        else:
            await _body(send, _event_bytes(bytes(failure.body)) + SSE_DONE, more=False)

    def _failure(self) -> Response:
        exc = self.error
        if self.outcome is not None and self.outcome.status in ("cancelled", "interrupted"):
            o = self.outcome
            return _error(503, f"kagentd stopped before the episode finished: {o.error} (episode"
                               f" {o.episode_id}, stored as {o.status})", code="cancelled")
        if self.outcome is not None:  # the episode could not run: the policy server failed, or a bug
            o = self.outcome
            status = 502 if o.status == "policy_error" else 500
            why = "the policy server failed" if o.status == "policy_error" else "the episode failed"
            return _error(status, f"{why}: {o.error} (episode {o.episode_id}; `kagentd status` says more)",
                          code=o.status)
        if isinstance(exc, ProblemError | ProblemRejected):
            return _error(400, f"the problem does not load: {exc}", code="bad_problem", param="messages")
        if isinstance(exc, Draining):  # stopping began while the request waited for room: retryable
            return _error(503, str(exc), code="draining")
        return _error(500, f"the episode failed: {type(exc).__name__}: {exc}", code="episode_failed")

    def _extension(self, outcome: EpisodeOutcome) -> dict[str, Any]:
        return {"episode_id": outcome.episode_id, "status": outcome.status, "reward": outcome.reward,
                "speedup_eager": outcome.speedup_eager, "speedup_compile": outcome.speedup_compile,
                "files": outcome.files}

    async def _usage(self, outcome: EpisodeOutcome) -> dict[str, int]:
        eid = outcome.episode_id
        return msgspec.to_builtins(await self.state.store.read(lambda c: queries.usage(c, eid)))  # type: ignore[no-any-return]

    def _ungraded(self) -> bool:
        return self.outcome is None or self.outcome.status in ("policy_error", "error", "cancelled", "interrupted")

    async def _reply(self, send: Send) -> None:
        if self._ungraded():
            await self._failure()({"type": "http"}, _no_receive, send)
            return
        outcome = self.outcome
        assert outcome is not None
        body = {"id": self.id, "object": "chat.completion", "created": self.created, "model": MODEL,
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "content": render_answer(outcome, self.req.name)}}],
                "usage": await self._usage(outcome), "kagent": self._extension(outcome)}
        response = _json(body)
        response.headers["X-Kagent-Episode"] = str(outcome.episode_id)
        await response({"type": "http"}, _no_receive, send)

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        data = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": MODEL,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **extra}
        return _event(data)

    async def _stream(self, events: anyio.abc.ObjectReceiveStream[EpisodeEvent], send: Send) -> None:
        first: EpisodeEvent | None = None
        async for ev in events:  # wait for the start (or the end) before the headers go out
            first = ev
            break
        if first is None and self.outcome is None:
            await self._failure()({"type": "http"}, _no_receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no")]})
        body = self._chunk({"role": "assistant", "content": ""})
        if first is not None:
            body += self._chunk({"content": first.text.rstrip("\n") + "\n"})
        await _body(send, body)
        while True:
            with anyio.move_on_after(self.state.http.keepalive_seconds) as waited:
                try:
                    ev = await events.receive()
                except anyio.EndOfStream:
                    break
            if waited.cancelled_caught:
                await _body(send, b": keepalive\n\n")
                continue
            await _body(send, self._chunk({"content": ev.text.rstrip("\n") + "\n"}))
        await self._stream_end(send)

    async def _stream_end(self, send: Send) -> None:
        if self._ungraded():
            await _body(send, _event_bytes(bytes(self._failure().body)) + SSE_DONE, more=False)
            return
        outcome = self.outcome
        assert outcome is not None
        body = self._chunk({"content": SEPARATOR + render_answer(outcome, self.req.name)})
        body += self._chunk({}, "stop", kagent=self._extension(outcome))
        if self.req.include_usage:
            data = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": MODEL,
                    "choices": [], "usage": await self._usage(outcome)}
            body += _event(data)
        await _body(send, body + SSE_DONE, more=False)


SSE_DONE = b"data: [DONE]\n\n"
"""The last server-sent event of a stream, as OpenAI's API ends one."""


def _event(data: Any) -> bytes:
    """One server-sent event carrying `data` as JSON."""
    return _event_bytes(msgspec.json.encode(data))


def _event_bytes(json_body: bytes) -> bytes:
    return b"data: " + json_body + b"\n\n"


async def _body(send: Send, body: bytes, *, more: bool = True) -> None:
    await send({"type": "http.response.body", "body": body, "more_body": more})


async def _no_receive() -> Message:
    return {"type": "http.disconnect"}


# -------------------------------------------------------------------------------- routes


def _routes(state: ServerState) -> list[Route]:
    async def chat(request: Request) -> Response | None:
        if state.draining:
            return _error(503, "kagentd is shutting down and takes no new episodes", code="draining")
        try:
            req = parse_solve(await read_json(request, state.http.max_body_bytes))
        except RequestError as exc:
            return _error(exc.status, str(exc), code=exc.code, param=exc.param)
        return _AsgiResponse(Solve(state, req))

    async def models(request: Request) -> Response:
        return _json({"object": "list", "data": [
            {"id": MODEL, "object": "model", "created": int(state.started), "owned_by": "kagent"}]})

    async def health(request: Request) -> Response:
        counts = await state.store.read(queries.status_counts)
        return _json({"status": "draining" if state.draining else "ok", "pid": os.getpid(),
                      "uptime_s": round(time.time() - state.started, 3), "db": str(state.store.path),
                      "scheduler": msgspec.to_builtins(state.service.status()), "episodes": counts,
                      **state.extra()})

    async def episodes(request: Request) -> Response:
        q = request.query_params
        try:
            limit = _int_param(q, "limit", 50, 1, 1000)
            before = _int_param(q, "before", None, 1, MAX_ID)
            status = _choice_param(q, "status", EPISODE_STATUSES)
            origin = _choice_param(q, "origin", ORIGINS)
        except RequestError as exc:
            return _error(exc.status, str(exc), code=exc.code, param=exc.param)
        rows = await state.store.read(lambda c: queries.episode_summaries(
            c, status=status, origin=origin, limit=limit, before_id=before))
        return _json({"object": "list", "data": rows})

    async def episode(request: Request) -> Response:
        eid = request.path_params["id"]
        if not 1 <= eid <= MAX_ID:
            return _error(400, f"episode id must be from 1 to {MAX_ID}, got {eid}", param="id")
        detail = await state.store.get_episode(eid)
        if detail is None:
            return _error(404, f"no episode {eid}", code="episode_not_found")
        if request.url.path.endswith("/transcript"):
            return Response(render(detail, full=request.query_params.get("full") == "true"), media_type="text/plain")
        return _json(detail)

    async def export(request: Request) -> Response:
        q = request.query_params
        trainable = True if q.get("trainable") == "true" else None
        finished = None if q.get("all") == "true" else True

        async def lines() -> Any:
            async for records in iter_records(state.store, finished=finished, trainable=trainable):
                yield b"".join(msgspec.json.encode(r) + b"\n" for r in records)
        return StreamingResponse(lines(), media_type="application/x-ndjson")

    return [Route("/v1/chat/completions", chat, methods=["POST"]), Route("/v1/models", models),
            Route("/health", health), Route("/v1/episodes", episodes),
            Route("/v1/episodes/{id:int}", episode), Route("/v1/episodes/{id:int}/transcript", episode),
            Route("/v1/export", export)]


class _AsgiResponse(Response):
    """Lets a route hand the connection to an ASGI callable (Solve)."""

    def __init__(self, inner: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        super().__init__()
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.inner(scope, receive, send)


def make_app(state: ServerState) -> ASGIApp:
    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(404, f"no route {request.method} {request.url.path}", code="not_found")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return _error(405, f"{request.method} is not allowed on {request.url.path}", code="method_not_allowed")

    app = Starlette(routes=[*_routes(state), Mount("/ui", app=make_ui(state.store))],
                    exception_handlers={404: not_found, 405: not_allowed})
    return BrowserAuth(Guard(app, state))


# ------------------------------------------------------------------------------- serving


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the daemon owns SIGTERM/SIGINT."""

    @contextmanager
    def capture_signals(self) -> Any:
        yield


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (bound here so a busy port is a clear error before anything starts)."""
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                          flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError:
            sock.close()
            raise
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (http.host / http.port)") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def serve(app: ASGIApp, sock: socket.socket, *, grace_s: float,
                task_status: anyio.abc.TaskStatus[uvicorn.Server] = anyio.TASK_STATUS_IGNORED) -> None:
    """Serve on `sock` until `server.should_exit` is set (the daemon sets it)."""
    # Requests are ended by the daemon (ServerState.end_requests) before it stops the server.
    config = uvicorn.Config(app, log_config=None, lifespan="off", access_log=False,
                            timeout_graceful_shutdown=max(1, int(grace_s)))
    server = _Server(config)
    task_status.started(server)
    await server.serve(sockets=[sock])
