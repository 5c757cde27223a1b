"""The viewer (runtime/ui, issue 21) over real HTTP and in headless Chromium.

A real kagentd (cpu backend, an API key, checkpoint hot-loading) in front of the scripted policy
server runs three episodes: the bundled relu and a request's own small tanh problem under policy
version 1, relu again under version 2 (the relu kernel is wrong for tanh, so that one fails). The
agent's text and the tanh problem's name carry markup.
The trainer's train_steps rows are written as the trainer writes them: through the store's API on
the shared file (Store.open(lock=False)). Then every page is fetched with httpx and, where a
chromium binary is installed, opened in headless Chromium, which checks that the charts were drawn
and takes screenshots (KAGENT_VIEWER_SCREENSHOTS=docs/viewer writes them there; tmp otherwise).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import quote

import anyio
import httpx
import pytest

from runtime.hotload import STABLE
from runtime.store import Store, ToolCallRow, TrainStepRow
from runtime.ui.files import changes_by_turn, diff_lines, replay
from tests.kagentd_harness import RELU, SUBMIT, Kagentd, Scripted, write_relu_turn

KEY = "viewer-key-42"
XSS = '<script>alert("pwned")</script>'
TINY = """import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"tanh of a small input: a request's own problem, which the relu kernel gets wrong.\"\"\"

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(256, 256) * 2.0]


def get_init_inputs():
    return []
"""
TINY_NAME = "request/<i>tiny</i> tanh"
EDIT = {"content": "Sharpen the comment, then test.", "tool_calls": [
    {"name": "edit_file", "arguments": {"path": "kernels/relu.cpp", "old": "One parallel pass;",
                                        "new": "One parallel pass (edited);"}},
    {"name": "run_tests", "arguments": {}}]}


def script() -> list[dict[str, object]]:
    first = write_relu_turn()
    first["content"] = f"Plan: one OpenMP pass. {XSS} & <b>bold</b>"
    return [first, EDIT, SUBMIT]


@dataclass
class Viewer:
    """The daemon and what the fixture made."""

    d: Kagentd
    relu_v1: int
    tiny_v1: int
    relu_v2: int
    relu_id: str

    def get(self, path: str, *, auth: bool = True, headers: dict[str, str] | None = None) -> httpx.Response:
        h = {"Authorization": f"Bearer {KEY}"} if auth else {}
        return httpx.get(f"{self.d.url}{path}", headers=h | (headers or {}), timeout=30)

    def page(self, path: str) -> str:
        r = self.get(path)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/html")
        return r.text


def _checkpoint(folder: Path, step: int) -> None:
    path = folder / f"step_{step}"
    path.mkdir(parents=True, exist_ok=True)
    (path / "adapter_config.json").write_text("{}")
    (path / STABLE).write_text("")


def _solve(d: Kagentd, source: str, **extra: str) -> int:
    body = {"model": "kagent", "messages": [{"role": "user", "content": source}], **extra}
    r = httpx.post(f"{d.url}/v1/chat/completions", json=body, headers=d.headers, timeout=280)
    assert r.status_code == 200, r.text
    return int(r.json()["kagent"]["episode_id"])


async def _train_steps(db: Path) -> None:
    """Two runs' steps, as trainer/run.py records them (the daemon holds the file: lock=False)."""
    async with Store.open(db, lock=False) as store:
        for step in range(1, 5):
            metrics = {"policy_loss": 0.5 / step, "value_loss": 1.0 / step, "kl_behaviour": 0.01 * step,
                       "clip_frac": 0.1 + 0.02 * step, "entropy": 2.0 - 0.1 * step, "reward": -1.0 + step * 0.5,
                       "pass_rate": step / 4, "tokens_per_s": 1000.0 + step}
            await store.add_train_step(TrainStepRow(run="runs/ppo-demo", stage="ppo", step=step, episodes=[1, 2],
                                                    metrics=metrics))
        await store.add_train_step(TrainStepRow(run="runs/rft-demo", stage="rft", step=1, episodes=[1],
                                                metrics={"nll": 1.25}))


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    tmp = tmp_path_factory.mktemp("viewer")
    scripted = Scripted(tmp, script())
    ckpt = tmp / "ckpt"
    _checkpoint(ckpt, 1)
    d = Kagentd(tmp, scripted.base_url, api_key=KEY,
                extra={"hotload": {"checkpoints_dir": str(ckpt)}, "watch": {"debounce_ms": 100}})
    d.start()
    try:
        d.wait_for(lambda: d.health()["hotload"]["version"] == 1, what="policy version 1")
        relu_v1, tiny_v1 = _solve(d, RELU.read_text()), _solve(d, TINY, problem_name=TINY_NAME)
        _checkpoint(ckpt, 2)
        d.wait_for(lambda: d.health()["hotload"]["version"] == 2, timeout=120, what="policy version 2")
        relu_v2 = _solve(d, RELU.read_text())
        anyio.run(_train_steps, d.db)
        relu_id = d.sql("SELECT problem_id FROM episodes WHERE id = ?", (relu_v1,))[0][0]
        yield Viewer(d=d, relu_v1=relu_v1, tiny_v1=tiny_v1, relu_v2=relu_v2, relu_id=relu_id)
    finally:
        d.kill()
        scripted.stop()


