"""Runtime benchmarks (issue 4): loop overhead, store writes, and GPU slot occupancy.

overhead (default, CPU): the scripted policy server runs as its own process (as vLLM would);
the scheduler keeps `--in-flight` rollouts going, each a `--turns`-turn episode whose only tool
is a registered no-op skill, with full logging (every turn with its token arrays, every tool
call, every episode row). Reports turns/s and store rows/s over `--seconds`, CPU seconds per
turn of each process, and a separate microbenchmark of raw `Store.add_turn` writes/s.

    python benchmarks/bench_runtime.py --seconds 20 --in-flight 16 --turns 40

--gpu-busy (H200): the scripted policy writes the CUDA swish reference solution, compiles,
profiles `--profiles` times and submits; real cuda evaluations (warm worker pools, one slot
per GPU). Reports the share of wall time the GPU slots are leased by evaluations, measured
after `--warmup` seconds (the first baseline timings and torch.compile cold start excluded).

    python benchmarks/bench_runtime.py --gpu-busy --seconds 300 --warmup 90 --gpu-slots 1 --in-flight 8

`--gpu-busy --backend cpu` runs the same code path on the CPU (CPU swish solution, one cpu slot):
a dry run for machines without a GPU, not the measurement.

Both print a table and write benchmarks/results/runtime-{overhead,gpu-busy}.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import environment, table, write_result  # noqa: E402
from runtime.kagentd_cli import free_port  # noqa: E402
from runtime.policy import make_policy  # noqa: E402
from runtime.scheduler import Scheduler  # noqa: E402
from runtime.settings import EpisodeLimits, PolicyConfig, SchedulerConfig  # noqa: E402
from runtime.store import Store, TurnRow  # noqa: E402
from skills.base import SkillContext, SkillResult, register  # noqa: E402
from skills.eval_skills import NoArgs  # noqa: E402
from skills.evaluator.config import EvalConfig  # noqa: E402


class Noop:
    """A skill that does no work: the loop's own cost is what is measured."""

    name = "noop"
    description = "Does nothing (benchmark)."
    Args = NoArgs

    async def run(self, args: NoArgs, ctx: SkillContext) -> SkillResult:
        return SkillResult(text="ok", ok=True)



def start_server(script: list[dict[str, Any]], tmp: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    path = tmp / "script.json"
    path.write_text(json.dumps(script))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "runtime.fakes.scripted", "--script", str(path), "--port", str(port),
                             "--no-log", *extra], cwd=ROOT, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{url}/models", timeout=1).raise_for_status()
            return proc, url
        except httpx.TransportError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the scripted server did not start") from None
            time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def counts(store: Store) -> dict[str, int]:
    def q(conn: Any) -> dict[str, int]:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("turns", "tool_calls", "episodes", "evaluations")}
    return await store.read(q)


async def measure(sched: Scheduler, store: Store, server_pid: int, warmup: float, seconds: float) -> dict[str, Any]:
    await anyio.sleep(warmup)
    sched.slots.reset_clock()
    c0, t0, own0, srv0 = await counts(store), time.monotonic(), time.process_time(), cpu_seconds(server_pid)
    await anyio.sleep(seconds)
    c1, t1, own1, srv1 = await counts(store), time.monotonic(), time.process_time(), cpu_seconds(server_pid)
    wall = t1 - t0
    turns = c1["turns"] - c0["turns"]
    rows = sum(c1[k] - c0[k] for k in c1) + (c1["episodes"] - c0["episodes"])  # episodes: insert + finish
    return {"wall_s": wall, "turns": turns, "turns_per_s": turns / wall, "store_rows_per_s": rows / wall,
            "episodes_started": c1["episodes"] - c0["episodes"], "evaluations": c1["evaluations"] - c0["evaluations"],
            "daemon_cpu_ms_per_turn": 1e3 * (own1 - own0) / max(turns, 1),
            "server_cpu_ms_per_turn": 1e3 * (srv1 - srv0) / max(turns, 1),
            "slot_busy_fraction": sched.slots.busy_fraction(), "status": sched.status()}


