"""`kagent bench --policy-url ... --daemon URL`: the episodes run in a running kagentd (its policy,
slots, settings and store), asked for over its HTTP API as `kagent solve` does, and read back from
its episode endpoint for the row (the final evaluation, turns, tokens).

    POST URL/v1/chat/completions   {"problem_name": NAME, "messages": [the problem]}  -> episode id
    GET  URL/v1/episodes/ID        the episode with its turns and evaluations

A refused or failed request (the policy server failed, the episode hit a bug, kagentd stopped, the
connection broke) is a fault row with the daemon's message; `--policy-url` is then only a label:
kagentd talks to the policy its own config names.
"""

from __future__ import annotations

import time

import httpx
import msgspec

from runtime.bench import Job
from runtime.bench_rows import BenchRow, fault_row, row_from_result
from runtime.store.rows import EpisodeDetail


class DaemonRunner:
    """Runs one job as an episode in kagentd and turns it into a row."""

    def __init__(self, url: str, *, api_key: str | None) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # An episode may run for an hour: no read timeout, a connect timeout only.
        self.client = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0, read=None))

    async def aclose(self) -> None:
        await self.client.aclose()

    async def grade(self, job: Job) -> BenchRow:
        p = job.problem
        began = time.monotonic()
        source = open(p.path, encoding="utf-8").read()  # noqa: ASYNC230 (a small file)
        body = {"model": "kagent", "stream": False, "problem_name": p.name,
                "messages": [{"role": "user", "content": f"```python\n{source}\n```"}]}
        try:
            r = await self.client.post(f"{self.url}/v1/chat/completions", json=body)
            if r.status_code != 200:
                return self._fault(job, f"kagentd answered {r.status_code}: {_message(r)}", began)
            episode_id = int(r.json()["kagent"]["episode_id"])
            usage = r.json().get("usage") or {}
            d = await self.client.get(f"{self.url}/v1/episodes/{episode_id}")
            d.raise_for_status()
        except (httpx.HTTPError, KeyError, ValueError, TypeError) as exc:
            return self._fault(job, f"kagentd at {self.url}: {type(exc).__name__}: {exc}", began)
        detail = msgspec.json.decode(d.content, type=EpisodeDetail)
        finals = [e.result for e in detail.evaluations if e.tool_call_id is None]
        episode = {"episode_id": episode_id, "episode_status": detail.episode.status, "turns": len(detail.turns),
                   "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens")}
        if not finals:
            row = self._fault(job, f"episode {episode_id} ended {detail.episode.status} without a final evaluation",
                              began)
        else:
            row = row_from_result(finals[-1], problem=p.name, problem_id=p.id, level=p.level, attempt=job.attempt,
                                  solution=None, seconds=time.monotonic() - began)
        return msgspec.structs.replace(row, **episode)

    def _fault(self, job: Job, why: str, began: float) -> BenchRow:
        p = job.problem
        return fault_row(problem=p.name, problem_id=p.id, level=p.level, attempt=job.attempt, fault=why,
                         seconds=time.monotonic() - began)


def _message(r: httpx.Response) -> str:
    try:
        return str(r.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return r.text[:500]
