"""Sample a composition: a chain of 1-5 operators (with residual/concat branches) on one input.

``compose(seed, index, ops)`` is a pure function of its arguments: the random stream is seeded
with the string ``"{seed}:{index}"`` (hashed with SHA-512 by ``random.Random``, so it does not
depend on ``PYTHONHASHSEED``), which is what makes a run reproducible and resumable.

A composition starts from one of six input families (vec, seq, sig, img, vol, ids), picks an
operator count, a dtype and a category mix, and asks operator families (``synth.families_*``)
to extend the chain. A family may also pull an earlier value back in (residual add, concat),
which is how the branches arise.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from synth.builder import Builder, OpDef, SpecError
from synth.ops import FAMILIES
from synth.spec import Composition, Dim, Dtype, Layout, TensorState

OP_COUNTS: dict[int, float] = {1: 0.12, 2: 0.2, 3: 0.24, 4: 0.22, 5: 0.22}
"""Weights of the number of operators in a composition."""
DTYPES: dict[str, float] = {"float32": 0.72, "bfloat16": 0.14, "float16": 0.14}
"""Weights of the floating dtype of a composition."""
LAYOUTS: dict[str, float] = {"vec": 0.24, "seq": 0.2, "sig": 0.12, "img": 0.3, "vol": 0.07, "ids": 0.07}
"""Weights of the first input's layout."""
CATEGORIES: dict[str, float] = {
    "activation": 0.8, "elementwise": 0.8, "reduction": 0.7, "norm": 0.9, "linear": 1.0, "matmul": 0.8,
    "conv": 1.4, "pool": 0.6, "pad": 0.25, "resample": 0.3, "layout": 0.5, "softmax": 0.5, "scan": 0.35,
    "distance": 0.25, "loss": 0.35, "attention": 0.6, "recurrent": 0.3, "embedding": 1.0, "branch": 0.4,
}
"""Weights of operator categories (an operator is drawn uniformly inside its category)."""
TF32_SHARE = 0.15
"""Share of fp32 problems with a matmul/convolution that declare ``PRECISION = "tf32"``."""
MAX_SMALL_NUMEL = 1 << 22
"""Largest tensor (elements) a composition may create at the small sizes (CPU filters stay fast)."""
MERGE_SHARE = 0.3
"""Chance that a step (after the first) tries to merge the chain with an earlier value."""
MERGE_OPS = ("torch.add", "torch.add", "torch.mul", "torch.sub", "torch.maximum", "torch.cat", "torch.cat")
"""Operators of a merge step: residual add (twice as likely), gate, difference, max, concat."""
_HEAVY = frozenset({"linear", "matmul", "conv", "attention", "recurrent"})
_TRIES_PER_STEP = 40


def _pick(rng: random.Random, weights: Mapping[str, float]) -> str:
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys])[0]


def start(b: Builder, layout: str) -> int:
    """Create the first input (``x``, or ``ids`` for embeddings) with fresh size constants."""
    r = b.rng
    dt: Dtype = b.dtype
    dims: tuple[Dim, ...]
    if layout == "vec":
        dims = (b.size("BATCH", r.choice([64, 128, 256, 512]), "batch", scalable=True),
                b.size("FEATURES", r.choice([256, 512, 1024]), "feature", scalable=True))
    elif layout == "seq":
        dims = (b.size("BATCH", r.choice([4, 8, 16]), "batch", scalable=True),
                b.size("SEQ_LEN", r.choice([32, 64, 128]), "length", scalable=True),
                b.size("FEATURES", r.choice([64, 128, 256]), "feature", scalable=True))
    elif layout == "sig":
        dims = (b.size("BATCH", r.choice([4, 8, 16]), "batch", scalable=True),
                b.size("CHANNELS", r.choice([8, 16, 32]), "channel", scalable=False),
                b.size("LENGTH", r.choice([256, 512, 1024]), "length", scalable=True))
    elif layout == "img":
        hw = r.choice([16, 32, 64])
        dims = (b.size("BATCH", r.choice([2, 4, 8]), "batch", scalable=True),
                b.size("CHANNELS", r.choice([3, 8, 16, 32]), "channel", scalable=False),
                b.size("HEIGHT", hw, "spatial", scalable=True),
                b.size("WIDTH", hw if r.random() < 0.8 else hw * 2, "spatial", scalable=True))
    elif layout == "vol":
        dims = (b.size("BATCH", r.choice([2, 4]), "batch", scalable=True),
                b.size("CHANNELS", r.choice([4, 8]), "channel", scalable=False),
                *[b.size(n, r.choice([8, 16]), "spatial", scalable=True) for n in ("DEPTH", "HEIGHT", "WIDTH")])
    else:
        vocab = b.size("VOCAB_SIZE", r.choice([1000, 5000, 10000]), "vocab", scalable=False)
        dims = (b.size("BATCH", r.choice([8, 16, 32]), "batch", scalable=True),
                b.size("SEQ_LEN", r.choice([32, 64, 128]), "length", scalable=True))
        return b.new_input("ids", TensorState("ids", dims, "int64"), "randint", high=vocab.expr)
    dist, rng = r.choices([("randn", "any"), ("rand", "unit"), ("lognormal", "pos")], weights=[0.85, 0.1, 0.05])[0]
    return b.new_input("x", TensorState(layout, dims, dt, rng), dist)  # type: ignore[arg-type]