def text_of(html: str) -> str:
    """The page's text: tags dropped, entities decoded, whitespace collapsed."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def episode_ids(html: str) -> list[int]:
    table = html.split('<table class="episodes">', 1)[1].split("</table>", 1)[0] if 'class="episodes"' in html else ""
    return [int(m) for m in re.findall(r'<a href="/ui/episodes/(\d+)">', table)]


def charts(html: str) -> list[dict[str, object]]:
    return [json.loads(m) for m in re.findall(r'<script type="application/json" class="chart-data">(.*?)</script>', html)]


# ------------------------------------------------------------------------------------ auth


def test_auth_is_the_api_key_as_bearer_or_as_a_browser_login(viewer: Viewer) -> None:
    for path in ("/ui/episodes", "/ui/static/charts.js", f"/ui/episodes/{viewer.relu_v1}"):
        r = viewer.get(path, auth=False)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith('Basic realm="kagent"'), path
        assert "text/html" in r.headers["content-type"] and "API key" in text_of(r.text)
    login = base64.b64encode(f"anyone:{KEY}".encode()).decode()
    assert viewer.get("/ui/episodes", auth=False, headers={"Authorization": f"Basic {login}"}).status_code == 200
    wrong = base64.b64encode(b"anyone:nope").decode()
    assert viewer.get("/ui/episodes", auth=False, headers={"Authorization": f"Basic {wrong}"}).status_code == 401
    assert viewer.get("/ui/episodes", auth=False, headers={"Authorization": "Basic !!!"}).status_code == 401
    assert viewer.get("/ui/episodes", auth=False, headers={"Authorization": "Bearer nope"}).status_code == 401
    # The API keeps its own answers: JSON, a Bearer challenge, and no Basic login.
    r = viewer.get("/v1/episodes", auth=False, headers={"Authorization": f"Basic {login}"})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer" and "error" in r.json()


# ------------------------------------------------------------------------------- episodes


def test_episodes_list_shows_every_episode_newest_first(viewer: Viewer) -> None:
    html = viewer.page("/ui/episodes")
    assert episode_ids(html) == [viewer.relu_v2, viewer.tiny_v1, viewer.relu_v1]
    text = text_of(html)
    assert "episodes 1–3 of 3 · page 1 of 1" in text
    assert "level1/01_relu" in text and TINY_NAME in text and "submitted" in text
    assert episode_ids(viewer.page("/ui/")) == episode_ids(html)
    moved = viewer.get("/ui")
    assert moved.status_code in (307, 308) and moved.headers["location"].endswith("/ui/")
    csp = viewer.get("/ui/episodes").headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp


@pytest.mark.parametrize(("query", "expect"), [
    ("problem=" + quote(TINY_NAME), ["tiny_v1"]),
    ("problem=level1/01_relu", ["relu_v2", "relu_v1"]),
    ("problem=level9/none", []),
    ("level=1", ["relu_v2", "relu_v1"]),
    ("level=2", []),
    ("status=submitted", ["relu_v2", "tiny_v1", "relu_v1"]),
    ("status=error", []),
    ("origin=request", ["relu_v2", "tiny_v1", "relu_v1"]),
    ("origin=rollout", []),
    ("policy=1", ["tiny_v1", "relu_v1"]),
    ("policy=2", ["relu_v2"]),
    ("reward_min=0", ["relu_v2", "relu_v1"]),
    ("reward_max=-1", ["tiny_v1"]),
    ("policy=1&reward_min=1&problem=level1/01_relu", ["relu_v1"]),
    ("problem=&level=&status=&reward_min=", ["relu_v2", "tiny_v1", "relu_v1"]),  # a form's blank fields
], ids=["problem", "problem-relu", "problem-unknown", "level-1", "level-2", "status", "status-none", "origin", "origin-none", "policy-1",
        "policy-2", "reward-min", "reward-max", "combined", "blank-fields"])
def test_episode_filters(viewer: Viewer, query: str, expect: list[str]) -> None:
    html = viewer.page(f"/ui/episodes?{query}")
    assert episode_ids(html) == [getattr(viewer, name) for name in expect]
    if not expect:
        assert "no episodes match" in text_of(html)


def test_episode_paging_keeps_the_filters(viewer: Viewer) -> None:
    first = viewer.page("/ui/episodes?per_page=1&origin=request")
    assert episode_ids(first) == [viewer.relu_v2]
    assert "episodes 1–1 of 3 · page 1 of 3" in text_of(first)
    nxt = re.search(r'<a href="([^"]+)" rel="next">', first)
    assert nxt is not None and "rel=\"prev\"" not in first
    href = unescape(nxt.group(1))
    assert "origin=request" in href and "per_page=1" in href and "page=2" in href
    second = viewer.page(href)
    assert episode_ids(second) == [viewer.tiny_v1] and 'rel="prev"' in second and 'rel="next"' in second
    last = viewer.page("/ui/episodes?per_page=1&page=3")
    assert episode_ids(last) == [viewer.relu_v1] and 'rel="next"' not in last
    past = viewer.page("/ui/episodes?per_page=2&page=9")
    assert episode_ids(past) == [] and "page 9 is past the last page (2) of 3 episodes" in text_of(past)


@pytest.mark.parametrize(("path", "message"), [
    ("/ui/episodes?level=x", "level must be an integer, got 'x'"),
    ("/ui/episodes?status=bogus", "status 'bogus' is not one of: cancelled, error,"),
    ("/ui/episodes?origin=web", "origin 'web' is not one of: replay, request, rollout"),
    ("/ui/episodes?policy=-1", "policy must be from 0 to"),
    ("/ui/episodes?reward_min=nan", "reward_min must be a finite number, got 'nan'"),
    ("/ui/episodes?reward_max=lots", "reward_max must be a number, got 'lots'"),
    ("/ui/episodes?reward_min=2&reward_max=1", "reward_min (2) is above reward_max (1)"),
    ("/ui/episodes?page=0", "page must be from 1 to"),
    ("/ui/episodes?per_page=100000", "per_page must be from 1 to 500, got 100000"),
    ("/ui/episodes?staus=error", "unknown parameter 'staus'; this page takes: level, origin, page,"),
    ("/ui/episodes/abc", "episode id must be an integer, got 'abc'"),
    ("/ui/episodes/0", "episode id must be from 1 to"),
    (f"/ui/episodes/{10**23}", "episode id must be from 1 to 9223372036854775807"),
    ("/ui/problems?level=one", "level must be an integer, got 'one'"),
    ("/ui/training?stage=sft", "stage 'sft' is not one of: ppo, rft, value"),
    ("/ui/training?step=3", "unknown parameter 'step'; this page takes: run, stage"),
], ids=["level", "status", "origin", "policy", "nan", "reward-text", "reward-range", "page-0", "per-page",
        "unknown-param", "id-text", "id-0", "id-huge", "problems-level", "stage", "training-param"])
def test_bad_parameters_are_a_400_page_that_says_why(viewer: Viewer, path: str, message: str) -> None:
    r = viewer.get(path)
    assert r.status_code == 400, r.text
    assert "text/html" in r.headers["content-type"]
    assert "400 · bad request" in r.text and message in text_of(r.text)


@pytest.mark.parametrize(("path", "message"), [
    ("/ui/episodes/999999", "no episode 999999"),
    ("/ui/problems/0123456789abcdef", "no problem '0123456789abcdef'"),
    ("/ui/training?run=runs/nothing", "no train steps for run 'runs/nothing'"),
    ("/ui/training?run=runs/ppo-demo&stage=value", "no train steps for run 'runs/ppo-demo' and stage 'value'"),
    ("/ui/nothing/here", "no page /ui/nothing/here"),
    ("/ui/static/secrets.txt", "no static file 'secrets.txt'"),
], ids=["episode", "problem", "run", "run-stage", "page", "static"])
def test_unknown_things_are_a_404_page(viewer: Viewer, path: str, message: str) -> None:
    r = viewer.get(path)
    assert r.status_code == 404, r.text
    assert "text/html" in r.headers["content-type"] and message in text_of(r.text)


def test_the_viewer_only_reads(viewer: Viewer) -> None:
    r = httpx.post(f"{viewer.d.url}/ui/episodes", headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    assert r.status_code == 405 and "the viewer only reads" in text_of(r.text)


# -------------------------------------------------------------------------------- episode


def test_episode_page_transcript_calls_diffs_evaluations_tokens(viewer: Viewer) -> None:
    html = viewer.page(f"/ui/episodes/{viewer.relu_v1}")
    text = text_of(html)
    assert f"Episode {viewer.relu_v1} · level1/01_relu" in text
    assert "policy version 1" in text and "origin request" in text
    assert re.search(r"tokens \d+ prompt \+ \d+ completion · \d+ sampled token ids stored", text), text[:2000]
    # the transcript: three turns, each call with its arguments and result
    for turn in (0, 1, 2):
        assert f'id="turn-{turn}"' in html
    for skill in ("write_file", "edit_file", "run_tests", "submit"):
        assert f'<span class="name">{skill}</span>' in html
    assert "wrote " in text and "bytes to kernels/relu.cpp" in text and "replaced 1 occurrence in kernels/relu.cpp" in text
    # the files as diffs between turns: turn 0 creates the kernel, turn 1 edits one line of it
    turn0 = html.split('id="turn-0"', 1)[1].split('id="turn-1"', 1)[0]
    assert "+++ b/kernels/relu.cpp" in turn0 and "--- /dev/null" in turn0 and "(new file)" in text_of(turn0)
    assert "--- a/model_new.py" in turn0  # the template, replaced
    turn1 = html.split('id="turn-1"', 1)[1].split('id="turn-2"', 1)[0]
    assert '<span class="del">-// y = max(x, 0) element-wise (NaN passes through, as torch.relu). One parallel pass;' in turn1
    assert '<span class="add">+// y = max(x, 0) element-wise (NaN passes through, as torch.relu). One parallel pass (edited);' in turn1
    # every evaluation: the run_tests one and the final grading, with reward, speedups, timings
    ids = [int(i) for i in re.findall(r'<details class="eval" id="evaluation-(\d+)"', html)]
    stored = viewer.d.sql("SELECT id, mode FROM evaluations WHERE episode_id = ? ORDER BY id", (viewer.relu_v1,))
    assert ids == [i for i, _ in stored] and [m for _, m in stored] == ["test", "final"]
    final = text_of(html.split(f'id="evaluation-{ids[-1]}"', 1)[1])
    assert "outcome passed" in final and "reward " in final and "(milestone)" in final
    assert "speedups" in final and "95% interval" in final and re.search(r"eager \d+\.\d+× \[\d+\.\d+, \d+\.\d+\]", final)
    assert "timing (per call, median [95% interval])" in final and re.search(r"candidate [\d.]+ µs \[[\d.]+, [\d.]+\] \(n=\d+\)", final)
    assert "stage durations" in final and "correctness per input set" in final
    assert f'<a href="#evaluation-{ids[0]}">evaluation {ids[0]}</a>' in html  # linked from its run_tests call


def test_agent_text_is_escaped(viewer: Viewer) -> None:
    """The agent's text is untrusted: a <script> in a transcript is shown as text, never markup."""
    html = viewer.page(f"/ui/episodes/{viewer.relu_v1}")
    assert XSS not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in html
    assert 'Plan: one OpenMP pass. <script>alert("pwned")</script> & <b>bold</b>' in text_of(html)
    # the only <script> elements are the page's own (none inline here)
    assert re.findall(r"<script[^>]*>", html) == []
    # a problem's name is text too, wherever it is shown
    for path in ("/ui/episodes", "/ui/problems", f"/ui/episodes/{viewer.tiny_v1}"):
        html = viewer.page(path)
        assert "<i>tiny</i>" not in html and "&lt;i&gt;tiny&lt;/i&gt; tanh" in html, path


