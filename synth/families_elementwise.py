"""Shape-preserving families: unary pointwise, binary pointwise (incl. residual), concat,
softmax-like and scans.

Every family is ``propose(op, b, vid) -> Node | None``: given the value ``vid`` of the builder
``b``, sample the operator's parameters, work out the result's ``TensorState`` (the shape rule)
and return the node, or None when the operator does not apply to that value.
"""

from __future__ import annotations

from typing import Any

from synth.builder import (
    SPATIAL_RANK,
    Builder,
    OpDef,
    accepts,
    node,
    paren,
    replace,
    sym,
)
from synth.spec import Arg, Dim, Lit, Node, TensorState, Val, ValList


def _is_float(t: TensorState) -> bool:
    return t.dtype != "int64" and t.layout != "ids"


def sample_params(op: OpDef, b: Builder) -> dict[str, Arg]:
    """Keyword arguments from ``op.v["params"]``: a dict of choices, or a list of joint choices.

    Strings, bools and None become literals; numbers become named constants (``NEGATIVE_SLOPE``).
    """
    spec = op.v.get("params")
    if not spec:
        return {}
    chosen: dict[str, Any]
    if isinstance(spec, list):
        chosen = dict(b.rng.choice(spec))
    else:
        chosen = {k: b.rng.choice(v) for k, v in spec.items()}
    out: dict[str, Arg] = {}
    short = op.name.rsplit(".", 1)[-1].upper()
    for name, value in chosen.items():
        if name in op.defaults and op.defaults[name] == value and type(op.defaults[name]) is type(value):
            continue  # torch's default: writing it out adds nothing
        if isinstance(value, bool) or value is None or isinstance(value, str):
            out[name] = Lit(value)
        else:  # one-letter names (p, k) read better with their operator: NORMALIZE_P
            out[name] = b.const(name.upper() if len(name) > 2 else f"{short}_{name.upper()}", value)
    return out


