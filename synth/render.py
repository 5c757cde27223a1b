"""Render a ``Composition`` as a KernelBench-format problem file.

Layout of the file: imports, size constants (default sizes), named hyperparameters, ``DTYPE`` /
``PRECISION`` when not plain fp32, ``SMALL_SIZES``, ``class Model`` (named submodules and weights
in ``__init__``, one statement per operator in ``forward``), ``get_inputs``, ``get_init_inputs``.
Every number in the model comes from a named module constant passed through ``get_init_inputs``
(KernelBench style); only axes, flags and modes are written inline.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from synth.builder import OpDef
from synth.spec import Arg, Code, Composition, InputSpec, Lit, Node, Num, Sym, Val, ValList, Weight

_IDENT = re.compile(r"\b[A-Z][A-Z0-9_]*\b")
_TORCH_DTYPE = {"float32": "torch.float32", "bfloat16": "torch.bfloat16", "float16": "torch.float16"}


def snake(name: str) -> str:
    """``LeakyReLU`` -> ``leaky_relu``, ``BCEWithLogitsLoss`` -> ``bce_with_logits_loss``."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


class _Ctx:
    """Names used while rendering ``__init__`` and ``forward``."""

    def __init__(self, comp: Composition, ops: Mapping[str, OpDef]) -> None:
        self.comp = comp
        self.ops = ops
        self.globals = {s.name for s in comp.sizes} | {c.name for c in comp.consts}
        self.ctor: list[str] = []  # global constants passed to Model(...), in first-use order
        self.init_lines: list[str] = []
        self.attrs: set[str] = {w.name for n in comp.nodes for w in _weights(n)}
        self.stored: set[str] = set()
        self.needs_math = False

    def param(self, name: str) -> str:
        """Constructor parameter for a module constant (registers it)."""
        if name not in self.ctor:
            self.ctor.append(name)
        return name.lower()

    def expr(self, expr: str) -> str:
        """An expression over module constants, rewritten over constructor parameters."""
        return _IDENT.sub(lambda m: self.param(m.group(0)) if m.group(0) in self.globals else m.group(0), expr)

    def attr(self, base: str) -> str:
        name, k = base, 2
        while name in self.attrs or name in ("training", "forward"):
            name, k = f"{base}_{k}", k + 1
        self.attrs.add(name)
        return name


def _weights(n: Node) -> list[Weight]:
    return [a for a in [*n.args, *n.kw.values()] if isinstance(a, Weight)]


def _ctor_value(ctx: _Ctx, a: Arg) -> str:
    if isinstance(a, Sym):
        return ctx.expr(a.expr)
    if isinstance(a, Num):
        return ctx.param(a.name)
    if isinstance(a, Lit):
        return repr(a.value)
    raise ValueError(f"{type(a).__name__} cannot be a constructor argument")


def _weight_init(ctx: _Ctx, w: Weight) -> str:
    shape = ", ".join(ctx.expr(e) for e in w.shape)
    dt = f", dtype={ctx.param('DTYPE')}" if ctx.comp.dtype != "float32" else ""
    if w.init == "ones":
        t = f"torch.ones({shape}{dt})"
    elif w.init == "zeros":
        t = f"torch.zeros({shape}{dt})"
    elif w.init == "positive":
        t = f"torch.randn({shape}{dt}).exp()"
    elif w.init == "scaled":
        ctx.needs_math = True
        t = f"torch.randn({shape}{dt}) / math.sqrt({ctx.expr(w.fan_in or '1')})"
    else:
        t = f"torch.randn({shape}{dt})"
    return f"self.{w.name} = nn.Parameter({t})"


def _call_value(ctx: _Ctx, a: Arg, names: Mapping[int, str], first: str) -> str:
    if isinstance(a, Val):
        return names[a.id]
    if isinstance(a, ValList):
        return "[" + ", ".join(names[i] for i in a.ids) + "]"
    if isinstance(a, Weight):
        return f"self.{a.name}"
    if isinstance(a, Num):
        attr = a.name.lower()
        if attr not in ctx.stored:
            ctx.stored.add(attr)
            ctx.attrs.add(attr)
            ctx.init_lines.append(f"self.{attr} = {ctx.param(a.name)}")
        return f"self.{attr}"
    if isinstance(a, Lit):
        return repr(a.value)
    if isinstance(a, Code):
        return a.src.format(first)
    raise ValueError(f"{type(a).__name__} cannot be a call argument")


def _node_expr(ctx: _Ctx, n: Node, names: Mapping[int, str]) -> str:
    op = ctx.ops[n.op]
    if op.kind == "module":
        attr = ctx.attr(snake(n.op.rsplit(".", 1)[-1]))
        parts = [_ctor_value(ctx, a) for a in n.args] + [f"{k}={_ctor_value(ctx, v)}" for k, v in n.kw.items()]
        if ctx.comp.dtype != "float32" and "dtype" in op.params:
            parts.append(f"dtype={ctx.param('DTYPE')}")
        ctx.init_lines.append(f"self.{attr} = {n.op}({', '.join(parts)})")
        call = [names[i] for i in n.inputs] + [f"{k}={v.value!r}" for k, v in n.call_kw.items()]
        expr = f"self.{attr}({', '.join(call)})"
    else:
        for w in _weights(n):
            ctx.init_lines.append(_weight_init(ctx, w))
        tensors = [a for a in n.args if isinstance(a, Val | ValList)]
        first = _call_value(ctx, tensors[0], names, "") if tensors else ""
        pos = [_call_value(ctx, a, names, first) for a in n.args]
        infix = op.v.get("infix")
        if infix and len(pos) == 2 and not n.kw:
            return f"{pos[0]} {infix} {pos[1]}"
        kws = [f"{k}={_call_value(ctx, v, names, first)}" for k, v in n.kw.items()]
        expr = f"{n.op}({', '.join(pos + kws)})"
    return expr if n.pick is None else f"{expr}[{n.pick}]"