def test_failed_episode_shows_why(viewer: Viewer) -> None:
    text = text_of(viewer.page(f"/ui/episodes/{viewer.tiny_v1}"))
    assert TINY_NAME in text and "reward -1" in text and "outcome failed" in text
    assert "correct no" in text


def _call(i: int, turn: int, skill: str, args: object, *, ok: bool = True, record: object = None) -> ToolCallRow:
    return ToolCallRow(id=i, turn_id=turn, episode_id=1, index=i, skill=skill, ok=ok, result="",
                       args=args if isinstance(args, str) else json.dumps(args), record=record)


def test_files_are_replayed_from_the_tool_calls_as_the_skills_applied_them() -> None:
    calls = [
        _call(1, 10, "write_file", {"path": "./kernels//a.cpp", "content": "x = 1;\nx = 1;\n"},
              record={"path": "kernels/a.cpp", "bytes": 14, "created": True}),
        _call(2, 10, "write_file", {"path": "kernels/b.cpp", "content": "gone"}, ok=False),  # refused: no change
        _call(3, 11, "edit_file", {"path": "kernels/a.cpp", "old": "x = 1;", "new": "x = 2;", "replace_all": True},
              record={"path": "kernels/a.cpp"}),
        _call(4, 11, "write_file", "{not json", ok=True),  # unreadable arguments change nothing
        _call(5, 12, "write_file", {"path": "kernels/c.cpp", "content": "c"}),
        _call(6, 12, "delete_file", {"path": "kernels/c.cpp"}),
        _call(7, 13, "run_tests", {}),
    ]
    assert replay(calls, until=1)["kernels/a.cpp"] == "x = 1;\nx = 1;\n"
    end = replay(calls)
    assert end["kernels/a.cpp"] == "x = 2;\nx = 2;\n" and "kernels/c.cpp" not in end and "kernels/b.cpp" not in end
    assert end["model_new.py"].startswith("# model_new.py: replace this template")
    by_turn = changes_by_turn(calls)
    assert sorted(by_turn) == [10, 11]  # turn 12 wrote and deleted c.cpp: no net change; 13 changed nothing
    assert [c.path for c in by_turn[10]] == ["kernels/a.cpp"] and by_turn[10][0].before is None
    assert diff_lines(by_turn[11][0]) == ["--- a/kernels/a.cpp", "+++ b/kernels/a.cpp", "@@ -1,2 +1,2 @@",
                                          "-x = 1;", "-x = 1;", "+x = 2;", "+x = 2;"]


