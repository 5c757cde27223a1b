"""Families that reduce or normalise: reductions, last-dim and channel norms, distances, losses.

Same contract as ``synth.families_elementwise``: ``propose(op, b, vid) -> Node | None``.
"""

from __future__ import annotations

from synth.builder import (
    SPATIAL_RANK,
    Builder,
    OpDef,
    accepts,
    node,
    paren,
    replace,
    shape_code,
    sym,
)
from synth.families_elementwise import sample_params
from synth.spec import Arg, Dim, Layout, Lit, Node, TensorState


def _float(t: TensorState) -> bool:
    return t.dtype != "int64" and t.layout not in ("ids", "scalar")


def layout_of_rank(rank: int) -> Layout:
    """The layout a reduced tensor is read as, by its rank."""
    return {0: "scalar", 1: "flat", 2: "vec", 3: "seq", 4: "img", 5: "vol"}[rank]  # type: ignore[return-value]


def _axis_sets(t: TensorState, multi: bool) -> list[tuple[int, ...]]:
    sets: list[tuple[int, ...]]
    if t.layout in SPATIAL_RANK:
        sets = [(1,), *[(k,) for k in range(2, len(t.dims))]]
        if multi:
            sets.append(tuple(range(2, len(t.dims))))
    elif t.layout in ("vec", "seq", "flat"):
        sets = [(k,) for k in range(1, len(t.dims))]  # one axis at a time
    else:
        sets = []
    return [s for s in sets if all(t.dims[k].size > 1 for k in s)]


