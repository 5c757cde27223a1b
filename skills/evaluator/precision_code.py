"""Evidence about the candidate's code: does its built code hold reduced-precision instructions?

The judge's error budget (skills/evaluator/harness/compare.py) is wide enough for every fp32-accurate
algorithm (any summation order, online softmax, Welford, fast-math within ulps) only where this
scan found no instruction that computes in a narrower format; otherwise the strict budget
applies, so TF32/FP16/BF16 shortcuts on an fp32 problem still fail. The scan looks at what was
built, not at what the sources say, wherever the built form is readable:

- CPU code (the library itself, both backends: host `.cpp` code may carry
  `__attribute__((target("f16c")))`): `objdump -d --no-show-raw-insn -M intel` of the shared
  library, matched against x86 fp16/bf16 conversions and arithmetic (F16C `vcvtps2ph`/`vcvtph2ps`,
  AVX512-BF16 / AVX-NE-CONVERT `*bf16*`, AVX512-FP16 `*ph`/`*sh` instructions, AMX `tdp*`, VNNI
  int8 dot products).
- CUDA device code: the fatbinary in the library is compressed, so each `.cu` source is compiled
  again to PTX (`nvcc -ptx` with the build's own flags, skills.evaluator.build.ptx_command) and every
  instruction naming a 16-bit, 8-bit or tf32 type is reduced: `mma`/`wmma`/`wgmma` with
  tf32/f16/bf16/fp8/int8 operands, `cvt.rn*.f16/bf16/tf32`, half arithmetic, `dp4a`.
- Library calls on CUDA: the compute-type constants that make cuBLAS/cuDNN compute in a narrower
  format are compiled to plain integers, so their names are looked for in the sources (comments
  and literals blanked). `NVIDIA_TF32_OVERRIDE=0` in the candidate's environment covers TF32 modes
  the names miss.

A scan that cannot run (no library, objdump or nvcc missing, a compile failure, a torch-flavour
build whose PTX needs torch's headers) says so: `checked` is False and the strict budget applies.
Results are cached by content hash (the library's bytes; the sources, headers and command), so
an unchanged build costs one hash.
"""

from __future__ import annotations

import ast
import collections
import hashlib
import re
import shutil
import tempfile
from pathlib import Path
from typing import Literal

import msgspec

from skills.evaluator.build import (
    HEADER_SUFFIXES,
    BuildConfig,
    BuildError,
    BuildResult,
    ptx_command,
    run_tool,
    strip_comments,
)

Format = Literal["tf32", "fp16", "bf16", "fp8", "int8"]
"""A number format narrower than fp32 that an instruction computes or rounds in."""

SCAN_TIMEOUT_S = 120.0
"""Wall-clock limit per objdump / nvcc process."""
_CACHE_MAX = 256


class PrecisionEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """What the scan of one build found."""

    checked: bool
    """The code was inspected; False: it could not be (the strict budget applies, `how` says why)."""
    reduced: list[str] = []
    """Reduced-precision instructions found, one entry per distinct one: "vcvtps2ph (x4)"."""
    formats: list[Format] = []
    """Their number formats, sorted, without repeats."""
    how: str = ""
    """What was inspected and with which tool (or why it was not)."""


UNCHECKED = PrecisionEvidence(checked=False, how="not scanned")
"""The default a JudgeStart carries: no evidence, so the strict budget."""

# x86 mnemonics (Intel syntax, lower case) and their formats.
_X86: list[tuple[re.Pattern[str], Format]] = [
    (re.compile(r"^v\w*bf16\w*$|^vdpbf16ps$|^tdpbf16ps$"), "bf16"),
    (re.compile(r"^vcvtps2phx?$|^vcvtph2psx?$"), "fp16"),  # F16C (and its AVX512-FP16 forms)
    (re.compile(r"^v\w*?(?:ph|sh)(?:2\w+)?$|^v\w*2(?:ph|sh)x?$|^vu?comish$|^vmovw$|^v\w*neeph2ps$"), "fp16"),
    (re.compile(r"^tdp(?:fp16|bf8|hf8)\w*$"), "fp16"),  # AMX-FP16 / AMX-FP8
    (re.compile(r"^tdpb[su]{2}d$|^v?pdpbu?s[sd]s?$|^v?pdpw[su]{2}ds?$"), "int8"),  # AMX-INT8, VNNI
]
# x86 mnemonics the fp16 pattern would catch that compute nothing in fp16 (SSSE3/XOP shuffles).
_X86_MNEMONIC = re.compile(
    r"^\s*[0-9a-f]+:\t(?:(?:lock|rep|repz|repnz|notrack|bnd|\{vex\}|\{evex\}|data16|addr32|cs|ds) +)*([A-Za-z][\w.]*)",
    re.M)
_X86_NOT: frozenset[str] = frozenset({"vpshufb", "vpsh", "vphaddw", "vphsubw"})

