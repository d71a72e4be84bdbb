"""Outputs that are views (reshapes) of values computed in the function: the value is
computed straight into the output's buffer, which the view aliases, instead of aside
and copied. Values are checked in every combination that shares a buffer: one value
returned through two views and as itself, read by later ops, a view of an argument, and
a variable's new value through a view (which `update_in_place` never writes in place)."""

from __future__ import annotations

import numpy as np
from conftest import emit, placeholder
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import MemRefType

from aotk import backend as K
from aotk.dialect import shape
from aotk.dialect import unary as un
from aotk.dialect.trace import extract
from aotk.lowering import pipeline


def _kernel_buffers(module) -> list[list[str]]:
    """The buffers (argument names) each kernel `@main` calls is passed."""
    [main] = [op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main"]
    calls = [op for op in main.walk() if isinstance(op, func.CallOp)]
    return [
        [v.name_hint or "" for v in c.operands if isinstance(v.type, MemRefType)] for c in calls
    ]


def test_a_reshaped_result_is_written_once_into_the_output():
    x = placeholder((4, 3), "float32", "x")
    out = emit(shape.ReshapeOp, emit(un.ExpOp, x), shape=(2, 6))
    module, _ = extract([x], [out])
    pipeline.lower(module, "loops")
    kernels = [
        f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data[:6] == "main_k"
    ]
    stores = [op for f in kernels for op in f.walk() if isinstance(op, memref.StoreOp)]
    loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    assert _kernel_buffers(module) == [["x", "out0"]]  # no copy from the workspace afterwards
    assert len(stores) == 1  # the one kernel's
    assert len(loops) == 1  # one flat loop over the elements


def test_values_shared_through_views_are_right_call_after_call(rng):
    x = K.placeholder((None, 3, 4))
    t = K.permute_dimensions(x, (0, 2, 1)) * 2.0
    outs = [
        K.reshape(t, (-1, 12)),
        K.batch_flatten(t),  # the same value through a second view: a copy of the first
        t + 1.0,  # read after the first view's output holds it
        t,
        K.reshape(x, (-1,)),  # a view of an argument: copied
    ]
    f = K.function([x], outs)
    for batch in (2, 5, 1):
        xs = rng.standard_normal((batch, 3, 4)).astype(np.float32)
        want_t = np.transpose(xs, (0, 2, 1)) * 2.0
        got = f([xs])
        np.testing.assert_array_equal(got[0], want_t.reshape(-1, 12))
        np.testing.assert_array_equal(got[1], want_t.reshape(batch, 12))
        np.testing.assert_array_equal(got[2], want_t + 1.0)
        np.testing.assert_array_equal(got[3], want_t)
        np.testing.assert_array_equal(got[4], xs.reshape(-1))
        assert len({o.ctypes.data for o in got}) == len(got)  # five buffers of their own


def test_a_variable_updated_through_a_view_keeps_its_old_value_for_other_reads():
    v = K.variable(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    new = K.reshape(K.reshape(v, (-1,))[::-1] * 10.0, (2, 3))
    f = K.function([], [K.sum(v)], updates=[K.update(v, new)])
    [total] = f([])
    assert float(total) == 15.0  # read before the update lands
    np.testing.assert_array_equal(K.get_value(v), [[50.0, 40.0, 30.0], [20.0, 10.0, 0.0]])
    [total] = f([])
    assert float(total) == 150.0
