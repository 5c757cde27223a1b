"""The `ncu` skill's engine: Nsight Compute on one ModelNew call, reduced to a compact table."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
import anyio.abc
import msgspec

from skills.evaluator.build import BuildResult
from skills.evaluator.sandbox import process_ids

STALL_REASONS = (
    "long_scoreboard", "short_scoreboard", "barrier", "membar", "mio_throttle", "lg_throttle",
    "math_pipe_throttle", "wait", "not_selected", "no_instruction", "branch_resolving",
    "dispatch_stall", "drain", "imc_miss", "tex_throttle", "sleeping",
)
METRICS = {
    "duration_us": "gpu__time_duration.sum",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "registers": "launch__registers_per_thread",
    "smem_static": "launch__shared_mem_per_block_static",
    "smem_dynamic": "launch__shared_mem_per_block_dynamic",
    "block": "launch__block_size",
    "grid": "launch__grid_size",
}
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"


class NcuKernel(msgspec.Struct):
    """Nsight Compute's numbers for one kernel launch."""

    name: str
    """Kernel name as ncu prints it."""
    duration_us: float | None
    """gpu__time_duration."""
    occupancy_pct: float | None
    """Achieved occupancy (% of peak warps)."""
    sm_pct: float | None
    """SM throughput, % of peak."""
    dram_pct: float | None
    """DRAM throughput, % of peak."""
    registers: int | None
    """Registers per thread."""
    shared_bytes: int | None
    """Static + dynamic shared memory per block."""
    block: int | None
    """Threads per block."""
    grid: int | None
    """Blocks in the grid."""
    top_stalls: list[tuple[str, float]]
    """The three largest warp-stall reasons (cycles per issued instruction)."""


class NcuReport(msgspec.Struct):
    """What the ncu skill returns."""

    ok: bool
    """ncu ran and reported at least one kernel."""
    kernels: list[NcuKernel]
    """One row per kernel launched by the profiled call."""
    error: str | None
    """Why it failed (None when ok)."""
    seconds: float
    """Wall time of the ncu run."""
    returncode: int | None = None
    """ncu's exit status (None: it did not finish)."""
    reports: int = 0
    """CSV reports in ncu's output (header rows): ncu prints one; more means something else wrote into it."""
    none_profiled: bool = False
    """ncu said it profiled no kernel (NO_KERNELS) although its output may hold a report."""


def _num(value: str | None) -> float | None:
    if value is None or value.strip() in ("", "n/a"):
        return None
    try:
        return float(value.replace(",", ""))
    except ValueError:
        return None


REPORT_HEADER = '"ID",'
"""How the header row of `ncu --csv --page raw` begins."""
NO_KERNELS = "No kernels were profiled"
"""ncu's warning when nothing launched inside the filter (it prints no report then)."""


def count_reports(text: str) -> int:
    """Header rows of raw CSV reports in `text` (anywhere, not only at a line's start)."""
    return text.count(REPORT_HEADER)


def parse_raw_csv(text: str) -> list[NcuKernel]:
    """Parse `ncu --csv --page raw` (header row, units row, one row per kernel): the last report in
    `text`, since ncu prints its own after the profiled process ended."""
    start = text.rfind(REPORT_HEADER)
    if start < 0:
        return []
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, body = rows[0], [r for r in rows[2:] if len(r) == len(rows[0])]
    kernels = []
    for row in body:
        rec = dict(zip(header, row, strict=True))

        def metric(key: str, rec: dict[str, str] = rec) -> float | None:
            return _num(rec.get(METRICS[key]))

        stalls = [(r, v) for r in STALL_REASONS if (v := _num(rec.get(STALL_METRIC.format(r)))) is not None]
        stalls.sort(key=lambda kv: -kv[1])
        duration = metric("duration_us")
        unit = rows[1][header.index(METRICS["duration_us"])] if METRICS["duration_us"] in header else "ns"
        scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}.get(unit.strip(), 1e-3)
        smem = [v for v in (metric("smem_static"), metric("smem_dynamic")) if v is not None]
        kernels.append(NcuKernel(
            name=rec.get("Kernel Name", "?"),
            duration_us=duration * scale if duration is not None else None,
            occupancy_pct=metric("occupancy_pct"), sm_pct=metric("sm_pct"), dram_pct=metric("dram_pct"),
            registers=_int(metric("registers")), shared_bytes=int(sum(smem)) if smem else None,
            block=_int(metric("block")), grid=_int(metric("grid")), top_stalls=stalls[:3]))
    return kernels


def _int(v: float | None) -> int | None:
    return int(v) if v is not None else None


