"""Shared IRDL bases and type helpers of the aotk dialect.

Every aotk op verifies itself by re-running its registry `infer` rule on its operand types,
so hand-written IR and traced IR obey the same shape and dtype rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache
from typing import Any, Self

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BoolAttr,
    DenseArrayBase,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    BaseAttr,
    IRDLOperation,
    irdl_to_attr_constraint,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from aotk import dtypes
from aotk.kernels.window import member

Dim = int | None  # None is a dynamic dim
Shape = tuple[Dim, ...]


def source_location(op: Operation) -> str | None:
    """The file:line:col of the input text `op` was parsed from, if it carries one."""
    loc = op.location
    if not isinstance(loc, FileLineColLoc):
        return None
    return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"


def located(op: Operation, message: str) -> str:
    """`message` behind the file:line:col `op` came from, when it has one."""
    where = source_location(op)
    return f"{where}: {message}" if where is not None else message


# The most elements a tensor may have: far beyond any machine's memory, yet small enough
# that byte sizes and flat indices of it (and of a few of them) cannot overflow an int64.
MAX_ELEMENTS = 1 << 50
MAX_RANK = 64  # NumPy's: an input of more dims could not be fed, nor an output held


def check_size(shape: Sequence[Dim]) -> None:
    """Raise a ValueError when the known dims of `shape` hold more than MAX_ELEMENTS, or
    there are more than MAX_RANK of them."""
    if len(shape) > MAX_RANK:
        raise ValueError(
            f"shape has rank {len(shape)}, more than the {MAX_RANK} dims a NumPy array may have"
        )
    count = 1
    for d in shape:
        if d is not None:
            count *= d
    if count > MAX_ELEMENTS:
        raise ValueError(
            f"size overflows: shape {fmt_shape(tuple(shape))} has {count} elements, "
            f"more than the {MAX_ELEMENTS} (2**50) a tensor may hold"
        )


def tensor(element: Attribute, shape: Sequence[Dim]) -> TensorType[Attribute]:
    """Build a tensor type; None dims become dynamic. Checked against MAX_ELEMENTS, so a
    shape rule's result that would overflow is an error of the op that makes it (and,
    with concrete dims, of the call)."""
    check_size(shape)
    return _tensor_type(element, tuple(shape))


@lru_cache(maxsize=4096)
def _tensor_type(element: Attribute, shape: tuple[Dim, ...]) -> TensorType[Attribute]:
    # types are immutable values, and the passes ask for the same few hundred thousands
    # of times: building and verifying each anew was a sixth of a Keras GRU step's graph stage
    return TensorType(element, [DYNAMIC_INDEX if d is None else d for d in shape])


def shape_of(t: Attribute) -> Shape:
    """Return the shape of a tensor type, with None for dynamic dims."""
    if not isinstance(t, TensorType):
        raise TypeError(f"expected a tensor type, got {t}")
    return tuple(None if d == DYNAMIC_INDEX else d for d in t.get_shape())


def elem_of(t: Attribute) -> Attribute:
    if not isinstance(t, TensorType):
        raise TypeError(f"expected a tensor type, got {t}")
    return t.element_type


def dtype_of(t: Attribute) -> str:
    return dtypes.name_of(elem_of(t))


def fmt_shape(shape: Shape) -> str:
    return (
        "("
        + ", ".join("None" if d is None else str(d) for d in shape)
        + ("," if len(shape) == 1 else "")
        + ")"
    )


def broadcast_dim(a: Dim, b: Dim) -> Dim:
    """NumPy broadcasting of one dim pair; a dynamic dim must match at run time."""
    if a == b:
        return a
    if a == 1:
        return b
    if b == 1:
        return a
    if a is None:
        return b
    if b is None:
        return a
    raise ValueError(f"dims {a} and {b} do not broadcast")


def broadcast_shapes(*shapes: Shape) -> Shape:
    """NumPy broadcasting of shapes; raise a ValueError naming both shapes."""
    rank = max(len(s) for s in shapes)
    out: list[Dim] = [1] * rank
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    for i in range(rank):
        for s in padded:
            try:
                out[i] = broadcast_dim(out[i], s[i])
            except ValueError:
                names = " and ".join(fmt_shape(s) for s in shapes)
                raise ValueError(f"shapes {names} do not broadcast (axis {i})") from None
    return tuple(out)


def normalize_axis(axis: int, rank: int, where: str = "axis") -> int:
    """Map a possibly negative axis into [0, rank); raise on out-of-range axes."""
    if not isinstance(axis, int | bool) or isinstance(axis, bool):
        raise TypeError(f"{where}: expected an int, got {axis!r}")
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"{where} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


# The property type of an op's `dtype`: an element type (`dtype = f32`), which rules see
# as its Keras name ("float32").
ElementTypeAttr = Float16Type | Float32Type | Float64Type | IntegerType
_ELEMENT_TYPE = irdl_to_attr_constraint(ElementTypeAttr)


def encode_attr(value: Any) -> Attribute:
    """Python value -> IR property."""
    if isinstance(value, bool):
        return BoolAttr.from_bool(value)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, tuple | list):
        return DenseArrayBase.from_list(i64, [int(v) for v in value])
    if isinstance(value, Attribute):
        return value
    raise TypeError(f"cannot store {value!r} as an aotk op property")


def decode_attr(attr: Attribute) -> Any:
    """IR property -> Python value."""
    if isinstance(attr, IntegerAttr):
        value = attr.value.data
        is_bool = isinstance(attr.type, IntegerType) and attr.type.width.data == 1
        return bool(value) if is_bool else value
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase):
        return tuple(int(v) for v in attr.get_values())
    if isinstance(attr, EnumAttribute):
        return attr.data  # a StrEnum member, which compares equal to its string
    if isinstance(attr, Float16Type | Float32Type | Float64Type | IntegerType):
        return dtypes.name_of(attr)
    return attr


@cache
def _typed_props(cls: type[IRDLOperation]) -> dict[str, Any]:
    """The properties of `cls` whose Python value is not stored as is, by name: an enum
    attribute class, or `ElementTypeAttr` for an element type given as a dtype name."""
    typed: dict[str, Any] = {}
    for name, p in cls.get_irdl_definition().properties.items():
        if isinstance(p.constr, BaseAttr) and issubclass(p.constr.attr, EnumAttribute):
            typed[name] = p.constr.attr
        elif p.constr == _ELEMENT_TYPE:
            typed[name] = ElementTypeAttr
    return typed


def _encode_prop(kind: Any, value: Any) -> Attribute:
    if kind is ElementTypeAttr:
        return dtypes.element_type(value) if isinstance(value, str) else value
    return kind(value) if kind is not None else encode_attr(value)


class AotkOp(IRDLOperation):
    """Base of registered aotk primitives: build from Python attrs, verify with `infer`."""

    @classmethod
    def typed_attrs(cls, attrs: dict[str, Any]) -> dict[str, Any]:
        """`attrs` with enum properties as StrEnum members; raise naming a bad one."""
        typed = _typed_props(cls)
        return {
            k: member(typed[k].enum_type, k, v)
            if v is not None and k in typed and typed[k] is not ElementTypeAttr
            else v
            for k, v in attrs.items()
        }

    @classmethod
    def make(cls, operands: Sequence[SSAValue], result_type: Attribute, **attrs: Any) -> Self:
        typed = _typed_props(cls)
        props = {
            k: _encode_prop(typed.get(k), v)
            for k, v in cls.typed_attrs(attrs).items()
            if v is not None
        }
        return cls.create(operands=list(operands), result_types=[result_type], properties=props)

    def attrs(self) -> dict[str, Any]:
        return {k: decode_attr(v) for k, v in self.properties.items()}

    def verify_(self) -> None:
        from aotk.dialect.registry import lookup

        try:
            expected = lookup(self).infer(*(o.type for o in self.operands), **self.attrs())
        except (ValueError, TypeError) as err:
            raise VerifyException(f"{self.name}: {err}") from None
        got = self.results[0].type
        if not types_compatible(expected, got):
            raise VerifyException(f"{self.name}: result type should be {expected}, got {got}")


def types_compatible(expected: Attribute, got: Attribute) -> bool:
    """Equal, except that a known dim in `got` may refine a dynamic one in `expected`."""
    if expected == got:
        return True
    if not isinstance(expected, TensorType) or not isinstance(got, TensorType):
        return False
    if expected.element_type != got.element_type:
        return False
    a, b = shape_of(expected), shape_of(got)
    return len(a) == len(b) and all(x is None or x == y for x, y in zip(a, b, strict=True))


class UnaryElementwiseOp(AotkOp):
    """One tensor in, one tensor of the same shape out."""

    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


class BinaryElementwiseOp(AotkOp):
    """Two tensors in, NumPy-broadcast to one tensor out."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