# ------------------------------------------------------------------------------- problems


def test_problems_list_and_one_problem(viewer: Viewer) -> None:
    html = viewer.page("/ui/problems")
    text = text_of(html)
    assert "2 problems with episodes" in text
    row = html.split(f'href="/ui/problems/{viewer.relu_id}"', 1)[1].split("</tr>", 1)[0]
    cells = [text_of(c).strip() for c in re.findall(r"<td>(.*?)</td>", row)]
    assert cells[:6] == ["1", "kagent", "2", "2", "2", "100%"], cells  # level, source, episodes, graded, passed, rate
    assert text_of(viewer.page("/ui/problems?level=2")).count("0 problems with episodes at level 2") == 1

    page = viewer.page(f"/ui/problems/{viewer.relu_id}")
    text = text_of(page)
    assert "Problem level1/01_relu" in text and "passed 2 of 2 graded" in text
    reward, speed = charts(page)
    assert reward["time"] is True and [s["label"] for s in reward["series"]] == ["reward"]  # type: ignore[index]
    assert len(reward["x"]) == 2 and all(v >= 1 for v in reward["series"][0]["values"])  # type: ignore[index, arg-type]
    assert [s["label"] for s in speed["series"]] == ["vs eager", "vs torch.compile"]  # type: ignore[index]
    # the best verified solution: the files as the best evaluation graded them (the edit included)
    best = page.split("best verified solution", 1)[1]
    assert "(the final grading) in" in text_of(best) and "KAGENT_EXPORT void relu" in best
    assert "One parallel pass (edited);" in best and "class ModelNew" in best
    assert "raise NotImplementedError" not in best  # not the template

    tanh_id = viewer.d.sql("SELECT problem_id FROM episodes WHERE id = ?", (viewer.tiny_v1,))[0][0]
    tanh = text_of(viewer.page(f"/ui/problems/{tanh_id}"))
    assert "no evaluation of this problem has passed yet" in tanh and "passed 0 of 1 graded" in tanh


