"""Families on channel-first layouts and reshapes: convolutions, pooling, padding, resampling,
pixel/channel shuffles, unfold, flatten, transpose, GLU, triangular masks and diff.

Same contract as ``synth.families_elementwise``: ``propose(op, b, vid) -> Node | None``.
Spatial output sizes follow torch's formulas; each output dim gets an expression written with
the operator's named constants (``(HEIGHT + 2 * PADDING - KERNEL_SIZE) // STRIDE + 1``) so the
file stays valid when the default sizes scale the inputs up.
"""

from __future__ import annotations

from synth.builder import (
    SPATIAL_RANK,
    Builder,
    OpDef,
    is_name,
    node,
    paren,
    prod_expr,
    replace,
    sym,
)
from synth.spec import Arg, Code, Dim, Lit, Node, Num, Range, TensorState

_LAYOUT = {1: "sig", 2: "img", 3: "vol"}
_KERNELS = {1: [3, 5, 7, 9], 2: [1, 3, 3, 5, 7], 3: [1, 3, 3]}
_CHANNELS = {1: [16, 32, 64], 2: [8, 16, 32, 64], 3: [4, 8, 16]}


def _float(t: TensorState) -> bool:
    return t.dtype != "int64" and t.layout not in ("ids", "scalar")


def _out_expr(e: str | None, k: Num, p: Num | None, s: Num | None, d: Num | None) -> str | None:
    """Expression for ``(S + 2p - d(k-1) - 1) // s + 1`` with defaults dropped."""
    if e is None:
        return None
    kv, pv, sv, dv = k.value, p.value if p else 0, s.value if s else 1, d.value if d else 1
    assert isinstance(kv, int) and isinstance(pv, int) and isinstance(dv, int) and isinstance(sv, int)
    if sv == 1 and 2 * pv == dv * (kv - 1):
        return e
    expr = paren(e)
    if p is not None:
        expr += f" + 2 * {p.name}"
    if kv > 1:
        expr += f" - {d.name} * ({k.name} - 1)" if d is not None else f" - ({k.name} - 1)"
    if s is None:
        return expr
    return f"({expr} - 1) // {s.name} + 1"


