"""How inputs and outputs travel between the judge and the candidate without pickles or copies of
whole input sets through files.

Inputs: both workers draw every input set on their own device from the set's seed (the problem's
`get_inputs()` under `torch.manual_seed`, factories on the device: milliseconds for 64M normals).
The judge sends a checksum per input, so the candidate knows it drew the same values (candidate
code that changed the RNG or torch's defaults at import gets a clear error instead of a
mysterious mismatch). Drawing the same inputs gives the candidate nothing it did not have: it
runs on them anyway, and the seeds of sets it has not run (canaries) are not derivable from the
ones it gets (see `protocol.derive_seed`).

Outputs: the candidate writes each output tensor's raw bytes into `out/out_{set}_{index}.bin`
(one copy from the device into a shared mapping) and sends shape and dtype; the judge names the
file itself, refuses links and sizes that do not match the reference, and maps it read-only.
"""

from __future__ import annotations

import math
import mmap
import os
import random
import stat
import sys
import zlib
from pathlib import Path
from typing import Any

import torch

from skills.harness.protocol import OutputFile

DTYPES: dict[str, torch.dtype] = {
    str(dt).removeprefix("torch."): dt
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16,
               torch.int32, torch.int64, torch.uint8, torch.bool, torch.complex64, torch.complex128)
}


def to_device(args: list[Any], device: torch.device, double: bool = False) -> list[Any]:
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            a = a.to(device)
            if double and a.is_floating_point():
                a = a.double()
        out.append(a)
    return out


def draw_inputs(get_inputs: Any, seed: int, device: torch.device) -> list[Any]:
    """One input set: `get_inputs()` with the set's seed (torch, Python's `random` and numpy's
    global generators), tensor factories on `device`."""
    torch.manual_seed(seed)
    random.seed(seed)
    if (np := sys.modules.get("numpy")) is not None:
        np.random.seed(seed % 2**32)
    with device:
        inputs = list(get_inputs())
    return to_device(inputs, device)


def fingerprint(inputs: list[Any]) -> list[float]:
    """A checksum per input: sum and sum of |x| in fp64 for tensors, a CRC of repr() otherwise."""
    out: list[float] = []
    for a in inputs:
        if isinstance(a, torch.Tensor):
            d = a.detach()
            if d.dtype == torch.bool:
                d = d.to(torch.uint8)
            if d.is_complex():
                d = torch.view_as_real(d)
            out += [float(torch.sum(d, dtype=torch.float64)), float(torch.sum(d.abs(), dtype=torch.float64))]
        else:
            out.append(float(zlib.crc32(repr(a).encode())))
    return out


def same_fingerprint(a: list[float], b: list[float]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                return False
        elif abs(x - y) > 1e-9 * max(abs(x), abs(y), 1.0):
            return False
    return True


def output_path(out_dir: str | Path, set_index: int, index: int) -> Path:
    return Path(out_dir) / f"out_{set_index}_{index}.bin"


def write_output(value: object, out_dir: str | Path, set_index: int, index: int) -> OutputFile:
    """Candidate side: the raw bytes of one output (a plain tensor) into its file."""
    if type(value) is not torch.Tensor:
        return OutputFile(path="", shape=[], dtype="", kind=type(value).__name__)
    t = value.detach()
    name = str(t.dtype).removeprefix("torch.")
    meta = OutputFile(path=str(output_path(out_dir, set_index, index)), shape=list(t.shape), dtype=name)
    if t.dtype not in DTYPES.values() or t.layout != torch.strided:
        meta.path = ""
        return meta
    if t.numel() == 0:
        Path(meta.path).write_bytes(b"")
        return meta
    dest = torch.from_file(meta.path, shared=True, size=t.numel(), dtype=t.dtype)
    dest.copy_(t.reshape(-1))
    del dest
    return meta


class OutputUnreadable(Exception):
    """The candidate's output file is missing, a link, or not the size its shape says."""


def read_output(meta: OutputFile, out_dir: str | Path, set_index: int, index: int,
                device: torch.device) -> torch.Tensor:
    """Judge side: the output as a tensor on `device`. The path is the judge's own, never the
    candidate's string; only call this once shape and dtype match the reference."""
    dtype = DTYPES[meta.dtype]
    numel = math.prod(meta.shape)
    nbytes = numel * torch.empty(0, dtype=dtype).element_size()
    path = output_path(out_dir, set_index, index)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise OutputUnreadable(f"the output file could not be opened ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OutputUnreadable("the output file is not a regular file")
        if st.st_size != nbytes:
            raise OutputUnreadable(f"the output file holds {st.st_size} bytes; shape {meta.shape} of {meta.dtype} needs {nbytes}")
        if nbytes == 0:
            return torch.empty(meta.shape, dtype=dtype, device=device)
        buf = mmap.mmap(fd, nbytes, access=mmap.ACCESS_COPY)
    finally:
        os.close(fd)
    try:
        host = torch.frombuffer(buf, dtype=dtype, count=numel).reshape(meta.shape)
        out = host.to(device, copy=True)
        del host
    finally:
        buf.close()
    return out


def meta_tensor(meta: OutputFile) -> torch.Tensor | None:
    """A stand-in with the output's shape and dtype (no data) for shape and dtype messages;
    None when the output was not a plain tensor of a known dtype."""
    if meta.kind != "Tensor" or meta.dtype not in DTYPES:
        return None
    if not all(isinstance(n, int) and n >= 0 for n in meta.shape) or len(meta.shape) > 16:
        return None
    return torch.empty(meta.shape, dtype=DTYPES[meta.dtype], device="meta")