# ------------------------------------------------------------------------------- training


def test_training_page_curves_per_version_and_train_steps(viewer: Viewer) -> None:
    html = viewer.page("/ui/training")
    data = {c["y_label"]: c for c in charts(html)}
    assert data["reward"]["x"] == [1.0, 2.0] and data["share passed"]["x"] == [1.0, 2.0]
    assert data["share passed"]["series"][0]["values"] == [0.5, 1.0]  # type: ignore[index]
    assert data["speedup"]["series"][0]["label"] == "vs eager"  # type: ignore[index]
    # the newest step's run by default: its losses, KL, clip fraction, reward and pass rate
    text = text_of(html)
    assert "run runs/rft-demo · stage rft · 1 steps" in text
    assert [s["label"] for s in data["loss"]["series"]] == ["nll"]  # type: ignore[index]
    assert "run runs/ppo-demo · stage ppo · 4 steps" in text_of(viewer.page("/ui/training?stage=ppo"))
    assert "run runs/rft-demo · stage rft · 1 steps" in text_of(viewer.page("/ui/training?run=runs/rft-demo"))
    ppo = viewer.page("/ui/training?run=runs/ppo-demo&stage=ppo")
    data = {c["y_label"]: c for c in charts(ppo)}
    assert [s["label"] for s in data["loss"]["series"]] == ["policy_loss", "value_loss"]  # type: ignore[index]
    assert data["loss"]["x"] == [1.0, 2.0, 3.0, 4.0] and data["loss"]["series"][0]["values"][0] == 0.5  # type: ignore[index]
    assert [s["label"] for s in data["KL"]["series"]] == ["kl_behaviour"]  # type: ignore[index]
    assert [s["label"] for s in data["clip fraction"]["series"]] == ["clip_frac"]  # type: ignore[index]
    assert [s["label"] for s in data["reward and pass rate"]["series"]] == ["pass_rate", "reward"]  # type: ignore[index]
    other = text_of(ppo)
    assert "other metrics at step 4" in other and "entropy 1.6" in other and "tokens_per_s 1004" in other
    assert "policy versions published" in other and "runs/ppo-demo ppo 4" in other


