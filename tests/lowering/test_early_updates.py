"""`aotk-early-updates`: in-place updates run as soon as their operands are computed and
every other reader of the old value has read it; the values are Keras's, where updates
apply after everything else."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from test_convert_aotk_to_loops import workspace_size
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, i32
from xdsl.ir import Block

from aotk import backend as K
from aotk.dialect import metadata
from aotk.dialect.update_in_place import in_place_updates, variable_updates
from aotk.ir_walk import ops_within
from aotk.lowering import pipeline
from aotk.transforms.early_updates import _Schedule

LATE = ",aotk-early-updates"


def _lowered(f: Any, stage: str, early: bool) -> Any:
    spec = pipeline.passes_for(stage)
    assert LATE in spec
    module = pipeline.run(f.module.clone(), spec if early else spec.replace(LATE, ""))
    if stage == "graph":
        _assert_defined_before_use(next(iter(module.ops)).body.block)
    return module


def _assert_defined_before_use(block: Any) -> None:
    """xDSL's verifier does not check this within a block."""
    seen = set(block.args)
    for op in block.ops:
        inner = {v for o in ops_within(op) for v in (*o.results, *_block_args(o))}
        used = {v for o in ops_within(op) for v in o.operands} - inner
        assert all(v in seen for v in used), f"{op.name} reads a value defined after it"
        seen.update(op.results)


def _block_args(op: Any) -> list[Any]:
    return [a for r in op.regions for b in r.blocks for a in b.args]


def _in_place(f: Any, early: bool = True) -> set[str]:
    """Names of the variables `f` updates in place, with or without the pass."""
    fn = next(iter(_lowered(f, "graph", early).ops))
    chosen = in_place_updates(fn, variable_updates(fn))
    names = metadata.ints(fn, metadata.UPDATES)[::2]
    return {f._updated[names.index(out)].name for out in chosen}


def _var(value: np.ndarray, name: str) -> Any:
    return K.variable(np.asarray(value, np.float32), name=name)


def _momentum_step(depth: int, width: int) -> tuple[Any, list[Any], list[Any]]:
    """An SGD-with-momentum step (Keras's form) of `depth` dense layers of `width`."""
    rng = np.random.default_rng(0)
    x = K.placeholder((None, width))
    ws = [_var(rng.standard_normal((width, width)) * 0.1, f"w{i}") for i in range(depth)]
    ms = [_var(np.zeros((width, width)), f"m{i}") for i in range(depth)]
    h = x
    for w in ws:
        h = K.tanh(K.dot(h, w))
    grads = K.gradients(K.sum(K.square(h)), ws)
    updates = []
    for w, m, g in zip(ws, ms, grads, strict=True):
        v = 0.9 * m - 0.01 * g
        updates += [K.update(m, v), K.update(w, w + v)]
    return K.function([x], [], updates), ws, ms


def test_each_update_follows_its_gradient_and_holds_one_gradient_at_a_time() -> None:
    """Four layers of 256 x 256, Keras's momentum: each layer's `0.9 m`, the matmul
    adding its gradient to it (m in place), the product for the layer below (the last
    read of w) and w's update come together, layer by layer; Keras traced every update
    after the last gradient. The workspace holds none of the four new moments."""
    f, _, _ = _momentum_step(4, 256)
    names = [op.name for op in next(iter(_lowered(f, "graph", True).ops)).body.block.ops]
    layer = ["aotk.fused", "aotk.matmul_update", "aotk.matmul", "aotk.add", "aotk.mul"]
    start = names.index("aotk.matmul_update") - 1
    assert names[start : start + 15] == layer * 3
    assert names[start + 15 :] == ["aotk.fused", "aotk.matmul_update", "aotk.add", "func.return"]
    assert _in_place(f) == _in_place(f, early=False) == {f"{p}{i}" for p in "wm" for i in range(4)}