def conv(op: OpDef, b: Builder, vid: int) -> Node | None:
    """``nn.ConvNd`` / ``F.convNd`` and their transposed forms."""
    rank = op.v["rank"]
    t = b.states[vid]
    if not _float(t) or t.layout != _LAYOUT[rank] or t.dims[1].expr is None:
        return None
    if op.v.get("transposed"):
        return _conv_transposed(op, b, vid, rank)
    c = t.dims[1]
    r = b.rng
    k = r.choice(_KERNELS[rank])
    dil = 2 if k > 1 and r.random() < 0.1 else 1
    stride = 2 if r.random() < 0.25 else 1
    pad = dil * (k - 1) // 2 if r.random() < 0.75 else 0
    spatial = t.dims[2:]
    sizes = [(d.size + 2 * pad - dil * (k - 1) - 1) // stride + 1 for d in spatial]
    if min(sizes) < 2:
        return None
    depthwise = c.size >= 4 and r.random() < 0.2
    groups = 1
    if depthwise:
        out_c = c
    else:
        out_c = b.size("OUT_CHANNELS", r.choice(_CHANNELS[rank]), "channel", scalable=False)
        grp = [g for g in (2, 4) if c.size % g == 0 and out_c.size % g == 0]
        groups = r.choice(grp) if grp and r.random() < 0.15 else 1
    kn = b.const("KERNEL_SIZE", k)
    sn = b.const("STRIDE", stride) if stride != 1 else None
    pn = b.const("PADDING", pad) if pad else None
    dn = b.const("DILATION", dil) if dil != 1 else None
    dims = [Dim(sz, _out_expr(d.expr, kn, pn, sn, dn)) for d, sz in zip(spatial, sizes, strict=True)]
    out = replace(t, dims=(t.dims[0], out_c, *dims), range="any", smooth=True)
    kw: dict[str, Arg] = {n: v for n, v in (("stride", sn), ("padding", pn), ("dilation", dn)) if v is not None}
    if depthwise:  # groups = channels: a constructor argument, or read off the input in forward
        kw["groups"] = sym(c, "groups") if op.kind == "module" else Code("{0}.shape[1]")
    elif groups > 1:
        kw["groups"] = b.const("GROUPS", groups)
    label = f"{op.name.rsplit('.', 1)[-1]} {'x'.join([str(k)] * rank)}" + (f" stride {stride}" if stride > 1 else "")
    if op.kind == "module":
        if pad and r.random() < 0.3:
            kw["padding_mode"] = Lit(r.choice(["reflect", "replicate", "circular"]))
        if r.random() < 0.2:
            kw["bias"] = Lit(False)
        return node(b, op, [vid], out, label, args=[sym(c, "in_channels"), sym(out_c, "out_channels"), kn], kw=kw)
    assert c.expr is not None
    per_group = Dim(1, "1") if depthwise else c if groups == 1 else Dim(c.size // groups, f"{paren(c.expr)} // {groups}")
    wdims = [out_c, per_group, *[Dim(k, kn.name)] * rank]
    w = b.weight("weight", wdims, "scaled", fan_in=prod_expr(wdims[1:]))
    return node(b, op, [vid], out, label, args=[w, b.weight("bias", [out_c], "randn")], kw=kw)


def _conv_transposed(op: OpDef, b: Builder, vid: int, rank: int) -> Node | None:
    t = b.states[vid]
    c = t.dims[1]
    k, stride, pad = b.rng.choice([(3, 1, 1), (2, 2, 0), (4, 2, 1)])
    out_c = b.size("OUT_CHANNELS", b.rng.choice(_CHANNELS[rank]), "channel", scalable=False)
    kn = b.const("KERNEL_SIZE", k)
    sn = b.const("STRIDE", stride) if stride != 1 else None
    pn = b.const("PADDING", pad) if pad else None
    dims = [Dim(d.size * stride, d.expr if sn is None or d.expr is None else f"{sn.name} * {paren(d.expr)}")
            for d in t.dims[2:]]
    out = replace(t, dims=(t.dims[0], out_c, *dims), range="any", smooth=True)
    kw: dict[str, Arg] = {n: v for n, v in (("stride", sn), ("padding", pn)) if v is not None}
    label = f"{op.name.rsplit('.', 1)[-1]} {'x'.join([str(k)] * rank)}" + (f" stride {stride}" if stride > 1 else "")
    if op.kind == "module":
        return node(b, op, [vid], out, label, args=[sym(c, "in_channels"), sym(out_c, "out_channels"), kn], kw=kw)
    wdims = [c, out_c, *[Dim(k, kn.name)] * rank]
    w = b.weight("weight", wdims, "scaled", fan_in=prod_expr([c, *wdims[2:]]))
    return node(b, op, [vid], out, label, args=[w, b.weight("bias", [out_c], "randn")], kw=kw)


def pool(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Max / average / power-average pooling with a window."""
    rank, kind = op.v["rank"], op.v["kind"]
    t = b.states[vid]
    if not _float(t) or t.layout != _LAYOUT[rank]:
        return None
    r = b.rng
    k = r.choice([2, 3])
    spatial = t.dims[2:]
    if min(d.size for d in spatial) < 2 * k:
        return None
    stride = r.choice([None, None, None, 1, 2])
    pad = 1 if kind != "lp" and k == 3 and r.random() < 0.3 else 0
    s = stride or k
    kn = b.const("KERNEL_SIZE", k)
    sn = b.const("STRIDE", stride) if stride is not None else None
    pn = b.const("PADDING", pad) if pad else None
    kw: dict[str, Arg] = {"kernel_size": kn}
    if sn is not None:
        kw["stride"] = sn
    if pn is not None:
        kw["padding"] = pn
        if kind == "avg" and r.random() < 0.5:
            kw["count_include_pad"] = Lit(False)
    norm_type = r.choice([1, 2])
    if kind == "lp":
        kw = {"norm_type": b.const("NORM_TYPE", norm_type), **kw}
    dims = []
    for d in spatial:
        size = (d.size + 2 * pad - k) // s + 1
        if d.expr is None:
            expr = None
        elif pad == 0 and stride is None:
            expr = f"{paren(d.expr)} // {kn.name}"
        else:
            expr = _out_expr(d.expr, kn, pn, sn or kn, None)
        dims.append(Dim(size, expr))
    rng = t.range if kind != "lp" else "nonneg" if norm_type == 2 else "any"
    out = replace(t, dims=(t.dims[0], t.dims[1], *dims), range=rng)
    label = f"{op.name.rsplit('.', 1)[-1]} {k}" + (f" stride {stride}" if stride else "")
    return node(b, op, [vid], out, label, kw=kw)


def adaptive_pool(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Adaptive average / max pooling to a fixed output size."""
    rank = op.v["rank"]
    t = b.states[vid]
    if not _float(t) or t.layout != _LAYOUT[rank]:
        return None
    smallest = min(d.size for d in t.dims[2:])
    choices = [o for o in (1, 2, 4, 7) if o <= smallest // 2]
    if not choices:
        return None
    o = b.const("OUTPUT_SIZE", b.rng.choice(choices))
    assert isinstance(o.value, int)
    out = replace(t, dims=(t.dims[0], t.dims[1], *[Dim(o.value, o.name)] * rank))
    return node(b, op, [vid], out, f"{op.name.rsplit('.', 1)[-1]} to {o.value}", kw={"output_size": o})


def pad(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Padding modules (zero/constant/reflection/replication/circular) and ``F.pad``."""
    t = b.states[vid]
    rank = op.v.get("rank")
    if not _float(t) or t.layout not in SPATIAL_RANK or (rank and t.layout != _LAYOUT[rank]):
        return None
    mode = op.v.get("mode") or b.rng.choice(["constant", "reflect", "replicate", "circular"])
    p = b.rng.choice([1, 2, 3])
    if min(d.size for d in t.dims[2:]) <= p:
        return None
    n_sp = len(t.dims) - 2
    kw: dict[str, Arg] = {}
    if op.kind == "module":
        pn = b.const("PADDING", p)
        kw["padding"] = pn
        dims = [Dim(d.size + 2 * p, None if d.expr is None else f"{d.expr} + 2 * {pn.name}") for d in t.dims[2:]]
    else:
        kw["pad"] = b.const("PAD", [p] * (2 * n_sp))
        kw["mode"] = Lit(mode)
        dims = [Dim(d.size + 2 * p, None) for d in t.dims[2:]]
    if mode in ("constant", "zero"):
        if mode == "constant":
            kw["value"] = b.const("PAD_VALUE", b.rng.choice([0.5, 1.0, -1.0]))
        rng: Range = "any" if mode == "constant" else t.range if t.range != "pos" else "nonneg"
        smooth = False
    else:
        rng, smooth = t.range, t.smooth
    out = replace(t, dims=(t.dims[0], t.dims[1], *dims), range=rng, smooth=smooth)
    return node(b, op, [vid], out, f"{op.name.rsplit('.', 1)[-1]} {p}" + ("" if op.kind == "module" else f" {mode}"),
                kw=kw)


def resample(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Upsampling by an integer factor (nearest, (bi/tri)linear, bicubic)."""
    t = b.states[vid]
    if not _float(t) or t.layout not in SPATIAL_RANK:
        return None
    rank = SPATIAL_RANK[t.layout]
    if op.v.get("rank") and op.v["rank"] != rank:
        return None
    modes = {1: ["nearest", "linear", "nearest-exact"], 2: ["nearest", "bilinear", "bicubic", "nearest-exact"],
             3: ["nearest", "trilinear", "nearest-exact"]}[rank]
    mode = op.v.get("mode") or b.rng.choice(modes)
    sf = b.const("SCALE_FACTOR", 2)
    kw: dict[str, Arg] = {"scale_factor": sf}
    if not op.v.get("mode"):
        kw["mode"] = Lit(mode)
        if mode in ("linear", "bilinear", "bicubic", "trilinear") and b.rng.random() < 0.5:
            kw["align_corners"] = Lit(b.rng.random() < 0.5)
    dims = [Dim(2 * d.size, None if d.expr is None else f"{sf.name} * {paren(d.expr)}") for d in t.dims[2:]]
    rng = "any" if mode == "bicubic" else t.range
    out = replace(t, dims=(t.dims[0], t.dims[1], *dims), range=rng, smooth=t.smooth and "nearest" not in mode)
    return node(b, op, [vid], out, f"upsample x2 {mode}", kw=kw)


def pixel(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Pixel shuffle (channels to space), unshuffle (space to channels) and channel shuffle."""
    t = b.states[vid]
    kind = op.v["kind"]
    if not _float(t) or t.layout != "img" or t.dims[1].expr is None:
        return None
    c, h, w = t.dims[1], t.dims[2], t.dims[3]
    assert c.expr is not None
    if kind == "channel_shuffle":
        groups = [g for g in (2, 4, 8) if c.size % g == 0 and c.size > g]
        if not groups:
            return None
        return node(b, op, [vid], t, "channel shuffle", kw={"groups": b.const("GROUPS", b.rng.choice(groups))})
    if kind == "shuffle":
        if c.size % 4:
            return None
        f = b.const("UPSCALE_FACTOR", 2)
        dims = (Dim(c.size // 4, f"{paren(c.expr)} // {f.name} ** 2"),
                *[Dim(2 * d.size, None if d.expr is None else f"{f.name} * {paren(d.expr)}") for d in (h, w)])
        return node(b, op, [vid], replace(t, dims=(t.dims[0], *dims)), "pixel shuffle x2",
                    kw={"upscale_factor": f})
    if not (is_name(h.expr) and is_name(w.expr) and h.size % 2 == 0 and w.size % 2 == 0):
        return None
    f = b.const("DOWNSCALE_FACTOR", 2)
    dims = (Dim(c.size * 4, f"{paren(c.expr)} * {f.name} ** 2"),
            *[Dim(d.size // 2, f"{d.expr} // {f.name}") for d in (h, w)])
    return node(b, op, [vid], replace(t, dims=(t.dims[0], *dims)), "pixel unshuffle x2", kw={"downscale_factor": f})


def unfold(op: OpDef, b: Builder, vid: int) -> Node | None:
    """im2col: ``[B, C, H, W] -> [B, C * k * k, L]``."""
    t = b.states[vid]
    if not _float(t) or t.layout != "img" or t.dims[1].expr is None:
        return None
    k = b.rng.choice([2, 3])
    stride = b.rng.choice([1, k])
    c, h, w = t.dims[1], t.dims[2], t.dims[3]
    if min(h.size, w.size) < 2 * k:
        return None
    kn = b.const("KERNEL_SIZE", k)
    kw: dict[str, Arg] = {"kernel_size": kn}
    sn = b.const("STRIDE", stride) if stride != 1 else None
    if sn is not None:
        kw["stride"] = sn
    n_h, n_w = (h.size - k) // stride + 1, (w.size - k) // stride + 1
    length = None
    if h.expr is not None and w.expr is not None:
        if sn is None:
            length = f"({h.expr} - {kn.name} + 1) * ({w.expr} - {kn.name} + 1)"
        else:
            length = f"(({h.expr} - {kn.name}) // {sn.name} + 1) * (({w.expr} - {kn.name}) // {sn.name} + 1)"
    assert c.expr is not None
    out = TensorState("sig", (t.dims[0], Dim(c.size * k * k, f"{paren(c.expr)} * {kn.name} ** 2"),
                              Dim(n_h * n_w, length)), t.dtype, t.range, t.smooth)
    return node(b, op, [vid], out, f"unfold {k}x{k}", kw=kw)


def reshape(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Flatten to [B, -1], transposes that swap the channel and length axes, GLU, tril/triu, diff."""
    t = b.states[vid]
    kind = op.v["kind"]
    if not _float(t) or len(t.dims) < 2:
        return None
    name = op.name.rsplit(".", 1)[-1]
    if kind == "flatten":
        if len(t.dims) < 3:
            return None
        dims: tuple[Dim, ...] = (t.dims[0], Dim(t.numel // t.dims[0].size, prod_expr(t.dims[1:])))
        kw: dict[str, Arg] = {} if op.kind == "module" else {"start_dim": Lit(1)}
        return node(b, op, [vid], replace(t, layout="vec", dims=dims), "flatten", kw=kw)
    if kind == "transpose":
        if t.layout not in ("seq", "sig"):
            return None
        dims = (t.dims[0], t.dims[2], t.dims[1])
        out = replace(t, layout="sig" if t.layout == "seq" else "seq", dims=dims)
        return node(b, op, [vid], out, "transpose(1, 2)", args=[Lit(1), Lit(2)])
    if kind == "permute":
        if t.layout not in ("seq", "sig"):
            return None
        out = replace(t, layout="sig" if t.layout == "seq" else "seq", dims=(t.dims[0], t.dims[2], t.dims[1]))
        return node(b, op, [vid], out, "permute(0, 2, 1)", args=[Lit([0, 2, 1])])
    if kind == "glu":
        axis = 1 if t.layout in SPATIAL_RANK else len(t.dims) - 1
        d = t.dims[axis]
        if d.size % 2 or d.expr is None or not (is_name(d.expr) or d.expr.startswith("2 * ")):
            return None
        dims = tuple(Dim(d.size // 2, f"{paren(d.expr)} // 2") if k == axis else x for k, x in enumerate(t.dims))
        dim = 1 if axis == 1 else -1
        return node(b, op, [vid], replace(t, dims=dims, range="any"), f"GLU (dim {dim})", kw={"dim": Lit(dim)})
    if kind == "tri":
        if t.layout not in ("seq", "img", "vec"):
            return None
        rng = t.range if t.range != "pos" else "nonneg"
        return node(b, op, [vid], replace(t, range=rng, smooth=False), name)
    if kind == "diff":
        d = t.dims[-1]
        if d.size < 3:
            return None
        dims = (*t.dims[:-1], Dim(d.size - 1, None if d.expr is None else f"{d.expr} - 1"))
        out = replace(t, dims=dims, range="any", layout=t.layout if t.layout != "vec" else "vec")
        return node(b, op, [vid], out, "diff (dim -1)", kw={"dim": Lit(-1)})
    return None


FAMILIES = {
    "conv": conv,
    "pool": pool,
    "adaptive_pool": adaptive_pool,
    "pad": pad,
    "resample": resample,
    "pixel": pixel,
    "unfold": unfold,
    "reshape": reshape,
}
"""Family name -> proposer."""
