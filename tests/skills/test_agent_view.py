"""What the agent sees: the prompt per backend, the tools offered, the report texts of run_tests and
profile, delete_file, profile() on the untouched template (a real cpu evaluation), and one
convention for token counts in the store's view and `kagent episodes show`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import skills.files as files
from runtime.prompts import cores, opening_messages, skill_prompt
from runtime.store import ProblemRow, Store, TurnRow
from runtime.transcript import header
from skills import load_skills
from skills.base import SkillContext, SkillResult, call_skill, tool_schema, tool_schemas
from skills.evaluator.baselines import JsonBaselineCache
from skills.evaluator.build import BuildConfig
from skills.evaluator.config import EvalConfig
from skills.evaluator.harness.protocol import TimingConfig
from skills.evaluator.problem import source_id
from skills.evaluator.report import format_result
from skills.evaluator.results import (
    EvalResult,
    Interval,
    OutputError,
    SetResult,
    StageTimes,
    TimingResult,
)
from skills.evaluator.sandbox import SandboxConfig
from skills.local_evaluator import LocalEvaluator
from skills.workspace import Workspace, WorkspaceConfig
from tests.runtime.test_episode import LIST, RELU, SOLUTION, episode

CUDA_ONLY = ["Writing fast CUDA kernels", "<cuda_runtime.h>", "132 on H100/H200", "warp shuffles",
             "launch on the default stream", "on the GPU", "ncu", "Nsight", "read C++"]


def flat(text: str) -> str:
    """Whitespace collapsed and lower case, so a phrase broken over lines still matches."""
    return " ".join(text.split()).lower()


# -- the prompt ------------------------------------------------------------------------------


def test_each_backend_gets_its_own_prompt() -> None:
    cpu, cuda = flat(skill_prompt("cpu")), flat(skill_prompt("cuda"))
    assert [p for p in CUDA_ONLY if p.lower() in cpu] == []
    assert [p for p in CUDA_ONLY[:-1] if p.lower() not in cuda] == []
    for text in (cpu, cuda):
        assert "<!--" not in text and "{{" not in text and "delete_file(path)" in text
    for fact in ("-o3 -march=native -fopenmp", f"this machine has {cores()} cores", "schedule(static)",
                 "10–20x", "does not pay for a parallel region", "wall time of one `forward` call on the host",
                 "last-level cache flushed", "small_sizes", "check_sizes", "kernels/swish.cpp"):
        assert fact in cpu, fact
    assert "a caller waiting for each call" in cuda and "caller waiting" not in cpu
    with pytest.raises(ValueError, match="valid backends: cuda, cpu"):
        skill_prompt("tpu")  # type: ignore[arg-type]


def test_opening_messages_carry_the_backend_prompt() -> None:
    problem = ProblemRow(id="x", name="level1/01_relu", source="kagent")
    system, user = opening_messages(problem, "class Model: ...", "cpu")
    assert system.content == skill_prompt("cpu")
    assert "read C++" not in (user.content or "") and "SMALL_SIZES" in (user.content or "")
    assert opening_messages(problem, "", "cuda")[0].content == skill_prompt("cuda")


def test_ncu_is_offered_on_cuda_only() -> None:
    load_skills()
    names = {b: [s["function"]["name"] for s in tool_schemas(backend=b)] for b in ("cpu", "cuda")}
    assert "ncu" not in names["cpu"] and "ncu" in names["cuda"]
    assert set(names["cuda"]) - set(names["cpu"]) == {"ncu"} and "delete_file" in names["cpu"]
    chosen = [s["function"]["name"] for s in tool_schemas(["read_file", "ncu", "submit"], backend="cpu")]
    assert chosen == ["read_file", "submit"]
    assert "ncu" in [s["function"]["name"] for s in tool_schemas()]  # no backend: every skill


# -- report texts ----------------------------------------------------------------------------


def timing(median: float, caller: float | None = None) -> TimingResult:
    iv = Interval(median=median, low=median * 0.9, high=median * 1.1, n=50)
    return TimingResult(per_call_us=iv, kernel_us=None, calls=50, cv=0.01,
                        caller_us=Interval(median=caller, low=caller, high=caller, n=5) if caller else None)


def result(backend: Any, *, caller: float | None = None) -> EvalResult:
    ok = [OutputError(index=0, ok=True, shape=[256, 1024], dtype="float32", max_abs_err=0.0, max_rel_err=0.0,
                      err_ratio=0.0, bad_elements=0, message=f"output 0: ok (set {k})") for k in range(3)]
    check = OutputError(index=0, ok=True, shape=[320, 1280], dtype="float32", max_abs_err=0.0, max_rel_err=0.0,
                        err_ratio=0.0, bad_elements=0, message="output 0: ok (shape)")
    sets = [SetResult(set_index=k, ok=True, outputs=[ok[k]]) for k in range(3)]
    sets.append(SetResult(set_index=3, ok=True, outputs=[check], sizes="check"))
    return EvalResult(problem="level1/01_relu", problem_id="x", backend=backend, mode="profile", compiled=True,
                      correct=True, stage="done", error=None, build=None, sets=sets, flags=[],
                      candidate=timing(10.0, caller), eager=timing(20.0, caller), compiled_baseline=None,
                      speedups=[], reward=None, reward_fn=None, precision="fp32", gpu=None, torch_version="2",
                      stages=StageTimes(), log="", input_shapes=[[256, 1024]])


def test_report_names_the_shapes_and_every_set() -> None:
    text = format_result(result("cpu"))
    assert "inputs at the timed sizes: [256, 1024]" in text
    assert "checked 4 input sets: sets 0-2 at the timed sizes, set 3 at the problem's CHECK_SIZES (the shape check)" in text
    for k in range(3):
        assert f"  set {k}: output 0: ok (set {k})" in text
    assert "  set 3 (shape check, outputs [320, 1280]): output 0: ok (shape)" in text


def test_timing_header_promises_only_what_it_prints() -> None:
    cpu = format_result(result("cpu"))
    assert "wall time of the call on the host" in cpu and "caller" not in cpu
    with_caller = format_result(result("cuda", caller=12.0))
    assert "the waiting caller's beside" in with_caller and "waiting caller 12.0 us" in with_caller
    without = format_result(result("cuda"))
    assert "on the device" in without and "caller" not in without


# -- delete_file -----------------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    load_skills()
    cfg = WorkspaceConfig(root=str(tmp_path / "root"), quota_bytes=10_000, max_files=8)
    with Workspace.create("import torch\n", config=cfg) as w:
        yield w


def call(ws: Workspace, name: str, args: dict[str, Any]) -> SkillResult:
    return anyio.run(call_skill, name, args, SkillContext(workspace=ws))


def test_delete_file(ws: Workspace) -> None:
    ws.write_text("kernels/a.cpp", "int a;\n")
    r = call(ws, "delete_file", {"path": "./kernels//a.cpp"})
    assert r.ok and r.text == "deleted kernels/a.cpp (7 bytes)"
    assert r.record == files.DeleteFileRecord(path="kernels/a.cpp", bytes=7)
    assert not (ws.kernels_dir / "a.cpp").exists() and ws.usage() == ws.model_new_path.stat().st_size
    assert tool_schema(files.DELETE_FILE)["function"]["parameters"]["required"] == ["path"]


def test_delete_file_refusals(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "outside").write_text("keep")
    (ws.kernels_dir / "link.cpp").symlink_to(tmp_path / "outside")
    (ws.kernels_dir / "sub").mkdir()
    for path, message in [
        ("model.py", "read-only"),
        ("model_new.py", "overwrite it with write_file"),
        ("/etc/passwd", "absolute"),
        ("../outside", "'..'"),
        ("notes.txt", "only files under kernels/ can be deleted"),
        ("kernels", "is a folder"),
        ("kernels/sub", "is a folder"),
        ("kernels/link.cpp", "symbolic link"),
        ("kernels/none.cpp", "does not exist"),
    ]:
        r = call(ws, "delete_file", {"path": path})
        assert not r.ok and message in r.text and r.text.startswith("delete_file: ") and r.record is None, path
    assert ws.model_path.exists() and ws.model_new_path.exists() and (tmp_path / "outside").read_text() == "keep"
    assert (ws.kernels_dir / "sub").is_dir()


# -- profile() and run_tests() on the cpu backend (real evaluations) -------------------------


def cpu_evaluator(tmp_path: Path, build_cache_dir: Path) -> LocalEvaluator:
    cfg = EvalConfig(backend="cpu", baselines=["eager"], timing=TimingConfig(target_seconds=0.05, max_calls=60, min_calls=10),
                     build=BuildConfig(backend="cpu", cache_dir=str(build_cache_dir)),
                     sandbox=SandboxConfig(allow_unsafe=True))
    return LocalEvaluator(RELU, cfg, cache=JsonBaselineCache(tmp_path / "baselines.json"))


def test_profile_on_the_template_times_the_baselines_alone(tmp_path: Path, build_cache_dir: Path) -> None:
    load_skills()
    evaluator = cpu_evaluator(tmp_path, build_cache_dir)
    with Workspace.create(RELU.read_text(), config=WorkspaceConfig(root=str(tmp_path / "ws"))) as w:
        ctx = SkillContext(workspace=w, evaluator=evaluator)
        r = anyio.run(call_skill, "profile", {}, ctx)
        assert r.ok, r.text
        assert "baselines only" in r.text and "ModelNew was not run or timed" in r.text
        assert "inputs at the timed sizes: [" in r.text and "  eager " in r.text and "  ModelNew " not in r.text
        assert "FAILED" not in r.text and "failed at" not in r.text
        rec = r.record
        assert isinstance(rec, EvalResult) and rec.mode == "profile" and rec.candidate is None
        assert rec.eager is not None and rec.environment_fault is None and rec.input_shapes
        assert rec.stages.baselines is not None and r.seconds < 30
        # Once ModelNew is written, profile() is the full evaluation again.
        for rel in ("model_new.py", "kernels/relu.cpp"):
            w.write_text(rel, (SOLUTION / rel).read_text())
        r = anyio.run(call_skill, "run_tests", {}, ctx)
        assert r.ok, r.text
        assert f"inputs at the timed sizes: {rec.input_shapes[0]}" in r.text
        assert "checked 4 input sets: sets 0-2 at the timed sizes, set 3 at the problem's CHECK_SIZES" in r.text
        assert [f"  set {k}" in r.text for k in range(4)] == [True] * 4


# -- token counts ----------------------------------------------------------------------------


def test_token_counts_agree_without_token_ids(tmp_path: Path) -> None:
    """A chat server that reports usage but no token ids: the view and `episodes show` both give
    its counts (schema 3 had NULL in the view and 0 prompt tokens in the transcript)."""
    from runtime.settings import EpisodeLimits

    run = episode(tmp_path, [LIST], loop=True, token_ids=False, limits=EpisodeLimits(max_turns=2))
    assert all(t.completion_ids is None and t.prompt_tokens for t in run.detail.turns)
    with sqlite3.connect(run.db) as conn:
        prompt, completion = conn.execute("SELECT prompt_tokens, completion_tokens FROM episode_summary").fetchone()
    assert prompt == sum(t.prompt_tokens or 0 for t in run.detail.turns) and prompt > 0
    assert completion == sum(t.completion_tokens or 0 for t in run.detail.turns) and completion > 0
    assert f"{prompt} prompt + {completion} completion tokens" in "\n".join(header(run.detail))


def test_token_counts_not_reported(tmp_path: Path) -> None:
    """No usage and no ids: NULL in the view, "not reported" in the transcript (never 0)."""
    db = tmp_path / "k.db"
    source = RELU.read_text()
    problem = ProblemRow(id=source_id(source), name="level1/01_relu", source="kagent", code=source)

    async def go() -> Any:
        async with Store.open(db) as store:
            await store.upsert_problem(problem)
            eid = await store.start_episode(problem.id, policy_version=None)
            await store.add_turn(TurnRow(episode_id=eid, index=0, text="hi"))
            return await store.get_episode(eid)

    detail = anyio.run(go)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT prompt_tokens, completion_tokens FROM episode_summary").fetchone() == (None, None)
    assert "1 turns · 0 tool calls · tokens not reported" in "\n".join(header(detail))
