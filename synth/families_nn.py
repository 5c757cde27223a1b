"""Families with weights or sequence structure: linear/matmul, attention, transformer layers,
recurrent nets and embeddings.

Same contract as ``synth.families_elementwise``: ``propose(op, b, vid) -> Node | None``.
"""

from __future__ import annotations

from synth.builder import Builder, OpDef, is_name, node, replace, sym
from synth.families_elementwise import sample_params
from synth.spec import Arg, Code, Dim, Lit, Node, TensorState, Val

_HIDDEN = [64, 128, 256, 512]
MAX_FAN_IN = 8192
"""Largest contracted dim at the small sizes for weight matmuls (weights stay a few MB)."""


def _float(t: TensorState) -> bool:
    return t.dtype != "int64" and t.layout not in ("ids", "scalar")


def linear(op: OpDef, b: Builder, vid: int) -> Node | None:
    """``nn.Linear`` / ``F.linear`` / ``nn.Bilinear`` over the last dim of a vec or seq value."""
    t = b.states[vid]
    if not _float(t) or t.layout not in ("vec", "seq") or t.dims[-1].expr is None:
        return None
    d_in = t.dims[-1]
    if d_in.size > MAX_FAN_IN:
        return None
    bias = b.rng.random() < 0.8
    if op.v.get("kind") == "bilinear":
        if t.layout != "vec" or d_in.size > 512:  # weight [out, in1, in2]: keep it small
            return None
        # weight [out, in1, in2] grows with the product: in2 and out stay fixed and small
        d2 = b.size("FEATURES", b.rng.choice([32, 64]), "feature", scalable=False)
        d_out = b.size("OUT_FEATURES", b.rng.choice([32, 64]), "hidden", scalable=False)
        out = replace(t, dims=(*t.dims[:-1], d_out), range="any", smooth=True)
        other = b.new_input("y", TensorState("vec", (t.dims[0], d2), t.dtype), "randn")
        args: list[Arg] = [sym(d_in, "in1_features"), sym(d2, "in2_features"), sym(d_out, "out_features")]
        label = f"Bilinear ({d_in.expr}, {d2.expr} -> {d_out.expr})"
        return node(b, op, [vid, other], out, label, args=args, kw={} if bias else {"bias": Lit(False)})
    d_out = b.size("OUT_FEATURES", b.rng.choice(_HIDDEN), "hidden", scalable=True)
    out = replace(t, dims=(*t.dims[:-1], d_out), range="any", smooth=True)
    label = f"{op.name.rsplit('.', 1)[-1]} ({d_in.expr} -> {d_out.expr})"
    if op.kind == "module":
        return node(b, op, [vid], out, label, args=[sym(d_in, "in_features"), sym(d_out, "out_features")],
                    kw={} if bias else {"bias": Lit(False)})
    w = b.weight("weight", [d_out, d_in], "scaled", fan_in=d_in.expr)
    args = [w, b.weight("bias", [d_out], "randn")] if bias else [w]
    return node(b, op, [vid], out, label, args=args)


