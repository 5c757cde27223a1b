"""The policy client (DESIGN §8): tokens in, tokens out, against any OpenAI-compatible server.

Turn 0 goes through `/v1/chat/completions` with the tools, `logprobs` and vLLM's
`return_token_ids` (the response then carries `prompt_token_ids`, and each choice `token_ids`).
From turn 1 on (token_mode "token_in") the client keeps the exact context (prompt + sampled ids),
renders only the new messages (tool results) through `runtime.tokens.TokenBridge` — vLLM's
`POST /tokenize` with `messages` (renderer "server"), or a local Hugging Face tokenizer (renderer
"hf") — and calls `/v1/completions` with the token ids as the prompt, parsing tool calls from the
completion text (parser by name, default hermes). So the trainer never re-tokenizes a finished
conversation. token_mode "chat" sends the whole conversation through chat completions every turn
and stores each prompt as the longest prefix it shares with the previous context plus the rest.

A server or turn without token ids makes the conversation not trainable (and the next turns
fall back to chat); the episode still runs. 429, 5xx, 408/409, timeouts and connection errors are
retried with exponential backoff (`retries` times); then a `PolicyError(transient=True)` says why.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import anyio
import httpx
import msgspec
import openai

from runtime.settings import PolicyConfig, TokenMode, server_root
from runtime.store import Message, ToolCallSpec
from runtime.tokens import (
    HFRenderer,
    Renderer,
    TokenBridge,
    TokenBridgeError,
    common_prefix,
    get_tool_parser,
)

log = logging.getLogger("kagent.policy")
T = TypeVar("T")

class PolicyError(Exception):
    """The policy server failed; `reason` says how, `transient` whether retrying later may help."""

    def __init__(self, reason: str, *, transient: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


class ContextFull(Exception):
    """The conversation has no room left for another completion (the context token limit)."""


class Generation(msgspec.Struct, kw_only=True):
    """One LLM call as the store keeps it (runtime.store.TurnRow without episode/index)."""

    text: str
    """The generated text (chat: the message content; token_in: the raw completion)."""
    content: str
    """Text outside the tool calls."""
    tool_calls: list[ToolCallSpec]
    """Tool calls, in order (malformed ones too)."""
    parse_errors: dict[str, str]
    """Call id -> why it could not be parsed."""
    finish_reason: str | None
    """As the server said (stop, length, tool_calls)."""
    messages: list[Message]
    """Messages added before this call."""
    prompt_prefix: int
    """Tokens of the previous context + completion that this prompt starts with."""
    prompt_ids: list[int] | None
    """Prompt ids after the prefix (None when the server returned none)."""
    completion_ids: list[int] | None
    """Sampled ids (None when the server returned none)."""
    logprobs: list[float] | None
    """Behaviour logprob per sampled id (None when not returned)."""
    sampling: dict[str, float | int | str | bool | None]
    """Sampling parameters as sent."""
    prompt_tokens: int | None
    """Prompt length the server reported."""
    completion_tokens: int | None
    """Completion length the server reported."""
    duration: float
    """Seconds of the call (retries included)."""
    policy_version: int | None
    """Policy version that generated it."""


class Conversation:
    """One episode's dialogue as the policy sees it: every message, and the exact token context."""

    def __init__(self, messages: list[Message], tools: list[dict[str, Any]], *, max_context_tokens: int) -> None:
        self.messages: list[Message] = list(messages)
        self.pending: list[Message] = list(messages)  # added since the last call
        self.tools = tools
        self.max_context_tokens = max_context_tokens
        self.context: list[int] | None = None  # prompt + completion ids of the last call
        self.context_tokens = 0
        self.trainable = True
        self.turns = 0
        self._ids = itertools.count()

    def add(self, message: Message) -> None:
        self.messages.append(message)
        self.pending.append(message)

    def new_call_id(self) -> str:
        return f"call_{self.turns}_{next(self._ids)}"


class EpisodePolicy(Protocol):
    """What the episode loop (runtime/episode.py) calls on a policy client."""

    @property
    def version(self) -> int | None: ...

    def conversation(self, messages: list[Message], tools: list[dict[str, Any]], *,
                     max_context_tokens: int) -> Conversation: ...

    async def generate(self, conv: Conversation) -> Generation: ...