def _terminal(op: OpDef, out: TensorState) -> bool:
    """Nothing follows a loss, an index or tuple result, or a scalar (ops on one number are trivial)."""
    return op.category == "loss" or op.v.get("terminal", False) or out.dtype == "int64" or out.layout == "scalar"


def _step(b: Builder, by_cat: Mapping[str, Sequence[OpDef]], last: bool) -> bool:
    """Try to append one operator to the chain; False when nothing fitted."""
    weights = {c: w for c, w in CATEGORIES.items() if by_cat.get(c)}
    if b.states[b.head].layout == "ids":
        weights = {"embedding": 1.0} if by_cat.get("embedding") else {}
    else:
        weights.pop("embedding", None)
    if not weights:
        return False
    for _ in range(_TRIES_PER_STEP):
        op = b.rng.choice(list(by_cat[_pick(b.rng, weights)]))
        if not last and (op.category == "loss" or op.v.get("terminal") or op.v.get("index")):
            continue
        snap = b.snapshot()
        try:
            made = FAMILIES[op.family](op, b, b.head)
        except SpecError:
            made = None
        if made is None or made.out.numel > MAX_SMALL_NUMEL or made.out.numel == 0:
            b.restore(snap)
            continue
        b.add(made)
        return True
    return False


def _merge(b: Builder, ops: Mapping[str, OpDef]) -> bool:
    """Try a residual add / gate / concat of the chain's head with an earlier value."""
    names = [n for n in MERGE_OPS if n in ops]
    b.merge = True
    try:
        for name in b.rng.sample(names, len(names)):
            snap = b.snapshot()
            try:
                made = FAMILIES[ops[name].family](ops[name], b, b.head)
            except SpecError:
                made = None
            if made is not None and made.out.numel <= MAX_SMALL_NUMEL:
                b.add(made)
                return True
            b.restore(snap)
    finally:
        b.merge = False
    return False


def compose(seed: int, index: int, ops: Mapping[str, OpDef],
            dtypes: Mapping[str, frozenset[str]] | None = None) -> Composition | None:
    """The composition of candidate ``index`` of run ``seed``; None when the chain got stuck.

    ``ops`` is the (probed) catalogue; ``dtypes`` maps an operator to the dtypes it supports
    (every float dtype when absent). Only deterministic operators are used.
    """
    rng = random.Random(f"{seed}:{index}")
    n_ops = int(_pick(rng, {str(k): v for k, v in OP_COUNTS.items()}))
    dtype: Dtype = _pick(rng, DTYPES)  # type: ignore[assignment]
    layout = _pick(rng, LAYOUTS)
    usable = [o for o in ops.values() if o.deterministic and (dtypes is None or dtype in dtypes.get(o.name, ()))]
    by_cat: dict[str, list[OpDef]] = {}
    for o in sorted(usable):
        by_cat.setdefault(o.category, []).append(o)
    b = Builder(rng=rng, dtype=dtype)
    b.head = start(b, layout)
    usable_ops = {o.name: o for o in usable}
    for k in range(n_ops):
        merged = k > 0 and rng.random() < MERGE_SHARE and _merge(b, usable_ops)
        if not merged and not _step(b, by_cat, last=k == n_ops - 1):
            break
        last = b.nodes[-1]
        if _terminal(ops[last.op], last.out):
            break
    if not b.nodes:
        return None
    heavy = any(ops[n.op].category in _HEAVY for n in b.nodes)
    precision = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}[dtype]
    if dtype == "float32" and heavy and rng.random() < TF32_SHARE:
        precision = "tf32"
    return Composition(seed=seed, index=index, dtype=dtype, precision=precision,  # type: ignore[arg-type]
                       sizes=b.sizes, consts=b.consts, inputs=b.inputs, nodes=b.nodes,
                       layout=layout)  # type: ignore[arg-type]


def single(op: OpDef, ops: Mapping[str, OpDef], dtype: Dtype = "float32", *, seed: int = 0,
           tries: int = 200) -> Composition | None:
    """A one-operator composition of ``op`` (used to probe the catalogue); None if it never fits."""
    for k in range(tries):
        rng = random.Random(f"probe:{op.name}:{seed}:{k}")
        b = Builder(rng=rng, dtype=dtype)
        want_embedding = op.family == "embedding"
        layout: Layout = "ids" if want_embedding else _pick(rng, {k: v for k, v in LAYOUTS.items() if k != "ids"})  # type: ignore[assignment]
        b.head = start(b, layout)  # x is sometimes drawn positive or in [0, 1): domain-restricted ops fit
        try:
            made = FAMILIES[op.family](op, b, b.head)
        except SpecError:
            made = None
        if made is None or made.out.numel > MAX_SMALL_NUMEL or made.out.numel == 0:
            continue
        b.add(made)
        return Composition(seed=seed, index=k, dtype=dtype,
                           precision={"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}[dtype],  # type: ignore[arg-type]
                           sizes=b.sizes, consts=b.consts, inputs=b.inputs, nodes=b.nodes, layout=layout)
    return None
