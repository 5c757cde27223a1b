"""The policy client against the scripted policy server: real HTTP, the real `openai` client.

Covers token-in generation (prompts equal what the chat template renders for the whole
conversation), chat mode, retries on 429/5xx/timeouts, permanent failures, a server without tool
calling or without token ids, the context limit, the hermes parser, and the scripted server's
own endpoints (LoRA adapters, /tokenize, the CLI as a subprocess).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from runtime.fakes.scripted import encode, logprob, render, scripted_server
from runtime.policy import ContextFull, OpenAIPolicy, Policy, PolicyError, make_policy
from runtime.settings import PolicyConfig
from runtime.store import Message
from runtime.tokens import get_tool_parser, parse_hermes

ROOT = Path(__file__).resolve().parents[2]
TOOLS = [{"type": "function", "function": {"name": "list_files", "description": "List files.",
                                           "parameters": {"type": "object", "properties": {}}}},
         {"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
SCRIPT = [
    {"content": "Looking around.", "tool_calls": [{"name": "list_files"}]},
    {"content": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "model.py"}},
                                   {"name": "list_files"}]},
    {"content": "Done here, ünïcödé ✓."},
]
OPENING = [Message(role="system", content="You write kernels."), Message(role="user", content="Make relu fast.")]


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(fn)


@asynccontextmanager
async def opened(cfg: PolicyConfig) -> AsyncIterator[Policy]:
    """make_policy(cfg), closed at the end (its HTTP connections must not outlive the loop)."""
    policy = make_policy(cfg)
    try:
        yield policy
    finally:
        await policy.aclose()


def config(url: str, **kw: Any) -> PolicyConfig:
    return PolicyConfig(base_url=url, max_tokens=512, backoff_s=0.01, backoff_max_s=0.05, **kw)


async def server_log(url: str) -> dict[str, Any]:
    """What the scripted server saw (asynchronously: it runs on this event loop)."""
    async with httpx.AsyncClient() as http:
        return (await http.get(url.removesuffix("/v1") + "/_scripted/log")).json()  # type: ignore[no-any-return]


def answer_calls(conv: Any, gen: Any, text: str = "ok") -> None:
    for call in gen.tool_calls:
        conv.add(Message(role="tool", content=f"{text} ({call.name})", tool_call_id=call.id))


def test_token_in_prompts_equal_the_rendered_conversation() -> None:
    async def main() -> None:
        async with scripted_server(SCRIPT) as url:
            policy = OpenAIPolicy(config(url), version=3)
            conv = policy.conversation(OPENING, TOOLS, max_context_tokens=100_000)
            gens = []
            for _ in range(3):
                gen = await policy.generate(conv)
                gens.append(gen)
                answer_calls(conv, gen, "result line 1\nline 2")
            log = await server_log(url)
            await policy.aclose()
        seen = [r for r in log["requests"]]
        assert [r["endpoint"] for r in seen] == ["chat", "completions", "completions"]
        assert [g.sampling["mode"] for g in gens] == ["chat", "token_in", "token_in"]
        assert [c.name for c in gens[1].tool_calls] == ["read_file", "list_files"]
        assert json.loads(gens[1].tool_calls[0].arguments) == {"path": "model.py"}
        assert gens[2].tool_calls == [] and gens[2].text == "Done here, ünïcödé ✓."
        context: list[int] = []
        for k, (gen, req) in enumerate(zip(gens, seen, strict=True)):
            assert gen.policy_version == 3
            assert gen.prompt_prefix == len(context)  # token-in: the whole previous context is kept
            assert gen.prompt_ids is not None and gen.completion_ids is not None and gen.logprobs is not None
            prompt = context + gen.prompt_ids
            assert prompt == req["prompt_ids"], f"turn {k}: the server saw another prompt"
            assert gen.completion_ids == req["completion_ids"]
            assert gen.logprobs == pytest.approx([logprob(t, i) for i, t in enumerate(gen.completion_ids)], rel=1e-6)
            context = prompt + gen.completion_ids
        # Token-in never re-tokenized: its prompts equal the chat template over the whole conversation.
        messages = [_openai(m) for m in conv.messages[:-1]]
        assert seen[2]["prompt_ids"] == encode(render(messages, TOOLS, add_generation_prompt=True))
        assert gens[1].messages[0].role == "tool" and len(gens[1].messages) == 1

    run(main)


def _openai(m: Message) -> dict[str, Any]:
    from runtime.policy import to_openai
    return to_openai(m)


def test_chat_mode_stores_the_shared_prefix() -> None:
    async def main() -> None:
        async with scripted_server(SCRIPT) as url:
            async with opened(config(url, token_mode="chat")) as policy:
                conv = policy.conversation(OPENING, TOOLS, max_context_tokens=100_000)
                first = await policy.generate(conv)
                answer_calls(conv, first)
                second = await policy.generate(conv)
                log = await server_log(url)
        assert [r["endpoint"] for r in log["requests"]] == ["chat", "chat"]
        assert first.completion_ids is not None and first.prompt_ids is not None and second.prompt_ids is not None
        previous = first.prompt_ids + first.completion_ids
        assert second.prompt_prefix > len(first.prompt_ids)
        assert previous[:second.prompt_prefix] + second.prompt_ids == log["requests"][1]["prompt_ids"]
        assert second.sampling["mode"] == "chat" and conv.trainable

    run(main)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_failures_are_retried(status: int) -> None:
    async def main() -> None:
        async with scripted_server(SCRIPT, fail_first=2, fail_status=status) as url:
            async with opened(config(url, retries=3)) as policy:
                conv = policy.conversation(OPENING, TOOLS, max_context_tokens=100_000)
                gen = await policy.generate(conv)
                assert [c.name for c in gen.tool_calls] == ["list_files"]
                assert (await server_log(url))["calls"] == 3

    run(main)


def test_permanent_failure_says_why() -> None:
    async def main() -> None:
        async with scripted_server(SCRIPT, fail_first=100, fail_status=500) as url:
            async with opened(config(url, retries=2)) as policy:
                conv = policy.conversation(OPENING, TOOLS, max_context_tokens=100_000)
                with pytest.raises(PolicyError) as info:
                    await policy.generate(conv)
                assert (await server_log(url))["calls"] == 3
        assert info.value.transient
        assert "HTTP 500" in info.value.reason and "gave up after 3 tries" in info.value.reason

    run(main)


def test_unreachable_server_and_timeouts() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # closed again below: nothing listens there

    async def main() -> None:
        async with opened(config(f"http://127.0.0.1:{dead}/v1", retries=1)) as policy:
            conv = policy.conversation(OPENING, TOOLS, max_context_tokens=100_000)
            with pytest.raises(PolicyError, match="cannot connect") as info:
                await policy.generate(conv)
            assert info.value.transient
            with pytest.raises(PolicyError, match="cannot connect"):
                await policy.check()
            async with scripted_server(SCRIPT, delay_s=2.0) as url:
                async with opened(config(url, retries=1, timeout_s=0.2)) as slow:
                    t = time.monotonic()
                    with pytest.raises(PolicyError, match="timed out.*gave up after 2 tries"):
                        await slow.generate(slow.conversation(OPENING, TOOLS, max_context_tokens=100_000))
                    assert time.monotonic() - t < 1.5

    run(main)


def test_server_without_tool_calling_is_a_clear_error() -> None:
    async def main() -> None:
        async with scripted_server(SCRIPT, tool_calling=False) as url:
            async with opened(config(url)) as policy:
                with pytest.raises(PolicyError) as info:
                    await policy.generate(policy.conversation(OPENING, TOOLS, max_context_tokens=100_000))
                assert (await server_log(url))["calls"] == 1  # a 400 is not retried
        assert not info.value.transient
        assert "does not support tool calling" in info.value.reason
        assert "--enable-auto-tool-choice" in info.value.reason

    run(main)


def test_no_token_ids_makes_the_conversation_untrainable() -> None:
    async def main() -> None:
        async with scripted_server(SCRIPT, token_ids=False) as url:
            async with opened(config(url)) as policy:
                conv = policy.conversation(OPENING, TOOLS, max_context_tokens=100_000)
                first = await policy.generate(conv)
                answer_calls(conv, first)
                second = await policy.generate(conv)
                log = await server_log(url)
        assert first.completion_ids is None and first.prompt_ids is None and not conv.trainable
        assert first.logprobs is not None  # logprobs still arrive; the ids do not
        assert [r["endpoint"] for r in log["requests"]] == ["chat", "chat"]  # no token-in without ids
        assert [c.name for c in second.tool_calls] == ["read_file", "list_files"]

    run(main)


def test_context_limit() -> None:
    async def main() -> None:
        async with scripted_server(SCRIPT) as url:
            async with opened(config(url)) as policy:
                conv = policy.conversation(OPENING, TOOLS, max_context_tokens=2000)
                gen = await policy.generate(conv)
                max_tokens = gen.sampling["max_tokens"]
                assert isinstance(max_tokens, int) and max_tokens <= 512
                conv.add(Message(role="tool", content="x" * 3000, tool_call_id=gen.tool_calls[0].id))
                with pytest.raises(ContextFull, match="limit is 2000"):
                    await policy.generate(conv)
                # A server-side refusal (max_model_len) is a ContextFull too, not a retried error.
                async with scripted_server(SCRIPT, max_model_len=300) as small:
                    async with opened(config(small)) as p2:
                        with pytest.raises(ContextFull, match="maximum context length is 300"):
                            await p2.generate(p2.conversation(OPENING, TOOLS, max_context_tokens=100_000))

    run(main)


def test_hermes_parser() -> None:
    ids = iter(range(100))
    new = lambda: f"c{next(ids)}"  # noqa: E731
    out = parse_hermes('Plan.\n<tool_call>\n{"name": "compile", "arguments": {}}\n</tool_call>\n'
                       '<tool_call>{"name": "write_file", "arguments": "{\\"path\\": 1}"}</tool_call>'
                       '<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>'
                       '<tool_call>[1, 2]</tool_call><tool_call>{"name": "submit"', new)
    assert out.content == "Plan."
    assert [c.name for c in out.calls] == ["compile", "write_file", "read_file", "", "submit"]
    assert out.calls[1].arguments == '{"path": 1}'  # a string is kept as the model wrote it
    assert set(out.errors) == {"c2", "c3", "c4"}
    assert "not valid JSON" in out.errors["c2"]
    assert '"name" string' in out.errors["c3"]
    assert "not closed" in out.errors["c4"]
    with pytest.raises(KeyError, match="valid: hermes"):
        get_tool_parser("nope")
    with pytest.raises(ValueError, match="unknown policy 'vllm-magic'; valid: openai"):
        make_policy(PolicyConfig(name="vllm-magic"))


def test_scripted_server_lora_endpoints_and_tokenize() -> None:
    async def main() -> None:
        async with scripted_server(SCRIPT, model="base") as url, httpx.AsyncClient() as http:
            root = url.removesuffix("/v1")
            r = await http.post(f"{url}/load_lora_adapter", json={"lora_name": "step_1", "lora_path": "/ckpt/step_1"})
            assert r.status_code == 200 and "added" in r.text
            dup = await http.post(f"{url}/load_lora_adapter", json={"lora_name": "step_1", "lora_path": "/x"})
            assert dup.status_code == 400 and "already been loaded" in dup.text
            models = (await http.get(f"{url}/models")).json()["data"]
            assert [(m["id"], m["parent"], m["root"]) for m in models] == [("base", None, "base"),
                                                                          ("step_1", "base", "/ckpt/step_1")]
            async with opened(config(url, model="base")) as policy:
                policy.set_version(1, "step_1")
                gen = await policy.generate(policy.conversation(OPENING, TOOLS, max_context_tokens=100_000))
                assert gen.sampling["model"] == "step_1" and gen.policy_version == 1
                assert (await http.post(f"{url}/unload_lora_adapter", json={"lora_name": "step_1"})).status_code == 200
                gone = await http.post(f"{url}/unload_lora_adapter", json={"lora_name": "step_1"})
                assert gone.status_code == 404
                with pytest.raises(PolicyError, match="step_1` does not exist"):
                    await policy.generate(policy.conversation(OPENING, TOOLS, max_context_tokens=100_000))
                tok = (await http.post(f"{root}/tokenize", json={"prompt": "<|im_start|>hi"})).json()
                assert tok["tokens"] == [1, ord("h") + 3, ord("i") + 3] and tok["count"] == 3
                bad = await http.post(f"{url}/completions", content=b"{not json")
                assert bad.status_code == 400 and "not JSON" in bad.json()["error"]["message"]

    run(main)


def test_scripted_server_cli(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = tmp_path / "s.toml"
    script.write_text('[[turns]]\ncontent = "hi"\n[[turns.tool_calls]]\nname = "list_files"\n')
    proc = subprocess.Popen([sys.executable, "-m", "runtime.fakes.scripted", "--script", str(script), "--port", str(port)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).json()
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()[1].decode()
                assert time.monotonic() < deadline, "the scripted server did not come up"
                time.sleep(0.1)
        assert models["data"][0]["id"] == "policy"

        async def main() -> None:
            async with opened(config(f"http://127.0.0.1:{port}/v1")) as policy:
                gen = await policy.generate(policy.conversation(OPENING, TOOLS, max_context_tokens=100_000))
                assert gen.content == "hi" and [c.name for c in gen.tool_calls] == ["list_files"]

        run(main)
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    bad = subprocess.run([sys.executable, "-m", "runtime.fakes.scripted", "--script", str(tmp_path / "missing.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "missing.json" in bad.stderr
