"""kagentd's HTTP API (runtime/server.py) over real HTTP: a real daemon (cpu backend, an API key)
in front of the scripted policy server, called with the official `openai` client and httpx."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from skills.evaluator.problem import source_id
from tests.kagentd_harness import RELU, SUBMIT, Kagentd, Scripted, chat_body, write_relu_turn

KEY = "test-key-123"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kagentd]:
    tmp = tmp_path_factory.mktemp("server")
    scripted = Scripted(tmp, [write_relu_turn(), SUBMIT])
    d = Kagentd(tmp, scripted.base_url, api_key=KEY, extra={"http": {"max_body_bytes": 65536},
                                                            "scheduler": {"problem_check_timeout_s": 15}})
    d.start()
    try:
        yield d
    finally:
        d.kill()
        scripted.stop()


def client(d: Kagentd, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{d.url}/v1", api_key=key, max_retries=0, timeout=240)


def post(d: Kagentd, body: Any = None, *, content: bytes | None = None, headers: dict[str, str] | None = None,
         auth: bool = True) -> httpx.Response:
    h = {"Authorization": f"Bearer {KEY}"} if auth else {}
    h |= headers or {}
    return httpx.post(f"{d.url}/v1/chat/completions", json=body if content is None else None, content=content,
                      headers=h, timeout=60)


def error_of(r: httpx.Response) -> dict[str, Any]:
    data = r.json()
    assert set(data) == {"error"}, data
    return dict(data["error"])


def test_auth(daemon: Kagentd) -> None:
    r = httpx.get(f"{daemon.url}/v1/models", timeout=10)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "missing API key" in error_of(r)["message"]
    r = httpx.get(f"{daemon.url}/health", headers={"Authorization": "Bearer nope"}, timeout=10)
    assert r.status_code == 401 and "wrong API key" in error_of(r)["message"]
    with pytest.raises(openai.AuthenticationError):
        client(daemon, key="nope").models.list()
    assert [m.id for m in client(daemon).models.list()] == ["kagent"]


SYNTAX_ERROR = "import torch\nclass Model(torch.nn.Module:\n    pass\n"
NO_INPUTS = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


@pytest.mark.parametrize(("body", "status", "code", "message"), [
    (b"{not json", 400, "invalid_json", "request body is not valid JSON"),
    (b"[1, 2]", 400, "invalid_json", "request body must be a JSON object"),
    ({"model": "gpt-4o", "messages": []}, 404, "model_not_found", "model 'gpt-4o' is not served here"),
    ({"model": "kagent"}, 400, "invalid_request", "`messages` must be a non-empty list"),
    ({"model": "kagent", "messages": [{"role": "system", "content": "hi"}]}, 400, "invalid_request",
     "no user message"),
    ({"model": "kagent", "messages": [{"role": "user", "content": "make relu fast please"}]}, 400, "no_module",
     "no KernelBench module found"),
    (chat_body(SYNTAX_ERROR), 400, "bad_problem", "the problem does not load: <request/"),
    (chat_body(NO_INPUTS), 400, "bad_problem", "no `get_inputs` function defined"),
    ({**chat_body(RELU.read_text()), "n": 2}, 400, "invalid_request", "n must be 1"),
    ({**chat_body(RELU.read_text()), "stream": "yes"}, 400, "invalid_request", "stream must be true or false"),
], ids=["bad-json", "not-object", "wrong-model", "no-messages", "no-user", "no-module", "syntax-error",
        "no-get-inputs", "n-2", "bad-stream"])
def test_bad_requests_get_4xx_with_the_reason(daemon: Kagentd, body: Any, status: int, code: str, message: str) -> None:
    r = post(daemon, content=body if isinstance(body, bytes) else None, body=None if isinstance(body, bytes) else body,
             headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    err = error_of(r)
    assert err["code"] == code and message in err["message"], err
    assert err["type"] == "invalid_request_error"


MODEL_TAIL = ("class Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
              "def get_inputs():\n    return [torch.ones(4)]\ndef get_init_inputs():\n    return []\n")


@pytest.mark.parametrize(("head", "message"), [
    ("import sys\nraise SystemExit(3)\n", "ended its process with status 3"),
    ("import os\nos._exit(0)\n", "ended its process with status 0"),
    ("raise KeyboardInterrupt\n", "killed its process (SIGINT)"),
    ("x = bytearray(1 << 33)\n", "ran out of memory: the limit is 4096 MiB"),
    ("while True:\n    pass\n", "took longer than 15 s (scheduler.problem_check_timeout_s)"),
], ids=["system-exit", "os-exit", "keyboard-interrupt", "memory", "endless-loop"])
def test_a_problem_that_exits_hangs_or_hogs_memory_is_a_400_and_the_daemon_stays(
        daemon: Kagentd, head: str, message: str) -> None:
    """Problems are loaded in a child process with a time and memory limit, never in the daemon."""
    r = post(daemon, chat_body("import torch\n" + head + MODEL_TAIL))
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert err["code"] == "bad_problem" and message in err["message"], err
    assert daemon.health()["status"] == "ok"


@pytest.mark.parametrize(("path", "message"), [
    ("/v1/episodes?limit=0", "limit must be from 1 to 1000, got 0"),
    ("/v1/episodes?limit=x", "limit must be an integer, got 'x'"),
    ("/v1/episodes?before=-5", "before must be from 1 to"),
    ("/v1/episodes?status=bogus", "status 'bogus' is not one of: cancelled, error,"),
    ("/v1/episodes?origin=bogus", "origin 'bogus' is not one of: replay, request, rollout"),
    (f"/v1/episodes/{10**23}", "episode id must be from 1 to 9223372036854775807"),
    (f"/v1/episodes/{10**23}/transcript", "episode id must be from 1 to"),
], ids=["limit-0", "limit-text", "before-negative", "status", "origin", "huge-id", "huge-id-transcript"])
def test_bad_query_values_are_400s(daemon: Kagentd, path: str, message: str) -> None:
    r = httpx.get(f"{daemon.url}{path}", headers=daemon.headers, timeout=10)
    assert r.status_code == 400, r.text
    assert message in error_of(r)["message"]


@pytest.mark.parametrize(("extra", "message"), [
    ({"max_tokens": -1}, "max_tokens must be an integer from 1 to"),
    ({"max_tokens": 1.5}, "max_tokens must be an integer"),
    ({"temperature": -0.5}, "temperature must be a number from 0 to 2, got -0.5"),
    ({"temperature": "hot"}, "temperature must be a number"),
    ({"top_p": 3}, "top_p must be a number from 0 to 1"),
], ids=["max-tokens-negative", "max-tokens-float", "temperature-negative", "temperature-text", "top-p"])
def test_bad_sampling_values_are_400s(daemon: Kagentd, extra: dict[str, Any], message: str) -> None:
    r = post(daemon, {**chat_body(RELU.read_text()), **extra})
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert message in err["message"] and err["param"] == next(iter(extra)), err


def test_json_nested_too_deep_is_a_400(daemon: Kagentd) -> None:
    deep = b'{"model": "kagent", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    r = httpx.post(f"{daemon.url}/v1/chat/completions", content=deep, timeout=60,
                   headers={**daemon.headers, "content-type": "application/json"})
    assert r.status_code in (400, 413), r.text  # 413 when the body limit is below its size
    assert error_of(r)["code"] in ("invalid_json", "body_too_large")
    small = b'{"model": "kagent", "x": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"  # under the 64 KiB limit
    r = httpx.post(f"{daemon.url}/v1/chat/completions", content=small, timeout=60,
                   headers={**daemon.headers, "content-type": "application/json"})
    assert r.status_code == 400 and "nested too deeply" in error_of(r)["message"], r.text


def test_bad_problem_streaming_is_a_400_too(daemon: Kagentd) -> None:
    r = post(daemon, {**chat_body(NO_INPUTS), "stream": True})
    assert r.status_code == 400 and "no `get_inputs` function defined" in error_of(r)["message"]


def test_body_limit_and_routes(daemon: Kagentd) -> None:
    big = json.dumps(chat_body("x" * 70000)).encode()
    r = post(daemon, content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "exceeds the limit of 65536 bytes" in error_of(r)["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server counts while reading
        yield big[:40000]
        yield big[40000:]
    r = post(daemon, content=chunks(), headers={"content-type": "application/json"})  # type: ignore[arg-type]
    assert r.status_code == 413 and "exceeds the limit" in error_of(r)["message"]
    r = httpx.get(f"{daemon.url}/v1/chat/completions", headers=daemon.headers, timeout=10)
    assert r.status_code == 405 and "GET is not allowed" in error_of(r)["message"]
    r = httpx.get(f"{daemon.url}/v2/nothing", headers=daemon.headers, timeout=10)
    assert r.status_code == 404 and "no route GET /v2/nothing" in error_of(r)["message"]
    r = httpx.get(f"{daemon.url}/v1/episodes/999999", headers=daemon.headers, timeout=10)
    assert r.status_code == 404 and error_of(r)["message"] == "no episode 999999"


def test_solve_with_the_openai_client_and_read_the_episode(daemon: Kagentd) -> None:
    source = RELU.read_text()
    r = client(daemon).chat.completions.create(
        model="kagent", messages=[{"role": "user", "content": f"Please make this fast:\n```python\n{source}```"}])
    answer = r.choices[0].message.content or ""
    assert r.id.startswith("chatcmpl-") and r.object == "chat.completion" and r.model == "kagent"
    assert r.choices[0].finish_reason == "stop"
    assert "**Verified `ModelNew`**" in answer and "ended `submitted`" in answer
    assert "### `model_new.py`" in answer and "class ModelNew" in answer
    assert "### `kernels/relu.cpp`" in answer and "```cpp" in answer and "KAGENT_EXPORT" in answer
    assert "x** vs eager [95% " in answer  # the measured speedup with its interval
    assert r.usage is not None and r.usage.completion_tokens > 0 and r.usage.prompt_tokens > 0
    ext = (r.model_extra or {})["kagent"]
    assert ext["status"] == "submitted" and ext["reward"] >= 1
    assert set(ext["files"]) == {"model_new.py", "kernels/relu.cpp"} and ext["speedup_eager"] > 0
    eid = ext["episode_id"]

    listed = httpx.get(f"{daemon.url}/v1/episodes?origin=request&limit=5", headers=daemon.headers, timeout=10).json()
    row = next(e for e in listed["data"] if e["id"] == eid)
    assert row["status"] == "submitted" and row["turns"] == 2 and row["tool_calls"] == 3
    # The bundled problem's source: the request runs on its row and never rewrites it.
    assert row["problem"] == "level1/01_relu" and row["problem_id"] == source_id(source)
    assert daemon.sql("SELECT name, level, source, path FROM problems WHERE id = ?", (source_id(source),)) == [
        ("level1/01_relu", 1, "kagent", "level1/01_relu.py")]
    detail = httpx.get(f"{daemon.url}/v1/episodes/{eid}", headers=daemon.headers, timeout=10).json()
    assert [t["index"] for t in detail["turns"]] == [0, 1]
    assert all(t["completion_ids"] and len(t["completion_ids"]) == len(t["logprobs"]) for t in detail["turns"])
    assert detail["evaluations"][-1]["result"]["mode"] == "final"
    text = httpx.get(f"{daemon.url}/v1/episodes/{eid}/transcript", headers=daemon.headers, timeout=10).text
    assert f"episode {eid} ·" in text and "→ submit(" in text and "final evaluation:" in text
    lines = httpx.get(f"{daemon.url}/v1/export", headers=daemon.headers, timeout=30).text.splitlines()
    exported = {json.loads(line)["episode_id"]: json.loads(line) for line in lines}
    assert exported[eid]["turns"][0]["completion_ids"] == detail["turns"][0]["completion_ids"]


def test_streaming_with_the_openai_client(daemon: Kagentd) -> None:
    stream = client(daemon).chat.completions.create(
        model="kagent", stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": RELU.read_text()}])  # plain source, no code fence
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    progress, _, answer = content.partition("\n---\n\n")
    assert "turn 0:" in progress and "turn 1:" in progress and "write_file" in progress
    assert "final: reward" in progress
    assert "**Verified `ModelNew`**" in answer and "class ModelNew" in answer
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_health(daemon: Kagentd) -> None:
    h = daemon.health()
    assert h["status"] == "ok" and h["pid"] == daemon.pid and h["url"] == daemon.url
    assert Path(h["db"]) == daemon.db
    s = h["scheduler"]
    assert {"running", "queued", "gpu_slots_busy", "gpu_slots_total", "policy_version", "turns_per_s",
            "policy_error", "finished"} <= set(s)
    assert s["gpu_slots_total"] == 1 and s["policy_error"] is None
    assert h["config"]["file"] == str(daemon.config)


@pytest.mark.parametrize(("text", "expected"), [
    ("{src}", "{src}"),
    ("Make it fast:\n```python\n{src}```\nthanks", "{src}"),
    ("```\n{src}```", "{src}"),
    ("```python\n{src}", "{src}"),  # the closing fence left out
    ("```python\nimport torch\n```\nand\n```python\n{src}```", "{src}"),  # the block defining Model
])
def test_extract_module(text: str, expected: str) -> None:
    from runtime.answer import extract_module

    src = RELU.read_text()
    assert extract_module(text.format(src=src)) == expected.format(src=src)


def test_answer_without_a_verified_solution() -> None:
    from runtime.answer import render_answer
    from runtime.episode import EpisodeOutcome

    outcome = EpisodeOutcome(episode_id=7, problem_id="abc", status="turn_limit", reward=-1.0, trainable=True,
                             files={}, verified_by=None, speedup_eager=None, speedup_compile=None, speedups=[],
                             evaluation=None, turns=150, error=None, seconds=12.0)
    text = render_answer(outcome, "level1/01_relu")
    assert text.startswith("**No verified `ModelNew`.** Episode 7 on `level1/01_relu` ended `turn_limit` with reward -1.")
    assert "```" not in text


def test_error_events_mid_stream_are_openai_shaped() -> None:
    """After the headers went out, a failure travels as one SSE event with the error body (the same
    JSON as the non-streaming reply), then [DONE]."""
    from runtime.server import SSE_DONE, _error, _event, _event_bytes

    failure = _error(503, "kagentd stopped before the episode finished", code="cancelled")
    raw = (_event_bytes(bytes(failure.body)) + SSE_DONE).decode()
    events = [e.removeprefix("data: ") for e in raw.split("\n\n") if e]
    assert len(events) == 2 and events[1] == "[DONE]"
    assert json.loads(events[0]) == {"error": {"message": "kagentd stopped before the episode finished",
                                               "type": "server_error", "code": "cancelled", "param": None}}
    assert _event({"a": 1}) == b'data: {"a":1}\n\n'