# A PTX instruction naming a narrow type: `.f16`, `.bf16x2`, `.tf32`, `.e4m3`, ... as a type suffix.
_PTX_TYPE = re.compile(r"\.(f16x2|f16|bf16x2|bf16|tf32|e4m3x2|e4m3|e5m2x2|e5m2|e2m1x2|e2m1|e3m2|e2m3|s8|u8|s4|u4)\b")
_PTX_FORMAT: dict[str, Format] = {"f16": "fp16", "bf16": "bf16", "tf32": "tf32", "s8": "int8", "u8": "int8",
                                  "s4": "int8", "u4": "int8"}
# Instructions whose narrow types only move bits (declarations, loads, stores, moves): not arithmetic.
_PTX_MOVES = re.compile(r"^(ld|st|mov|cvta|\.reg|\.param|\.local|\.shared|\.global|\.const|prmt|shfl|selp)\b")
_PTX_DOT = re.compile(r"^(w?mma|wgmma|dp4a|dp2a)\b")

# Library constants that make cuBLAS / cuDNN compute in a narrower format than fp32.
_LIBRARY_NAMES: dict[str, Format] = {
    "CUBLAS_COMPUTE_32F_FAST_TF32": "tf32", "CUBLAS_TF32_TENSOR_OP_MATH": "tf32",
    "CUBLAS_COMPUTE_32F_FAST_16F": "fp16", "CUBLAS_COMPUTE_16F": "fp16", "CUDA_R_16F": "fp16",
    "CUBLAS_COMPUTE_32F_FAST_16BF": "bf16", "CUDA_R_16BF": "bf16", "CUDNN_DATA_HALF": "fp16",
    "CUDNN_DATA_BFLOAT16": "bf16", "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION": "fp16",
    "CUDNN_DATA_INT8": "int8", "CUBLAS_COMPUTE_32I": "int8", "CUDA_R_8I": "int8",
}
_LIBRARY_TOKEN = re.compile(r"\b(" + "|".join(_LIBRARY_NAMES) + r")\b")

_cache: dict[str, PrecisionEvidence] = {}


def scan_build(built: BuildResult | None, kernels_dir: Path, config: BuildConfig) -> PrecisionEvidence:
    """The evidence for one build of `kernels_dir` (never raises: a scan that fails is unchecked)."""
    if built is None or not built.ok or not built.lib_path:
        return PrecisionEvidence(checked=False, how="no library built by kernels/ (load_inline or none):"
                                 " the code is not inspected")
    parts = [scan_library(Path(built.lib_path))]
    if built.backend == "cuda":
        parts.append(scan_cuda_sources(kernels_dir, config, torch_flavour=built.flavour == "torch"))
    # x86 mnemonics, PTX instructions and library constants never share a name: entries just add up.
    return PrecisionEvidence(checked=all(ev.checked for ev in parts),
                             reduced=sorted(e for ev in parts for e in ev.reduced),
                             formats=sorted({f for ev in parts for f in ev.formats}),
                             how="; ".join(ev.how for ev in parts))


def _entries(found: dict[str, int]) -> list[str]:
    return [f"{name} (x{n})" for name, n in sorted(found.items())]


def _remember(key: str, ev: PrecisionEvidence) -> PrecisionEvidence:
    if ev.checked:  # a failure (tool missing, timeout) is retried next time
        if len(_cache) >= _CACHE_MAX:
            _cache.pop(next(iter(_cache)))
        _cache[key] = ev
    return ev


def scan_library(lib: Path) -> PrecisionEvidence:
    """x86 reduced-precision instructions in the shared library `lib` (objdump)."""
    try:
        data = lib.read_bytes()
    except OSError as exc:
        return PrecisionEvidence(checked=False, how=f"library unreadable ({exc.strerror})")
    key = "lib:" + hashlib.sha256(data).hexdigest()
    hit = _cache.get(key)
    if hit is not None:
        return hit
    exe = shutil.which("objdump")
    if exe is None:
        return PrecisionEvidence(checked=False, how="objdump not found (binutils): CPU code not inspected,"
                                 " strict budget")
    try:
        rc, out = run_tool([exe, "-d", "--no-show-raw-insn", "-M", "intel", str(lib)], Path("/"), SCAN_TIMEOUT_S)
    except BuildError as exc:
        return PrecisionEvidence(checked=False, how=f"objdump did not run: {exc}")
    if rc != 0:
        return PrecisionEvidence(checked=False, how=f"objdump failed (status {rc}): {out.strip()[:300]}")
    found, formats = x86_reduced(out)
    return _remember(key, PrecisionEvidence(checked=True, reduced=_entries(found), formats=sorted(formats),
                                            how=f"objdump -d of the library ({len(data)} bytes)"))


def x86_reduced(disassembly: str) -> tuple[dict[str, int], set[Format]]:
    """Reduced-precision mnemonics (with counts) and their formats in `objdump -d` output."""
    found: dict[str, int] = {}
    formats: set[Format] = set()
    # "  401126:\tvcvtps2ph xmm0,ymm1,0x4": the mnemonic after the address (prefixes skipped);
    # each distinct mnemonic is matched once.
    for op, n in collections.Counter(m.lower() for m in _X86_MNEMONIC.findall(disassembly)).items():
        if op in _X86_NOT:
            continue
        for pattern, fmt in _X86:
            if pattern.match(op):
                found[op] = n
                formats.add(fmt)
                break
    return found, formats