def reduce(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Reductions over one axis (or all spatial axes when the op takes several)."""
    t = b.states[vid]
    if not _float(t) or (op.v.get("needs_smooth") and not t.smooth):
        return None
    sets = _axis_sets(t, op.v.get("multi", False))
    limit = op.v.get("max_len")
    if limit:  # prod: long products under/overflow
        sets = [s for s in sets if all(t.dims[k].size <= limit and not b.scalable(t.dims[k]) for k in s)]
    if not sets:
        return None
    axes = b.rng.choice(sets)
    keepdim = (not op.v.get("index")) and b.rng.random() < 0.25
    if keepdim:
        dims = tuple(Dim(1, "1") if k in axes else d for k, d in enumerate(t.dims))
        layout: Layout = "flat"
    else:
        dims = tuple(d for k, d in enumerate(t.dims) if k not in axes)
        layout = layout_of_rank(len(dims))
    out = TensorState(layout=layout, dims=dims, dtype="int64" if op.v.get("index") else t.dtype,
                      range=op.v.get("out", t.range if op.v.get("keeps_range") else "any"),
                      smooth=t.smooth and op.v.get("smooth", True))
    dim_arg = Lit(axes[0] if len(axes) == 1 else list(axes))
    kw: dict[str, Arg] = {"dim": dim_arg}
    if keepdim:
        kw["keepdim"] = Lit(True)
    if op.v.get("k"):
        kw["k"] = b.const("K", b.rng.choice([k for k in (1, 2, 3, 5) if k <= t.dims[axes[0]].size]))
    kw.update(sample_params(op, b))
    name = op.name.rsplit(".", 1)[-1]
    return node(b, op, [vid], out, f"{name} over dim {dim_arg.value}", kw=kw, pick=op.v.get("pick"))


def last_norm(op: OpDef, b: Builder, vid: int) -> Node | None:
    """LayerNorm / RMSNorm over the last dim (functional forms read it from ``h.shape[-1:]``)."""
    t = b.states[vid]
    if not _float(t) or len(t.dims) < 2 or t.dims[-1].size < 2:
        return None
    name = op.name.rsplit(".", 1)[-1]
    out = replace(t, range="any", smooth=True)
    kw = sample_params(op, b)
    if op.kind == "module":
        if t.dims[-1].expr is None:
            return None
        return node(b, op, [vid], out, name, args=[sym(t.dims[-1], "normalized_shape")], kw=kw)
    args: list[Arg] = [shape_code()]
    if t.dims[-1].expr is not None and b.rng.random() < 0.5:
        args.append(b.weight("norm_weight", [t.dims[-1]], "ones"))
    return node(b, op, [vid], out, name, args=args, kw=kw)


def channel_norm(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Batch/instance/group/local-response norms over the channel dim (dim 1)."""
    t = b.states[vid]
    layouts = op.v.get("layouts", ("sig", "img", "vol"))
    if not _float(t) or t.layout not in layouts:
        return None
    c = t.dims[1]
    spatial = 1
    for d in t.dims[2:]:
        spatial *= d.size
    if op.v.get("kind") == "instance" and spatial < 2:
        return None
    if op.v.get("kind") == "batch" and t.dims[0].size * spatial < 2:
        return None
    kw = sample_params(op, b)
    args: list[Arg] = []
    kind = op.v.get("kind")
    if kind == "group":
        groups = [g for g in (2, 4, 8, 16) if c.size % g == 0 and c.size > g]
        if not groups:
            return None
        num_groups = b.const("NUM_GROUPS", b.rng.choice(groups))
        if op.kind == "module":
            if c.expr is None:
                return None
            args = [num_groups, sym(c, "num_channels")]
        else:
            args = [num_groups]
    elif kind == "lrn":
        args = [b.const("LRN_SIZE", b.rng.choice([2, 3, 5]))]
    elif op.kind == "module":
        if c.expr is None:
            return None
        args = [sym(c, "num_features")]
    elif kind == "batch":
        args = [Lit(None), Lit(None)]
        kw["training"] = Lit(True)
    out = replace(t, range="any", smooth=True)
    # The repository's convention: a BatchNorm problem says which statistics it normalises with.
    label = op.name.rsplit(".", 1)[-1] + (" (training mode: batch statistics)" if kind == "batch" else "")
    return node(b, op, [vid], out, label, args=args, kw=kw)


def distance(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Cosine similarity, pairwise distance, cdist, pdist and dist against a new input."""
    t = b.states[vid]
    kind = op.v["kind"]
    if not _float(t) or any(d.expr is None for d in t.dims):
        return None
    kw = sample_params(op, b)
    if kind == "pdist":
        if t.layout != "vec":
            return None
        n = t.dims[0]
        assert n.expr is not None
        out = TensorState("flat", (Dim(n.size * (n.size - 1) // 2, f"{paren(n.expr)} * ({n.expr} - 1) // 2"),),
                          t.dtype, "nonneg")
        return node(b, op, [vid], out, "pdist", kw=kw)
    if kind == "cdist":
        if t.layout not in ("vec", "seq"):
            return None
        m = b.size("POINTS", b.rng.choice([64, 128, 256]), "length", scalable=True)
        other_dims = (m, t.dims[-1]) if t.layout == "vec" else (t.dims[0], m, t.dims[-1])
        other = b.new_input("y", TensorState(t.layout, other_dims, t.dtype), "randn")
        out = TensorState(t.layout, (*t.dims[:-1], m), t.dtype, "nonneg")
        return node(b, op, [vid, other], out, "cdist", kw=kw)
    other = b.new_input("y", replace(t, range="any", smooth=True), "randn")
    if kind == "dist":
        return node(b, op, [vid, other], TensorState("scalar", (), t.dtype, "nonneg"), "dist", kw=kw)
    axis = 1 if kind == "cosine" and t.layout in SPATIAL_RANK else len(t.dims) - 1
    if kind == "cosine":
        kw["dim"] = Lit(axis if axis == 1 else -1)
    dims = tuple(d for k, d in enumerate(t.dims) if k != axis)
    out = TensorState(layout_of_rank(len(dims)), dims, t.dtype, "sym1" if kind == "cosine" else "nonneg")
    return node(b, op, [vid, other], out, op.name.rsplit(".", 1)[-1], kw=kw)


def _class_target(b: Builder, t: TensorState) -> int | None:
    if t.layout not in ("vec", "sig", "img") or t.dims[1].expr is None:
        return None
    dims = (t.dims[0], *t.dims[2:])
    return b.new_input("target", TensorState("flat", dims, "int64"), "randint", high=t.dims[1].expr)


def loss(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Losses against a target drawn by ``get_inputs`` (terminal: nothing follows a loss)."""
    t = b.states[vid]
    if not _float(t) or any(d.expr is None for d in t.dims):
        return None
    if t.layout not in op.v.get("layouts", ("vec", "seq", "sig", "img", "vol", "flat")):
        return None
    if not accepts(op.v.get("domain", "any"), t.range):
        return None
    target = op.v.get("target", "randn")
    vals = [vid]
    for extra in op.v.get("extra", ()):  # second inputs come before the target in the signature
        dist, rng = ("lognormal", "pos") if extra == "var" else ("randn", "any")
        vals.append(b.new_input(extra, replace(t, range=rng, smooth=True), dist))  # type: ignore[arg-type]
    tgt: int | None = None
    if target == "class":
        tgt = _class_target(b, t)
        if tgt is None:
            return None
    elif target == "none":
        pass
    elif target == "sign_row":
        tgt = b.new_input("target", TensorState("flat", (t.dims[0],), t.dtype, "sym1"), "sign")
    else:
        rng = {"randn": "any", "rand": "unit", "sign": "sym1"}[target]
        tgt = b.new_input("target", replace(t, range=rng, smooth=True), target)
    if tgt is not None:
        vals.insert(op.v.get("target_pos", 1), tgt)
    reductions = op.v.get("reductions", ["mean", "sum"])
    red = b.rng.choice(reductions)
    kw: dict[str, Arg] = {"reduction": Lit(red)}
    kw.update(sample_params(op, b))
    if red == "none":
        dims = t.dims if target != "class" else (t.dims[0], *t.dims[2:])
        out = TensorState(layout_of_rank(len(dims)), tuple(dims), t.dtype)
    else:
        out = TensorState("scalar", (), t.dtype)
    return node(b, op, vals, out, f"{op.name.rsplit('.', 1)[-1]} ({red})", kw=kw)


FAMILIES = {
    "reduce": reduce,
    "last_norm": last_norm,
    "channel_norm": channel_norm,
    "distance": distance,
    "loss": loss,
}
"""Family name -> proposer."""