# -------------------------------------------------------------------------------- browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH (Debian: apt-get install "
                                                              "chromium; scripts/setup.sh installs it as root)")


def chromium(profile: Path, *args: str) -> str:
    assert CHROMIUM is not None
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
                           "--virtual-time-budget=5000", *args],
                          capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@needs_chromium
def test_pages_in_headless_chromium(viewer: Viewer, tmp_path: Path) -> None:
    """The browser logs in with the key as its password, runs charts.js, which draws each chart
    with uPlot (a canvas per chart), and shows the agent's <script> as text."""
    base = viewer.d.url.replace("http://", f"http://kagent:{KEY}@")
    pages = {"episodes": "/ui/episodes", "episode": f"/ui/episodes/{viewer.relu_v1}",
             "problem": f"/ui/problems/{viewer.relu_id}", "training": "/ui/training?run=runs/ppo-demo&stage=ppo"}
    profile = tmp_path / "profile"
    dom = chromium(profile, "--dump-dom", base + pages["training"])
    assert "Training" in dom and dom.count('data-rendered="true"') == 7, dom[:3000]
    assert dom.count('class="uplot') >= 7 and "<canvas" in dom
    dom = chromium(profile, "--dump-dom", base + pages["problem"])
    assert dom.count('data-rendered="true"') == 2 and "KAGENT_EXPORT void relu" in dom
    dom = chromium(profile, "--dump-dom", base + pages["episode"])
    assert "&lt;script&gt;alert(\"pwned\")&lt;/script&gt;" in dom and XSS not in dom
    out = Path(os.environ.get("KAGENT_VIEWER_SCREENSHOTS") or tmp_path / "shots")
    out.mkdir(parents=True, exist_ok=True)
    heights = {"episodes": 700, "episode": 2000, "problem": 1500, "training": 2000}
    for name, path in pages.items():
        shot = out / f"{name}.png"
        chromium(profile, f"--screenshot={shot}", f"--window-size=1400,{heights[name]}", base + path)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000, shot
