"""Typed records shared by the catalogue, the composer, the renderer and the workers.

A candidate problem is a ``Composition``: forward inputs, a list of ``Node`` (one operator each),
the size symbols its shapes are written in, and the named constants. Everything here is a msgspec
Struct so that a composition travels to a worker process and into the rejection log as JSON.

Shapes are tracked at the *small* sizes (the ones the CPU filters run); every dimension also
carries a Python expression over the module's size constants (``"HEIGHT // 2"``) when it has
one, so that the rendered file stays correct when the default sizes are scaled up.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Layout = Literal["vec", "seq", "sig", "img", "vol", "flat", "ids", "scalar"]
"""How a tensor's dimensions are read: vec [B, F], seq [B, L, F], sig [B, C, L], img [B, C, H, W],
vol [B, C, D, H, W], flat (no structure: reduced or keepdim shapes), ids [B, L] int64, scalar []."""
Range = Literal["any", "nonneg", "pos", "unit", "sym1"]
"""Value range of a tensor: all reals, [0, inf), (0, inf), [0, 1], [-1, 1]."""
Dtype = Literal["float32", "bfloat16", "float16", "int64"]
"""Element types a composition uses (int64 only for ids and class targets)."""
Dist = Literal["randn", "rand", "lognormal", "sign", "randint"]
"""How ``get_inputs`` draws a tensor: normal, uniform [0, 1), exp(normal), +-1, integers in [0, high)."""
Role = Literal["batch", "feature", "channel", "length", "spatial", "vocab", "hidden"]
"""What a size symbol measures; decides whether and how it is scaled to the default sizes."""

FLOAT_DTYPES: tuple[str, ...] = ("float32", "bfloat16", "float16")
"""Floating dtypes a composition may be generated in."""


class Dim(msgspec.Struct, frozen=True):
    """One tensor dimension."""

    size: int
    """Its value at the small sizes."""
    expr: str | None
    """A Python expression over the module's constants that equals it at every size; None if none."""


class TensorState(msgspec.Struct, frozen=True):
    """What the composer knows about one value of the forward graph."""

    layout: Layout
    """How the dimensions are read."""
    dims: tuple[Dim, ...]
    """Shape at the small sizes, with expressions."""
    dtype: Dtype
    """Element type."""
    range: Range = "any"
    """Value range (decides which domain-restricted operators may follow)."""
    smooth: bool = True
    """False once an operator with plateaus ran (relu, clamp, round): ties make argmax/sort ill-posed."""

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape at the small sizes."""
        return tuple(d.size for d in self.dims)

    @property
    def numel(self) -> int:
        """Element count at the small sizes."""
        n = 1
        for d in self.dims:
            n *= d.size
        return n


class SizeSym(msgspec.Struct, frozen=True):
    """A size constant of the rendered module (``BATCH = 1024``)."""

    name: str
    """Upper-case global name."""
    small: int
    """Value at the small sizes (``SMALL_SIZES``)."""
    role: Role
    """What it measures."""
    scalable: bool
    """Whether the default sizes may scale it up (batch, length, spatial, feature dims)."""


class Num(msgspec.Struct, frozen=True, tag="num"):
    """A named hyperparameter: a module constant and a constructor argument."""

    name: str
    """Upper-case global name (``NEGATIVE_SLOPE``)."""
    value: int | float | list[int]
    """Its value; the same at every size."""


class Sym(msgspec.Struct, frozen=True, tag="sym"):
    """A size expression passed to the constructor (``in_channels=CHANNELS``)."""

    expr: str
    """Expression over the module's constants."""
    hint: str
    """Constructor parameter name when the expression is not a plain constant name."""


class Lit(msgspec.Struct, frozen=True, tag="lit"):
    """A value written inline: axes, flags, modes (never a magic number)."""

    value: bool | int | float | str | list[int] | None
    """The literal."""


class Code(msgspec.Struct, frozen=True, tag="code"):
    """An inline expression; ``{0}`` is replaced by the operator's first tensor argument."""

    src: str
    """Template, e.g. ``{0}.shape[-1:]``."""


class Val(msgspec.Struct, frozen=True, tag="val"):
    """A value of the forward graph (input or earlier node output) passed as an argument."""

    id: int
    """Value id: inputs first, then one per node."""


class Weight(msgspec.Struct, frozen=True, tag="weight"):
    """A learnable tensor owned by the model, for functional operators (``self.weight``)."""

    name: str
    """Attribute name (unique in the model)."""
    shape: list[str]
    """Shape as expressions over the module's constants."""
    init: Literal["randn", "scaled", "ones", "zeros", "positive"]
    """randn; randn / sqrt(fan_in) ("scaled"); ones; zeros; exp(randn) ("positive")."""
    fan_in: str | None = None
    """Expression for the fan-in of a "scaled" weight."""


class ValList(msgspec.Struct, frozen=True, tag="vals"):
    """A list of graph values (``torch.cat([h, skip], dim=1)``)."""

    ids: list[int]
    """Value ids in order."""


Arg = Num | Sym | Lit | Code | Val | Weight | ValList
"""Anything a node passes to its operator."""


class InputSpec(msgspec.Struct, frozen=True):
    """One forward input, drawn by ``get_inputs``."""

    vid: int
    """Its value id."""
    name: str
    """Parameter name of ``forward``."""
    shape: list[str]
    """Shape as expressions over the module's constants."""
    dist: Dist
    """How it is drawn."""
    dtype: Dtype
    """Element type."""
    high: str | None = None
    """Exclusive upper bound (expression) for ``randint``."""


class Node(msgspec.Struct, frozen=True):
    """One operator application."""

    vid: int
    """Id of the value it produces."""
    op: str
    """Catalogue name (``nn.Conv2d``, ``F.gelu``, ``torch.sum``)."""
    args: list[Arg]
    """Functions: the call's positional arguments (tensors included). Modules: constructor positionals."""
    kw: dict[str, Arg]
    """Functions: the call's keyword arguments. Modules: constructor keywords."""
    inputs: list[int]
    """Modules only: value ids passed to the submodule's call."""
    call_kw: dict[str, Lit]
    """Modules only: keyword arguments of the submodule's call (``need_weights=False``)."""
    pick: int | None
    """Index into a tuple result (``self.lstm(h)[0]``); None for a single tensor."""
    out: TensorState
    """The result (after ``pick``)."""
    label: str
    """Short human description for the docstring (``Conv2d 3x3 stride 2``)."""


class Composition(msgspec.Struct, frozen=True):
    """A candidate problem before rendering."""

    seed: int
    """Run seed."""
    index: int
    """Candidate number within the run; (seed, index) determines the composition."""
    dtype: Dtype
    """Floating dtype of inputs and parameters."""
    precision: Literal["fp32", "tf32", "bf16", "fp16"]
    """Declared ``PRECISION`` (tf32 only on fp32 problems with a matmul or convolution)."""
    sizes: list[SizeSym]
    """Size constants in order of first use."""
    consts: list[Num]
    """Named hyperparameters in order of first use."""
    inputs: list[InputSpec]
    """Forward inputs in ``forward``'s parameter order."""
    nodes: list[Node]
    """Operators in execution order; the last one's value is returned."""
    layout: Layout
    """Layout of the first input (the problem's family: vec, seq, sig, img, vol, ids)."""

    @property
    def n_ops(self) -> int:
        """Number of operators (merges included)."""
        return len(self.nodes)
