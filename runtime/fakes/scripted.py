"""A scripted policy server for tests and demos: real HTTP, OpenAI-compatible, vLLM-shaped.

It replays a script of assistant turns (text and/or tool calls). The step a request is at is
read from the conversation itself (the assistant turns it already holds), so any number of
episodes can talk to one server at once. A deterministic toy tokenizer (UTF-8 bytes + 3, with
<|im_start|> = 1 and <|im_end|> = 2) and a ChatML template with hermes tool calls make token ids
and logprobs real arrays, so token-in generation works end to end.

    POST /v1/chat/completions   tools -> tool_calls; logprobs; return_token_ids -> prompt_token_ids
                                (top level) and token_ids (per choice), as vLLM >= 0.10.2 does
    POST /v1/completions        prompt as token ids (or text); token_ids, prompt_token_ids, logprobs
    POST /tokenize              {"messages": [...], "add_generation_prompt": true} or {"prompt": "..."}
    GET  /v1/models             the model and every loaded LoRA adapter
    POST /v1/load_lora_adapter  {"lora_name", "lora_path"};  POST /v1/unload_lora_adapter {"lora_name"}
    GET  /_scripted/log         what the server saw (requests with their prompt ids, adapters)

Switches (ScriptedOptions): no token ids, no tool calling (400 like vLLM without
--enable-auto-tool-choice), the first N generation calls fail with 429/5xx, a delay per call,
looping the last turn.

    async with scripted_server(script, delay_s=0.1) as base_url: ...
    python -m runtime.fakes.scripted --script runtime/fakes/scripts/cpu_relu.json --port 8001
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import tomllib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from runtime.tokens import parse_hermes, render_hermes

SPECIAL = {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2}
OFFSET = 3
IM_END = SPECIAL["<|im_end|>"]
_SPECIAL_RE = re.compile("|".join(re.escape(s) for s in SPECIAL))
_NO_TOOLS = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'


def encode(text: str) -> list[int]:
    """Toy tokenizer: special strings -> their ids, everything else UTF-8 bytes + OFFSET."""
    ids: list[int] = []
    pos = 0
    for m in _SPECIAL_RE.finditer(text):
        ids += [b + OFFSET for b in text[pos:m.start()].encode("utf-8")]
        ids.append(SPECIAL[m.group(0)])
        pos = m.end()
    ids += [b + OFFSET for b in text[pos:].encode("utf-8")]
    return ids


_NAMES = {v: k for k, v in SPECIAL.items()}


def decode(ids: list[int]) -> str:
    out, buf = [], bytearray()
    for i in ids:
        if i in _NAMES:
            out.append(buf.decode("utf-8", errors="replace") + _NAMES[i])
            buf = bytearray()
        else:
            buf.append((i - OFFSET) & 0xFF)
    out.append(buf.decode("utf-8", errors="replace"))
    return "".join(out)


_ASSISTANT = encode("<|im_start|>assistant")


def assistant_turns(ids: list[int]) -> int:
    """How many `<|im_start|>assistant` headers a prompt holds (vectorised: prompts are long)."""
    arr = np.asarray(ids, dtype=np.int64)
    n = len(_ASSISTANT)
    starts = np.flatnonzero(arr[: max(0, len(arr) - n + 1)] == _ASSISTANT[0])
    return sum(1 for i in starts.tolist() if ids[i:i + n] == _ASSISTANT)


def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, add_generation_prompt: bool) -> str:
    """ChatML with hermes tool calls (the shape of Qwen's template, much smaller)."""
    out: list[str] = []
    if tools and (not messages or messages[0].get("role") != "system"):
        messages = [{"role": "system", "content": ""}, *messages]
    for i, m in enumerate(messages):
        role, content = m.get("role"), m.get("content") or ""
        if role == "system":
            block = content + ("\n\n# Tools\n<tools>\n" + "\n".join(json.dumps(t) for t in tools) + "\n</tools>"
                               if tools else "")
            out.append(f"<|im_start|>system\n{block}<|im_end|>\n")
        elif role == "assistant":
            calls = [(c["function"]["name"], _args(c["function"].get("arguments"))) for c in m.get("tool_calls") or []]
            out.append(f"<|im_start|>assistant\n{render_hermes(content, calls)}<|im_end|>\n")
        elif role == "tool":
            first = i == 0 or messages[i - 1].get("role") != "tool"
            last = i == len(messages) - 1 or messages[i + 1].get("role") != "tool"
            out.append(("<|im_start|>user" if first else "") + f"\n<tool_response>\n{content}\n</tool_response>"
                       + ("<|im_end|>\n" if last else ""))
        else:
            out.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
    if add_generation_prompt:
        out.append("<|im_start|>assistant\n")
    return "".join(out)


def _args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw if raw is not None else {}


def logprob(token: int, position: int) -> float:
    """A deterministic stand-in for a behaviour logprob (in (-2, 0))."""
    return -((token * 2654435761 + position * 40503) % 10007) / 10007.0 * 2.0 - 1e-3


# ------------------------------------------------------------------------------------ script


class ScriptCall(msgspec.Struct, forbid_unknown_fields=True):
    """One tool call of a scripted turn."""

    name: str
    """Tool name."""
    arguments: Any = msgspec.field(default_factory=dict)
    """A JSON object, or a string sent verbatim (to script malformed arguments)."""


class ScriptTurn(msgspec.Struct, forbid_unknown_fields=True):
    """One assistant turn."""

    content: str = ""
    """Text before the tool calls."""
    tool_calls: list[ScriptCall] = msgspec.field(default_factory=list)
    """Calls, rendered in hermes format."""
    raw: str | None = None
    """The whole completion text verbatim (overrides content and tool_calls)."""

    def text(self) -> str:
        return self.raw if self.raw is not None else render_hermes(self.content, [(c.name, c.arguments) for c in self.tool_calls])


class ScriptedOptions(msgspec.Struct, kw_only=True, frozen=True):
    """How the scripted server behaves."""

    model: str = "policy"
    """Served model name."""
    token_ids: bool = True
    """Honour return_token_ids (False: behave like a server that cannot)."""
    tool_calling: bool = True
    """Accept `tools` on chat completions (False: 400, like vLLM without a tool parser)."""
    fail_first: int = 0
    """The first N generation calls fail with fail_status."""
    fail_status: int = 500
    """Status of those failures (429, 500, 503, ...)."""
    delay_s: float = 0.0
    """Seconds each generation call takes."""
    loop: bool = False
    """Past the end of the script, repeat its last turn (else answer end_text without tool calls)."""
    end_text: str = "(the script has ended)"
    """What the server says past the end of the script."""
    max_model_len: int = 131072
    """Prompt + max_tokens limit (400 beyond it, with vLLM's message)."""
    log_requests: bool = True
    """Keep every request's prompt ids for GET /_scripted/log."""


def load_script(source: str | Path | list[Any]) -> list[ScriptTurn]:
    """A script from a JSON/TOML file ({"turns": [...]} or a bare list) or a Python list."""
    if isinstance(source, list):
        data: Any = source
    else:
        path = Path(source)
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    if isinstance(data, dict):
        data = data.get("turns")
    try:
        return msgspec.convert(data, list[ScriptTurn])
    except msgspec.ValidationError as exc:
        raise ValueError(f"bad script {source if not isinstance(source, list) else '(list)'}: {exc}") from None


# ------------------------------------------------------------------------------------ server


class _HTTPError(Exception):
    def __init__(self, status: int, message: str, kind: str = "BadRequestError") -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


class ScriptedPolicy:
    """The server's state: the script, the options, the log, loaded adapters."""

    def __init__(self, script: list[ScriptTurn], options: ScriptedOptions) -> None:
        self.script, self.options = script, options
        self.calls = 0
        self.log: list[dict[str, Any]] = []
        self.adapters: dict[str, str] = {}

    def turn(self, step: int) -> ScriptTurn:
        if step < len(self.script):
            return self.script[step]
        if self.options.loop and self.script:
            return self.script[-1]
        return ScriptTurn(content=self.options.end_text)

    async def _gate(self, body: dict[str, Any]) -> None:
        self.calls += 1
        if self.calls <= self.options.fail_first:
            raise _HTTPError(self.options.fail_status, f"scripted failure {self.calls} of {self.options.fail_first}",
                             "ServiceUnavailableError" if self.options.fail_status >= 500 else "RateLimitError")
        if self.options.delay_s:
            await anyio.sleep(self.options.delay_s)
        model = body.get("model")
        if model not in (self.options.model, *self.adapters):
            raise _HTTPError(404, f"The model `{model}` does not exist.", "NotFoundError")

    def _generate(self, prompt: list[int], step: int, body: dict[str, Any], endpoint: str) -> tuple[list[int], str, str]:
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens") or 16
        if len(prompt) + max_tokens > self.options.max_model_len:
            raise _HTTPError(400, f"This model's maximum context length is {self.options.max_model_len} tokens. "
                                  f"However, you requested {len(prompt) + max_tokens} tokens "
                                  f"({len(prompt)} in the messages, {max_tokens} in the completion).")
        text = self.turn(step).text()
        ids = encode(text) + [IM_END]
        finish = "stop"
        if len(ids) > max_tokens:
            ids, finish = ids[:max_tokens], "length"
            text = decode(ids)
        if self.options.log_requests:
            self.log.append({"endpoint": endpoint, "step": step, "prompt_ids": prompt, "completion_ids": ids,
                             "model": body.get("model")})
        return ids, text, finish

    async def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        await self._gate(body)
        tools = body.get("tools")
        if tools and not self.options.tool_calling:
            raise _HTTPError(400, _NO_TOOLS)
        messages = body["messages"]
        prompt = encode(render(messages, tools, add_generation_prompt=True))
        step = sum(1 for m in messages if m.get("role") == "assistant")
        ids, text, finish = self._generate(prompt, step, body, "chat")
        message: dict[str, Any] = {"role": "assistant", "content": text or None, "tool_calls": []}
        if tools and finish == "stop":
            n = iter(range(1_000_000))
            parsed = parse_hermes(text, lambda: f"chatcmpl-tool-{step}-{next(n)}")
            if parsed.calls and not parsed.errors:  # like vLLM's parser: all or nothing
                message["content"] = parsed.content or None
                message["tool_calls"] = [{"id": c.id, "type": "function",
                                          "function": {"name": c.name, "arguments": c.arguments}} for c in parsed.calls]
                finish = "tool_calls"
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish, "stop_reason": None,
                                  "logprobs": None}
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": decode([t]), "logprob": logprob(t, i), "bytes": None,
                                               "top_logprobs": []} for i, t in enumerate(ids)]}
        resp = self._envelope("chat.completion", body, choice, len(prompt), len(ids))
        if body.get("return_token_ids") and self.options.token_ids:
            choice["token_ids"] = ids
            resp["prompt_token_ids"] = prompt
        return resp

    async def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        await self._gate(body)
        raw = body.get("prompt")
        if isinstance(raw, str):
            prompt = encode(raw)
        elif isinstance(raw, list) and raw and all(isinstance(i, int) for i in raw):
            prompt = list(raw)
        else:
            raise _HTTPError(400, "prompt must be a string or a non-empty list of token ids")
        step = max(0, assistant_turns(prompt) - 1)  # the last one is the generation prompt
        ids, text, finish = self._generate(prompt, step, body, "completions")
        choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": finish, "stop_reason": None,
                                  "logprobs": None, "prompt_logprobs": None}
        if body.get("logprobs") is not None:
            toks = [decode([t]) for t in ids]
            offsets = [sum(len(s) for s in toks[:i]) for i in range(len(toks))]
            choice["logprobs"] = {"tokens": toks, "token_logprobs": [logprob(t, i) for i, t in enumerate(ids)],
                                  "top_logprobs": None, "text_offset": offsets}
        if body.get("return_token_ids") and self.options.token_ids:
            choice["token_ids"] = ids
            choice["prompt_token_ids"] = prompt
        return self._envelope("text_completion", body, choice, len(prompt), len(ids))

    def _envelope(self, kind: str, body: dict[str, Any], choice: dict[str, Any], n_prompt: int, n_out: int) -> dict[str, Any]:
        return {"id": f"scripted-{self.calls}", "object": kind, "created": int(time.time()), "model": body.get("model"),
                "choices": [choice], "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out,
                                               "total_tokens": n_prompt + n_out}}

    async def tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        if "messages" in body:
            ids = encode(render(body["messages"], body.get("tools"),
                                add_generation_prompt=body.get("add_generation_prompt", True)))
        else:
            ids = encode(str(body.get("prompt", "")))
        return {"count": len(ids), "max_model_len": self.options.max_model_len, "tokens": ids, "token_strs": None}

    def models(self) -> dict[str, Any]:
        now = int(time.time())
        base = {"id": self.options.model, "object": "model", "created": now, "owned_by": "vllm",
                "root": self.options.model, "parent": None, "max_model_len": self.options.max_model_len}
        loras = [{"id": n, "object": "model", "created": now, "owned_by": "vllm", "root": p,
                  "parent": self.options.model, "max_model_len": self.options.max_model_len}
                 for n, p in self.adapters.items()]
        return {"object": "list", "data": [base, *loras]}

    def load_lora(self, body: dict[str, Any]) -> str:
        name, path = body.get("lora_name"), body.get("lora_path")
        if not isinstance(name, str) or not isinstance(path, str) or not name or not path:
            raise _HTTPError(400, "Both 'lora_name' and 'lora_path' must be provided.")
        if name in self.adapters:
            raise _HTTPError(400, f"The lora adapter '{name}' has already been loaded.")
        self.adapters[name] = path
        return f"Success: LoRA adapter '{name}' added successfully."

    def unload_lora(self, body: dict[str, Any]) -> str:
        name = body.get("lora_name")
        if name not in self.adapters:
            raise _HTTPError(404, f"The lora adapter '{name}' cannot be found.", "NotFoundError")
        del self.adapters[name]
        return f"Success: LoRA adapter '{name}' removed successfully."


