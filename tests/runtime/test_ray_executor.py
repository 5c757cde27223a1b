"""The Ray executor (issue 22, runtime/ray_executor.py) on a real local Ray instance with CPU actors.

One Ray instance serves the module (ray.init here, num_cpus=2, no dashboard); each test's kagentd
joins it as a cluster (`ray.address` = its GCS address), so the test can find the daemon's actors
by name and `ray.kill` one mid-evaluation. The LLM is the scripted server, as everywhere else.

- the README's main job (cpu_relu.json on problems/level1/01_relu.py) with scheduler.executor=ray:
  every evaluation runs on an actor and is stored with its `ray:<node>:<actor>` executor;
- an actor killed mid-evaluation: that attempt is stored with reward None as an environment fault
  naming the actor, the evaluation is re-run on the other actor, the episode completes with the
  re-run's reward; `kagentd status` lists the dead actor; with every actor dead an evaluation is
  an environment fault at once and the daemon still answers.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kagentd_harness import (
    CPU_RELU_SCRIPT,
    RELU,
    ROOT,
    SUBMIT,
    Kagentd,
    Scripted,
    write_relu_turn,
)

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'kagent[ray]' (CI installs it)")

NAMESPACE = "kagent-test"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local Ray instance for the module; returns its GCS address for the daemons to join."""
    cache = tmp_path_factory.mktemp("ray-node-cache")
    # The actors' processes inherit the environment of the raylet that ray.init starts: their
    # node's build and baseline caches ($XDG_CACHE_HOME/kagent) go to a temp folder, not ~/.cache.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(cache))
        ctx = ray.init(num_cpus=2, include_dashboard=False, namespace=NAMESPACE, log_to_driver=False)
    try:
        yield str(ctx.address_info["gcs_address"])
    finally:
        ray.shutdown()


def ray_daemon(tmp: Path, policy_url: str, address: str, **scheduler: Any) -> Kagentd:
    return Kagentd(tmp, policy_url, extra={
        "scheduler": {"executor": "ray", "cpu_slots": 2, **scheduler},
        "ray": {"address": address, "namespace": NAMESPACE, "probe_s": 1.0, "start_timeout_s": 120.0},
    })


def actors(kd: Kagentd) -> list[dict[str, Any]]:
    return list(kd.health()["scheduler"]["actors"])


def evaluations(kd: Kagentd) -> list[tuple[Any, ...]]:
    return kd.sql("SELECT mode, executor, reward, json_extract(result, '$.environment_fault') FROM evaluations"
                  " WHERE episode_id = 1 ORDER BY id")


def test_the_main_job_runs_on_ray_actors(cluster: str, tmp_path: Path) -> None:
    scripted = Scripted(tmp_path, CPU_RELU_SCRIPT)
    kd = ray_daemon(tmp_path, scripted.base_url, cluster, warm_workers=True)  # each actor keeps a warm pool
    try:
        kd.start()
        names = {a["executor"] for a in actors(kd)}
        assert len(names) == 2 and all(n.startswith("ray:") for n in names)
        status = kd.cli("status")
        assert "slots      0/2 busy (ray executor)" in status.stdout, status.stdout
        assert status.stdout.count(": idle, 0 evaluations") == 2, status.stdout
        solved = kd.kagent("solve", str(RELU))
        assert solved.returncode == 0, solved.stdout + solved.stderr
        (status_, reward), = kd.sql("SELECT status, reward FROM episodes WHERE id = 1")
        assert status_ == "submitted" and reward is not None and reward >= 1.0
        rows = evaluations(kd)
        assert [r[0] for r in rows] == ["test", "profile", "final"]  # run_tests, profile, submit
        assert all(executor in names and fault is None for _, executor, _, fault in rows), rows
        assert rows[-1][2] == reward
        assert sum(a["evaluations"] for a in actors(kd)) == 3
    finally:
        kd.kill()
        scripted.stop()


HELD = '''import os
import time

import torch
import torch.nn as nn

HOLD = {hold!r}
M = 256
N = 1024


class Model(nn.Module):
    """Element-wise ReLU whose reference waits in the judge's process while the test holds HOLD."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        waited = 0.0
        while os.environ.get("KAGENT_PREINIT") is not None and os.path.exists(HOLD) and waited < 120:
            time.sleep(0.05)
            waited += 0.05
        return torch.relu(x)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []


SMALL_SIZES = {{"M": 256, "N": 1024}}
CHECK_SIZES = {{"M": 320, "N": 1280}}
'''


def test_an_actor_killed_mid_evaluation_costs_a_rerun_not_a_reward(cluster: str, tmp_path: Path) -> None:
    hold = tmp_path / "hold"
    hold.write_text("the judge's reference waits while this file exists")
    problem = tmp_path / "held_relu.py"
    problem.write_text(HELD.format(hold=str(hold)))
    scripted = Scripted(tmp_path, [write_relu_turn(), SUBMIT])
    kd = ray_daemon(tmp_path, scripted.base_url, cluster)
    solve: subprocess.Popen[str] | None = None
    try:
        kd.start()
        solve = subprocess.Popen([sys.executable, "-m", "runtime.cli", "solve", str(problem), "--config",
                                  str(kd.config)], cwd=ROOT, env=kd.env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        # The final evaluation cannot finish while `hold` exists: whichever actor holds it is killed mid-evaluation.
        busy = kd.wait_for(lambda: [a for a in actors(kd) if a["state"] == "busy"], timeout=180,
                           what="an actor running the final evaluation")
        killed = busy[0]
        ray.kill(ray.get_actor(killed["name"], namespace=NAMESPACE))
        kd.wait_for(lambda: any(a["state"] == "dead" for a in actors(kd)), timeout=60, what="the actor's death")
        hold.unlink()
        out, _ = solve.communicate(timeout=240)
        assert solve.returncode == 0, out

        lost, rerun = evaluations(kd)
        assert lost[:3] == ("final", killed["executor"], None)
        assert "lost mid-evaluation" in lost[3] and killed["executor"] in lost[3] and "re-run" in lost[3]
        other = next(a for a in actors(kd) if a["name"] != killed["name"])
        assert rerun[:2] == ("final", other["executor"]) and rerun[3] is None and rerun[2] >= 1.0
        (status_, reward, error), = kd.sql("SELECT status, reward, error FROM episodes WHERE id = 1")
        assert (status_, reward, error) == ("submitted", rerun[2], None)  # graded by the re-run: trainable as ever

        health = kd.health()["scheduler"]
        assert (health["gpu_slots_total"], health["gpu_slots_busy"]) == (1, 0)
        status = kd.cli("status").stdout
        assert f"{killed['name']} (" in status and ": dead, 0 evaluations; lost mid-evaluation" in status, status

        # With no actor left, an evaluation is an environment fault at once; the daemon still answers.
        ray.kill(ray.get_actor(other["name"], namespace=NAMESPACE))
        kd.wait_for(lambda: all(a["state"] == "dead" for a in actors(kd)), timeout=60, what="both actors dead")
        again = kd.kagent("solve", str(problem))
        assert again.returncode == 1 and "no verified solution" in again.stderr, again.stdout + again.stderr
        (reward2, error2), = kd.sql("SELECT reward, error FROM episodes WHERE id = 2")
        assert reward2 is None and error2.startswith("not trainable") and "every evaluation actor is dead" in error2
        assert kd.health()["status"] == "ok"
    finally:
        if solve is not None and solve.poll() is None:
            solve.kill()
            solve.communicate()
        hold.unlink(missing_ok=True)
        kd.kill()
        scripted.stop()
