"""kagentd end to end, measured: start-up, HTTP latency, solve requests through the official
`openai` client (non-streaming and streaming), graceful stop.

A scripted policy (runtime/fakes/scripted.py) replays the reference solution of a problem through the
skills: write the files, compile, run_tests, profile, submit. Everything else is real: the
daemon, the store, the build, the sandboxed evaluation workers.

    python benchmarks/bench_service.py --backend cpu                 # any machine (~1-2 min)
    python benchmarks/bench_service.py --backend cuda --requests 3   # a GPU machine (the H200)

Prints a table and writes benchmarks/results/service-<backend>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import openai

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.common import environment, table, write_result  # noqa: E402
from runtime.kagentd_cli import free_port  # noqa: E402

PROBLEM = "level1/02_swish"



def script(backend: str) -> list[dict[str, Any]]:
    solution = ROOT / "problems" / "solutions" / backend / PROBLEM
    writes = [{"name": "write_file", "arguments": {"path": p.relative_to(solution).as_posix(), "content": p.read_text()}}
              for p in sorted(solution.rglob("*")) if p.is_file()]
    call = [{"content": "", "tool_calls": [{"name": n, "arguments": {}}]} for n in ("compile", "run_tests", "profile")]
    return [{"content": "Writing the solution.", "tool_calls": writes}, *call,
            {"content": "Done.", "tool_calls": [{"name": "submit", "arguments": {"summary": "swish"}}]}]


def config(tmp: Path, backend: str, policy_url: str, baselines: list[str]) -> Path:
    path = tmp / "kagentd.toml"
    path.write_text(f"""[daemon]
state_dir = "{tmp / 'state'}"
run_dir = "{tmp / 'run'}"
[http]
port = 0
[policy]
base_url = "{policy_url}"
[scheduler]
problems_dir = "{ROOT / 'problems'}"
workspace_root = "{tmp / 'ws'}"
[scheduler.eval]
backend = "{backend}"
baselines = {json.dumps(baselines)}
""")
    return path


def latency(url: str, path: str, n: int = 200) -> tuple[float, float]:
    with httpx.Client() as c:
        times = []
        for _ in range(n):
            t = time.perf_counter()
            c.get(url + path).raise_for_status()
            times.append(time.perf_counter() - t)
    times.sort()
    return 1000 * statistics.median(times), 1000 * times[int(0.95 * n) - 1]


def solve(url: str, source: str, stream: bool) -> dict[str, Any]:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=1800)
    messages = [{"role": "user", "content": f"```python\n{source}```"}]
    began = time.perf_counter()
    first = None
    if stream:
        ext: dict[str, Any] = {}
        for chunk in client.chat.completions.create(model="kagent", messages=messages, stream=True,  # type: ignore[call-overload]
                                                    extra_body={"problem_name": PROBLEM}):
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter() - began
            ext = (chunk.model_extra or {}).get("kagent") or ext
    else:
        r = client.chat.completions.create(model="kagent", messages=messages,  # type: ignore[call-overload]
                                           extra_body={"problem_name": PROBLEM})
        ext = (r.model_extra or {})["kagent"]
    return {"seconds": time.perf_counter() - began, "first_chunk_s": first, "stream": stream, **{
        k: ext.get(k) for k in ("episode_id", "status", "reward", "speedup_eager", "speedup_compile")}}


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAGENT_")} | {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    port = free_port()
    script_file = tmp / "script.json"
    script_file.write_text(json.dumps({"turns": script(args.backend)}))
    policy = subprocess.Popen([sys.executable, "-m", "runtime.fakes.scripted", "--script", str(script_file),
                               "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    cfg = config(tmp, args.backend, f"http://127.0.0.1:{port}/v1", args.baselines.split(","))
    daemon = [sys.executable, "-m", "runtime.kagentd_cli"]
    try:
        t = time.perf_counter()
        subprocess.run([*daemon, "start", "--config", str(cfg)], cwd=ROOT, env=env, check=True)
        start_s = time.perf_counter() - t
        url = json.loads((tmp / "run" / "kagentd.json").read_text())["url"]
        lat = {p: latency(url, p) for p in ("/v1/models", "/health", "/v1/episodes?limit=20")}
        source = (ROOT / "problems" / f"{PROBLEM}.py").read_text()
        solves = [solve(url, source, stream=i % 2 == 1) for i in range(args.requests)]
        t = time.perf_counter()
        subprocess.run([*daemon, "stop", "--config", str(cfg)], cwd=ROOT, env=env, check=True)
        stop_s = time.perf_counter() - t
    finally:
        policy.terminate()
        policy.wait()
    db = tmp / "state" / "kagent.db"
    return {"backend": args.backend, "problem": PROBLEM, "start_s": start_s, "stop_s": stop_s,
            "latency_ms": {p: {"median": m, "p95": q} for p, (m, q) in lat.items()}, "solves": solves,
            "store": trajectory(db, solves, env)}


def trajectory(db: Path, solves: list[dict[str, Any]], env: dict[str, str]) -> dict[str, Any]:
    """What the store holds for each solved episode, and `kagent episodes show` of the first."""
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out: dict[str, Any] = {}
    for s in solves:
        eid = s["episode_id"]
        turns, with_ids = conn.execute("SELECT count(*), count(completion_ids) FROM turns WHERE episode_id = ?", (eid,)).fetchone()
        calls = conn.execute("SELECT count(*) FROM tool_calls WHERE episode_id = ?", (eid,)).fetchone()[0]
        evals = conn.execute("SELECT group_concat(mode) FROM evaluations WHERE episode_id = ?", (eid,)).fetchone()[0]
        out[str(eid)] = {"turns": turns, "turns_with_token_ids": with_ids, "tool_calls": calls, "evaluations": evals}
    conn.close()
    if solves:
        show = subprocess.run([sys.executable, "-m", "runtime.cli", "episodes", "show", str(solves[0]["episode_id"]),
                               "--db", str(db)], cwd=ROOT, env=env, capture_output=True, text=True)
        out["show_exit"] = show.returncode
        out["show"] = show.stdout[-6000:] + show.stderr[-2000:]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=["cpu", "cuda"], default="cpu", help="evaluation backend (default cpu)")
    ap.add_argument("--requests", type=int, default=2, help="solve requests, alternating plain and streaming")
    ap.add_argument("--baselines", default="eager,compile", help="baselines timed by profile/final (default both)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kagent-bench-service-") as tmp:
        result = run(args, Path(tmp))
    rows = [["kagentd start (until /health answers)", f"{result['start_s']:.2f} s"],
            ["kagentd stop (idle, graceful)", f"{result['stop_s']:.2f} s"]]
    rows += [[f"GET {p} median / p95", f"{v['median']:.2f} / {v['p95']:.2f} ms"] for p, v in result["latency_ms"].items()]
    for s in result["solves"]:
        first = f", first chunk {s['first_chunk_s']:.2f} s" if s["first_chunk_s"] is not None else ""
        rows.append([f"solve {PROBLEM} ({'stream' if s['stream'] else 'plain'})",
                     f"{s['seconds']:.1f} s{first}; {s['status']}, reward {s['reward']}, "
                     f"x{s['speedup_eager'] or 0:.2f} eager, x{s['speedup_compile'] or 0:.2f} compile"])
    print(table(["measure", "value"], rows))
    store = result["store"]
    for eid, facts in store.items():
        if isinstance(facts, dict):
            print(f"episode {eid} in the store: {facts}")
    print(f"kagent episodes show (exit {store.get('show_exit')}):\n{store.get('show', '')}")
    path = write_result(f"service-{args.backend}", {"environment": environment(), **result})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