async def store_microbench(tmp: Path, n: int, writers: int, ids: int) -> dict[str, Any]:
    """Raw add_turn throughput: `writers` concurrent tasks, `n` turns of `ids` prompt+completion ids."""
    async with Store.open(tmp / "micro.db") as store:
        from runtime.store import ProblemRow
        await store.upsert_problem(ProblemRow(id="p", name="bench", source="bench"))
        eids = [await store.start_episode("p", policy_version=None) for _ in range(writers)]
        prompt, completion, lps = list(range(ids // 2)), list(range(ids // 2)), [-0.5] * (ids // 2)

        async def writer(eid: int, count: int) -> None:
            for i in range(count):
                await store.add_turn(TurnRow(episode_id=eid, index=i, text="x" * 200, prompt_ids=prompt,
                                             completion_ids=completion, logprobs=lps))

        t = time.monotonic()
        async with anyio.create_task_group() as tg:
            for eid in eids:
                tg.start_soon(writer, eid, n // writers)
        wall = time.monotonic() - t
    done = (n // writers) * writers
    return {"turns": done, "writers": writers, "ids_per_turn": ids, "writes_per_s": done / wall,
            "mb_per_s": done * ids * 8 / wall / 1e6}


async def overhead(a: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    register(Noop())
    proc, url = start_server([{"content": "", "tool_calls": [{"name": "noop"}]}], tmp, "--loop")
    try:
        policy = make_policy(PolicyConfig(base_url=url, max_tokens=256))
        cfg = SchedulerConfig(warm_workers=False, rollouts=True, max_in_flight=a.in_flight,
                              problems_dir=str(ROOT / "problems"), workspace_root=str(tmp / "ws"), tools=["noop"],
                              limits=EpisodeLimits(max_turns=a.turns), eval=EvalConfig(backend="cpu"), seed=0)
        async with Store.open(tmp / "bench.db") as store:
            sched = Scheduler(config=cfg, store=store, policy=policy)
            async with anyio.create_task_group() as tg:
                await tg.start(sched.run)
                result = await measure(sched, store, proc.pid, a.warmup, a.seconds)
                tg.cancel_scope.cancel()
        await policy.aclose()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    result["store_microbench"] = await store_microbench(tmp, a.micro_turns, 64, 4096)
    return result


def gpu_script(profiles: int, backend: str) -> list[dict[str, Any]]:
    """Write the swish reference solution of `backend`, compile, profile `profiles` times, submit."""
    sol = ROOT / "problems" / "solutions" / backend / "level1" / "02_swish"
    writes = [{"name": "write_file", "arguments": {"path": f.relative_to(sol).as_posix(), "content": f.read_text()}}
              for f in sorted([sol / "model_new.py", *(sol / "kernels").iterdir()])]
    return ([{"content": "Fused swish.", "tool_calls": writes}, {"content": "", "tool_calls": [{"name": "compile"}]}]
            + [{"content": "", "tool_calls": [{"name": "profile"}]}] * profiles
            + [{"content": "Done.", "tool_calls": [{"name": "submit", "arguments": {"summary": "swish"}}]}])


async def gpu_busy(a: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    problems = tmp / "problems" / "level1"
    problems.mkdir(parents=True)
    (problems / "02_swish.py").write_text((ROOT / "problems" / "level1" / "02_swish.py").read_text())
    proc, url = start_server(gpu_script(a.profiles, a.backend), tmp)
    try:
        policy = make_policy(PolicyConfig(base_url=url, max_tokens=8192))
        cfg = SchedulerConfig(gpu_slots=a.gpu_slots, warm_workers=True, rollouts=True,
                              max_in_flight=a.in_flight, problems_dir=str(tmp / "problems"),
                              workspace_root=str(tmp / "ws"), limits=EpisodeLimits(max_turns=a.profiles + 4), seed=0,
                              eval=EvalConfig(backend=a.backend, baselines=a.baselines.split(",")))
        async with Store.open(tmp / "bench.db") as store:
            sched = Scheduler(config=cfg, store=store, policy=policy)
            async with anyio.create_task_group() as tg:
                await tg.start(sched.run)
                result = await measure(sched, store, proc.pid, a.warmup, a.seconds)
                tg.cancel_scope.cancel()
            result["episodes_by_status"] = await store.read(
                lambda c: dict(c.execute("SELECT status, count(*) FROM episodes GROUP BY status").fetchall()))
        await policy.aclose()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpu-busy", action="store_true", help="GPU slot occupancy with real cuda evaluations (needs a GPU)")
    p.add_argument("--seconds", type=float, default=None, help="measured window (default 20; 300 with --gpu-busy)")
    p.add_argument("--warmup", type=float, default=None, help="seconds before measuring (default 3; 90 with --gpu-busy)")
    p.add_argument("--in-flight", type=int, default=None, help="episodes in flight (default 16; 8 with --gpu-busy)")
    p.add_argument("--turns", type=int, default=40, help="overhead: turns per episode (default 40)")
    p.add_argument("--micro-turns", type=int, default=5000, help="overhead: turns in the raw store microbenchmark")
    p.add_argument("--gpu-slots", type=int, default=1, help="gpu-busy: evaluation slots (GPUs)")
    p.add_argument("--profiles", type=int, default=4, help="gpu-busy: profile calls per episode before submit")
    p.add_argument("--baselines", default="eager,compile", help="gpu-busy: baselines to time (comma list)")
    p.add_argument("--backend", choices=["cuda", "cpu"], default="cuda",
                   help="gpu-busy: cuda (the measurement) or cpu (a dry run of the same code path)")
    a = p.parse_args()
    gpu = a.gpu_busy
    a.seconds = a.seconds if a.seconds is not None else (300.0 if gpu else 20.0)
    a.warmup = a.warmup if a.warmup is not None else (90.0 if gpu else 3.0)
    a.in_flight = a.in_flight if a.in_flight is not None else (8 if gpu else 16)
    with tempfile.TemporaryDirectory(prefix="kagent-bench-") as tmp:
        result = anyio.run(gpu_busy if gpu else overhead, a, Path(tmp))
    status = result.pop("status")
    rows = [["turns/s (full logging)", result["turns_per_s"]], ["store rows/s in the run", result["store_rows_per_s"]],
            ["turns measured", result["turns"]], ["episodes started", result["episodes_started"]],
            ["daemon CPU ms / turn", result["daemon_cpu_ms_per_turn"]],
            ["policy server CPU ms / turn", result["server_cpu_ms_per_turn"]]]
    if gpu:
        rows += [["evaluations", result["evaluations"]], ["episodes by status", result["episodes_by_status"]],
                 [f"{a.backend} slot busy fraction", result["slot_busy_fraction"]]]
    else:
        micro = result["store_microbench"]
        rows += [["raw add_turn writes/s (64 writers, 4096 ids)", micro["writes_per_s"]],
                 ["raw add_turn MB/s", micro["mb_per_s"]]]
    print(table(["metric", "value"], rows))
    payload = {"environment": environment(), "args": vars(a), "result": result,
               "scheduler_status": json.loads(__import__("msgspec").json.encode(status))}
    name = "runtime-overhead" if not gpu else "runtime-gpu-busy" if a.backend == "cuda" else "runtime-slot-busy-cpu-dryrun"
    print("wrote", write_result(name, payload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