def _var_names(comp: Composition) -> dict[int, str]:
    """``h`` for a chain value; its own name when a later, non-adjacent node reads it too."""
    names = {i.vid: i.name for i in comp.inputs}
    readers: dict[int, list[int]] = {}
    for k, n in enumerate(comp.nodes):
        for a in [*n.args, *n.kw.values()]:
            ids = [a.id] if isinstance(a, Val) else a.ids if isinstance(a, ValList) else []
            for i in ids:
                readers.setdefault(i, []).append(k)
        for i in n.inputs:
            readers.setdefault(i, []).append(k)
    for k, n in enumerate(comp.nodes):
        later = [r for r in readers.get(n.vid, []) if r != k + 1]
        names[n.vid] = f"h{k + 1}" if later else "h"
    return names


def _forward(ctx: _Ctx) -> list[str]:
    comp = ctx.comp
    names = _var_names(comp)
    args = ", ".join(f"{i.name}: torch.Tensor" for i in comp.inputs)
    last = comp.nodes[-1]
    op = ctx.ops[last.op]
    tuple_out = last.pick is None and op.v.get("terminal") and op.family == "reduce"
    ret = "tuple[torch.Tensor, torch.Tensor]" if tuple_out else "torch.Tensor"
    lines = [f"    def forward(self, {args}) -> {ret}:"]
    for k, n in enumerate(comp.nodes):
        expr = _node_expr(ctx, n, names)
        lines.append(f"        return {expr}" if k == len(comp.nodes) - 1 else f"        {names[n.vid]} = {expr}")
    return lines


def _input_expr(i: InputSpec, dtype: str) -> str:
    dt = f", dtype={'DTYPE'}" if dtype != "float32" and i.dtype != "int64" else ""
    shape = ", ".join(i.shape) or "()"
    if i.dist == "randint":
        tup = f"({shape},)" if len(i.shape) == 1 else f"({shape})"
        return f"torch.randint(0, {i.high}, {tup})"
    if i.dist == "rand":
        return f"torch.rand({shape}{dt})"
    suffix = {"randn": "", "lognormal": ".exp()", "sign": ".sign()"}[i.dist]
    return f"torch.randn({shape}{dt}){suffix}"


def render(comp: Composition, ops: Mapping[str, OpDef], defaults: Mapping[str, int] | None = None,
           title: str = "") -> str:
    """The problem file for ``comp``; ``defaults`` gives the default value of scaled size constants."""
    defaults = dict(defaults or {})
    ctx = _Ctx(comp, ops)
    forward = _forward(ctx)
    doc = " -> ".join(n.label for n in comp.nodes) + "."
    ctor = ", ".join(f"{name.lower()}" for name in ctx.ctor)
    cls = ["class Model(nn.Module):", f'    """{doc}"""', "",
           f"    def __init__(self{', ' if ctor else ''}{ctor}):", "        super().__init__()"]
    cls += [f"        {line}" for line in ctx.init_lines]
    cls += ["", *forward]
    head = [f'"""{title}"""', ""] if title else []
    head += ["import math"] if ctx.needs_math else []
    head += ["import torch", "import torch.nn as nn", "import torch.nn.functional as F", ""]
    consts = [f"{s.name} = {defaults.get(s.name, s.small)}" for s in comp.sizes]
    consts += [f"{c.name} = {c.value!r}" for c in comp.consts]
    if comp.dtype != "float32":
        consts.append(f"DTYPE = {_TORCH_DTYPE[comp.dtype]}")
    if comp.precision != "fp32":  # explicit: with token-id inputs the loader cannot infer bf16/fp16
        consts.append(f'PRECISION = "{comp.precision}"')
    small = {s.name: s.small for s in comp.sizes if defaults.get(s.name, s.small) != s.small}
    if small:
        consts.append("SMALL_SIZES = {" + ", ".join(f'"{k}": {v}' for k, v in small.items()) + "}")
    body = _get_inputs(comp)
    init = "def get_init_inputs():\n    return [" + ", ".join(ctx.ctor) + "]\n"
    return "\n".join([*head, *consts, "", "", *cls, "", "", body, "", init])


def _get_inputs(comp: Composition) -> str:
    if len(comp.inputs) == 1:
        return f"def get_inputs():\n    return [{_input_expr(comp.inputs[0], comp.dtype)}]\n"
    lines = ["def get_inputs():"]
    lines += [f"    {i.name} = {_input_expr(i, comp.dtype)}" for i in comp.inputs]
    lines.append("    return [" + ", ".join(i.name for i in comp.inputs) + "]")
    return "\n".join(lines) + "\n"
