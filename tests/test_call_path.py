"""The per-call path of a compiled function: addresses found once where they can be, and
never stale."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from aotk import backend as K
from aotk import runtime


def test_address_is_where_the_data_starts_for_every_kind_of_array() -> None:
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    read_only = base.copy()
    read_only.flags.writeable = False
    for a in (base, read_only, base[1:], base[:, 1:], np.empty((0, 4), np.float32)):
        assert runtime.address(a) == a.ctypes.data


def test_kernel_buffer_copies_only_what_a_kernel_cannot_read_in_place() -> None:
    dense = runtime.aligned_empty((3, 4), "float32")
    same, at = runtime.kernel_buffer(dense)
    assert same is dense and at == dense.ctypes.data
    strided = np.arange(24, dtype=np.float32).reshape(3, 8)[:, ::2]
    copy, at = runtime.kernel_buffer(strided)
    assert copy is not strided and copy.flags.c_contiguous and at == copy.ctypes.data
    np.testing.assert_array_equal(copy, strided)


def test_slot_addresses_follow_a_slot_to_its_new_array() -> None:
    slots = runtime.SlotAddresses(2)
    a, b = np.zeros(4), np.ones(4)
    assert slots.get(0, a) == a.ctypes.data and slots.get(1, b) == b.ctypes.data
    assert slots.get(0, b) == b.ctypes.data


XS = np.arange(6, dtype=np.float32).reshape(2, 3)


def _product_with_a_variable():
    """A variable of ones and a function of it, called once (so its addresses are kept)."""
    v = K.variable(np.ones((2, 3), np.float32))
    x = K.placeholder((None, 3))
    f = K.function([x], [K.dot(x, K.transpose(v))])
    np.testing.assert_allclose(f([XS])[0], XS @ np.ones((3, 2)))
    return v, f


def test_a_variable_given_a_new_value_is_read_from_its_new_storage() -> None:
    v, f = _product_with_a_variable()
    K.set_value(v, np.full((2, 3), 2.0, np.float32))
    np.testing.assert_allclose(f([XS])[0], XS @ np.full((3, 2), 2.0))


def test_a_variable_whose_array_is_replaced_is_read_from_the_new_one() -> None:
    v, f = _product_with_a_variable()
    old = v.storage
    v.storage = runtime.aligned_copy(np.full((2, 3), 3.0, np.float32))
    old[...] = 7.0  # what the call must no longer read
    np.testing.assert_allclose(f([XS])[0], XS @ np.full((3, 2), 3.0))


def test_the_workspace_size_is_asked_once_per_dims() -> None:
    x = K.placeholder((None, 3))
    f = K.function([x], [K.exp(K.sum(K.exp(x), 1))])
    for rows in (2, 5, 2, 5):
        got = f([np.zeros((rows, 3), np.float32)])[0]
        np.testing.assert_allclose(got, np.full(rows, np.exp(3.0)), rtol=1e-6)
    assert set(f._caller._workspace_sizes) == {(2,), (5,)}


def _counting_checked(f) -> list[int]:
    """Count the calls of `f` that take the checked path."""
    count = [0]
    checked = f._caller._run_checked

    def counted(values):
        count[0] += 1
        return checked(values)

    f._caller._run_checked = counted
    return count


def test_planned_shapes_skip_the_checks_and_give_the_same_values() -> None:
    x = K.placeholder((None, 3))
    f = K.function([x], [K.sum(x * 2.0, axis=1)])
    checked = _counting_checked(f)
    a, b = np.ones((2, 3), np.float32), np.arange(15, dtype=np.float32).reshape(5, 3)
    for _ in range(3):
        np.testing.assert_array_equal(f([a])[0], [6.0, 6.0])
        np.testing.assert_array_equal(f([b])[0], b.sum(1) * 2)
    assert checked[0] == 2  # once per shape


def test_inputs_a_kernel_cannot_read_as_they_are_take_the_checked_path() -> None:
    x = K.placeholder((None, 4))
    f = K.function([x], [x + 1.0])
    checked = _counting_checked(f)
    base = np.arange(16, dtype=np.float32).reshape(4, 4)
    f([base])  # plans shape (4, 4)
    read_only = base.copy()
    read_only.flags.writeable = False
    raw = bytearray(np.arange(17, dtype=np.float32).tobytes())
    unaligned = np.frombuffer(memoryview(raw)[2:-2], np.float32)
    assert unaligned.flags.writeable and unaligned.ctypes.data % 4
    odd = [base.T, read_only, base.tolist(), unaligned.reshape(4, 4)]
    for value in odd:
        np.testing.assert_array_equal(f([value])[0], np.asarray(value, np.float32) + 1)
    assert checked[0] == 1 + len(odd)


def test_inputs_of_another_dtype_are_converted_as_the_checked_path_converts_them() -> None:
    """float64 data for a float32 placeholder (Keras feeds what the user gave) takes
    the planned path, converted; what the checked path refuses it still refuses."""
    x, n = K.placeholder((None, 4)), K.placeholder((None,), dtype="int8")
    f = K.function([x, n], [x * 3.0, n + 1])
    checked = _counting_checked(f)
    a, counts = np.linspace(-1, 1, 8).reshape(2, 4), np.array([5, -7], np.int8)
    f([a.astype(np.float32), counts])  # plans the shapes
    for value in (a, a.astype(np.float16), 1e-8 * a):
        got, plus_one = f([value, counts.astype(np.int64)])
        np.testing.assert_array_equal(got, value.astype(np.float32) * np.float32(3.0))
        np.testing.assert_array_equal(plus_one, np.array([6, -6], np.int8))
    assert checked[0] == 1
    with pytest.raises(ValueError, match="outside its range"):
        f([a, np.array([5, 300])])
    with pytest.raises(TypeError, match="expects dtype float32, got complex128"):
        f([a.astype(np.complex128), counts])
    assert checked[0] == 3


def test_a_bad_shape_after_planned_calls_is_still_refused() -> None:
    x, y = K.placeholder((None, 3)), K.placeholder((None, 3))
    f = K.function([x, y], [x + y])
    f([np.ones((2, 3), np.float32)] * 2)
    with pytest.raises(ValueError, match="do not fit"):
        f([np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)])
    with pytest.raises(ValueError, match="expects shape"):
        f([np.ones((2, 4), np.float32)] * 2)


def test_a_write_past_the_workspace_is_caught_when_checked() -> None:
    """The guard after a checked call's workspace: untouched, nothing is said; a byte
    written past the end raises, naming how far."""
    workspace = runtime.Workspace()
    workspace.checked = True
    at = workspace.address(100)
    workspace.verify(100, "f")
    ctypes.memset(at + 100 + 9, 0, 1)  # the tenth byte past the end
    with pytest.raises(RuntimeError, match="wrote 10 bytes past its workspace of 100 bytes"):
        workspace.verify(100, "f")


def test_a_compiled_call_with_too_small_a_workspace_raises_when_checked() -> None:
    """A function whose workspace size is understated by 64 bytes: the kernel writes
    into the guard, and the call raises rather than corrupting the heap."""
    x = K.placeholder((None, 32))
    w = K.variable(np.eye(32, dtype=np.float32))
    f = K.function([x], [K.sum(K.exp(K.dot(K.tanh(K.dot(x, w)), w)), axis=1)])
    xs = np.ones((8, 32), np.float32)
    f([xs])
    caller = f._caller
    assert caller._workspace.checked  # the test suite checks every call (conftest.py)
    size = caller._workspace_bytes([8])
    assert size >= 64
    caller._workspace_sizes[(8,)] = size - 64
    caller._plans.clear()
    with pytest.raises(RuntimeError, match="past its workspace"):
        f([xs])


def test_outputs_no_memory_holds_are_a_memory_error_naming_the_shapes() -> None:
    x = K.placeholder(shape=(None,))
    f = K.function([x], [K.tile(x, (2**38,))])
    for _ in range(2):  # the failed shapes leave no plan behind: the same message again
        with pytest.raises(
            MemoryError,
            match=r"inputs of shapes \(64,\) need outputs of shapes \(17592186044416,\)",
        ):
            f([np.ones(64, "float32")])
    assert f([np.ones(0, "float32")])[0].shape == (0,)  # and other shapes still run
