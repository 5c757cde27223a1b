"""Checkpoint folders, the STABLE marker, resume state and policy publishing (DESIGN §9 step 4).

    <out>/step_N/            rft and ppo steps (what the daemon hot-loads)
        config.json, model.safetensors, tokenizer files     full fine-tuning
        adapter_config.json, adapter_model.safetensors      LoRA (vLLM /v1/load_lora_adapter)
        critic/              ppo: the critic (backbone + value_head.safetensors)
        optimizer.pt         optimizer states (resume; one process or DDP: rank 0's full states)
        optimizer/           instead under FSDP: each rank's shard of them (torch.distributed.checkpoint)
        trainer_state.json   step, stage, policy version, episodes consumed or skipped
        STABLE               written last: the folder is complete
    <out>/critic_N/          value-stage steps: critic/, optimizer.pt or optimizer/, trainer_state.json, STABLE

A folder without STABLE is incomplete (the trainer died writing it): resume ignores it and the
next step overwrites it. After STABLE the new policy version is recorded in the store under the
folder's resolved path, the same key the daemon's hot-loader uses, so whichever of the two
records it first, both agree on the version.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import msgspec
from anyio import to_thread
from torch import nn
from torch.optim import Optimizer

from runtime.store import Store, StoreError
from trainer.config import Stage

STABLE = "STABLE"
STATE = "trainer_state.json"
OPTIMIZER = "optimizer.pt"
SHARDS = "optimizer"


class TrainerState(msgspec.Struct, kw_only=True):
    """What a run needs to continue where it stopped."""

    run: str
    """Run name (train_steps.run)."""
    stage: Stage
    """Stage of the run."""
    step: int
    """Steps done."""
    lora: bool
    """Adapters (True) or full weights."""
    seen: list[int] = msgspec.field(default_factory=list)
    """Episodes consumed or skipped by this run (never looked at again)."""
    created: float = msgspec.field(default_factory=time.time)
    """Unix time the state was written."""


def prefix(stage: Stage) -> str:
    return "critic" if stage == "value" else "step"


def step_dir(out: Path, stage: Stage, step: int) -> Path:
    return out / f"{prefix(stage)}_{step}"


def stable(out: Path, stage: Stage) -> list[tuple[int, Path]]:
    """(N, folder) of each complete checkpoint of the stage in `out`, by N."""
    pattern = re.compile(rf"{prefix(stage)}_(\d+)")
    found = []
    if out.is_dir():
        for entry in out.iterdir():
            m = pattern.fullmatch(entry.name)
            if m and (entry / STABLE).is_file() and (entry / STATE).is_file():
                found.append((int(m[1]), entry))
    return sorted(found)


def other_stage(out: Path, stage: Stage) -> Stage | None:
    """A stage other than `stage` whose checkpoints are in `out` (a folder holds one run)."""
    stages: tuple[Stage, ...] = ("rft", "value", "ppo")
    for s in stages:
        for _, folder in stable(out, s):
            state = read_state(folder)
            if state.stage != stage:
                return state.stage
    return None


def read_state(folder: Path) -> TrainerState:
    return msgspec.json.decode((folder / STATE).read_bytes(), type=TrainerState)


def begin(folder: Path) -> None:
    """An empty folder for a new checkpoint (a leftover without STABLE is removed)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)


def seal(folder: Path, state: TrainerState, kind: str) -> None:
    """Write the state, then STABLE: from here on the folder is complete."""
    (folder / STATE).write_bytes(msgspec.json.encode(state))
    marker = {"step": state.step, "stage": state.stage, "kind": kind, "created": time.time()}
    tmp = folder / (STABLE + ".tmp")
    tmp.write_text(json.dumps(marker) + "\n")
    tmp.rename(folder / STABLE)  # atomic: the daemon never sees a half-written marker


def prune(out: Path, stage: Stage, keep: int | None) -> list[Path]:
    """Drop resume state (optimizer, critic) from all but the newest `keep` checkpoints; a
    step_N/ keeps its policy weights and STABLE, since the store's policies point at it."""
    if keep is None:
        return []
    pruned = []
    for _, folder in stable(out, stage)[:-keep] if keep > 0 else stable(out, stage):
        for name in (OPTIMIZER, SHARDS, "critic"):
            target = folder / name
            if target.is_dir():
                shutil.rmtree(target)
                pruned.append(target)
            elif target.is_file():
                target.unlink()
                pruned.append(target)
    return pruned


def _inner(opt: Optimizer) -> Optimizer:
    return getattr(opt, "optimizer", opt)  # accelerate's AcceleratedOptimizer wraps the real one


def save_shards(path: Path, pairs: dict[str, tuple[nn.Module, Optimizer]]) -> None:
    """Every rank writes its shard of each (model, optimizer)'s state to the folder `path`
    (torch.distributed.checkpoint, keyed by parameter name); a collective: call it on all ranks."""
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict
    from torch.distributed.checkpoint.state_dict_saver import save

    save({k: get_optimizer_state_dict(m, _inner(o)) for k, (m, o) in pairs.items()}, checkpoint_id=path)


def load_shards(path: Path, pairs: dict[str, tuple[nn.Module, Optimizer]]) -> None:
    """The states `save_shards` wrote, into the optimizers of the same sharded models; a collective."""
    from torch.distributed.checkpoint.state_dict import (
        get_optimizer_state_dict,
        set_optimizer_state_dict,
    )
    from torch.distributed.checkpoint.state_dict_loader import load

    # the templates (states initialised by a zero-lr step that changes no weight) say what to read
    states = {k: get_optimizer_state_dict(m, _inner(o)) for k, (m, o) in pairs.items()}
    load(states, checkpoint_id=path)
    for k, (m, o) in pairs.items():
        set_optimizer_state_dict(m, _inner(o), states[k])


async def publish(store: Store, folder: Path) -> int:
    """Record the checkpoint as the newest policy version (or find the version the daemon
    recorded for it first). Read and insert run in one write transaction, so no second
    writer can take the version in between."""
    path = str(await to_thread.run_sync(folder.resolve))
    try:
        return await store.record_policy(path)
    except StoreError as exc:
        raise StoreError(f"could not record a policy version for {path}: {exc}") from exc
