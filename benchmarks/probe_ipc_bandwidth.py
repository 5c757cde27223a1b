"""How fast torch kernels read GPU memory shared across processes, by how it was shared.

The candidate reads its inputs from the judge's arena (skills/evaluator/harness/arena.py). On the H200 the
problem's own Model read 1.2-2x slower there than on private copies of the same inputs in the same
process (probe_parity.py, 2026-12-02). This probe times the same kernels (a sum, a matrix-vector
product, an elementwise op) over one buffer as a child process sees it:

  private   a tensor of the child's own allocator (the eager baseline's case)
  legacy    cuMemAlloc in the parent, cuIpcGetMemHandle / cuIpcOpenMemHandle in the child (today's arena)
  vmm       cuMemCreate (POSIX-fd shareable) in the parent, the fd inherited, cuMemImportFromShareableHandle
            + cuMemMap + cuMemSetAccess in the child

    python benchmarks/probe_ipc_bandwidth.py [--gib 4] [--out ipc-bandwidth-h200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import cuda_median_us as timed  # noqa: E402
from benchmarks.common import environment, table, write_result  # noqa: E402
from benchmarks.cuda_ipc_probe import Driver, tensor_at  # noqa: E402


def kernels(x: Any) -> dict[str, float]:
    import torch

    n = x.numel()
    rows = 2048
    m = x[: rows * (n // rows)].view(rows, -1)
    v = torch.randn(m.shape[1], 1, device="cuda")
    half = x[: n // 2]
    return {"sum_us": timed(lambda: x.sum()), "matvec_us": timed(lambda: m @ v),
            "mul_us": timed(lambda: half * 2.0)}


def child(args: argparse.Namespace) -> None:
    import torch

    torch.cuda.init()  # type: ignore[no-untyped-call]
    torch.empty(1, device="cuda")
    drv = Driver()
    drv.use_primary_context(0)
    nbytes = args.nbytes
    res: dict[str, Any] = {}
    legacy = tensor_at(drv.ipc_open_mem(bytes.fromhex(args.handle)), nbytes).view(torch.float32)
    res["legacy"] = kernels(legacy)
    h = drv.vmm_import_fd(args.fd)
    vmm = tensor_at(drv.vmm_map(h, args.vmm_size), nbytes).view(torch.float32)
    res["vmm"] = kernels(vmm)
    res["private"] = kernels(legacy.clone())
    res["legacy_again"] = kernels(legacy)
    res["same"] = bool(torch.equal(legacy[:1024], vmm[:1024]))
    print(json.dumps(res))


def parent(args: argparse.Namespace) -> None:
    import torch

    torch.empty(1, device="cuda")
    drv = Driver()
    drv.use_primary_context(0)
    nbytes = int(args.gib * (1 << 30))
    ptr = drv.mem_alloc(nbytes)
    handle = drv.ipc_mem_handle(ptr)
    size = drv.vmm_size(nbytes)
    h = drv.vmm_create(size)
    fd = drv.vmm_export_fd(h)
    vptr = drv.vmm_map(h, size)
    a = tensor_at(ptr, nbytes).view(torch.float32)
    a.normal_()
    tensor_at(vptr, nbytes).view(torch.float32).copy_(a)
    torch.cuda.synchronize()
    own = {"parent_cumemalloc": kernels(a), "parent_vmm": kernels(tensor_at(vptr, nbytes).view(torch.float32))}
    r = subprocess.run([sys.executable, __file__, "--child", "--handle", handle.hex(), "--fd", str(fd),
                        "--nbytes", str(nbytes), "--vmm-size", str(size)], pass_fds=[fd],
                       capture_output=True, text=True, timeout=300, check=False)
    if r.returncode != 0:
        print(r.stderr[-3000:])
        raise SystemExit(1)
    res = json.loads(r.stdout.strip().splitlines()[-1]) | own
    rows = [[k] + [round(v[c], 1) for c in ("sum_us", "matvec_us", "mul_us")] for k, v in res.items() if isinstance(v, dict)]
    print(table(["memory", "sum us", "matvec us", "x*2 us"], rows))
    write_result(args.out, {"gib": args.gib, "results": res, "env": environment()})
    os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=4.0)
    ap.add_argument("--out", default="ipc-bandwidth")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--handle", default="", help=argparse.SUPPRESS)
    ap.add_argument("--fd", type=int, default=-1, help=argparse.SUPPRESS)
    ap.add_argument("--nbytes", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--vmm-size", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    child(args) if args.child else parent(args)


if __name__ == "__main__":
    main()
