"""The operator catalogue, mined from torch.

Three sources, each checked against the installed torch:

- ``torch.nn`` module classes and ``torch.nn.functional`` functions named in ``NN_TABLE``: each
  needs a family (shape rule + parameter sampler, ``synth.families_*``); the keyword names a
  family uses are checked against the callable's signature (``inspect`` for Python functions,
  the ATen schema for builtins), so a renamed parameter drops the entry with a reason;
- pointwise ATen operators (``torch.Tag.pointwise``) with a public ``torch.*`` /
  ``torch.special.*`` function and the schema ``(Tensor self) -> Tensor`` (unary) or
  ``(Tensor self, Tensor other) -> Tensor`` (binary): enumerated from torch's schema registry,
  annotated with their domain/range where we know it (``UNARY_NOTES``), probed otherwise;
- everything else public in ``torch.nn`` / ``torch.nn.functional`` is listed in the coverage
  report with why it is not catalogued (``NOT_CATALOGUED``), or as "no shape rule".

``catalogue()`` is the static catalogue; ``synth.probe`` runs every entry (dtypes supported,
determinism, shape rule matches torch) and drops what fails, with the reason.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: N812 (torch's spelling)

from synth import families_elementwise, families_nn, families_reduce, families_spatial
from synth.builder import Builder, OpDef
from synth.op_tables import BINARY_NOTES, NN_TABLE, NOT_CATALOGUED, UNARY_NOTES
from synth.spec import Node

Propose = Callable[[OpDef, Builder, int], Node | None]

FAMILIES: dict[str, Propose] = {
    **families_elementwise.FAMILIES,
    **families_reduce.FAMILIES,
    **families_nn.FAMILIES,
    **families_spatial.FAMILIES,
}
"""Family name -> proposer (the shape rule and parameter sampler of its operators)."""

def _resolve(name: str) -> Any:
    """The torch object a catalogue name denotes (``F.gelu`` -> torch.nn.functional.gelu)."""
    head, _, rest = name.partition(".")
    obj: Any = {"F": F, "nn": nn, "torch": torch}[head]
    for part in rest.split("."):
        obj = getattr(obj, part)
    return obj


def _declared(fn: Any) -> tuple[set[str], bool] | None:
    """Named parameters of a Python callable and whether it also takes ``*args``/``**kwargs``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    var = {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}
    return {p.name for p in params if p.kind not in var} - {"self"}, any(p.kind in var for p in params)


def _doc_args(doc: str) -> set[str]:
    """Names in the ``Args:`` block of a docstring (lines ``<indent>name: ...`` at its indent)."""
    _, found, block = doc.partition("Args:")
    if not found:
        return set()
    names: set[str] = set()
    indent = None
    for line in block.splitlines()[1:]:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if indent is None:
            indent = depth
        if depth < indent:
            break
        m = re.match(r"(\w+)\s*:", line.strip())
        if depth == indent and m:
            names.add(m.group(1))
    return names


def signature_params(obj: Any) -> frozenset[str]:
    """Parameter names of a torch callable (for a module class: of its constructor).

    ``inspect`` for Python code (following ``*args, **kwargs`` constructors up the class
    hierarchy, as ``nn.LSTM`` -> ``nn.RNNBase``, plus the documented arguments when the chain ends
    in ``**kwargs``, as ``nn.RNN``'s ``nonlinearity``), the ATen schemas of builtins, else the
    signature line of the docstring (``F.max_pool2d`` is a dispatch wrapper). An empty set
    means unknown: keyword names are then not checked.
    """
    if isinstance(obj, type):
        names: set[str] = set()
        open_ended = False
        for cls in obj.__mro__:
            found = _declared(cls.__dict__["__init__"]) if "__init__" in cls.__dict__ else None
            if found is not None:
                names |= found[0]
                open_ended = open_ended or found[1]
                if not found[1]:
                    break
        if open_ended:  # a constructor takes **kwargs: add the documented arguments
            names |= _doc_args(obj.__doc__ or "")
        return frozenset(names)
    found = _declared(obj)
    if found is not None and not found[1]:
        return frozenset(found[0])
    schemas = torch._C._jit_get_schemas_for_operator(f"aten::{getattr(obj, '__name__', '')}")
    if found is None and schemas:
        return frozenset(a.name for s in schemas for a in s.arguments)
    line = (obj.__doc__ or "").strip().splitlines()[:1]
    m = re.match(r"[\w.]+\((.*)\)", line[0]) if line else None
    if m:
        return frozenset(p.split("=")[0].split(":")[0].strip() for p in m.group(1).split(",")
                         if p.strip() and p.strip() not in ("*", "/"))
    return frozenset()


