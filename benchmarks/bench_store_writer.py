"""How many agent turns per second the store's single writer holds (issue 22: the store stays one
SQLite file on the head while evaluation slots spread over a Ray cluster).

One simulated turn writes what runtime/episode.py writes for one LLM call and its tool call:
add_turn (--completion-tokens sampled ids and their logprobs, --prompt-tokens rendered new
prompt ids, the reply text, the tool message of --tool-chars), add_tool_call (the tool's text),
and on a share --eval-share of the turns an evaluation as run_tests/profile store it (the
EvalResult as the tool call's record, then the evaluations row). --episodes concurrent tasks each
run episodes back to back (start_episode, --turns turns, finish_episode), awaiting every write in
order like the episode loop. A reader thread polls like the trainer (the newest 64 turns with
their arrays, every 0.5 s) on its own read-only connection. Every level runs --seconds.

The table compares with what N GPU slots produce, from an assumption the flags state:
turns/s of N slots = N * --turns-per-eval / --eval-seconds (slots busy all the time with
evaluations, each of --eval-seconds, one evaluation per --turns-per-eval turns).

    python benchmarks/bench_store_writer.py            # table; JSON to benchmarks/results/store-writer-cpu.json
    python benchmarks/bench_store_writer.py --episodes 1,8,32,128 --seconds 10 --slots 128
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS, environment, table  # noqa: E402
from runtime.store import Store  # noqa: E402
from runtime.store.rows import Message, ProblemRow, ToolCallRow, ToolCallSpec, TurnRow  # noqa: E402
from skills.evaluator.results import (  # noqa: E402
    EvalResult,
    Interval,
    OutputError,
    SetResult,
    Speedup,
    StageTimes,
    TimingResult,
)

PROBLEM = ProblemRow(id="3652134141a00426", name="level1/01_relu", source="kagent", level=1,
                     path="level1/01_relu.py", precision="fp32", tier=1)


def evaluation() -> EvalResult:
    """An EvalResult of the size a profile of a one-output problem stores (3 sets, 2 timings)."""
    iv = Interval(median=41.2, low=40.9, high=41.6, n=200)
    timing = TimingResult(per_call_us=iv, kernel_us=38.0, calls=200, cv=0.01, caller_us=iv, lead_us=100.0,
                          window_us=141.0, between_us=30.0)
    sets = [SetResult(set_index=i, ok=True, outputs=[OutputError(
        index=0, ok=True, shape=[8192, 8192], dtype="float32", max_abs_err=0.0, max_rel_err=0.0, err_ratio=1.0,
        bad_elements=0, message="within budget")]) for i in range(3)]
    return EvalResult(
        problem="level1/01_relu", problem_id=PROBLEM.id, backend="cuda", mode="profile", compiled=True, correct=True,
        stage="done", error=None, build=None, sets=sets, flags=[], candidate=timing, eager=timing,
        compiled_baseline=timing, speedups=[Speedup(baseline="eager", value=1.9, low=1.8, high=2.0, faster=True)],
        reward=None, reward_fn=None, precision="fp32", gpu="NVIDIA H200", torch_version="2.11.0+cu130",
        stages=StageTimes(build=0.01, workers_ready=1.5, correctness=1.1, timing=0.8, total=3.9,
                          parts={f"part {i}": 0.1 for i in range(12)}),
        log="x" * 1000, input_shapes=[[8192, 8192]], executor="ray:10.0.0.7:slot3-head-1234")


class Workload(msgspec.Struct, frozen=True):
    completion_tokens: int
    prompt_tokens: int
    tool_chars: int
    eval_share: float
    turns: int


def make_turn(w: Workload, rng: np.random.Generator, episode_id: int, index: int) -> TurnRow:
    tool = "r" * w.tool_chars
    return TurnRow(
        episode_id=episode_id, index=index, text="t" * (4 * w.completion_tokens // 10), policy_version=0,
        messages=[Message(role="tool", content=tool, tool_call_id=f"call_{index}")], prompt_prefix=4000 + index * 600,
        prompt_ids=rng.integers(0, 151_000, w.prompt_tokens).tolist(),
        completion_ids=rng.integers(0, 151_000, w.completion_tokens).tolist(),
        logprobs=(-rng.random(w.completion_tokens) * 5).astype(np.float32).tolist(),
        sampling={"temperature": 1.0, "max_tokens": 8192}, finish_reason="tool_calls",
        tool_calls=[ToolCallSpec(id=f"call_{index}", name="run_tests", arguments="{}")],
        prompt_tokens=4000 + index * 600 + w.prompt_tokens, completion_tokens=w.completion_tokens, duration=2.0)


class Meter:
    def __init__(self) -> None:
        self.turns = 0
        self.evaluations = 0
        self.episodes = 0
        self.latency_ms: list[float] = []


async def episode_loop(store: Store, w: Workload, meter: Meter, stop_at: float, templates: list[TurnRow],
                       result: EvalResult) -> None:
    evaluate_every = round(1 / w.eval_share) if w.eval_share > 0 else 0
    while time.monotonic() < stop_at:
        eid = await store.start_episode(PROBLEM.id, policy_version=0)
        for index in range(w.turns):
            if time.monotonic() >= stop_at:
                break
            # Rows are made ahead (the daemon's policy client decodes them from the server's reply):
            # what is timed is the store's path, from add_turn's encoding to the commit.
            row = msgspec.structs.replace(templates[index % len(templates)], episode_id=eid, index=index)
            t0 = time.perf_counter()
            turn_id = await store.add_turn(row)
            meter.latency_ms.append((time.perf_counter() - t0) * 1000)
            evaluated = evaluate_every and index % evaluate_every == evaluate_every - 1
            call = ToolCallRow(turn_id=turn_id, episode_id=eid, index=0, call_id=f"call_{index}", skill="run_tests",
                               args="{}", ok=True, result="r" * w.tool_chars, record=result if evaluated else None,
                               duration=3.0)
            call_id = await store.add_tool_call(call)
            if evaluated:
                await store.add_evaluation(result, episode_id=eid, tool_call_id=call_id)
                meter.evaluations += 1
            meter.turns += 1
        await store.finish_episode(eid, "submitted", reward=1.0)
        meter.episodes += 1


def reader(path: Path, stop: threading.Event, counts: list[int]) -> None:
    """The trainer's side: a read-only connection polling the newest turns with their arrays."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    try:
        while not stop.wait(0.5):
            rows = conn.execute("SELECT id, prompt_ids, completion_ids, logprobs FROM turns ORDER BY id DESC LIMIT 64")
            counts[0] += len(rows.fetchall())
    finally:
        conn.close()


