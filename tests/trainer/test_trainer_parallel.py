"""Several processes on CPU (gloo) through `accelerate launch`: the trainer benchmark's data-parallel
report (every rank's rows, tokens and peak memory, all-reduced gradients, rank 0 alone writing,
scaling against a 1-GPU result), and FSDP2.

accelerate runs FSDP only when its distributed type is MULTI_GPU, so on CPU `--fsdp` is refused
(tested). The FSDP tests force accelerate's FSDP2 path on CPU instead: a wrapper makes its process
state claim MULTI_GPU while the device stays the CPU, then runs the script. That checks our side
under sharding (one model per prepare, the decoder layers and the float32 value head as units,
tied embeddings, DTensor gradient norms) and that a sharded PPO step computes what one process
does; it measures nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
import torch

from benchmarks.bench_trainer import TINY as BENCH_TINY
from runtime.kagentd_cli import free_port
from runtime.store import Store
from tests.trainer.test_trainer_run import make_store, model_json
from trainer.config import TrainConfig
from trainer.run import TrainerError, train

ROOT = Path(__file__).resolve().parents[2]
FORCE_FSDP = """
import runpy, sys
from accelerate.state import PartialState
from accelerate.utils import DistributedType

_init = PartialState.__init__


def init(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    if self.distributed_type == DistributedType.MULTI_CPU:  # accelerate shards only on MULTI_GPU
        self.distributed_type = DistributedType.MULTI_GPU


PartialState.__init__ = init
if sys.argv[1] == "-m":
    sys.argv = sys.argv[2:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = sys.argv[1:]
    sys.path.insert(0, ".")
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


def launch(*args: str, processes: int = 2, fsdp: str = "", env: dict[str, str] | None = None,
           timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`accelerate launch` on CPU with 2 processes; fsdp: a path to write the FSDP-forcing wrapper to."""
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(processes),
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           "--main_process_port", str(free_port())]
    if fsdp:
        Path(fsdp).write_text(FORCE_FSDP)
        cmd.append(fsdp)
    return subprocess.run([*cmd, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
                          env=dict(os.environ, OMP_NUM_THREADS="1", **(env or {})))


def launch_fsdp(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`accelerate launch --use_fsdp` (FSDP2) as a user would, with 2 processes forced onto the FSDP
    path on CPU: wrap policy NO_WRAP, and accelerate's default of loading through the meta device."""
    wrapper = tmp_path / "force_fsdp.py"
    wrapper.write_text(FORCE_FSDP)
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--use_fsdp", "--fsdp_version", "2",
           "--fsdp_auto_wrap_policy", "NO_WRAP", "--fsdp_state_dict_type", "FULL_STATE_DICT", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port",
           str(free_port()), str(wrapper), "-m", "trainer.run", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240, check=False,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))


async def _steps(path: Path) -> Any:
    async with Store.open(path, readonly=True) as store:
        return await store.list_train_steps()


def single_result(path: Path) -> Path:
    """A made-up 1-GPU result of the --tiny shape: round numbers to check the efficiency against."""
    parts = [{"part": p, "tokens_per_s": 1000.0} for p in ("plain step", "actor update", "ppo update (all)")]
    path.write_text(json.dumps(dict(world=1, seq=256, rows_per_gpu=1, model=BENCH_TINY, date="then",
                                    command="python3 benchmarks/bench_trainer.py --tiny", parts=parts)))
    return path


@pytest.mark.slow
def test_benchmark_on_two_processes_counts_every_rank(tmp_path: Path) -> None:
    one = single_result(tmp_path / "one.json")
    r = launch("benchmarks/bench_trainer.py", "--tiny", "--single", str(one), "--results-dir", str(tmp_path),
               env={"KAGENT_LAUNCH": "accelerate launch --multi_gpu --num_processes 2"})
    assert r.returncode == 0, r.stderr[-4000:]
    assert r.stdout.count("wrote ") == 1 and r.stdout.count("tokens/s/GPU") == 1  # rank 0 alone reports
    res = json.loads((tmp_path / "trainer-tinyx2.json").read_text())
    assert res["world"] == 2 and res["finished"] and res["distributed_type"] == "DistributedType.MULTI_CPU"
    assert res["command"].startswith("accelerate launch --multi_gpu --num_processes 2 benchmarks/bench_trainer.py")
    parts = {p["part"]: p for p in res["parts"]}
    assert set(parts) == {"plain step", "actor update", "critic update", "reference forward", "ppo update (all)"}
    for p in parts.values():
        ranks = p["ranks"]
        assert [x["rank"] for x in ranks] == [0, 1] and all("peak_gib" in x for x in ranks)  # None on CPU
        assert p["tokens"] == sum(x["tokens"] for x in ranks) and p["flops"] == sum(x["flops"] for x in ranks)
        assert p["seconds"] == max(x["seconds"] for x in ranks)
        assert p["tokens_per_s"] == pytest.approx(p["tokens"] / p["seconds"])
        assert p["tokens_per_s_per_gpu"] == pytest.approx(p["tokens_per_s"] / 2)
        assert p["mfu"] == pytest.approx(p["flops"] / p["seconds"] / 1e12 / 989.0 / 2)
    assert parts["plain step"]["tokens"] == 2 * 256
    actor = parts["actor update"]["ranks"]
    assert actor[0]["episodes"] and not set(actor[0]["episodes"]) & set(actor[1]["episodes"])  # rows of its own
    assert res["weights_in_sync"] == {"plain step": True, "ppo": True}  # different rows, same weights: all-reduced
    eff = res["scaling_efficiency"]
    assert set(eff) == {"plain step", "actor update", "ppo update (all)"}
    for k, v in eff.items():
        assert v == pytest.approx(parts[k]["tokens_per_s"] / (2 * 1000.0))
        assert res["scaling"][k]["tokens_per_s_per_gpu"] == pytest.approx(parts[k]["tokens_per_s_per_gpu"])
    assert "ppo update (all): 2 GPUs" in r.stdout and "scaling efficiency" in r.stdout
    assert "identical on every rank" in r.stdout


def test_benchmark_refuses_a_single_result_of_another_shape(tmp_path: Path) -> None:
    one = single_result(tmp_path / "one.json")
    r = subprocess.run([sys.executable, "benchmarks/bench_trainer.py", "--tiny", "--seq", "128", "--single", str(one),
                        "--results-dir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode != 0 and "seq 256" in r.stderr and "this run" in r.stderr
    assert not list(tmp_path.glob("trainer-*.json"))


def test_fsdp_is_refused_where_accelerate_does_not_shard(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "benchmarks/bench_trainer.py", "--tiny", "--fsdp", "--results-dir",
                        str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode != 0 and "--fsdp: accelerate runs DistributedType.NO, not FSDP" in r.stderr


@pytest.mark.slow
def test_benchmark_runs_under_fsdp2_in_bf16(tmp_path: Path) -> None:
    """bf16 as on the GPU: the float32 value head must be a unit of its own (FSDP2 needs one dtype
    per unit)."""
    r = launch("benchmarks/bench_trainer.py", "--tiny", "--fsdp", "--dtype", "bf16", "--iters", "1",
               "--results-dir", str(tmp_path), fsdp=str(tmp_path / "force_fsdp.py"))
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads((tmp_path / "trainer-tinyx2-fsdp.json").read_text())
    assert res["distributed_type"] == "DistributedType.FSDP" and res["dtype"] == "torch.bfloat16" and res["finished"]
    assert len(res["parts"]) == 5 and all(p["tokens_per_s"] > 0 for p in res["parts"])
    assert res["weights_in_sync"] == {"plain step": None, "ppo": None}  # sharded: not compared


@pytest.mark.slow
def test_fsdp2_ppo_step_matches_one_process(tmp_path: Path) -> None:
    """`accelerate launch --use_fsdp` as a user would (wrap policy NO_WRAP, and accelerate's default
    of loading through the meta device, which unties the actor's embeddings unless it re-ties them):
    the step's losses, grad norms and weights equal the same step in one process."""
    eps = [([1, 2, 3], [4 + k % 50, 5, 6, 7], float(k % 3 - 1)) for k in range(9)]
    db = make_store(tmp_path, eps)
    shutil.copy(db, tmp_path / "single.db")
    model = str(model_json(tmp_path))
    common = ["--model", model, "--min-episodes", "9", "--max-steps", "1", "--max-len", "16", "--no-progress",
              "--no-tensorboard", "--lr", "1e-3"]
    r = launch_fsdp(tmp_path, "--db", str(db), "--out", str(tmp_path / "o"), *common)
    assert r.returncode == 0, r.stderr[-4000:]
    assert "ppo stage on 2 process(es) (DistributedType.FSDP)" in r.stderr
    (two,) = anyio.run(_steps, db)
    cfg = msgspec.convert(dict(db=str(tmp_path / "single.db"), model=model, out=str(tmp_path / "s"), min_episodes=9,
                               max_steps=1, max_len=16, progress=False, tensorboard=False, lr=1e-3), TrainConfig)
    assert anyio.run(train, cfg) == 1
    (one,) = anyio.run(_steps, tmp_path / "single.db")
    for key in ("grad_norm_actor", "grad_norm_critic", "policy_loss", "value_loss", "tokens"):
        assert two.metrics[key] == pytest.approx(one.metrics[key], rel=1e-4, abs=1e-7), key
    from safetensors.torch import load_file

    for name in ("model.safetensors", "critic/model.safetensors"):
        sharded, single = load_file(str(tmp_path / "o/step_1" / name)), load_file(str(tmp_path / "s/step_1" / name))
        for k in single:
            torch.testing.assert_close(sharded[k], single[k], rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_fsdp2_resume_continues_identically(tmp_path: Path) -> None:
    """Two steps under FSDP2 in one go, and one step, a stop and a resumed second step: the optimizer
    states come back from each rank's shard (optimizer/, not rank 0's optimizer.pt), so the weights
    and metrics of step 2 are bit-identical (same ranks, same gloo reductions in the same order)."""
    eps = [([1, 2, 3], [4 + k % 50, 5 + k % 7, 6, 7], float(k % 3 - 1)) for k in range(16)]
    db = make_store(tmp_path, eps)
    shutil.copy(db, tmp_path / "b.db")
    common = ["--model", str(model_json(tmp_path)), "--min-episodes", "8", "--max-episodes", "8", "--max-len", "16",
              "--max-staleness", "10", "--keep-checkpoints", "1", "--no-progress", "--no-tensorboard",
              "--lr", "1e-2", "--critic-lr", "1e-2"]
    runs = [(db, "a", 2), (tmp_path / "b.db", "b", 1), (tmp_path / "b.db", "b", 2)]
    for store, out, steps in runs:
        r = launch_fsdp(tmp_path, "--db", str(store), "--out", str(tmp_path / out), "--max-steps", str(steps), *common)
        assert r.returncode == 0, r.stderr[-4000:]
    assert "resuming from" in r.stderr and "(step 1, 8 episodes seen)" in r.stderr
    a, b = tmp_path / "a" / "step_2", tmp_path / "b" / "step_2"
    assert (a / "optimizer" / ".metadata").is_file() and not (a / "optimizer.pt").exists()
    from safetensors.torch import load_file

    for name in ("model.safetensors", "critic/model.safetensors", "critic/value_head.safetensors"):
        wa, wb = load_file(str(a / name)), load_file(str(b / name))
        assert wa.keys() == wb.keys()
        for k in wa:
            assert torch.equal(wa[k], wb[k]), (name, k)
    ma, mb = ([s.metrics for s in anyio.run(_steps, p)] for p in (db, tmp_path / "b.db"))
    for x, y in zip(ma, mb, strict=True):
        assert {k: v for k, v in x.items() if "second" not in k and "per_s" not in k} == \
            {k: v for k, v in y.items() if "second" not in k and "per_s" not in k}
    # --keep-checkpoints 1: step 1 keeps its policy, not its resume state (the shards included)
    assert (tmp_path / "b" / "step_1" / "model.safetensors").is_file()
    assert not (tmp_path / "b" / "step_1" / "optimizer").exists()
    one = msgspec.convert(dict(db=str(tmp_path / "b.db"), model=str(model_json(tmp_path)), out=str(tmp_path / "b"),
                               max_steps=3, progress=False, tensorboard=False), TrainConfig)
    with pytest.raises(TrainerError, match=r"step_2 was written under FSDP \(optimizer holds its optimizer states\);"
                       r" resume it with --use_fsdp"):
        anyio.run(train, one)  # one process cannot read the shards