def test_a_conv_stack_holds_fewer_weight_gradients_and_activations() -> None:
    """Four 3 x 3 convs of 16 channels with momentum: the kernel gradients (9 KiB each)
    were all held to the end; now each dies in its update. An activation dies sooner
    too: a 4 KiB row (8 x 8 x 16 floats) less at the peak."""
    rng = np.random.default_rng(0)
    x = K.placeholder((None, 8, 8, 16))
    ws = [_var(rng.standard_normal((3, 3, 16, 16)) * 0.1, f"w{i}") for i in range(4)]
    ms = [_var(np.zeros((3, 3, 16, 16)), f"m{i}") for i in range(4)]
    h = x
    for w in ws:
        h = K.tanh(K.conv2d(h, w, padding="same"))
    updates = []
    for w, m, g in zip(ws, ms, K.gradients(K.sum(K.square(h)), ws), strict=True):
        updates += [K.update(m, 0.9 * m - 0.01 * g), K.update(w, w + 0.9 * m - 0.01 * g)]
    f = K.function([x], [], updates)
    early, late = (_lowered(f, "loops", e) for e in (True, False))
    sizes = {
        name: [workspace_size(m, n) for n in (0, 10)]
        for name, m in [("early", early), ("late", late)]
    }
    gradient, row = 3 * 3 * 16 * 16 * 4, 8 * 8 * 16 * 4
    assert sizes["late"][0] - sizes["early"][0] >= 2 * gradient
    per_row = {name: (s[1] - s[0]) // 10 for name, s in sizes.items()}
    assert per_row["late"] - per_row["early"] >= row


def test_values_are_those_of_updates_applied_at_the_end() -> None:
    """Two steps of the four-layer momentum step, against NumPy."""
    f, ws, ms = _momentum_step(4, 16)
    w_np = [K.get_value(w).astype(np.float64) for w in ws]
    m_np = [np.zeros_like(w) for w in w_np]
    x0 = np.random.default_rng(1).standard_normal((5, 16))
    for _ in range(2):
        f([x0.astype(np.float32)])
        hs = [x0]
        for w in w_np:
            hs.append(np.tanh(hs[-1] @ w))
        dh = 2 * hs[-1]
        for i in reversed(range(4)):
            dz = dh * (1 - hs[i + 1] ** 2)
            grad, dh = hs[i].T @ dz, dz @ w_np[i].T
            m_np[i] = 0.9 * m_np[i] - 0.01 * grad
            w_np[i] = w_np[i] + m_np[i]
    for var, want in [*zip(ws, w_np, strict=True), *zip(ms, m_np, strict=True)]:
        np.testing.assert_allclose(K.get_value(var), want, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("c_first", [True, False])
def test_an_update_waits_for_every_reader_of_the_old_value(c_first: bool) -> None:
    """c <- c + a and a <- a * 2, in either order: c sees the old a. Listed first, c's
    update already reads it before a is overwritten; listed after, it is moved first,
    and then a is written in place too."""
    a0, c0 = np.arange(4.0), np.ones(4)
    a, c = _var(a0, "a"), _var(c0, "c")
    if c_first:  # traced in this order
        ups = [K.update(c, c + a), K.update(a, a * 2.0)]
    else:
        ups = [K.update(a, a * 2.0), K.update(c, c + a)]
    f = K.function([], [], ups)
    assert _in_place(f) == {"a", "c"}
    assert _in_place(f, early=False) == ({"a", "c"} if c_first else {"c"})
    f([])
    np.testing.assert_array_equal(K.get_value(a), a0 * 2)
    np.testing.assert_array_equal(K.get_value(c), c0 + a0)


def test_small_values_it_reads_are_computed_early_with_it() -> None:
    """A learning rate decayed by the step count (rank 0), traced after both gradients as
    Keras's optimizers do, is computed first, so the second layer's update still runs
    before the first layer's gradient; the count's own update waits for the rate.
    Three steps against NumPy."""
    w10, w20 = (
        np.array([[1.0, -2.0, 0.5], [0.5, 3.0, -1.0]]),
        np.array([[1.0, 0.0], [2.0, -1.0], [0.5, 0.5]]),
    )
    w1, w2, t = _var(w10, "w1"), _var(w20, "w2"), _var(0.0, "t")
    x = K.placeholder((None, 2))
    g1, g2 = K.gradients(K.sum(K.square(K.dot(K.tanh(K.dot(x, w1)), w2))), [w1, w2])
    rate = 0.1 / (1.0 + 0.5 * t)
    updates = [K.update_add(t, 1.0), K.update(w1, w1 - rate * g1), K.update(w2, w2 - rate * g2)]
    f = K.function([x], [], updates)
    names = [op.name for op in next(iter(_lowered(f, "graph", True).ops)).body.block.ops]
    assert names.index("aotk.matmul_update") < names.index("aotk.mul")  # dz of layer 1
    assert _in_place(f) == {"w1", "w2", "t"}
    x0 = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -0.2]])
    for step in range(3):
        f([x0.astype(np.float32)])
        h = np.tanh(x0 @ w10)
        dy = 2 * h @ w20
        g1_np, g2_np = x0.T @ (dy @ w20.T * (1 - h**2)), h.T @ dy
        rate_np = 0.1 / (1 + 0.5 * step)
        w10, w20 = w10 - rate_np * g1_np, w20 - rate_np * g2_np
    np.testing.assert_allclose(K.get_value(w1), w10, rtol=1e-5)
    np.testing.assert_allclose(K.get_value(w2), w20, rtol=1e-5)
    assert K.get_value(t) == 3.0


def test_positions_stay_ordered_however_often_a_gap_is_halved() -> None:
    """68 ops moved one after another into the gap before one op: the positions are
    numbered again before they collide, and keep the block's order."""
    ops = [arith.ConstantOp(IntegerAttr(i, i32)) for i in range(70)]
    block = Block(ops)
    schedule = _Schedule(block, {})
    for op in ops[2:]:
        schedule.move_before(op, ops[1])
    assert list(block.ops) == [ops[0], *ops[2:], ops[1]]
    positions = [schedule.at[op] for op in block.ops]
    assert positions == sorted(set(positions))