def matmul(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Matrix products: against a weight, the value's own Gram matrix, or a new input."""
    t = b.states[vid]
    kind = op.v["kind"]
    if not _float(t) or t.layout not in ("vec", "seq") or any(d.expr is None for d in t.dims):
        return None
    rank = len(t.dims)
    if (kind in ("mm", "addmm") and rank != 2) or (kind == "bmm" and rank != 3) or t.dims[-1].size > MAX_FAN_IN:
        return None
    sources = ["weight"] if kind in ("mm", "addmm", "tensordot") else ["weight", "input"]
    if rank == 3 and kind in ("bmm", "matmul", "einsum"):
        sources = ["gram", "input"] if kind == "bmm" else [*sources, "gram"]
    source = b.rng.choice(sources)
    d = t.dims[-1]
    if source == "gram":
        n = t.dims[1]
        out = replace(t, dims=(t.dims[0], n, n), range="any", smooth=True)
        if kind == "einsum":
            return node(b, op, [], out, "x @ x^T", args=[Lit("bld,bmd->blm"), Val(vid), Val(vid)])
        return node(b, op, [vid], out, "x @ x^T", args=[Code("{0}.transpose(1, 2)")])
    m = b.size("OUT_FEATURES" if source == "weight" else "COLS", b.rng.choice(_HIDDEN), "hidden", scalable=True)
    out = replace(t, dims=(*t.dims[:-1], m), range="any", smooth=True)
    other: Arg
    if source == "weight":
        other = b.weight("weight", [d, m], "scaled", fan_in=d.expr)
    else:
        shape = (d, m) if rank == 2 else (t.dims[0], d, m)
        other = Val(b.new_input("y", TensorState("flat", shape, t.dtype), "randn"))
    label = f"{op.name.rsplit('.', 1)[-1]} ({d.expr} -> {m.expr})"
    if kind == "addmm":
        bias = b.weight("bias", [m], "randn")
        return node(b, op, [], out, label, args=[bias, Val(vid), other])
    if kind == "einsum":
        eq = "bi,io->bo" if rank == 2 and source == "weight" else "bi,io->bo" if rank == 2 else (
            "bld,de->ble" if source == "weight" else "bld,bde->ble")
        return node(b, op, [], out, label, args=[Lit(eq), Val(vid), other])
    if kind == "tensordot":
        return node(b, op, [vid], out, label, args=[other], kw={"dims": Lit(1)})
    return node(b, op, [vid], out, label, args=[other])


def _heads(b: Builder, d: Dim) -> int | None:
    choices = [h for h in (1, 2, 4, 8) if d.size % h == 0 and d.size // h >= 8]
    return b.rng.choice(choices) if choices else None


def attention(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Scaled dot-product attention, ``nn.MultiheadAttention`` and transformer layers on seq values."""
    t = b.states[vid]
    if not _float(t) or t.layout != "seq" or any(d.expr is None for d in t.dims) or t.dims[1].size > 512:
        return None
    kind = op.v["kind"]
    cross = kind == "decoder" or (kind != "encoder" and b.rng.random() < 0.3)
    mem = None
    if cross:
        m = b.size("MEMORY_LEN", b.rng.choice([32, 64, 128]), "length", scalable=True)
        mem = b.new_input("memory", TensorState("seq", (t.dims[0], m, t.dims[2]), t.dtype), "randn")
    out = replace(t, range="any", smooth=True)
    name = op.name.rsplit(".", 1)[-1]
    if kind == "sdpa":
        kw: dict[str, Arg] = {}
        if not cross and b.rng.random() < 0.4:
            kw["is_causal"] = Lit(True)
        vals = [vid, mem, mem] if mem is not None else [vid, vid, vid]
        return node(b, op, vals, out, name + (" (cross)" if cross else ""), kw=kw)
    heads = _heads(b, t.dims[2])
    if heads is None:
        return None
    nhead = b.const("NUM_HEADS", heads)
    if kind == "mha":
        vals = [vid, mem, mem] if mem is not None else [vid, vid, vid]
        return node(b, op, vals, out, name, args=[sym(t.dims[2], "embed_dim"), nhead],
                    kw={"batch_first": Lit(True)}, call_kw={"need_weights": Lit(False)}, pick=0)
    ff = b.size("FF_DIM", b.rng.choice([128, 256, 512]), "hidden", scalable=True)
    kw = {"dim_feedforward": sym(ff, "dim_feedforward"), "dropout": Lit(0.0), "batch_first": Lit(True)}
    kw.update(sample_params(op, b))
    vals = [vid, mem] if mem is not None else [vid]
    return node(b, op, vals, out, name, args=[sym(t.dims[2], "d_model"), nhead], kw=kw)


def recurrent(op: OpDef, b: Builder, vid: int) -> Node | None:
    """``nn.RNN``/``LSTM``/``GRU`` (batch_first) on seq values; the cells on vec values."""
    t = b.states[vid]
    cell = op.v.get("cell", False)
    if not _float(t) or t.layout != ("vec" if cell else "seq") or t.dims[-1].expr is None:
        return None
    if not cell and t.dims[1].size > 128:  # one kernel chain per step: keep CPU filters fast
        return None
    hidden = b.size("HIDDEN", b.rng.choice([32, 64, 128]), "hidden", scalable=True)
    kw = sample_params(op, b)
    name = op.name.rsplit(".", 1)[-1]
    args: list[Arg] = [sym(t.dims[-1], "input_size"), sym(hidden, "hidden_size")]
    if cell:
        out = replace(t, dims=(t.dims[0], hidden), range="any", smooth=True)
        return node(b, op, [vid], out, name, args=args, kw=kw, pick=op.v.get("pick"))
    kw["batch_first"] = Lit(True)
    if b.rng.random() < 0.3:
        kw["num_layers"] = b.const("NUM_LAYERS", 2)
    width = hidden
    if b.rng.random() < 0.3:
        kw["bidirectional"] = Lit(True)
        assert hidden.expr is not None
        width = Dim(2 * hidden.size, f"2 * {hidden.expr}")
    out = replace(t, dims=(t.dims[0], t.dims[1], width), range="any", smooth=True)
    return node(b, op, [vid], out, name, args=args, kw=kw, pick=0)


def embedding(op: OpDef, b: Builder, vid: int) -> Node | None:
    """Embedding lookups of an ids input ([B, L] int64): per token (seq) or bagged (vec)."""
    t = b.states[vid]
    if t.layout != "ids":
        return None
    spec = next((i for i in b.inputs if i.vid == vid), None)
    if spec is None or spec.high is None or not is_name(spec.high):
        return None
    vocab = next(s for s in b.sizes if s.name == spec.high)
    v = Dim(vocab.small, vocab.name)
    e = b.size("EMBED_DIM", b.rng.choice([64, 128, 256]), "feature", scalable=True)
    bag = op.v.get("bag", False)
    dims = (t.dims[0], e) if bag else (t.dims[0], t.dims[1], e)
    out = TensorState("vec" if bag else "seq", dims, b.dtype)
    kw = sample_params(op, b)
    name = op.name.rsplit(".", 1)[-1]
    if op.kind == "module":
        return node(b, op, [vid], out, name, args=[sym(v, "num_embeddings"), sym(e, "embedding_dim")], kw=kw)
    w = b.weight("embedding", [v, e], "randn")
    return node(b, op, [vid], out, name, args=[w], kw=kw)


FAMILIES = {
    "linear": linear,
    "matmul": matmul,
    "attention": attention,
    "recurrent": recurrent,
    "embedding": embedding,
}
"""Family name -> proposer."""
