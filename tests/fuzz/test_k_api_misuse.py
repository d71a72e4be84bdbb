"""Misuse fuzzing of the K API: every function, called with combinations of odd
arguments, returns or raises a ValueError or TypeError, never another exception and
never a hang.

The arguments: tensors of ranks 0 to 4 (unknown and zero dims, float16, int32), a
variable, scalars, NaN, strings, tuples with negative sizes, lists, arrays, bad data
formats. Functions of one or two positional arguments get every pair, longer ones a
seeded sample; the first optional arguments each get every value. The functions that
compile (`function`, `eval`, ...) and those that set process-wide state are left to
the catalogue (`tests/catalogue`), which names what their messages must say.
"""

from __future__ import annotations

import inspect
import itertools
import random
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aotk import backend as K

API = (Path(__file__).parent.parent / "data" / "keras_api.txt").read_text().split()
COMPILES = {"function", "eval", "get_value", "batch_get_value", "print_tensor", "ctc_decode"}
COMPILES |= {"set_value", "batch_set_value"}
SETS_STATE = {"clear_session", "set_floatx", "set_epsilon", "set_image_data_format"}
SETS_STATE |= {"set_learning_phase", "manual_variable_initialization", "reset_uids"}
FUZZED = [name for name in API if name not in COMPILES | SETS_STATE]
SAMPLES = 300  # argument tuples for a function of three positional arguments or more
OPTIONALS = 5  # optional arguments varied, each alone
SECONDS_A_CALL = 20  # a call this long is taken for a hang


def odd_values() -> list[Any]:
    """Fresh odd arguments (placeholders belong to the test's graph)."""
    tensors = [K.placeholder(s) for s in [(2, 3), (None, 3), (4,), (0, 3), (2, 4, 3)]]
    tensors += [K.placeholder((2, 5, 5, 3)), K.placeholder((2, 3), dtype="int32")]
    tensors += [K.placeholder((2, 3), dtype="float16"), K.variable(np.ones((2, 3), "float32"))]
    scalars = [5, -4, 0, 1.5, True, float("nan"), -1, 2, 3, 1e100, 2**40]
    others = ["foo", "float32", "channels_middle", "channels_first", None, (2, 3), (-1, 3)]
    others += [(), (1,), [1, 2], [tensors[0], tensors[2]], np.ones((2, 3))]
    return [*tensors, *scalars, *others, np.ones((2, 3), dtype=np.int64)]


def calls(fn: Callable[..., Any], values: list[Any]) -> Iterator[tuple[tuple, dict]]:
    """(args, kwargs) combinations for `fn`."""
    params = inspect.signature(fn).parameters.values()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    optional = [p for p in positional if p.default is not inspect.Parameter.empty]
    if len(required) <= 2:
        yield from ((args, {}) for args in itertools.product(values, repeat=len(required)))
    else:
        pick = random.Random(len(required)).choice
        yield from ((tuple(pick(values) for _ in required), {}) for _ in range(SAMPLES))
    for param in optional[:OPTIONALS]:
        base = (values[0],) * len(required)
        yield from ((base, {param.name: value}) for value in values)


class _Hang(Exception):
    """A call ran SECONDS_A_CALL."""


def _raise_hang(signum: int, frame: Any) -> None:
    raise _Hang()


@pytest.mark.parametrize("name", FUZZED)
def test_misuse_is_a_value_or_type_error(name: str) -> None:
    fn = getattr(K, name)
    wrong: list[str] = []
    previous = signal.signal(signal.SIGALRM, _raise_hang)
    try:
        for args, kwargs in calls(fn, odd_values()):
            signal.alarm(SECONDS_A_CALL)
            try:
                fn(*args, **kwargs)
            except (ValueError, TypeError):
                pass
            except MemoryError as err:  # a valid shape too large to hold, as NumPy says
                if "Unable to allocate" not in str(err):
                    wrong.append(f"{name}(*{args!r}, **{kwargs!r}): MemoryError: {err}")
            except Exception as err:  # any other kind is the finding
                wrong.append(f"{name}(*{args!r}, **{kwargs!r}): {type(err).__name__}: {err}")
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not wrong, f"{len(wrong)} calls raised neither ValueError nor TypeError:\n" + "\n".join(
        wrong[:5]
    )