def format_report(rep: NcuReport) -> str:
    if not rep.ok:
        return f"ncu failed: {rep.error}"
    lines = [f"Nsight Compute, one ModelNew call ({rep.seconds:.1f} s):",
             f"{'kernel':<40} {'us':>8} {'occ%':>5} {'sm%':>5} {'dram%':>6} {'regs':>4} {'smem':>6} {'block':>5} {'grid':>7}  top stalls"]
    for k in rep.kernels:
        stalls = ", ".join(f"{n} {v:.1f}" for n, v in k.top_stalls)
        lines.append(f"{k.name[:40]:<40} {_f(k.duration_us, 8, 1)} {_f(k.occupancy_pct, 5, 0)} {_f(k.sm_pct, 5, 0)}"
                     f" {_f(k.dram_pct, 6, 0)} {_f(k.registers, 4, 0)} {_f(k.shared_bytes, 6, 0)} {_f(k.block, 5, 0)}"
                     f" {_f(k.grid, 7, 0)}  {stalls}")
    return "\n".join(lines)


def _f(v: float | None, width: int, digits: int) -> str:
    return f"{'-':>{width}}" if v is None else f"{v:>{width}.{digits}f}"


def ncu_command(problem: Path, workspace: Path, lib_path: str | None, built: BuildResult | None, ncu: str, *,
                metrics: str | None = None, options: Sequence[str] = ()) -> list[str]:
    """ncu over one ModelNew call in the NVTX range `kagent` (harness/ncu_target.py); `metrics`
    defaults to the skill's table, `options` go before the target (the kernel audit's)."""
    lib = {"lib_path": lib_path, "flavour": built.flavour if built else "none",
           "functions": [msgspec.to_builtins(f) for f in built.functions] if built else []}
    metrics = metrics or ",".join([*METRICS.values(), *(STALL_METRIC.format(r) for r in STALL_REASONS)])
    return [*ncu_prefix(ncu, metrics, options), str(problem), str(workspace), json.dumps(lib)]


def ncu_prefix(ncu: str, metrics: str, options: Sequence[str] = ()) -> list[str]:
    """ncu (raw CSV of `metrics`, clocks left alone) over the NVTX range `kagent` of
    harness/ncu_target.py, whose arguments follow."""
    return [ncu, "--clock-control", "none", "--nvtx", "--nvtx-include", "kagent/", "--csv", "--page", "raw",
            "--metrics", metrics, *options, sys.executable, "-m", "skills.evaluator.harness.ncu_target"]


def find_ncu(ncu: str | None = None) -> str | None:
    """The ncu executable: the given one, on PATH, or in the CUDA toolkit; None when absent."""
    for cand in (ncu, shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if cand and (shutil.which(cand) or os.path.exists(cand)):
            return cand
    return None


async def run_ncu(cmd: list[str], *, env: dict[str, str], run_as: int | None, timeout_s: float = 300.0) -> NcuReport:
    """Run an ncu command line (already wrapped in the sandbox); its process group dies on timeout."""
    t = time.perf_counter()
    proc = await anyio.open_process(cmd, env=env, start_new_session=True, **process_ids(run_as))  # type: ignore[arg-type]
    out_b, err_b = bytearray(), bytearray()

    async def drain(stream: anyio.abc.ByteReceiveStream | None, buf: bytearray) -> None:
        if stream is not None:
            async for chunk in stream:
                buf += chunk

    try:
        with anyio.fail_after(timeout_s):
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain, proc.stdout, out_b)
                tg.start_soon(drain, proc.stderr, err_b)
                await proc.wait()
    except TimeoutError:
        return NcuReport(ok=False, kernels=[], error=f"ncu timed out after {timeout_s:.0f} s", seconds=timeout_s,
                         returncode=None)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.aclose()
    out = out_b.decode("utf-8", "replace")
    errs = err_b.decode("utf-8", "replace")
    kernels = parse_raw_csv(out)
    seconds = time.perf_counter() - t
    reports, none_profiled = count_reports(out), NO_KERNELS in out or NO_KERNELS in errs
    if proc.returncode != 0 or not kernels:
        err = errs.strip()[-1500:] or out.strip()[-1500:]
        return NcuReport(ok=False, kernels=kernels, error=f"ncu exited {proc.returncode}: {err}", seconds=seconds,
                         returncode=proc.returncode, reports=reports, none_profiled=none_profiled)
    return NcuReport(ok=True, kernels=kernels, error=None, seconds=seconds, returncode=0, reports=reports,
                     none_profiled=none_profiled)
