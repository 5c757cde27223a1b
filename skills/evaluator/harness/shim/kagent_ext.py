"""kagent_ext: how candidate code reaches its compiled kernels (`from kagent_ext import ops`).

The trusted harness calls `_bind` (C-ABI library built by skills/evaluator/build.py) or `_bind_module`
(torch-extension flavour) before `model_new` is imported; `ops.NAME(*args)` then calls the
exported function, after checking every argument against its C signature (docs/kernel-abi.md).

Only stdlib, ctypes and torch (imported lazily, at bind time) may be used here: this file is
put on sys.path inside evaluation workers.
"""

from __future__ import annotations

import ctypes
import numbers
from collections.abc import Callable
from typing import Any

_SCALAR_CTYPES: dict[str, Any] = {
    "int": ctypes.c_int, "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64,
    "long long": ctypes.c_longlong, "long": ctypes.c_long, "size_t": ctypes.c_size_t,
    "float": ctypes.c_float, "double": ctypes.c_double, "bool": ctypes.c_bool,
}
_UNSIGNED = {"size_t"}


class _State:
    """What is bound right now (one library or module per worker process)."""

    def __init__(self) -> None:
        self.bound = False
        self.module: object | None = None
        self.names: list[str] = []
        # Keeps the CDLL alive: its functions are referenced only through closures.
        self.lib: ctypes.CDLL | None = None


_STATE = _State()


class _Ops:
    """`ops.NAME` is a bound function (stored in the instance dict, so lookup is a plain
    attribute hit); __getattr__ only runs for names that are not bound."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)  # copy/pickle/inspect probes must not see our errors
        if _STATE.module is not None:
            return getattr(_STATE.module, name)
        if not _STATE.bound:
            raise RuntimeError(
                f"no kernels are loaded: build kernels/ first (ops.{name} was requested before "
                "the harness bound a successfully built library)"
            )
        raise AttributeError(
            f"ops has no function '{name}'; available: {', '.join(_STATE.names) or '(none)'} "
            "(export it with KAGENT_EXPORT and rebuild)"
        )

    def __dir__(self) -> list[str]:
        if _STATE.module is not None:
            return sorted(dir(_STATE.module))
        return list(_STATE.names)

    def __repr__(self) -> str:
        if _STATE.module is not None:
            return f"<kagent_ext.ops forwarding to {_STATE.module!r}>"
        return f"<kagent_ext.ops: {', '.join(_STATE.names) or 'nothing bound'}>"


ops = _Ops()


def _bind(lib_path: str, functions: list[dict[str, Any]], device: str) -> None:
    """Load the C-ABI library and expose `functions` (msgspec.to_builtins(FunctionSig) dicts)."""
    if device not in ("cuda", "cpu"):
        raise ValueError(f"device must be 'cuda' or 'cpu', got {device!r}")
    import torch

    lib = ctypes.CDLL(lib_path)
    check: Callable[[str], None] | None = None
    if device == "cuda":
        check = _launch_checker(lib, lib_path)
    callers = {f["name"]: _make_caller(lib, lib_path, f, device, torch, check) for f in functions}
    _reset()
    ops.__dict__.update(callers)
    _STATE.bound, _STATE.lib, _STATE.names = True, lib, sorted(callers)


def _bind_module(module: object) -> None:
    """Torch-extension flavour: `ops.NAME` is `module.NAME`."""
    _reset()
    _STATE.bound, _STATE.module = True, module


def _reset() -> None:
    ops.__dict__.clear()
    _STATE.bound, _STATE.module, _STATE.lib, _STATE.names = False, None, None, []


def _symbol(lib: ctypes.CDLL, lib_path: str, name: str) -> Any:
    try:
        return getattr(lib, name)
    except AttributeError as exc:
        raise RuntimeError(f"{lib_path} does not export '{name}'") from exc


def _launch_checker(lib: ctypes.CDLL, lib_path: str) -> Callable[[str], None]:
    """After a call: raise if the library's CUDA runtime recorded a launch error."""
    last_error = _symbol(lib, lib_path, "kagent_last_error")
    last_error.argtypes, last_error.restype = [], ctypes.c_int
    error_string = _symbol(lib, lib_path, "kagent_error_string")
    error_string.argtypes, error_string.restype = [ctypes.c_int], ctypes.c_char_p

    def check(name: str) -> None:
        code = last_error()
        if code:
            text = (error_string(code) or b"unknown error").decode(errors="replace")
            raise RuntimeError(f"kernel {name} failed: {text} (cudaError {code})")

    return check


