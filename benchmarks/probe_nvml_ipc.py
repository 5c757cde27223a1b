"""Whose NVML figure an arena counts in: the judge's (which cuMemAlloc'd it) or also the candidate's
(which opened its IPC handle), and what the candidate's figure grows by for a plain torch output.

    python3 benchmarks/probe_nvml_ipc.py [--out NAME]    (a GPU; writes benchmarks/results/NAME.json)

The composite reward's memory penalty compares the candidate's NVML peak with the baselines' own
allocator peaks (docs/reward.md); an arena counted in the candidate's figure would have to be taken
off it first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MIB = 1 << 20


def _used(pid: int) -> int:
    from skills.evaluator.nvml import Nvml

    nvml = Nvml.open(0)
    assert nvml is not None, "no NVML"
    time.sleep(0.05)
    return nvml.processes().get(pid, 0)


def child(handle_hex: str, nbytes: int, fd: int) -> None:
    """The candidate's side: report its NVML figure at each step (one JSON line each)."""
    import torch

    from skills.evaluator.harness import arena
    from skills.evaluator.harness.protocol import Layout, SlotSpec

    me = os.getpid()
    torch.empty(1, device="cuda")
    steps = {"context": _used(me)}
    layout = Layout(inputs=[SlotSpec(offset=0, shape=[nbytes // 4], dtype="float32")], input_positions=[0],
                    outputs=[], nbytes=nbytes)
    a = arena.device_attach(layout, bytes.fromhex(handle_hex), fd)
    torch.cuda.synchronize()
    steps["arena opened"] = _used(me)
    a.inputs[0].fill_(1.0)
    torch.cuda.synchronize()
    steps["arena written"] = _used(me)
    out = torch.empty(256 * MIB // 4, device="cuda")
    out.fill_(2.0)
    torch.cuda.synchronize()
    steps["256 MiB torch output"] = _used(me)
    del out
    steps["output freed (cached)"] = _used(me)
    print(json.dumps(steps))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--child", nargs=3)
    p.add_argument("--out", default="nvml-ipc-probe-h200")
    p.add_argument("--gib", type=float, default=1.0)
    args = p.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    import torch

    from skills.evaluator.harness import arena
    from skills.evaluator.harness.protocol import Layout, SlotSpec

    nbytes = int(args.gib * (1 << 30))
    torch.empty(1, device="cuda")
    layout = Layout(inputs=[SlotSpec(offset=0, shape=[nbytes // 4], dtype="float32")], input_positions=[0],
                    outputs=[], nbytes=nbytes)
    result: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d"), "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "command": "python3 benchmarks/probe_nvml_ipc.py", "arena_mib": nbytes / MIB,
    }
    for transport in ("vmm_posix_fd", "legacy_ipc"):
        judge_before = _used(os.getpid())
        if transport == "vmm_posix_fd":
            a, handle, fd = arena.device_create(layout)
        else:
            (a, handle), fd = arena.legacy_create(layout), -1
        judge_after = _used(os.getpid())
        got = subprocess.run([sys.executable, __file__, "--child", handle.hex() or "00", str(nbytes), str(fd)],
                             capture_output=True, text=True, check=False, pass_fds=(fd,) if fd >= 0 else ())
        if fd >= 0:
            os.close(fd)
        steps = json.loads(got.stdout.strip().splitlines()[-1]) if got.returncode == 0 else {"error": got.stderr[-2000:]}
        a.close()
        result[transport] = {
            "judge_mib": {"before": judge_before / MIB, "arena allocated": judge_after / MIB},
            "candidate_mib": {k: v / MIB for k, v in steps.items()} if "error" not in steps else steps,
        }
    text = json.dumps(result, indent=2)
    print(text)
    out = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    out.write_text(text + "\n")
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], out.name).write_text(text + "\n")


if __name__ == "__main__":
    main()