async def level(folder: Path, w: Workload, episodes: int, seconds: float) -> dict[str, Any]:
    path = folder / f"store-{episodes}.db"
    result = evaluation()
    meter = Meter()
    stop = threading.Event()
    read_rows = [0]
    rng = np.random.default_rng(0)
    templates = [make_turn(w, rng, 0, i) for i in range(16)]
    async with Store.open(path) as store:
        await store.upsert_problem(PROBLEM)
        await store.add_policy(0, "policy")
        thread = threading.Thread(target=reader, args=(path, stop, read_rows), daemon=True)
        thread.start()
        began = time.monotonic()
        cpu0 = time.process_time()
        async with anyio.create_task_group() as tg:
            for _ in range(episodes):
                tg.start_soon(episode_loop, store, w, meter, began + seconds, templates, result)
        wall = time.monotonic() - began
        cpu = time.process_time() - cpu0
        stop.set()
        await anyio.to_thread.run_sync(thread.join)
    size = await anyio.to_thread.run_sync(lambda: sum(p.stat().st_size for p in folder.glob(f"store-{episodes}.db*")))
    lat = sorted(meter.latency_ms)
    return {"episodes_in_flight": episodes, "seconds": wall, "turns": meter.turns, "turns_per_s": meter.turns / wall,
            "evaluations_per_s": meter.evaluations / wall, "episodes_finished": meter.episodes,
            "add_turn_ms_p50": statistics.median(lat) if lat else None,
            "add_turn_ms_p99": lat[int(0.99 * (len(lat) - 1))] if lat else None,
            "mb_per_s": size / 1e6 / wall, "bytes_per_turn": size / max(1, meter.turns),
            "process_cpu_s_per_s": cpu / wall, "reader_rows": read_rows[0], "loadavg_1m_after": os.getloadavg()[0]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", default="1,8,32,128", help="episodes in flight, one level each (comma-separated)")
    p.add_argument("--seconds", type=float, default=10.0, help="seconds per level")
    p.add_argument("--completion-tokens", type=int, default=1000, help="sampled tokens per turn (ids + logprobs)")
    p.add_argument("--prompt-tokens", type=int, default=600, help="rendered new prompt ids per turn (the tool output)")
    p.add_argument("--tool-chars", type=int, default=2400, help="characters of the tool message (stored twice: turn and tool call)")
    p.add_argument("--eval-share", type=float, default=0.5, help="share of turns whose tool call stores an evaluation")
    p.add_argument("--turns", type=int, default=40, help="turns per episode")
    p.add_argument("--slots", type=int, default=128, help="GPU slots to compare with")
    p.add_argument("--eval-seconds", type=float, default=2.9,
                   help="seconds one evaluation holds a slot (2.9: run_tests with a warm pool on the H200,"
                        " benchmarks/results/eval-latency-h200.json, the fastest measured kind)")
    p.add_argument("--turns-per-eval", type=float, default=2.0, help="turns per evaluation (1 / --eval-share)")
    p.add_argument("--out", default="store-writer-cpu", help="results file name (benchmarks/results/NAME.json)")
    p.add_argument("--results-dir", type=Path, default=RESULTS, help="where the JSON goes")
    args = p.parse_args()
    w = Workload(completion_tokens=args.completion_tokens, prompt_tokens=args.prompt_tokens,
                 tool_chars=args.tool_chars, eval_share=args.eval_share, turns=args.turns)
    levels = [int(x) for x in args.episodes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="kagent-bench-store-") as tmp:
        for n in levels:
            rows.append(anyio.run(level, Path(tmp), w, n, args.seconds))
            print(f"  {n} in flight: {rows[-1]['turns_per_s']:.0f} turns/s", file=sys.stderr)
    needed = args.slots * args.turns_per_eval / args.eval_seconds
    print(table(["in flight", "turns/s", "evals/s", "add_turn p50 ms", "p99 ms", "MB/s", "kB/turn", "cpu s/s",
                 f"x {args.slots} slots"],
                [[r["episodes_in_flight"], r["turns_per_s"], r["evaluations_per_s"], r["add_turn_ms_p50"],
                  r["add_turn_ms_p99"], r["mb_per_s"], r["bytes_per_turn"] / 1e3, r["process_cpu_s_per_s"],
                  r["turns_per_s"] / needed] for r in rows]))
    print(f"{args.slots} GPU slots at {args.eval_seconds:g} s per evaluation and {args.turns_per_eval:g} turns per"
          f" evaluation produce {needed:.0f} turns/s")
    out = {"environment": environment(), "args": vars(args) | {"results_dir": str(args.results_dir)},
           "workload": msgspec.to_builtins(w), "slots_turns_per_s": needed, "levels": rows}
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"{args.out}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