def _pointwise_schemas() -> tuple[list[str], list[str]]:
    """Public unary and binary pointwise ATen operators (names as ``torch.*`` / ``torch.special.*``)."""
    unary: set[str] = set()
    binary: set[str] = set()
    for s in torch._C._jit_get_all_schemas():
        if not s.name.startswith("aten::") or s.overload_name not in ("", "Tensor"):
            continue
        base = s.name.removeprefix("aten::")
        if base.startswith("_") or base.endswith("_"):
            continue
        try:
            overload = getattr(getattr(torch.ops.aten, base), s.overload_name or "default")
        except (AttributeError, RuntimeError):
            continue
        if torch.Tag.pointwise not in overload.tags or [str(r.type) for r in s.returns] != ["Tensor"]:
            continue
        public = _public_name(base)
        if public is None:
            continue
        positional = [str(a.type) for a in s.arguments if not a.kwarg_only]
        if positional == ["Tensor"]:
            unary.add(public)
        elif positional == ["Tensor", "Tensor"]:
            binary.add(public)
    return sorted(unary), sorted(binary)


def _public_name(aten: str) -> str | None:
    if aten.startswith("special_") and hasattr(torch.special, aten.removeprefix("special_")):
        return f"torch.special.{aten.removeprefix('special_')}"
    if hasattr(torch, aten) and callable(getattr(torch, aten)):
        return f"torch.{aten}"
    return None


def _aten_key(name: str) -> str:
    return name.replace("torch.special.", "special_").removeprefix("torch.")


def signature_defaults(obj: Any) -> dict[str, Any]:
    """Default values of a Python callable's (or module constructor's, up the class hierarchy like
    ``signature_params``) parameters; {} for builtins."""
    targets = [c.__dict__["__init__"] for c in obj.__mro__ if "__init__" in c.__dict__] if isinstance(obj, type) else [obj]
    defaults: dict[str, Any] = {}
    var = {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}
    for target in targets:
        try:
            params = list(inspect.signature(target).parameters.values())
        except (TypeError, ValueError):
            break
        for p in params:
            if p.default is not inspect.Parameter.empty:
                defaults.setdefault(p.name, p.default)
        if not any(p.kind in var for p in params):
            break
    return defaults


def _entry(name: str, family: str, category: str, v: dict[str, Any]) -> OpDef:
    obj = _resolve(name)
    kind = "module" if isinstance(obj, type) and issubclass(obj, nn.Module) else "function"
    return OpDef(name=name, family=family, category=category, kind=kind,  # type: ignore[arg-type]
                 params=signature_params(obj), v=v, defaults=signature_defaults(obj))


@functools.cache
def catalogue() -> dict[str, OpDef]:
    """Every composable operator of the installed torch, by name (static: not yet probed)."""
    ops: dict[str, OpDef] = {}
    for name, family, category, v in NN_TABLE:
        if name in NOT_CATALOGUED:
            continue
        try:
            ops[name] = _entry(name, family, category, v)
        except AttributeError:
            continue  # not in this torch version: the coverage report lists it as missing
    unary, binary = _pointwise_schemas()
    for name in unary:
        if name not in ops and name not in NOT_CATALOGUED:
            ops[name] = _entry(name, "pointwise", "elementwise", UNARY_NOTES.get(_aten_key(name), {"probe": True}))
    for name in binary:
        note = BINARY_NOTES.get(_aten_key(name))
        if note is not None and name not in ops:
            ops[name] = _entry(name, "binary", "elementwise", note)
    return ops


def stochastic() -> dict[str, OpDef]:
    """The stochastic operators: catalogued as non-deterministic, never composed."""
    out = {}
    for name, reason in NOT_CATALOGUED.items():
        if reason == "stochastic":
            try:
                out[name] = _entry(name, "none", "stochastic", {})
            except AttributeError:
                continue
            out[name] = OpDef(name=out[name].name, family="none", category="stochastic", kind=out[name].kind,
                              params=out[name].params, deterministic=False)
    return out


def coverage() -> dict[str, str]:
    """Every public ``torch.nn`` module, ``torch.nn.functional`` function and pointwise ATen
    operator -> "catalogued", or why not."""
    ops = catalogue()
    names = {f"nn.{n}" for n in dir(nn) if isinstance(getattr(nn, n), type) and issubclass(getattr(nn, n), nn.Module)}
    names |= {f"F.{n}" for n in dir(F) if not n.startswith("_") and callable(getattr(F, n))}
    unary, binary = _pointwise_schemas()
    names |= set(unary) | set(binary)
    report = {}
    for n in sorted(names | set(ops)):
        if n in ops:
            report[n] = "catalogued"
        elif n in NOT_CATALOGUED:
            report[n] = NOT_CATALOGUED[n]
        elif n in binary:
            report[n] = "binary pointwise operator not composed (integer/boolean or special-purpose)"
        else:
            report[n] = "no shape rule"
    return report
