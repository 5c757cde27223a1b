"""The composer's scratch state: names, inputs, weights and nodes of one candidate being built.

Operator families (``synth.families_*``) read the current value's ``TensorState`` and ask the
builder for new size symbols, named constants, forward inputs and weights. A family that returns
None must not have changed anything it cannot undo; the composer snapshots the builder around
each proposal, so families may allocate first and bail out later.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from synth.spec import (
    Arg,
    Code,
    Dim,
    Dist,
    Dtype,
    InputSpec,
    Lit,
    Node,
    Num,
    Role,
    SizeSym,
    Sym,
    TensorState,
    Val,
    Weight,
)

SPATIAL_RANK: dict[str, int] = {"sig": 1, "img": 2, "vol": 3}
"""Channel-first layouts and their number of spatial dims."""

ACCEPTS: dict[str, frozenset[str]] = {
    "any": frozenset({"any", "nonneg", "pos", "unit", "sym1"}),
    "nonneg": frozenset({"nonneg", "pos", "unit"}),
    "pos": frozenset({"pos"}),
    "unit": frozenset({"unit"}),
    "sym1": frozenset({"sym1", "unit"}),
}
"""Domain -> value ranges it accepts (a range is accepted when it lies inside the domain)."""

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class OpDef:
    """One catalogue entry: a torch callable and how to use it."""

    name: str
    """How it is written in a problem: ``F.gelu``, ``nn.Conv2d``, ``torch.special.i0e``."""
    family: str
    """Which family proposes it (its shape rule and parameter sampler)."""
    category: str
    """Coarse group for summaries: activation, elementwise, reduction, norm, linear, conv, ..."""
    kind: Literal["module", "function"]
    """``nn.Module`` class (constructed in ``__init__``) or a function called in ``forward``."""
    params: frozenset[str]
    """Parameter names of its torch signature (mined); keyword arguments must be among them."""
    v: Mapping[str, Any] = field(default_factory=dict)
    """Family-specific settings (domain, output range, parameter choices, rank, ...)."""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Default values of its parameters (mined); a sampled value equal to its default is not written."""
    deterministic: bool = True
    """False for stochastic operators (dropout, rrelu, gumbel softmax): never composed."""

    def __lt__(self, other: OpDef) -> bool:
        return self.name < other.name


class SpecError(Exception):
    """A catalogue entry asks for something its torch signature does not have."""


def accepts(domain: str, rng: str) -> bool:
    """Whether a tensor with value range ``rng`` may be fed to an operand with ``domain``."""
    return rng in ACCEPTS[domain]


def replace(t: TensorState, **changes: Any) -> TensorState:
    """A copy of ``t`` with some fields changed."""
    return msgspec.structs.replace(t, **changes)


def is_name(expr: str | None) -> bool:
    """Whether an expression is a bare constant name (usable as a named constructor argument)."""
    return expr is not None and _IDENT.fullmatch(expr) is not None


def paren(expr: str) -> str:
    """``expr`` wrapped in parentheses unless it is a name or a number."""
    return expr if is_name(expr) or expr.isdigit() else f"({expr})"


def prod_expr(dims: Sequence[Dim]) -> str | None:
    """Product of the dims' expressions; None when one has none."""
    exprs = [d.expr for d in dims]
    if any(e is None for e in exprs):
        return None
    return " * ".join(paren(e) for e in exprs if e is not None)