def _json(data: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(data), status_code=status, media_type="application/json")


def make_app(state: ScriptedPolicy) -> Starlette:
    """The Starlette app serving `state`."""

    def post(fn: Callable[[dict[str, Any]], Awaitable[Any] | Any]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                try:
                    body = msgspec.json.decode(await request.body())
                except msgspec.DecodeError as exc:
                    raise _HTTPError(400, f"the request body is not JSON: {exc}") from None
                if not isinstance(body, dict):
                    raise _HTTPError(400, "the request body must be a JSON object")
                result = fn(body)
                if not isinstance(result, dict | str):
                    result = await result
            except _HTTPError as exc:
                return _json({"error": {"message": exc.message, "type": exc.kind, "param": None, "code": exc.status}},
                             exc.status)
            except KeyError as exc:
                return _json({"error": {"message": f"missing field {exc}", "type": "BadRequestError", "param": None,
                                        "code": 400}}, 400)
            if isinstance(result, str):
                return Response(result, media_type="text/plain")
            return _json(result)
        return endpoint

    async def models(request: Request) -> Response:
        return _json(state.models())

    async def log(request: Request) -> Response:
        return _json({"calls": state.calls, "requests": state.log, "adapters": state.adapters})

    return Starlette(routes=[
        Route("/v1/chat/completions", post(state.chat), methods=["POST"]),
        Route("/v1/completions", post(state.completion), methods=["POST"]),
        Route("/tokenize", post(state.tokenize), methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/load_lora_adapter", post(state.load_lora), methods=["POST"]),
        Route("/v1/unload_lora_adapter", post(state.unload_lora), methods=["POST"]),
        Route("/_scripted/log", log, methods=["GET"]),
    ])


class _EmbeddedServer(uvicorn.Server):
    """uvicorn inside another program: the host process keeps its own signal handlers."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@asynccontextmanager
async def scripted_server(script: str | Path | list[Any], *, host: str = "127.0.0.1", port: int = 0,
                          **options: Any) -> AsyncIterator[str]:
    """Serve `script` over HTTP while the block runs; yields the base URL (…/v1)."""
    state = ScriptedPolicy(load_script(script), msgspec.convert(options, ScriptedOptions))
    server = _EmbeddedServer(uvicorn.Config(make_app(state), host=host, port=port, log_level="warning",
                                            lifespan="off", access_log=False))
    stopped = anyio.Event()

    async def serve() -> None:
        try:
            await server.serve()
        finally:
            stopped.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        try:
            while not server.started:
                if stopped.is_set():
                    raise RuntimeError(f"the scripted server could not start on {host}:{port}")
                await anyio.sleep(0.01)
            yield f"http://{host}:{server.servers[0].sockets[0].getsockname()[1]}/v1"
        finally:
            # A graceful exit (not a cancel) closes the listening socket and open connections.
            server.should_exit = True
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await stopped.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m runtime.fakes.scripted", description="scripted OpenAI-compatible policy server")
    p.add_argument("--script", required=True, help="script file (.json or .toml): a list of turns or {turns: [...]}")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--model", default="policy", help="served model name (default policy)")
    p.add_argument("--no-token-ids", action="store_true", help="ignore return_token_ids (an untrainable server)")
    p.add_argument("--no-tool-calling", action="store_true", help="refuse `tools` like vLLM without a tool parser")
    p.add_argument("--fail-first", type=int, default=0, help="fail the first N generation calls")
    p.add_argument("--fail-status", type=int, default=500, help="HTTP status of those failures (default 500)")
    p.add_argument("--delay", type=float, default=0.0, help="seconds per generation call")
    p.add_argument("--loop", action="store_true", help="repeat the last turn past the end of the script")
    p.add_argument("--no-log", action="store_true", help="do not keep request prompts for /_scripted/log")
    a = p.parse_args(argv)
    try:
        script = load_script(a.script)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"runtime.fakes.scripted: {exc}\n")
        return 2
    opts = ScriptedOptions(model=a.model, token_ids=not a.no_token_ids, tool_calling=not a.no_tool_calling,
                           fail_first=a.fail_first, fail_status=a.fail_status, delay_s=a.delay, loop=a.loop,
                           log_requests=not a.no_log)
    sys.stdout.write(f"scripted policy server: {len(script)} turns on http://{a.host}:{a.port}/v1\n")
    sys.stdout.flush()
    uvicorn.run(make_app(ScriptedPolicy(script, opts)), host=a.host, port=a.port, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