def _make_caller(
    lib: ctypes.CDLL, lib_path: str, sig: dict[str, Any], device: str, torch: Any,
    check: Callable[[str], None] | None,
) -> Callable[..., None]:
    name: str = sig["name"]
    params: list[dict[str, str]] = sig["params"]
    cfn = _symbol(lib, lib_path, name)
    cfn.argtypes = [
        ctypes.c_void_p if p["kind"] == "ptr" else _SCALAR_CTYPES[p["ctype"]] for p in params
    ]
    cfn.restype = None
    convs = [_converter(name, i, p, device, torch) for i, p in enumerate(params)]
    n = len(convs)
    usage = f"ops.{name}({', '.join(p['name'] for p in params)})"

    # Two closures instead of one with an `if`, to keep the per-call path minimal.
    if check is None:

        def call(*args: Any) -> None:
            if len(args) != n:
                raise TypeError(f"{usage} takes {n} arguments, got {len(args)}")
            cfn(*[c(a) for c, a in zip(convs, args, strict=False)])

    else:

        def call(*args: Any) -> None:
            if len(args) != n:
                raise TypeError(f"{usage} takes {n} arguments, got {len(args)}")
            cfn(*[c(a) for c, a in zip(convs, args, strict=False)])
            check(name)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{usage} -> None; C: {name}({', '.join(p['ctype'] for p in params)})"
    return call


def _converter(func: str, index: int, p: dict[str, str], device: str, torch: Any) -> Any:
    """A one-argument function turning a Python value into what ctypes passes for `p`."""
    where = f"ops.{func}: argument {index} ('{p['name']}', {p['ctype']})"
    if p["kind"] == "ptr":
        return _pointer_converter(where, getattr(torch, p["dtype"]), device, torch.Tensor)
    ctype = p["ctype"]
    if p["dtype"] == "int":
        bits = 8 * ctypes.sizeof(_SCALAR_CTYPES[ctype])
        lo, hi = (0, 2**bits - 1) if ctype in _UNSIGNED else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        return _int_converter(where, lo, hi, torch.Tensor)
    if p["dtype"] == "float":
        return _float_converter(where, torch.Tensor)
    return _bool_converter(where, torch.Tensor)


def _pointer_converter(where: str, dtype: Any, device: str, tensor_type: Any) -> Any:
    on_device = "is_cuda" if device == "cuda" else "is_cpu"

    def convert(a: Any) -> Any:
        # Fast path: every check passes. Diagnosis of failures is done in _pointer_error.
        # A 0-dim tensor is contiguous and has a data pointer: it passes like any other.
        if (isinstance(a, tensor_type) and a.dtype is dtype and getattr(a, on_device)
                and a.is_contiguous()):
            return a.data_ptr()
        if a is None:
            return None  # ctypes passes None as a null pointer: an optional argument (bias=None)
        raise _pointer_error(where, a, dtype, device, tensor_type, on_device)

    return convert


def _pointer_error(
    where: str, a: Any, dtype: Any, device: str, tensor_type: Any, on_device: str
) -> TypeError:
    if not isinstance(a, tensor_type):
        return TypeError(f"{where}: expected a {dtype} tensor (or None for a null pointer), "
                         f"got {type(a).__name__}")
    if a.dtype is not dtype:
        return TypeError(f"{where}: expected dtype {dtype}, got {a.dtype}")
    if not getattr(a, on_device):
        return TypeError(f"{where}: expected a tensor on {device}, got one on {a.device}")
    return TypeError(
        f"{where}: expected a contiguous tensor, got shape {tuple(a.shape)} with strides "
        f"{a.stride()} (call .contiguous() first)"
    )


def _int_converter(where: str, lo: int, hi: int, tensor_type: Any) -> Any:
    def convert(a: Any) -> Any:
        if type(a) is int and lo <= a <= hi:
            return a
        if isinstance(a, tensor_type) or not isinstance(a, numbers.Integral):
            raise TypeError(f"{where}: expected a Python int, got {_describe(a, tensor_type)}")
        value = int(a)
        if not lo <= value <= hi:
            # ctypes would silently wrap it around.
            raise OverflowError(f"{where}: {value} is outside [{lo}, {hi}]")
        return value

    return convert


def _float_converter(where: str, tensor_type: Any) -> Any:
    def convert(a: Any) -> Any:
        if type(a) is float or type(a) is int:
            return a
        if isinstance(a, tensor_type) or not isinstance(a, numbers.Real):
            raise TypeError(
                f"{where}: expected a Python float or int, got {_describe(a, tensor_type)}"
            )
        return float(a)

    return convert


def _bool_converter(where: str, tensor_type: Any) -> Any:
    def convert(a: Any) -> Any:
        if type(a) is bool:
            return a
        if isinstance(a, tensor_type) or not isinstance(a, numbers.Integral):
            raise TypeError(f"{where}: expected a Python bool, got {_describe(a, tensor_type)}")
        return bool(a)

    return convert


def _describe(a: Any, tensor_type: Any) -> str:
    if isinstance(a, tensor_type):
        return f"a tensor (pass a Python number, e.g. {'x.numel()' if a.dim() else 't.item()'})"
    return "None" if a is None else type(a).__name__
