"""`kagent solve | episodes list/show/export | replay` (runtime/cli_runtime.py) as real subprocesses,
against a real daemon and its store; `kagent eval` and `problems list` stay in tests/runtime/test_cli.py."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.kagentd_harness import (
    RELU,
    RELU_SOLUTION,
    SUBMIT,
    Kagentd,
    Scripted,
    free_port,
    write_relu_turn,
)

COMPILE = {"content": "", "tool_calls": [{"name": "compile", "arguments": {}}]}
TEST = {"content": "", "tool_calls": [{"name": "run_tests", "arguments": {}}]}


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kagentd, int]]:
    """A daemon that has solved relu once through `kagent solve` (checked in test_solve)."""
    tmp = tmp_path_factory.mktemp("cli")
    scripted = Scripted(tmp, [write_relu_turn(), COMPILE, TEST, SUBMIT])
    d = Kagentd(tmp, scripted.base_url)
    d.start()
    try:
        proc = d.kagent("solve", str(RELU), "--out", str(tmp / "solution"))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        d.solve_output = proc  # type: ignore[attr-defined]
        eid = d.sql("SELECT max(id) FROM episodes")[0][0]
        yield d, eid
    finally:
        d.kill()
        scripted.stop()


def test_solve(solved: tuple[Kagentd, int]) -> None:
    d, eid = solved
    proc = d.solve_output  # type: ignore[attr-defined]
    assert proc.stdout.startswith("**Verified `ModelNew`** for `level1/01_relu`")
    assert "### `kernels/relu.cpp`" in proc.stdout
    assert "turn 0:" in proc.stderr and "  run_tests: " in proc.stderr  # progress streamed to stderr
    # Correct is reward 1; on a CPU the timing may also find it faster than eager (2) or compiled (3).
    assert re.search(rf"kagent: episode {eid}: submitted, reward [123](\.0)?, verified solution", proc.stderr), proc.stderr
    out = d.tmp / "solution"
    assert (out / "model_new.py").read_text() == (RELU_SOLUTION / "model_new.py").read_text()
    assert (out / "kernels" / "relu.cpp").read_text() == (RELU_SOLUTION / "kernels" / "relu.cpp").read_text()


def test_solve_errors(solved: tuple[Kagentd, int], tmp_path: Path) -> None:
    d, _ = solved
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n")
    proc = d.kagent("solve", str(bad))
    assert proc.returncode == 2
    assert "kagent: kagentd refused the request (400): the problem does not load" in proc.stderr
    assert "no `get_inputs` function defined" in proc.stderr
    missing = d.kagent("solve", str(tmp_path / "missing.py"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    port = free_port()
    down = d.kagent("solve", str(RELU), "--url", f"http://127.0.0.1:{port}")
    assert down.returncode == 3
    assert f"kagentd is not running at http://127.0.0.1:{port} (start it with `kagentd start`" in down.stderr
    assert "Traceback" not in down.stderr + proc.stderr


def test_episodes_list_and_show(solved: tuple[Kagentd, int]) -> None:
    d, eid = solved
    listed = d.kagent("episodes", "list")
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if f" {eid} " in line)
    assert "level1/01_relu" in row and "request" in row and "submitted" in row
    none = d.kagent("episodes", "list", "--status", "interrupted")
    assert none.returncode == 0 and "no episodes with status interrupted" in none.stdout
    show = d.kagent("episodes", "show", str(eid), "--tokens")
    assert show.returncode == 0, show.stderr
    for needle in (f"episode {eid} · level1/01_relu", "4 turns · 5 tool calls", "── turn 0", "[system]",
                   "→ write_file(", "wrote ", "→ compile({})  ok", "→ run_tests({})  ok", "sampled ",
                   "final evaluation:", "speedup vs eager:", "reward (milestone): "):
        assert needle in show.stdout, needle
    as_json = json.loads(d.kagent("episodes", "show", str(eid), "--json").stdout)
    assert as_json["episode"]["id"] == eid and len(as_json["turns"]) == 4
    assert as_json["turns"][0]["completion_ids"]
    missing = d.kagent("episodes", "show", "999999")
    assert missing.returncode == 2 and "no episode 999999 in" in missing.stderr
    nodb = d.kagent("episodes", "list", "--db", str(d.tmp / "nope.db"))
    assert nodb.returncode == 2 and f"no store at {d.tmp / 'nope.db'}" in nodb.stderr


def test_episodes_export(solved: tuple[Kagentd, int], tmp_path: Path) -> None:
    d, eid = solved
    jsonl = tmp_path / "episodes.jsonl"
    proc = d.kagent("episodes", "export", "--out", str(jsonl))
    assert proc.returncode == 0 and f"to {jsonl} (jsonl)" in proc.stdout
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    record = next(r for r in records if r["episode_id"] == eid)
    assert record["status"] == "submitted" and len(record["turns"]) == 4
    assert record["messages"][0]["role"] == "system" and record["turns"][1]["completion_ids"]
    parquet = tmp_path / "episodes.parquet"
    proc = d.kagent("episodes", "export", "--out", str(parquet), "--trainable")
    assert proc.returncode == 0 and "(parquet)" in proc.stdout
    table = pq.read_table(parquet).to_pylist()
    row = next(r for r in table if r["episode_id"] == eid)
    assert row["turns"][1]["completion_ids"] == record["turns"][1]["completion_ids"]


def _copy_store(d: Kagentd, dest: Path) -> Path:
    src = sqlite3.connect(f"file:{d.db}?mode=ro", uri=True)
    dst = sqlite3.connect(dest)
    src.backup(dst)
    src.close()
    dst.close()
    return dest


def test_replay_reproduces_and_detects_divergence(solved: tuple[Kagentd, int], tmp_path: Path) -> None:
    d, eid = solved
    same = d.kagent("replay", str(eid), "--skip-timing")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "5 calls replayed: 5 same, 0 differ" in same.stdout
    assert "run_tests" in same.stdout and "ok, built, correct" in same.stdout
    # A store whose log disagrees with what the calls really do: replay says where, and fails.
    db = _copy_store(d, tmp_path / "edited.db")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE tool_calls SET record = json_set(record, '$.correct', json('false')), ok = 0"
                 " WHERE episode_id = ? AND skill = 'run_tests'", (eid,))
    conn.execute("UPDATE tool_calls SET result = 'something else' WHERE episode_id = ? AND idx = 1"
                 " AND skill = 'write_file'", (eid,))
    conn.commit()
    conn.close()
    differ = d.kagent("replay", str(eid), "--skip-timing", "--json", "--db", str(db))
    assert differ.returncode == 1, differ.stdout + differ.stderr
    rows = {(r["skill"], r["index"]): r["differences"] for r in json.loads(differ.stdout)}
    assert rows[("run_tests", 0)] == ["ok", "correct"]
    assert rows[("write_file", 1)] == ["text"]
    assert rows[("write_file", 0)] == [] and rows[("compile", 0)] == []