@dataclass
class Builder:
    """Mutable state of one candidate under construction."""

    rng: random.Random
    dtype: Dtype
    sizes: list[SizeSym] = field(default_factory=list)
    consts: list[Num] = field(default_factory=list)
    inputs: list[InputSpec] = field(default_factory=list)
    states: list[TensorState] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    attrs: set[str] = field(default_factory=set)
    head: int = 0
    merge: bool = False
    """Set by the composer for a merge step: binary/concat families must take an earlier value."""

    # -- names -------------------------------------------------------------------------------

    def _fresh(self, base: str, taken: set[str]) -> str:
        name, k = base, 2
        while name in taken:
            name = f"{base}_{k}"
            k += 1
        return name

    def size(self, base: str, small: int, role: Role, *, scalable: bool) -> Dim:
        """A new size constant (``HIDDEN = 512``); returns a dim that refers to it."""
        name = self._fresh(base, self.names)
        self.names.add(name)
        self.sizes.append(SizeSym(name=name, small=small, role=role, scalable=scalable))
        return Dim(small, name)

    def const(self, base: str, value: int | float | list[int]) -> Num:
        """A named hyperparameter; an existing constant with the same name and value is reused."""
        for c in self.consts:
            if re.fullmatch(rf"{base}(_\d+)?", c.name) and c.value == value and type(c.value) is type(value):
                return c
        name = self._fresh(base, self.names)
        self.names.add(name)
        num = Num(name=name, value=value)
        self.consts.append(num)
        return num

    def attr(self, base: str) -> str:
        """A unique attribute name for a submodule or weight (``conv``, ``conv_2``)."""
        name = self._fresh(base, self.attrs | {"training", "forward"})
        self.attrs.add(name)
        return name

    # -- values ------------------------------------------------------------------------------

    def new_input(self, base: str, state: TensorState, dist: Dist, *, high: str | None = None) -> int:
        """A new forward input drawn as ``dist``; every dim of ``state`` needs an expression."""
        shape = [d.expr for d in state.dims]
        if any(e is None for e in shape):
            raise SpecError("an input needs an expression for every dim")
        taken = {i.name for i in self.inputs} | {"self", "h", "torch", "nn", "F"}
        name = self._fresh(base, taken)
        vid = len(self.states)
        self.states.append(state)
        self.inputs.append(InputSpec(vid=vid, name=name, shape=[e for e in shape if e is not None],
                                     dist=dist, dtype=state.dtype, high=high))
        return vid

    def weight(self, base: str, dims: Sequence[Dim], init: str, fan_in: str | None = None) -> Weight:
        """A learnable tensor of the model (functional operators); dims need expressions."""
        shape = [d.expr for d in dims]
        if any(e is None for e in shape):
            raise SpecError("a weight needs an expression for every dim")
        return Weight(name=self.attr(base), shape=[e for e in shape if e is not None],
                      init=init, fan_in=fan_in)  # type: ignore[arg-type]

    def add(self, made: Node) -> int:
        """Append a node (its ``vid`` must be ``next_vid``); it becomes the chain's head."""
        if made.vid != len(self.states):
            raise SpecError(f"node value id {made.vid} out of order (expected {len(self.states)})")
        self.nodes.append(made)
        self.states.append(made.out)
        self.head = made.vid
        return made.vid

    @property
    def next_vid(self) -> int:
        """The id the next node's value gets (inputs created by its family come first)."""
        return len(self.states)

    def scalable(self, dim: Dim) -> bool:
        """Whether a dim may grow when the default sizes are scaled (it mentions a scalable symbol)."""
        if dim.expr is None:
            return True
        words = set(_IDENT.findall(dim.expr))
        return any(s.scalable and s.name in words for s in self.sizes)

    def snapshot(self) -> Builder:
        """A deep copy to restore when a proposal is abandoned."""
        return copy.deepcopy(self)

    def restore(self, snap: Builder) -> None:
        """Roll back to a snapshot."""
        self.__dict__.update(snap.__dict__)


def node(
    b: Builder,
    op: Any,
    vals: Sequence[int],
    out: TensorState,
    label: str,
    *,
    args: Sequence[Arg] = (),
    kw: dict[str, Arg] | None = None,
    call_kw: dict[str, Lit] | None = None,
    pick: int | None = None,
    vals_first: bool = True,
) -> Node:
    """A node for ``op`` (an ``OpDef``) applied to the values ``vals``.

    Module operators put ``args``/``kw`` on the constructor and ``vals`` on the call; functional
    operators pass ``vals`` then ``args`` positionally (``args`` then ``vals`` when
    ``vals_first`` is False, as in ``torch.addmm(bias, h, w)``). Build it after every input
    the node needs exists: its ``vid`` is taken from the builder. Keyword names are checked against the
    signature mined from torch (``SpecError`` when torch does not have one).
    """
    kw = dict(kw or {})
    allowed = op.params
    for name in kw:  # call_kw goes to the submodule's forward, not its constructor
        if allowed and name not in allowed:
            raise SpecError(f"{op.name} has no parameter {name!r}")
    if op.kind == "module":
        return Node(vid=b.next_vid, op=op.name, args=list(args), kw=kw, inputs=list(vals),
                    call_kw=dict(call_kw or {}), pick=pick, out=out, label=label)
    vargs: list[Arg] = [Val(v) for v in vals]
    call_args = vargs + list(args) if vals_first else list(args) + vargs
    return Node(vid=b.next_vid, op=op.name, args=call_args, kw=kw, inputs=[], call_kw={}, pick=pick,
                out=out, label=label)


def sym(dim: Dim, hint: str) -> Sym:
    """A constructor argument that passes a dim's size (its expression must exist)."""
    if dim.expr is None:
        raise SpecError("dim has no expression")
    return Sym(expr=dim.expr, hint=hint)


def shape_code() -> Code:
    """``h.shape[-1:]``: the normalized shape of a functional last-dim norm."""
    return Code("{0}.shape[-1:]")