class Policy(EpisodePolicy, Protocol):
    """A policy client as the daemon holds it: the loop's calls, and the scheduler's and hot-loader's
    (the model name, a new version, a health check, closing)."""

    @property
    def model(self) -> str: ...

    def set_version(self, version: int, model: str | None = None) -> None: ...

    async def check(self) -> None: ...

    async def aclose(self) -> None: ...


# ------------------------------------------------------------------------ wire formats (msgspec)


class _Fn(msgspec.Struct):
    name: str = ""
    arguments: str | None = None


class _WireCall(msgspec.Struct):
    id: str | None = None
    function: _Fn = msgspec.field(default_factory=_Fn)


class _ChatMsg(msgspec.Struct):
    content: str | None = None
    tool_calls: list[_WireCall] | None = None


class _TokLogprob(msgspec.Struct):
    logprob: float = 0.0


class _ChatLogprobs(msgspec.Struct):
    content: list[_TokLogprob] | None = None


class _CmplLogprobs(msgspec.Struct):
    token_logprobs: list[float | None] | None = None


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _ChatChoice(msgspec.Struct):
    message: _ChatMsg = msgspec.field(default_factory=_ChatMsg)
    finish_reason: str | None = None
    logprobs: _ChatLogprobs | None = None
    token_ids: list[int] | None = None
    prompt_token_ids: list[int] | None = None


class _ChatResponse(msgspec.Struct):
    choices: list[_ChatChoice]
    usage: _Usage | None = None
    prompt_token_ids: list[int] | None = None


class _CmplChoice(msgspec.Struct):
    text: str = ""
    finish_reason: str | None = None
    logprobs: _CmplLogprobs | None = None
    token_ids: list[int] | None = None
    prompt_token_ids: list[int] | None = None


class _CmplResponse(msgspec.Struct):
    choices: list[_CmplChoice]
    usage: _Usage | None = None


class _Tokenized(msgspec.Struct):
    tokens: list[int]


def to_openai(m: Message) -> dict[str, Any]:
    """A stored Message in the OpenAI chat format."""
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.name, "arguments": c.arguments}} for c in m.tool_calls]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    return out


_RETRY_STATUS = {408, 409, 429}
_NO_TOOLS_HINTS = ("tool choice", "tool-call-parser", "enable-auto-tool-choice", "tools are not supported",
                   "does not support tools")


