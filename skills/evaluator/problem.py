"""Problem files (KernelBench format): loading, validation and the bundled-problem manifest.

A problem is one Python file that defines ``class Model(nn.Module)``, ``get_inputs()`` and
``get_init_inputs()`` (both return a list). Module-level size constants are read by those two
functions at call time. Two optional globals are ours (KernelBench loaders ignore them):

- ``SMALL_SIZES``: a dict of overrides for the size constants, used by the CPU backend and CI
  (``load_problem(path, sizes="small")``). On the GPU the evaluator also runs one correctness set
  at these sizes (the shape check: a kernel that hard-codes the timed shape fails it).
- ``CHECK_SIZES``: overrides applied on top of ``SMALL_SIZES`` (``sizes="check"``): the shape
  check's set when the evaluation itself runs at the small sizes (CPU backend). Optional.
- ``PRECISION``: the lowest internal precision a solution may use, one of ``PRECISIONS``. When
  absent it is ``"fp32"`` (strict: no TF32) unless the inputs are bf16/fp16, in which case it is
  the input dtype.

Nothing here needs a GPU: shapes, FLOPs and op lists come from running ``forward`` on meta
tensors. ``python -m skills.evaluator.problem manifest`` regenerates ``problems/manifest.jsonl``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import msgspec
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

Precision = Literal["fp32", "tf32", "bf16", "fp16"]
"""Lowest internal precision a solution may use."""
PRECISIONS: tuple[str, ...] = get_args(Precision)
"""The values ``PRECISION`` may take."""
Sizes = Literal["default", "small", "check"]
"""Which size constants a problem is loaded with ("check": SMALL_SIZES, then CHECK_SIZES)."""

PROBLEMS_ROOT = Path(__file__).resolve().parents[2] / "problems"
"""The bundled problems (``problems/levelN/*.py``)."""
MANIFEST_NAME = "manifest.jsonl"
"""File name of the manifest inside a problems root."""
BUNDLED_SOURCE = "kagent"
"""``ManifestRow.source`` of the problems shipped in this repository."""

H200_HBM_BYTES_PER_S = 4.0e12
"""Achieved H200 HBM bandwidth assumed by ``est_h200_us``."""
H200_FLOPS_PER_S: dict[str, float] = {
    "fp32": 45e12,
    "tf32": 350e12,
    "bf16": 700e12,
    "fp16": 700e12,
}
"""Achieved H200 matmul throughput per precision assumed by ``est_h200_us``."""
H200_LAUNCH_US = 5.0
"""Per-kernel cost (launch plus eager overhead) assumed by ``est_h200_us``."""

_LEVEL_DIR = re.compile(r"level(\d+)")
_MODULE_COUNTER = itertools.count()
NO_KERNEL_OPS = frozenset(
    {
        "_unsafe_view",
        "unsafe_split",
        "unsafe_split_with_sizes",
        "unsafe_chunk",
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "lift_fresh",
        "lift_fresh_copy",
        "scalar_tensor",
        "_local_scalar_dense",
    }
)
"""Non-view aten ops that launch no GPU kernel (allocations, view-like ops without alias info)."""


class ProblemError(Exception):
    """A problem file cannot be used; the message names the file and what is wrong."""


class Problem(msgspec.Struct, frozen=True, kw_only=True):
    """One problem file, identified by its content."""

    path: str
    """Where the source came from: the file path as given, or ``<NAME>`` for text sources."""
    name: str
    """``levelN/stem`` when the file sits in a ``levelN`` folder, else the file stem."""
    source: str
    """The file text."""
    id: str
    """Content hash: the first 16 hex chars of sha256 of the UTF-8 source bytes."""
    level: int | None
    """N from a parent folder (or name prefix) ``levelN``; None when not in such a folder."""
    precision: Precision
    """Lowest internal precision a solution may use (see ``precision_of``)."""


class LoadedProblem:
    """A problem whose source has been executed in a fresh module namespace.

    ``get_inputs``/``get_init_inputs`` call the module's functions (which read the module's size
    constants at call time) and check that they return a list or tuple.
    """

    __slots__ = ("module", "problem", "sizes")

    def __init__(self, problem: Problem, module: types.ModuleType, sizes: Sizes) -> None:
        self.problem = problem
        """The record (path, name, id, level, precision, source)."""
        self.module = module
        """The executed module; its globals hold the size constants in effect."""
        self.sizes = sizes
        """Which size constants were applied."""

    @property
    def Model(self) -> type[torch.nn.Module]:  # noqa: N802 (the KernelBench name)
        """The problem's reference ``Model`` class."""
        model: type[torch.nn.Module] = self.module.Model
        return model

    def get_inputs(self) -> list[Any]:
        """Fresh forward inputs (CPU tensors unless a device context is active)."""
        return _call_list_fn(self.module, "get_inputs", self.problem.path)

    def get_init_inputs(self) -> list[Any]:
        """Constructor arguments for ``Model``."""
        return _call_list_fn(self.module, "get_init_inputs", self.problem.path)

    def make_model(self) -> torch.nn.Module:
        """``Model(*get_init_inputs())``."""
        return self.Model(*self.get_init_inputs())

    def __repr__(self) -> str:
        return f"LoadedProblem({self.problem.name!r}, sizes={self.sizes!r})"


def load_problem(path: str | Path, *, sizes: Sizes = "default") -> LoadedProblem:
    """Read and execute a problem file; ``sizes="small"`` applies its ``SMALL_SIZES``."""
    p = Path(path)
    label = str(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ProblemError(f"{label}: file not found") from None
    except IsADirectoryError:
        raise ProblemError(f"{label}: is a directory, not a problem file") from None
    except OSError as e:
        raise ProblemError(f"{label}: cannot read file: {e.strerror or e}") from e
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProblemError(
            f"{label}: not valid UTF-8 text ({e.reason} at byte {e.start})"
        ) from None
    level = level_of(p.parent.name)
    name = f"{p.parent.name}/{p.stem}" if level is not None else p.stem
    return _load(source, name=name, path=label, level=level, sizes=sizes, filename=str(p))


def load_problem_source(source: str, name: str, *, sizes: Sizes = "default") -> LoadedProblem:
    """Execute a problem given as text; ``name`` like ``level1/07_gelu`` (level from the prefix)."""
    first = name.split("/", 1)[0] if "/" in name else ""
    level = level_of(first)
    label = f"<{name}>"
    return _load(source, name=name, path=label, level=level, sizes=sizes, filename=label)


def source_id(source: str) -> str:
    """The content id of a problem source (see ``Problem.id``)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


def precision_of(module: types.ModuleType) -> Precision:
    """``PRECISION`` when set; else the inputs' dtype for bf16/fp16 inputs; else ``"fp32"``.

    The input dtype is found by calling ``get_inputs()`` on the meta device (no memory is
    allocated); when that call fails the result is ``"fp32"``.
    """
    declared = _declared_precision(module)
    if declared is not None:
        return declared
    return _precision_of_inputs(_meta_call(module, "get_inputs", _label_of(module)))


def _declared_precision(module: types.ModuleType) -> Precision | None:
    if not hasattr(module, "PRECISION"):
        return None
    value = module.PRECISION
    if value == "fp32":
        return "fp32"
    if value == "tf32":
        return "tf32"
    if value == "bf16":
        return "bf16"
    if value == "fp16":
        return "fp16"
    raise ProblemError(
        f"{_label_of(module)}: PRECISION must be one of {', '.join(PRECISIONS)}; got {value!r}"
    )


def _precision_of_inputs(inputs: list[Any] | None) -> Precision:
    for value in _flatten(inputs or []):
        if isinstance(value, torch.Tensor):
            if value.dtype == torch.bfloat16:
                return "bf16"
            if value.dtype == torch.float16:
                return "fp16"
    return "fp32"


def _meta_call(module: types.ModuleType, fn_name: str, label: str) -> list[Any] | None:
    """Call ``fn_name()`` with meta as the default device; None when it fails there.

    A wrong return type still raises ``ProblemError``; any other failure means the function is
    not meta-safe, and the return type is then checked on each real call instead.
    """
    try:
        with torch.device("meta"):
            return _call_list_fn(module, fn_name, label)
    except ProblemError:
        raise
    except Exception:
        return None


def iter_problems(root: Path) -> list[Path]:
    """Problem files ``root/levelN/*.py`` sorted by level then name.

    Skips ``__init__.py``, README files and names starting with ``_``.
    """
    dirs = [d for d in root.iterdir() if d.is_dir() and level_of(d.name) is not None]
    dirs.sort(key=lambda d: (level_of(d.name), d.name))
    files: list[Path] = []
    for d in dirs:
        for f in sorted(d.glob("*.py")):
            if f.name.startswith("_") or f.stem.lower() == "readme" or not f.is_file():
                continue
            files.append(f)
    return files


def level_of(dirname: str) -> int | None:
    """`level3` -> 3; None for a folder that is not a level."""
    m = _LEVEL_DIR.fullmatch(dirname)
    return int(m.group(1)) if m else None


def _label_of(module: types.ModuleType) -> str:
    label = getattr(module, "__file__", None)
    return label if isinstance(label, str) else module.__name__


def _call_list_fn(module: types.ModuleType, fn_name: str, label: str) -> list[Any]:
    result = getattr(module, fn_name)()
    if not isinstance(result, list | tuple):
        raise ProblemError(
            f"{label}: {fn_name}() must return a list or tuple; got {type(result).__name__}"
        )
    return list(result)


def _load(
    source: str, *, name: str, path: str, level: int | None, sizes: Sizes, filename: str
) -> LoadedProblem:
    if sizes not in get_args(Sizes):
        raise ValueError(f"sizes must be one of {get_args(Sizes)}; got {sizes!r}")
    pid = source_id(source)
    try:
        code = compile(source.removeprefix("\ufeff"), filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise ProblemError(f"{path}: syntax error at line {e.lineno}: {e.msg}") from None
    except ValueError as e:  # e.g. null bytes
        raise ProblemError(f"{path}: cannot compile: {e}") from None
    safe = re.sub(r"\W", "_", name)
    modname = f"_kagent_problem_{safe}_{pid}_{next(_MODULE_COUNTER)}"
    module = types.ModuleType(modname)
    module.__file__ = filename
    # Registered only while the file executes (dataclasses and friends look themselves up);
    # every load gets its own name, so problems never share a module.
    sys.modules[modname] = module
    try:
        exec(code, module.__dict__)
    except ImportError as e:
        raise ProblemError(f"{path}: import failed: {e}") from e
    except Exception as e:
        raise ProblemError(f"{path}: executing the file raised {type(e).__name__}: {e}") from e
    finally:
        sys.modules.pop(modname, None)
    _check_module(module, path)
    if sizes in ("small", "check"):
        _apply_sizes(module, path, "SMALL_SIZES")
    if sizes == "check":
        _apply_sizes(module, path, "CHECK_SIZES")
    # Check the return types early where it is free: on the meta device nothing is allocated.
    _meta_call(module, "get_init_inputs", path)
    inputs = _meta_call(module, "get_inputs", path)
    precision = _declared_precision(module) or _precision_of_inputs(inputs)
    problem = Problem(path=path, name=name, source=source, id=pid, level=level, precision=precision)
    return LoadedProblem(problem, module, sizes)


def _check_module(module: types.ModuleType, path: str) -> None:
    model = getattr(module, "Model", None)
    if model is None:
        raise ProblemError(f"{path}: no `Model` class defined")
    if not (isinstance(model, type) and issubclass(model, torch.nn.Module)):
        raise ProblemError(f"{path}: `Model` is not a subclass of torch.nn.Module")
    for fn_name in ("get_inputs", "get_init_inputs"):
        if not hasattr(module, fn_name):
            raise ProblemError(f"{path}: no `{fn_name}` function defined")
        if not callable(getattr(module, fn_name)):
            raise ProblemError(f"{path}: `{fn_name}` is not callable")


def _apply_sizes(module: types.ModuleType, path: str, attr: str) -> None:
    overrides = getattr(module, attr, None)
    if overrides is None:
        return
    if not isinstance(overrides, dict) or not all(isinstance(k, str) for k in overrides):
        raise ProblemError(f"{path}: {attr} must be a dict of global name -> value")
    for key, value in overrides.items():
        if key not in module.__dict__:
            raise ProblemError(f"{path}: {attr} names {key!r}, which is not a module global")
        setattr(module, key, value)


def shape_check_sizes(loaded: LoadedProblem) -> Sizes | None:
    """The sizes of the shape check's input set for a problem loaded at `loaded.sizes`: the small
    sizes under the default ones, CHECK_SIZES under the small ones; None when the problem has none."""
    if loaded.sizes == "default" and getattr(loaded.module, "SMALL_SIZES", None):
        return "small"
    if loaded.sizes == "small" and getattr(loaded.module, "CHECK_SIZES", None):
        return "check"
    return None


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return [leaf for item in value for leaf in _flatten(item)]
    return [value]


# ---------------------------------------------------------------------------------------------
# Manifest


class ArgSpec(msgspec.Struct, omit_defaults=True):
    """One forward input or output: ``shape``/``dtype`` for tensors, ``value``/``type`` else."""

    shape: list[int] | None = None
    """Tensor shape; None for non-tensors."""
    dtype: str | None = None
    """Tensor dtype without the ``torch.`` prefix (``float32``); None for non-tensors."""
    value: Any = None
    """A non-tensor value (JSON-able, else its repr); None for tensors."""
    type: str | None = None
    """The Python type name of a non-tensor value; None for tensors."""


class ManifestRow(msgspec.Struct, kw_only=True):
    """One problem in ``manifest.jsonl``. Sizes are the default (not small) sizes."""

    id: str
    """Content hash of the file (``Problem.id``)."""
    name: str
    """``levelN/stem`` (``Problem.name``)."""
    level: int | None
    """Difficulty level from the folder name; None when not in a ``levelN`` folder."""
    source: str
    """Where the problem comes from (``kagent`` for the bundled ones)."""
    path: str
    """File path relative to the manifest's root folder."""
    ops: list[str]
    """Sorted unique aten op names one forward dispatches (views and allocations excluded)."""
    precision: Precision | None
    """``Problem.precision``; None when the file does not load."""
    inputs: list[ArgSpec]
    """Forward inputs (flattened)."""
    outputs: list[ArgSpec]
    """Forward outputs (flattened)."""
    flops: int | None
    """FLOPs of one forward (``torch.utils.flop_counter``: matmuls and convolutions only)."""
    bytes: int | None
    """Input + output + parameter/buffer bytes: the least memory traffic one forward needs."""
    kernels: int | None
    """Aten ops one forward dispatches that launch a kernel (views and allocations excluded)."""
    tier: int | None
    """Difficulty tier, see ``tier_of``."""
    est_h200_us: float | None
    """An estimate, not a measurement, of one eager forward on an H200 (see ``estimate_h200_us``)."""
    baselines: dict[str, float] | None = None
    """Measured timings in microseconds (filled by a GPU run later); None until measured."""
    error: str | None = None
    """Why the row is incomplete (load or meta-run failure); None when it is complete."""


def estimate_h200_us(flops: int, nbytes: int, kernels: int, precision: Precision) -> float:
    """An estimate (not a measurement) of one eager forward on an H200, in microseconds.

    ``max(flops / rate, bytes / 4.0e12 B/s) + 5 us * kernels`` with ``rate`` from
    ``H200_FLOPS_PER_S`` (fp32 45e12, tf32 350e12, bf16/fp16 700e12). Intermediates that eager
    mode writes to memory are not counted, and decomposed ops (e.g. an LSTM's time steps) count
    one kernel each, so the kernel term over-estimates for ops that cuDNN fuses.
    """
    rate = H200_FLOPS_PER_S[precision]
    seconds = max(flops / rate, nbytes / H200_HBM_BYTES_PER_S)
    return round(seconds * 1e6 + H200_LAUNCH_US * kernels, 1)


def tier_of(level: int | None, flops: int, nbytes: int, kernels: int) -> int:
    """Difficulty tier: ``level`` (2 when unknown) plus size/ops heuristics.

    +1 when one forward launches more than 8 kernels (much to fuse or orchestrate) and +1 when
    it is compute-heavy (``flops >= 20 * bytes``: needs tiling / data reuse to be fast). So a
    level-1 elementwise op is tier 1, a level-1 matmul tier 2, a level-3 transformer block 5.
    """
    tier = level if level is not None else 2
    if kernels > 8:
        tier += 1
    if flops >= 20 * nbytes:
        tier += 1
    return tier


class _OpRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Records the aten ops that launch kernels (views and allocations are skipped)."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.ops: set[str] = set()
        self.kernels = 0

    def __torch_dispatch__(
        self,
        func: Any,
        types: Sequence[type],
        args: Sequence[Any] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        name: str = func.overloadpacket.__name__
        if not func.is_view and name not in NO_KERNEL_OPS:
            self.ops.add(name)
            self.kernels += 1
        return func(*args, **(kwargs or {}))


def _spec(value: Any) -> ArgSpec:
    if isinstance(value, torch.Tensor):
        return ArgSpec(shape=list(value.shape), dtype=str(value.dtype).removeprefix("torch."))
    try:
        msgspec.json.encode(value)
        encoded: Any = value
    except (TypeError, msgspec.EncodeError):
        encoded = repr(value)
    return ArgSpec(value=encoded, type=type(value).__name__)


def _nbytes(values: list[Any]) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def manifest_row(path: Path, root: Path, *, source: str = BUNDLED_SOURCE) -> ManifestRow:
    """Load one file at default sizes and run its forward on meta tensors."""
    rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
    try:
        lp = load_problem(path)
    except ProblemError as e:
        try:
            pid = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        except OSError:
            pid = ""
        level = level_of(path.parent.name)
        name = f"{path.parent.name}/{path.stem}" if level is not None else path.stem
        return _error_row(pid, name, level, source, rel, None, str(e))
    prob = lp.problem
    try:
        with torch.device("meta"):
            model = lp.make_model()
            inputs = lp.get_inputs()
            with torch.no_grad(), FlopCounterMode(display=False) as counter, _OpRecorder() as rec:
                out = model(*inputs)
    except Exception as e:
        reason = f"forward on meta tensors failed: {type(e).__name__}: {e}"
        return _error_row(prob.id, prob.name, prob.level, source, rel, prob.precision, reason)
    flat_in = _flatten(inputs)
    flat_out = _flatten(out)
    state = list(model.parameters()) + list(model.buffers())
    flops = int(counter.get_total_flops())
    nbytes = _nbytes(flat_in) + _nbytes(flat_out) + _nbytes(state)
    return ManifestRow(
        id=prob.id,
        name=prob.name,
        level=prob.level,
        source=source,
        path=rel,
        ops=sorted(rec.ops),
        precision=prob.precision,
        inputs=[_spec(v) for v in flat_in],
        outputs=[_spec(v) for v in flat_out],
        flops=flops,
        bytes=nbytes,
        kernels=rec.kernels,
        tier=tier_of(prob.level, flops, nbytes, rec.kernels),
        est_h200_us=estimate_h200_us(flops, nbytes, rec.kernels, prob.precision),
    )


def _error_row(
    pid: str,
    name: str,
    level: int | None,
    source: str,
    rel: str,
    precision: Precision | None,
    error: str,
) -> ManifestRow:
    return ManifestRow(
        id=pid,
        name=name,
        level=level,
        source=source,
        path=rel,
        ops=[],
        precision=precision,
        inputs=[],
        outputs=[],
        flops=None,
        bytes=None,
        kernels=None,
        tier=None,
        est_h200_us=None,
        error=error,
    )


def build_manifest(root: Path, *, source: str = BUNDLED_SOURCE) -> list[ManifestRow]:
    """Rows for every problem under ``root`` (see ``iter_problems``), sorted by name."""
    rows = [manifest_row(p, root, source=source) for p in iter_problems(root)]
    rows.sort(key=lambda r: r.name)
    return rows


def encode_manifest(rows: list[ManifestRow]) -> bytes:
    """JSON lines, one row per line, in the given order."""
    return b"".join(msgspec.json.encode(r) + b"\n" for r in rows)


def read_manifest(path: Path) -> list[ManifestRow]:
    """Parse a ``manifest.jsonl``."""
    decoder = msgspec.json.Decoder(ManifestRow)
    lines = path.read_bytes().splitlines()
    return [decoder.decode(line) for line in lines if line.strip()]


def carry_baselines(rows: list[ManifestRow], old_manifest: Path, measured: Path | None) -> None:
    """Keep measured baselines of unchanged problems (same id); add new ones from a benchmark file."""
    if old_manifest.is_file():
        old = {r.id: r.baselines for r in read_manifest(old_manifest) if r.baselines}
        for r in rows:
            r.baselines = old.get(r.id, r.baselines)
    if measured is None:
        return
    data = json.loads(measured.read_text())
    gpu = str(data["env"].get("gpu") or "gpu").split()[-1].lower()
    key = f"eager_us_{gpu}"
    times = {p["name"]: p["eager_us"] for p in data["problems"] if p.get("eager_us") is not None}
    for r in rows:
        if r.name in times:
            r.baselines = {**(r.baselines or {}), key: round(float(times[r.name]), 1)}


def main(argv: list[str] | None = None) -> int:
    """``python -m skills.evaluator.problem manifest [--root DIR] [--out FILE] [--source NAME]``."""
    parser = argparse.ArgumentParser(prog="python -m skills.evaluator.problem")
    sub = parser.add_subparsers(dest="command", required=True)
    man = sub.add_parser("manifest", help="write ROOT/manifest.jsonl (one JSON line per problem)")
    man.add_argument("--root", type=Path, default=Path("problems"), help="problems folder")
    man.add_argument("--out", type=Path, default=None, help="default: ROOT/manifest.jsonl")
    man.add_argument("--source", default=BUNDLED_SOURCE, help="value of each row's `source`")
    man.add_argument("--baselines", type=Path, default=None,
                     help="benchmarks/results JSON of bench_problems.py: record its eager times in `baselines`")
    args = parser.parse_args(argv)
    root: Path = args.root
    if not root.is_dir():
        parser.error(f"--root {root} is not a folder")
    out: Path = args.out if args.out is not None else root / MANIFEST_NAME
    rows = build_manifest(root, source=args.source)
    carry_baselines(rows, out, args.baselines)
    out.write_bytes(encode_manifest(rows))
    failed = [r for r in rows if r.error is not None]
    sys.stderr.write(f"wrote {len(rows)} rows to {out} ({len(failed)} with errors)\n")
    for r in failed:
        sys.stderr.write(f"  {r.name}: {r.error}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