def ptx_reduced(ptx: str) -> tuple[dict[str, int], set[Format]]:
    """Instructions computing in (or converting to) a narrow format in PTX text, with counts."""
    found: dict[str, int] = {}
    formats: set[Format] = set()
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip().lstrip("{").strip()
        if line.startswith("@"):  # a predicate guard: "@%p1 cvt.rn.f16.f32 ..."
            line = line.split(None, 1)[1] if " " in line else ""
        if not line or line.startswith((".", "}", "$")) or _PTX_MOVES.match(line):
            continue
        op = line.split(None, 1)[0].rstrip(";")
        kinds = {_PTX_FORMAT.get(t.removesuffix("x2"), "fp8") for t in _PTX_TYPE.findall(op)}
        if not _PTX_DOT.match(op):  # 8-bit integers elsewhere are masks and bytes, not arithmetic
            kinds.discard("int8")
        if op.startswith(("dp4a", "dp2a")):
            kinds.add("int8")
        if kinds:
            found[op] = found.get(op, 0) + 1
            formats.update(kinds)
    return found, formats


def library_reduced(sources: dict[str, str]) -> tuple[dict[str, int], set[Format]]:
    """cuBLAS/cuDNN constants naming a narrow compute or data type in the sources."""
    found: dict[str, int] = {}
    formats: set[Format] = set()
    for text in sources.values():
        for name in _LIBRARY_TOKEN.findall(strip_comments(text)):
            found[name] = found.get(name, 0) + 1
            formats.add(_LIBRARY_NAMES[name])
    return found, formats


def scan_cuda_sources(kernels_dir: Path, config: BuildConfig, torch_flavour: bool = False) -> PrecisionEvidence:
    """The PTX of every `.cu` file of `kernels_dir` and the library constants of every source."""
    try:
        files = {p.name: p.read_bytes() for p in sorted(kernels_dir.iterdir())
                 if p.is_file() and p.suffix in (".cu", ".cpp", *HEADER_SUFFIXES)}
    except OSError as exc:
        return PrecisionEvidence(checked=False, how=f"kernels/ unreadable ({exc.strerror})")
    cus = [n for n in files if n.endswith(".cu")]
    h = hashlib.sha256()
    for name, data in files.items():
        h.update(f"{name}\0{len(data)}\0".encode() + data)
    cmd0 = ptx_command(config, "kernels/x.cu")
    key = "cu:" + h.hexdigest() + "\0".join(cmd0)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    found, formats = library_reduced({n: d.decode("utf-8", "replace") for n, d in files.items()})
    if torch_flavour and cus:
        return PrecisionEvidence(checked=False, reduced=_entries(found), formats=sorted(formats),
                                 how="torch-flavour build: its PTX needs torch's headers, not inspected")
    with tempfile.TemporaryDirectory(prefix="kagent-ptx-") as tmp:
        work = Path(tmp)
        (work / "kernels").mkdir()
        for name, data in files.items():
            (work / "kernels" / name).write_bytes(data)
        for name in cus:
            got = _ptx_of(work, name, config)
            if isinstance(got, str):
                return PrecisionEvidence(checked=False, reduced=_entries(found), formats=sorted(formats), how=got)
            for op, n in got[0].items():
                found[op] = found.get(op, 0) + n
            formats.update(got[1])
    how = f"nvcc -ptx of {len(cus)} .cu file(s) for {config.arch}; library constants in {len(files)} file(s)"
    return _remember(key, PrecisionEvidence(checked=True, reduced=_entries(found), formats=sorted(formats), how=how))


def _ptx_of(work: Path, name: str, config: BuildConfig) -> tuple[dict[str, int], set[Format]] | str:
    """The reduced instructions of one source's PTX, or why it could not be produced."""
    out = work / f"{name}.ptx"
    try:
        rc, log = run_tool([*ptx_command(config, f"kernels/{name}"), "-o", str(out)], work, SCAN_TIMEOUT_S)
    except BuildError as exc:
        return f"nvcc did not run ({exc}): device code not inspected, strict budget"
    if rc != 0 or not out.is_file():
        return f"nvcc -ptx kernels/{name} failed (status {rc}): {log.strip()[:300]}"
    return ptx_reduced(out.read_text(errors="replace"))


def declares_tf32(path: str | Path) -> bool:
    """The file assigns ``PRECISION = "tf32"`` at its top level, read without running it (the
    parent decides the candidate's library environment before the judge has loaded the problem)."""
    try:
        tree = ast.parse(Path(path).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        if any(isinstance(t, ast.Name) and t.id == "PRECISION" for t in targets) and \
                isinstance(value, ast.Constant) and value.value == "tf32":
            return True
    return False