class ServerRenderer:
    """vLLM's `POST /tokenize` with `messages` (the served model's own chat template)."""

    def __init__(self, policy: OpenAIPolicy) -> None:
        self.policy = policy
        self.url = str(policy.root_url) + "/tokenize"

    async def render(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> list[int]:
        body = {"model": self.policy.model, "messages": messages, "add_generation_prompt": add_generation_prompt}
        raw = await self.policy.call("tokenize", lambda: self.policy._post(self.url, body))
        return msgspec.json.decode(raw, type=_Tokenized).tokens


class OpenAIPolicy:
    """`Policy` on `openai.AsyncOpenAI` (vLLM's token-id extensions used where present)."""

    def __init__(self, config: PolicyConfig, *, version: int | None = None) -> None:
        self.config = config
        self.client = openai.AsyncOpenAI(base_url=config.base_url, api_key=config.api_key,
                                         timeout=config.timeout_s, max_retries=0)
        self.root_url = server_root(str(config.base_url))
        self._version = version
        self._model = config.model
        self.parser = get_tool_parser(config.tool_parser)
        renderer: Renderer = (ServerRenderer(self) if config.renderer == "server"
                              else HFRenderer(config.tokenizer or config.model))
        self.bridge = TokenBridge(renderer)

    @property
    def version(self) -> int | None:
        return self._version

    @property
    def model(self) -> str:
        return self._model

    def set_version(self, version: int, model: str | None = None) -> None:
        self._version = version
        if model is not None:
            self._model = model

    def conversation(self, messages: list[Message], tools: list[dict[str, Any]], *,
                     max_context_tokens: int) -> Conversation:
        return Conversation(messages, tools, max_context_tokens=max_context_tokens)

    async def aclose(self) -> None:
        await self.client.close()

    async def check(self) -> None:
        """Raises PolicyError unless the server answers GET /v1/models (one try, short timeout)."""
        try:
            await self.client.with_options(timeout=10.0).models.list()
        except openai.APIError as exc:
            raise PolicyError(f"policy server {self.config.base_url}: {_describe(exc)}", transient=True) from exc

    # -- calls

    async def call(self, what: str, fn: Callable[[], Awaitable[T]]) -> T:
        """fn() with bounded retries on transient failures; PolicyError after the last try."""
        cfg = self.config
        for attempt in range(cfg.retries + 1):
            try:
                return await fn()
            except openai.APIStatusError as exc:
                if exc.status_code < 500 and exc.status_code not in _RETRY_STATUS:
                    raise self._refused(what, exc) from exc
                error: openai.APIError = exc
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                error = exc
            reason = f"{what} at {cfg.base_url}: {_describe(error)}"
            if attempt == cfg.retries:
                raise PolicyError(f"{reason} (gave up after {attempt + 1} tries)", transient=True) from error
            delay = min(cfg.backoff_max_s, cfg.backoff_s * 2**attempt)
            log.warning("%s; retry %d/%d in %.1f s", reason, attempt + 1, cfg.retries, delay)
            await anyio.sleep(delay)
        raise AssertionError("unreachable")

    def _refused(self, what: str, exc: openai.APIStatusError) -> Exception:
        text = _describe(exc)
        low = text.lower()
        if "maximum context length" in low or "max_model_len" in low:
            return ContextFull(f"{what}: {text}")
        if exc.status_code == 400 and any(h in low for h in _NO_TOOLS_HINTS):
            return PolicyError(
                f"the policy server at {self.config.base_url} does not support tool calling ({text}); "
                "start vLLM with --enable-auto-tool-choice --tool-call-parser hermes", transient=False)
        return PolicyError(f"{what} at {self.config.base_url} refused the request: {text}", transient=False)

    def _body(self, max_tokens: int, **fields: Any) -> dict[str, Any]:
        c = self.config
        body = {"model": self._model, **fields, "temperature": c.temperature, "top_p": c.top_p,
                "max_tokens": max_tokens, "return_token_ids": True}
        if c.seed is not None:
            body["seed"] = c.seed
        return body

    async def _post(self, path: str, body: dict[str, Any]) -> bytes:
        """POST `body` as JSON to `path` (relative to base_url, or absolute); the response bytes."""
        # client.post sends the body as it is: the typed create() methods walk every element of
        # the request (tens of thousands of token ids) through openai's type transforms.
        resp = await self.client.post(path, cast_to=httpx.Response, content=msgspec.json.encode(body),
                                      options={"headers": {"Content-Type": "application/json"}})
        return resp.content

    def _sampling(self, max_tokens: int, mode: TokenMode) -> dict[str, float | int | str | bool | None]:
        c = self.config
        return {"model": self._model, "temperature": c.temperature, "top_p": c.top_p,
                "max_tokens": max_tokens, "seed": c.seed, "mode": mode}

    # -- generation

    async def generate(self, conv: Conversation) -> Generation:
        """The next assistant turn; appends it to `conv` (raises PolicyError or ContextFull)."""
        start = time.perf_counter()
        token_in = self.config.token_mode == "token_in" and conv.context is not None
        gen = await (self._token_in(conv) if token_in else self._chat(conv))
        gen.duration = time.perf_counter() - start
        conv.pending = []
        conv.turns += 1
        calls = [c for c in gen.tool_calls if c.id not in gen.parse_errors]
        conv.messages.append(Message(role="assistant", content=gen.content or None, tool_calls=calls or None))
        return gen

    def _room(self, conv: Conversation, prompt_len: int) -> int:
        room = min(self.config.max_tokens, conv.max_context_tokens - prompt_len)
        if room <= 0:
            raise ContextFull(f"the context holds {prompt_len} tokens; the limit is {conv.max_context_tokens}")
        return room

    async def _chat(self, conv: Conversation) -> Generation:
        estimate = conv.context_tokens + sum(len(m.content or "") for m in conv.pending) // 4
        max_tokens = self._room(conv, estimate)
        body = self._body(max_tokens, messages=[to_openai(m) for m in conv.messages])
        if self.config.logprobs:
            body |= {"logprobs": True, "top_logprobs": 0}
        if conv.tools:
            body["tools"] = conv.tools
        raw = await self.call("chat completion", lambda: self._post("/chat/completions", body))
        resp = _decode(raw, _ChatResponse, "chat completion")
        choice = resp.choices[0]
        prompt = resp.prompt_token_ids or choice.prompt_token_ids
        calls = [ToolCallSpec(id=c.id or conv.new_call_id(), name=c.function.name,
                              arguments=c.function.arguments or "{}") for c in choice.message.tool_calls or []]
        content, errors = choice.message.content or "", {}
        if not calls and "<tool_call>" in content:  # a server without a tool parser: parse it here
            parsed = self.parser(content, conv.new_call_id)
            content, calls, errors = parsed.content, parsed.calls, parsed.errors
        lps = None if choice.logprobs is None or choice.logprobs.content is None else \
            [t.logprob for t in choice.logprobs.content]
        prev = conv.context
        prefix = common_prefix(prev, prompt) if prev is not None and prompt is not None else 0
        self._advance(conv, prompt, choice.token_ids, resp.usage)
        return Generation(
            text=choice.message.content or "", content=content, tool_calls=calls, parse_errors=errors,
            finish_reason=choice.finish_reason, messages=list(conv.pending), prompt_prefix=prefix,
            prompt_ids=None if prompt is None else prompt[prefix:], completion_ids=choice.token_ids,
            logprobs=lps, sampling=self._sampling(max_tokens, "chat"), duration=0.0,
            prompt_tokens=resp.usage.prompt_tokens if resp.usage else None,
            completion_tokens=resp.usage.completion_tokens if resp.usage else None,
            policy_version=self._version)

    async def _token_in(self, conv: Conversation) -> Generation:
        assert conv.context is not None
        context = conv.context
        try:
            delta = await self.bridge.delta(context, [to_openai(m) for m in conv.pending])
        except TokenBridgeError as exc:
            raise PolicyError(str(exc), transient=False) from exc
        prompt = context + delta
        max_tokens = self._room(conv, len(prompt))
        body = self._body(max_tokens, prompt=prompt)
        if self.config.logprobs:
            body["logprobs"] = 0
        raw = await self.call("completion", lambda: self._post("/completions", body))
        resp = _decode(raw, _CmplResponse, "completion")
        choice = resp.choices[0]
        parsed = self.parser(choice.text, conv.new_call_id)
        lps = None
        if choice.logprobs is not None and choice.logprobs.token_logprobs is not None:
            lps = [float("nan") if v is None else v for v in choice.logprobs.token_logprobs]
        self._advance(conv, prompt, choice.token_ids, resp.usage)
        return Generation(
            text=choice.text, content=parsed.content, tool_calls=parsed.calls, parse_errors=parsed.errors,
            finish_reason=choice.finish_reason, messages=list(conv.pending), prompt_prefix=len(context),
            prompt_ids=delta, completion_ids=choice.token_ids, logprobs=lps,
            sampling=self._sampling(max_tokens, "token_in"), duration=0.0,
            prompt_tokens=resp.usage.prompt_tokens if resp.usage else None,
            completion_tokens=resp.usage.completion_tokens if resp.usage else None,
            policy_version=self._version)

    @staticmethod
    def _advance(conv: Conversation, prompt: list[int] | None, completion: list[int] | None,
                 usage: _Usage | None) -> None:
        if prompt is None or completion is None:
            # No exact ids: not trainable, and the next turns cannot be token-in.
            conv.trainable = False
            conv.context = None
            conv.context_tokens = (usage.prompt_tokens or 0) + (usage.completion_tokens or 0) if usage else 0
            return
        conv.context = prompt + completion
        conv.context_tokens = len(conv.context)


def _decode(data: bytes, typ: type[T], what: str) -> T:
    try:
        return msgspec.json.decode(data, type=typ)
    except msgspec.DecodeError as exc:
        raise PolicyError(f"the policy server's {what} response is not what an OpenAI-compatible server"
                          f" sends ({exc}): {data[:200]!r}", transient=False) from exc


def _describe(exc: openai.APIError) -> str:
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        return f"cannot connect ({cause or exc})"
    return str(exc)


POLICIES: dict[str, Callable[[PolicyConfig], Policy]] = {"openai": OpenAIPolicy}
"""Policy clients by name (PolicyConfig.name)."""


def make_policy(config: PolicyConfig) -> Policy:
    """The policy client called `config.name`; an unknown name lists the valid ones."""
    try:
        cls = POLICIES[config.name]
    except KeyError:
        raise ValueError(f"unknown policy {config.name!r}; valid: {', '.join(sorted(POLICIES))}") from None
    return cls(config)
