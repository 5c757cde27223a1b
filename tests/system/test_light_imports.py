"""The commands that only read the config or the store start without torch (and openai): a fresh
interpreter imports the modules, or runs `kagentd status`/`stop` and `kagent episodes`/`solve`
in-process, then says which heavy packages it loaded. A control (runtime.scheduler) shows the
probe sees torch when it is there.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "openai")

PROBE = """
import sys
{body}
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
print("HEAVY=" + ",".join(heavy))
"""


def heavy_after(body: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> tuple[list[str], str]:
    """Run `body` in a fresh interpreter; the heavy packages it loaded, and its whole output."""
    code = PROBE.format(body=textwrap.dedent(body), heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    line = next(x for x in done.stdout.splitlines() if x.startswith("HEAVY="))
    return [m for m in line[len("HEAVY="):].split(",") if m], out


def test_config_and_cli_modules_import_no_torch() -> None:
    heavy, out = heavy_after("import runtime.config, runtime.cli_runtime, runtime.store.queries, runtime.transcript, "
                             "runtime.kagentd_cli, runtime.settings, runtime.cli, runtime.hotload")
    assert heavy == [], out


def test_skills_modules_behind_the_config_import_no_torch() -> None:
    heavy, out = heavy_after("import skills, skills.evaluator.evaluate, skills.evaluator.config, skills.evaluator.pool, "
                             "skills.evaluator.api, skills.evaluator.results, skills.evaluator.build, "
                             "skills.evaluator.sandbox, skills.evaluator.harness.protocol, skills.evaluator.baselines, "
                             "skills.evaluator.report, skills.evaluator.reward")
    assert heavy == [], out


def test_the_probe_sees_torch_where_it_is_imported() -> None:
    heavy, out = heavy_after("import runtime.scheduler")
    assert heavy == ["openai", "torch"], out


COMMANDS = """
import io, json, os, threading
from contextlib import redirect_stderr, redirect_stdout
from http.server import BaseHTTPRequestHandler, HTTPServer
import anyio
from runtime import cli, kagentd_cli
from runtime.store import ProblemRow, Store, TurnRow

db = os.environ["XDG_STATE_HOME"] + "/kagent/kagent.db"
async def fill():
    async with Store.open(db) as store:
        await store.upsert_problem(ProblemRow(id="p1", name="level1/light", source="test", level=1, code="x = 1"))
        eid = await store.start_episode("p1", policy_version=None)
        await store.add_turn(TurnRow(episode_id=eid, index=0, text="hello from the probe", prompt_ids=[1],
                                     completion_ids=[2, 3], logprobs=[-0.5, -0.25]))
        await store.finish_episode(eid, "turn_limit", reward=-1.0)
os.makedirs(os.path.dirname(db))
anyio.run(fill)

class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"status": "ok", "pid": os.getpid(), "uptime_s": 5, "db": db,
                           "scheduler": {"running": 2, "queued": 1, "finished": 7}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

def call(main, argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(argv)
    return {"rc": rc, "out": out.getvalue() + err.getvalue()}

results = {"status_down": call(kagentd_cli.main, ["status"]), "stop_down": call(kagentd_cli.main, ["stop"])}
# This interpreter poses as the running daemon (its command line names kagentd).
http = HTTPServer(("127.0.0.1", 0), Health)
threading.Thread(target=http.serve_forever, daemon=True).start()
run_dir = os.environ["XDG_STATE_HOME"] + "/kagent"
open(run_dir + "/kagentd.pid", "w").write(str(os.getpid()))
open(run_dir + "/kagentd.json", "w").write(json.dumps({"pid": os.getpid(), "url": "http://127.0.0.1:%d" % http.server_port,
    "db": db, "config": None, "log": None, "started": 0.0}))
results["status_up"] = call(kagentd_cli.main, ["status"])
os.remove(run_dir + "/kagentd.pid")
results["list"] = call(cli.main, ["episodes", "list"])
results["show"] = call(cli.main, ["episodes", "show", "1"])
results["export"] = call(cli.main, ["episodes", "export", "--out", os.environ["HOME"] + "/e.jsonl"])
results["solve"] = call(cli.main, ["solve", os.environ["HOME"] + "/p.py", "--url", os.environ["DEAD_URL"]])
print("RESULTS=" + json.dumps(results))
"""


def test_cli_commands_run_without_torch(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    home = tmp_path / "home"
    home.mkdir()
    (home / "p.py").write_text("import torch\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAGENT", "XDG_"))}
    env.update(HOME=str(home), XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               DEAD_URL=f"http://127.0.0.1:{dead}", PYTHONPATH=str(ROOT))
    heavy, out = heavy_after(COMMANDS, env=env, cwd=tmp_path)
    line = next(x for x in out.splitlines() if x.startswith("RESULTS="))
    r = json.loads(line[len("RESULTS="):])
    assert heavy == [], out
    assert r["status_down"]["rc"] == 3 and "not running" in r["status_down"]["out"], r
    assert r["stop_down"]["rc"] == 0 and "not running" in r["stop_down"]["out"], r
    assert r["status_up"]["rc"] == 0 and "2 running, 1 queued, 7 finished" in r["status_up"]["out"], r
    assert r["list"]["rc"] == 0 and "level1/light" in r["list"]["out"], r
    assert r["show"]["rc"] == 0 and "hello from the probe" in r["show"]["out"], r
    assert r["export"]["rc"] == 0 and json.loads((home / "e.jsonl").read_text().splitlines()[0])["episode_id"] == 1, r
    assert r["solve"]["rc"] == 3 and "not running" in r["solve"]["out"], r
