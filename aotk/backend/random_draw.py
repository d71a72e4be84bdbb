"""`K.eval` of a random op of static shape: its micro-kernel called directly.

Keras makes every initial weight as `K.variable(initializer(shape))`, a random op evaluated
once. Compiling a function around it took 50-300 ms a distinct shape and bound: building
NASNetMobile made 62 such compiles and took 6.6 s, 3.7-4.4 s without them. Its compiled
code would call one micro-kernel, which samples and advances the op's (seed, calls) state;
called here with the same arguments, it gives the same numbers and leaves the same state,
with nothing to compile.
"""

from __future__ import annotations

import numpy as np

from aotk import micro_kernels, runtime
from aotk.backend.random_ops import RandomState
from aotk.dialect import trace
from aotk.dialect.random import RandomOpBase, micro_kernel_call
from aotk.dialect.trace import KTensor
from aotk.kernels import library


def draw(x: KTensor) -> np.ndarray | None:
    """The samples of `x` if it is a random op's result of static shape, else None."""
    op = x.value.owner
    if not isinstance(op, RandomOpBase) or op.like:
        return None
    state = trace.graph().captures.get(op.state)  # type: ignore[arg-type]
    if not isinstance(state, RandomState):
        return None
    attrs = op.attrs()
    name, params = micro_kernel_call(type(op), attrs)
    out = runtime.aligned_empty(tuple(attrs["shape"]), attrs["dtype"])
    kernel = micro_kernels.function(library.lookup(name).symbol)
    kernel(runtime.address(out), runtime.address(state.storage), out.size, *params)
    return out
