"""Every aotk primitive has one complete OpDef, and the registry's own rules hold."""

from __future__ import annotations

import inspect

import pytest
from conftest import emit, placeholder
from xdsl.irdl import IRDLOperation

from aotk.dialect import AOTK, REGISTRY, STRUCTURAL_OPS, Kind, OpDef, lookup, register
from aotk.dialect import arithmetic as ar
from aotk.dialect.registry import OpDef as RegistryOpDef

REGISTERED = [op for op in AOTK.operations if op not in STRUCTURAL_OPS]
PRIMITIVES = [op for op in REGISTERED if REGISTRY[op].kind is not Kind.REGION]


def test_dialect_and_registry_hold_the_same_ops():
    assert set(REGISTERED) == set(REGISTRY)
    assert len(REGISTERED) == len(set(REGISTERED))
    assert not set(STRUCTURAL_OPS) & set(REGISTRY)


def test_the_ops_with_a_body_are_registered_as_regions():
    regions = {op.name for op in REGISTERED if REGISTRY[op].kind is Kind.REGION}
    assert regions == {"aotk.scan", "aotk.fused", "aotk.conv_fused", "aotk.conv_pool"}
    for op in REGISTERED:
        assert (REGISTRY[op].kind is Kind.REGION) == bool(op.get_irdl_definition().regions)


def test_dialect_is_named_aotk_and_lists_every_op_once():
    names = [op.name for op in AOTK.operations]
    assert AOTK.name == "aotk"
    assert len(names) == len(set(names))
    assert all(n.startswith("aotk.") for n in names)


@pytest.mark.parametrize("op", PRIMITIVES, ids=lambda op: op.name)
def test_opdef_is_complete(op):
    opdef = REGISTRY[op]
    assert isinstance(opdef, RegistryOpDef)
    assert opdef.ir is op
    assert issubclass(op, IRDLOperation)
    assert op.name.startswith("aotk.") and op.name == op.name.lower()
    assert op.__name__.endswith("Op")
    assert op.__doc__ and op.__doc__.strip(), f"{op.name} has no docstring"
    assert isinstance(opdef.kind, Kind)
    assert callable(opdef.infer), f"{op.name}: no infer rule"
    assert callable(opdef.numpy), f"{op.name}: no numpy rule"
    if opdef.kind is Kind.VIEW:
        assert opdef.lower is None or callable(opdef.lower)
    else:
        assert callable(opdef.lower), f"{op.name}: no lower rule"
    # a gradient may still be missing, but the field exists and is a rule when given
    assert hasattr(opdef, "grad")
    assert opdef.grad is None or callable(opdef.grad)


@pytest.mark.parametrize("op", PRIMITIVES, ids=lambda op: op.name)
def test_non_elementwise_op_with_a_dynamic_result_has_a_shape_rule(op):
    """Loop bounds of a dynamic result come from the shape rule; elementwise ops broadcast."""
    opdef = REGISTRY[op]
    if opdef.kind is Kind.ELEMENTWISE or not _result_can_be_dynamic(op):
        return
    assert callable(opdef.shape), f"{op.name}: a dynamic result needs a shape rule"
    params = list(inspect.signature(opdef.shape).parameters.values())
    assert len(params) >= 2, f"{op.name}: shape(arith, operand dims, **attrs)"


def _result_can_be_dynamic(op: type) -> bool:
    """Whether some example of `op` infers a dynamic result (see test_differential)."""
    from test_differential import SPECS

    from aotk import dtypes
    from aotk.dialect.base import shape_of, tensor

    spec = SPECS.get(op)
    if spec is None:
        return True  # unknown op: require the rule
    for case in spec.cases(spec.dtypes[0]):
        types = [
            tensor(dtypes.element_type(d), s)
            for d, s in zip(
                case.dtypes or (spec.dtypes[0],) * len(case.decl), case.decl, strict=True
            )
        ]
        if None in shape_of(REGISTRY[op].infer(*types, **case.attrs)):
            return True
    return False


@pytest.mark.parametrize(
    "op", [op for op in PRIMITIVES if REGISTRY[op].kind is Kind.ELEMENTWISE], ids=lambda op: op.name
)
def test_elementwise_lower_rule_takes_a_scalar_body_signature(op):
    """Elementwise rules are `rule(builder, args, arg_elems, out_elem, **attrs)`."""
    sig = inspect.signature(REGISTRY[op].lower)
    positional = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    assert len(positional) == 4
    assert any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())


def test_lookup_accepts_classes_and_instances_and_names_unknown_ops():
    x = placeholder((2,), "float32")
    assert lookup(ar.AddOp) is REGISTRY[ar.AddOp]
    assert lookup(emit(ar.AddOp, x, x).value.owner) is REGISTRY[ar.AddOp]

    class NotAnAotkOp(IRDLOperation):
        name = "test.not_aotk"

    with pytest.raises(KeyError, match=r"test\.not_aotk is not an aotk primitive"):
        lookup(NotAnAotkOp)


def test_registering_an_op_twice_is_an_error():
    existing = REGISTRY[ar.AddOp]
    with pytest.raises(ValueError, match=r"aotk\.add is registered twice"):
        register(
            OpDef(
                ir=ar.AddOp,
                kind=existing.kind,
                infer=existing.infer,
                numpy=existing.numpy,
                lower=existing.lower,
            )
        )
    assert REGISTRY[ar.AddOp] is existing