def pointwise(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Unary elementwise: same shape; the input's range must lie in the operator's domain."""
    t = b.states[vid]
    if not _is_float(t) or not accepts(op.v.get("domain", "any"), t.range):
        return None
    out_range = op.v.get("out", "any")
    out = replace(t, range=t.range if out_range == "keep" else out_range,
                  smooth=t.smooth and op.v.get("smooth", True))
    kw = sample_params(op, b)
    return node(b, op, [vid], out, op.name.rsplit(".", 1)[-1], kw=kw)


def _param_dim(t: TensorState) -> int | None:
    """The dim a per-channel/feature weight broadcasts along: channels (dim 1) or the last dim."""
    if t.layout in SPATIAL_RANK:
        return 1
    if t.layout in ("vec", "seq"):
        return len(t.dims) - 1
    return None


def prelu(op: OpDef, b: Builder, vid: int) -> Node | None:
    """PReLU: one slope, or one per channel (dim 1) when the layout has channels there."""
    t = b.states[vid]
    if not _is_float(t) or t.layout in ("scalar", "flat"):
        return None
    per_channel = t.layout in ("vec", *SPATIAL_RANK) and t.dims[1].expr is not None and b.rng.random() < 0.6
    out = replace(t, range="any")
    if op.kind == "module":
        kw: dict[str, Arg] = {}
        if per_channel:
            kw["num_parameters"] = sym(t.dims[1], "num_parameters")
        return node(b, op, [vid], out, "PReLU", kw=kw)
    dims = [t.dims[1]] if per_channel else [Dim(1, "1")]
    w = b.weight("slope", dims, "positive")
    return node(b, op, [vid], out, "PReLU", args=[w])


def _same_shape(a: TensorState, c: TensorState) -> bool:
    return len(a.dims) == len(c.dims) and all(
        x.expr is not None and x.expr == y.expr and x.size == y.size for x, y in zip(a.dims, c.dims, strict=True)
    )


def earlier_matches(b: Builder, vid: int, domain: str = "any") -> list[int]:
    """Earlier float values (not ``vid`` itself) with exactly ``vid``'s shape: residual partners."""
    t = b.states[vid]
    return [
        i for i, s in enumerate(b.states)
        if i != vid and _is_float(s) and s.dtype == t.dtype and _same_shape(s, t) and accepts(domain, s.range)
    ]


def _dist_for(domain: str) -> tuple[str, str]:
    return {"any": ("randn", "any"), "nonneg": ("rand", "unit"), "unit": ("rand", "unit"),
            "sym1": ("rand", "unit"), "pos": ("lognormal", "pos")}[domain]


def binary(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Binary elementwise ``op(h, other)``; other is an earlier value (a residual branch), a new
    input of the same shape, a per-channel/feature weight, or (infix operators) a named scalar."""
    t = b.states[vid]
    if not _is_float(t) or not accepts(op.v.get("self_domain", "any"), t.range):
        return None
    dom = op.v.get("other_domain", "any")
    sources = ["input", "weight"]
    if earlier_matches(b, vid, dom):
        sources += ["earlier"] * 3
    if op.v.get("scalars"):
        sources += ["scalar"] * 2
    if b.merge:
        sources = [s for s in sources if s == "earlier"]
        if not sources:
            return None
    source = b.rng.choice(sources)
    other: Arg
    label = op.v.get("infix") or op.name.rsplit(".", 1)[-1]
    if source == "earlier":
        other = Val(b.rng.choice(earlier_matches(b, vid, dom)))
        label += " (residual)"
    elif source == "scalar":
        base, choices = op.v["scalars"]
        other = b.const(base, b.rng.choice(choices))
    elif source == "weight":
        axis = _param_dim(t)
        if axis is None or t.dims[axis].expr is None:
            return None
        shape = [t.dims[axis]] + [Dim(1, "1")] * (len(t.dims) - 1 - axis)
        init = "positive" if dom == "pos" else "randn" if dom == "any" else "ones"
        if dom in ("unit", "sym1", "nonneg") and init == "ones":
            return None
        other = b.weight("bias" if op.v.get("infix") in ("+", "-") else "scale", shape, init)
    else:
        if any(d.expr is None for d in t.dims):
            return None
        dist, rng = _dist_for(dom)
        other = Val(b.new_input("y", replace(t, range=rng, smooth=True), dist))  # type: ignore[arg-type]
    out = replace(t, range=op.v.get("out", "any"), smooth=t.smooth and op.v.get("smooth", True))
    return node(b, op, [vid], out, label, args=[other])


def concat(op: OpDef, b: Builder, vid: int) -> Node | None:
    """``torch.cat([h, other], dim)`` along channels (dim 1) or features (last dim)."""
    t = b.states[vid]
    axis = _param_dim(t)
    if not _is_float(t) or axis is None or t.dims[axis].expr is None:
        return None

    def fits(s: TensorState) -> bool:
        return (_is_float(s) and s.dtype == t.dtype and len(s.dims) == len(t.dims) and s.dims[axis].expr is not None
                and all(x.expr is not None and x.expr == y.expr for k, (x, y) in enumerate(zip(s.dims, t.dims, strict=True))
                        if k != axis))

    partners = [i for i, s in enumerate(b.states) if i != vid and fits(s)]
    if partners and (b.merge or b.rng.random() < 0.75):
        other = b.rng.choice(partners)
    elif b.merge or any(n.op == op.name for n in b.nodes):
        return None  # concatenating fresh inputs more than once is only a copy
    else:
        if any(d.expr is None for d in t.dims):
            return None
        other = b.new_input("y", replace(t, range="any", smooth=True), "randn")
    a, c = t.dims[axis], b.states[other].dims[axis]
    assert a.expr is not None and c.expr is not None
    expr = f"2 * {paren(a.expr)}" if a.expr == c.expr else f"{a.expr} + {c.expr}"
    dims = list(t.dims)
    dims[axis] = Dim(a.size + c.size, expr)
    rng = t.range if t.range == b.states[other].range else "any"
    out = replace(t, dims=tuple(dims), range=rng, smooth=t.smooth and b.states[other].smooth)
    dim = 1 if axis == 1 else -1
    return node(b, op, [], out, f"concat (dim {dim})", args=[ValList([vid, other])], kw={"dim": Lit(dim)})


def _axis_choices(t: TensorState) -> list[int]:
    """Axes a per-axis operator (softmax, scan) may use: channels or any non-batch dim of size > 1."""
    if t.layout == "scalar":
        return []
    return [k for k in range(1, len(t.dims)) if t.dims[k].size > 1] or (
        [0] if t.layout == "flat" and t.dims and t.dims[0].size > 1 else [])


def _neg(k: int, t: TensorState) -> int:
    return k - len(t.dims) if k == len(t.dims) - 1 else k


def softmax(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Softmax-like along one axis (``nn.Softmax2d``: over channels of a 3-D/4-D input)."""
    t = b.states[vid]
    if not _is_float(t):
        return None
    out = replace(t, range=op.v.get("out", "any"))
    if op.v.get("fixed_dim"):
        if t.layout != "img":
            return None
        return node(b, op, [vid], out, "Softmax2d")
    axes = _axis_choices(t)
    if not axes:
        return None
    dim = _neg(b.rng.choice(axes), t)
    kw: dict[str, Arg] = {"dim": Lit(dim)}
    kw.update(sample_params(op, b))
    return node(b, op, [vid], out, f"{op.name.rsplit('.', 1)[-1]} (dim {dim})", kw=kw)


def scan(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Along-one-axis, shape-preserving: cumulative ops, flip, roll."""
    t = b.states[vid]
    if not _is_float(t):
        return None
    axes = _axis_choices(t)
    limit = op.v.get("max_len")
    if limit:  # cumprod: long products under/overflow; only short, fixed-length axes
        axes = [k for k in axes if t.dims[k].size <= limit and not b.scalable(t.dims[k])]
    if not axes:
        return None
    dim = _neg(b.rng.choice(axes), t)
    kw: dict[str, Arg] = {}
    if op.v.get("dims_list"):
        kw["dims"] = Lit([dim])
    else:
        kw["dim"] = Lit(dim)
    if op.v.get("shifts"):
        kw = {"shifts": b.const("SHIFT", b.rng.choice([1, 3, 7])), "dims": Lit(dim)}
    out = replace(t, range=op.v.get("out", t.range), smooth=t.smooth and op.v.get("smooth", True))
    return node(b, op, [vid], out, f"{op.name.rsplit('.', 1)[-1]} (dim {dim})", kw=kw,
                pick=op.v.get("pick"))


FAMILIES = {
    "pointwise": pointwise,
    "prelu": prelu,
    "binary": binary,
    "concat": concat,
    "softmax": softmax,
    "scan": scan,
}
"""Family name -> proposer."""
