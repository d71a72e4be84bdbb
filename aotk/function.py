"""`K.function`: trace -> pipeline -> JIT -> a callable on NumPy arrays.

One compiled kernel serves every value of the dynamic dims. Identical graphs share one
compilation through an in-process cache keyed on the traced IR and the target.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from aotk import call_path, dtypes, gc_pause, runtime, weight_packs
from aotk.call_check import ShapeChecker
from aotk.dialect import metadata, trace
from aotk.dialect.base import elem_of, shape_of
from aotk.host_code import compile_traced, structure, traced_source

if TYPE_CHECKING:
    from aotk.codegen import jit

# the learning phase fed when a call leaves it out (a kernel never writes its inputs)
_PHASE = {False: np.array(False), True: np.array(True)}
_LAZY = threading.local()  # `compiled_on_first_call` on this thread


@contextmanager
def compiled_on_first_call() -> Iterator[None]:
    """K.functions made meanwhile on this thread compile when first called, not when
    made: an export traces a Keras model's step again and needs Keras's own only traced."""
    before = getattr(_LAZY, "on", False)
    _LAZY.on = True
    try:
        yield
    finally:
        _LAZY.on = before


@dataclass
class _Signature:
    names: list[str]
    shapes: list[tuple[int | None, ...]]
    dtypes: list[np.dtype]


class Function:
    """A compiled `K.function(inputs, outputs)`."""

    def __init__(
        self,
        inputs: Sequence[Any],
        outputs: Any,
        updates: Sequence[Any] = (),
        name: str | None = None,
        where: str = "K.function",
        fixed_phase: int | None = None,
        lazy: bool = False,
    ):
        """`lazy`: compile on first use (an export may need only the traced module)."""
        lazy = lazy or getattr(_LAZY, "on", False)
        self.where = where
        self.name = name or "main"
        self._traced = (list(inputs), outputs, list(updates))
        self._single = isinstance(outputs, trace.KTensor)
        outs = [outputs] if self._single else list(outputs)
        # a composite input (a sparse placeholder) is several placeholders and `feed`s them
        self._feeds = [getattr(x, "feed", None) for x in inputs] if _is_seq(inputs) else []
        if any(self._feeds):
            inputs = [p for x in inputs for p in getattr(x, "placeholders", [x])]
        _check_tensors(inputs, outs, where)
        # the learning phase, when not an explicit input, is fed its default on each call;
        # `fixed_phase` makes it a constant of the compiled code instead
        phase = trace.graph().learning_phase
        fixed = {phase: float(fixed_phase)} if phase is not None and fixed_phase is not None else {}
        if fixed:
            inputs = [x for x in inputs if x is not phase]
        self._implicit_phase = (
            phase is not None and not fixed and all(x is not phase for x in inputs)
        )
        if self._implicit_phase:
            inputs = [*inputs, phase]
        self._input_tensors = list(inputs)  # what each argument is fed to (export pins some)
        self._n_outputs = len(outs)
        self._updated = [u.variable for u in updates]
        values = outs + [u.value for u in updates]
        with gc_pause.paused():
            module, captures = trace.extract(list(inputs), values, where, fixed)
            self.module, self.captures = module, captures
            self._mark_updates(len(inputs))
            # the JIT's module reads packed copies of the weights it does not write
            jit_module, self._packs = weight_packs.plan(
                module, len(inputs), captures, self._updated
            )
            self._setup([x.name for x in inputs], None if lazy else compile_traced(jit_module))
            self._lazy_module = jit_module if lazy else None

    def _setup(self, input_names: list[str], compiled: jit.CompiledModule | None) -> None:
        """Everything a call needs, from the traced module and its native code (None:
        linked by `_linked` when first needed)."""
        fn_type = next(iter(self.module.ops)).function_type  # type: ignore[attr-defined]
        n_in = len(input_names)
        self._inputs = _signature(input_names, fn_type.inputs.data[:n_in])
        dynamic = [
            (i, a) for i, s in enumerate(self._inputs.shapes) for a, d in enumerate(s) if d is None
        ]
        self._out_dtypes = [np.dtype(dtypes.numpy_dtype(elem_of(t))) for t in fn_type.outputs.data]
        self._checker = ShapeChecker(self.module, self.where)  # export plans dims with it too
        self._signature = call_path.Signature(
            where=self.where,
            inputs=list(zip(*vars(self._inputs).values(), strict=True)),
            out_dtypes=self._out_dtypes,
            n_outputs=self._n_outputs,
            dynamic=dynamic,
        )
        self._has_feeds = any(self._feeds)
        self._lazy_module: ModuleOp | None = None
        self._lazy_structure: str | None = None  # an export and the first call both need it
        self._link_lock = threading.Lock()
        if compiled is not None:
            self._link(compiled)

    def _link(self, compiled: jit.CompiledModule) -> None:
        self._compiled = compiled
        self._ws_size = compiled["main_workspace_size"]
        self._caller = call_path.CallPath(
            self._signature,
            call_path.Kernel(
                compiled["main"], compiled.addresses["main"], compiled.code.signatures["main"]
            ),
            self._ws_size,
            self._checker,
            (self.captures, self._updated),
            locked=bool(self._updated) or self.stateful_captures,
            packs=weight_packs.Packs(self._packs, self.captures) if self._packs else None,
        )

    def _linked(self) -> jit.CompiledModule:
        """The native code, compiled now if this function was made lazily."""
        if self._lazy_module is not None:
            with self._link_lock:  # a thread calling meanwhile waits for this compile
                module = self._lazy_module
                if module is not None:
                    self._link(compile_traced(module, self._structure_of(module)))
                    self._lazy_module = None
        return self._compiled

    def host_source(self) -> jit.NativeCode:
        """This function's LLVM IR text for the host (`source_ir`, which an export optimizes
        again): a lazy function is lowered, not compiled."""
        module = self._lazy_module
        if module is None:
            return self._compiled.code
        return traced_source(module, self._structure_of(module))

    def _structure_of(self, module: ModuleOp) -> str:
        """The lazy module's `structure` (it never changes), found once."""
        if self._lazy_structure is None:
            self._lazy_structure = structure(module)
        return self._lazy_structure

    def with_fixed_phase(self, phase: int, where: str) -> Function:
        """This function traced again with the learning phase a constant, not an input;
        compiled when first called."""
        inputs, outputs, updates = self._traced
        return Function(inputs, outputs, updates, self.name, where, fixed_phase=phase, lazy=True)

    @property
    def stateful_captures(self) -> bool:
        """True when a kernel call writes captured state itself (random-number counters)."""
        return any(getattr(c, "kernel_updated", False) for c in self.captures)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as native code plus the current values of the captured arrays.

        Unpickling runs that code: unpickle only what comes from a source you trust, or
        sign it (`aotk.signing.dumps` / `loads`)."""
        from aotk import shipping

        if any(self._feeds):
            raise TypeError(f"{self.where}: a function with sparse inputs cannot be pickled")
        meta = {
            "ir": str(self.module),
            "where": self.where,
            "name": self.name,
            "names": self._inputs.names,
            "n_outputs": self._n_outputs,
            "single": self._single,
            "implicit_phase": self._implicit_phase,
            "updated": [_index_of(self.captures, v) for v in self._updated],
            "packs": [dataclasses.astuple(p) for p in self._packs],
            "captures": [
                (_name(c), bool(getattr(c, "kernel_updated", False))) for c in self.captures
            ],
        }
        blob = shipping.pack(self._linked().code, meta)
        return (restore_function, (blob, [np.array(c.storage) for c in self.captures]))

    def _mark_updates(self, n_inputs: int) -> None:
        """Tell the lowering which outputs are variables, written after everything else."""
        if not self._updated:
            return
        seen: set[int] = set()
        for var in self._updated:
            if id(var) in seen:
                raise ValueError(
                    f"{self.where}: variable '{_name(var)}' is updated twice, to different values"
                )
            seen.add(id(var))
        pairs: list[int] = []
        for j, var in enumerate(self._updated):
            arg = n_inputs + self.captures.index(var) if var in self.captures else -1
            pairs += [self._n_outputs + j, arg]
        metadata.set_ints(next(iter(self.module.ops)), metadata.UPDATES, pairs)

    def __call__(self, values: Sequence[Any]) -> Any:
        if self._has_feeds:
            values = self._flatten(values)
        if self._implicit_phase and _is_seq(values) and len(values) == len(self._inputs.names) - 1:
            values = [*values, _PHASE[bool(trace.default_phase())]]
        if self._lazy_module is not None:
            self._linked()
        outs = self._caller.run(values)
        return outs[0] if self._single else outs

    def _flatten(self, values: Sequence[Any]) -> Sequence[Any]:
        """Each composite input's value as the arrays of its placeholders."""
        if not _is_seq(values):
            return values
        if len(values) != len(self._feeds):
            raise ValueError(f"{self.where}: expected {len(self._feeds)} inputs, got {len(values)}")
        flat: list[Any] = []
        for value, feed in zip(values, self._feeds, strict=True):
            flat.extend(feed(value, self.where) if feed is not None else [value])
        return flat

    @property
    def llvm_ir(self) -> str:
        """The optimized LLVM IR of this function."""
        return self._linked().llvm_ir


def _signature(names: list[str], types: Sequence[Any]) -> _Signature:
    return _Signature(
        names=names,
        shapes=[shape_of(t) for t in types],
        dtypes=[np.dtype(dtypes.numpy_dtype(elem_of(t))) for t in types],
    )


def _is_seq(x: Any) -> bool:
    return isinstance(x, list | tuple)


def _check_tensors(inputs: Sequence[Any], outputs: Sequence[Any], where: str) -> None:
    if not isinstance(inputs, list | tuple):
        raise TypeError(
            f"{where}: inputs must be a list of placeholders, got {type(inputs).__name__}"
        )
    for i, x in enumerate(inputs):
        if not isinstance(x, trace.KTensor) or x.value not in trace.graph().placeholders:
            raise TypeError(f"{where}: inputs[{i}] must be a placeholder, got {x!r}")
    for i, y in enumerate(outputs):
        if not isinstance(y, trace.KTensor):
            raise TypeError(f"{where}: outputs[{i}] must be a tensor, got {y!r}")


@dataclass
class Capture(runtime.StorageHolder):
    """A captured array of an unpickled or loaded function (variable, constant or state)."""

    name: str
    storage: np.ndarray
    kernel_updated: bool = False


def restore_function(blob: bytes, arrays: list[np.ndarray]) -> Function:
    """Rebuild a pickled function: link its object code, parse its IR; compile nothing."""
    from aotk import shipping
    from aotk.context import make_context

    compiled, meta = shipping.unpack(blob)
    fn = Function.__new__(Function)
    fn.where, fn.name = meta["where"], meta.get("name", "main")
    fn._single, fn._feeds = meta["single"], []
    fn._input_tensors = []  # the traced graph is not pickled, only its IR
    fn._implicit_phase, fn._n_outputs = meta["implicit_phase"], meta["n_outputs"]
    fn.module = Parser(make_context(), meta["ir"]).parse_module()
    _check_captured(fn, len(meta["names"]), meta["captures"], arrays)
    fn.captures = [
        Capture(name, runtime.aligned_copy(a), updated)
        for (name, updated), a in zip(meta["captures"], arrays, strict=True)
    ]
    fn._updated = [fn.captures[i] for i in meta["updated"]]
    fn._packs = [weight_packs.Pack(*p) for p in meta.get("packs", [])]
    fn._setup(meta["names"], compiled)
    return fn


def _check_captured(fn: Function, n_inputs: int, captures: list[Any], arrays: list[Any]) -> None:
    """The pickled arrays are the captured variables the code was compiled for: one per
    capture, each of its dtype and shape (the kernel reads them as such)."""
    where = f"unpickling {fn.where} '{fn.name}'"
    types = next(iter(fn.module.ops)).function_type.inputs.data[n_inputs:]  # type: ignore[attr-defined]
    if not isinstance(arrays, list) or not (len(arrays) == len(captures) == len(types)):
        got = len(arrays) if isinstance(arrays, list) else type(arrays).__name__
        raise ValueError(f"{where}: expected {len(types)} captured arrays, got {got}")
    for i, (array, (name, _), t) in enumerate(zip(arrays, captures, types, strict=True)):
        dtype, shape = np.dtype(dtypes.numpy_dtype(elem_of(t))), shape_of(t)
        if not isinstance(array, np.ndarray) or array.dtype != dtype or array.shape != shape:
            got = f"{array.dtype} {array.shape}" if isinstance(array, np.ndarray) else type(array)
            raise ValueError(
                f"{where}: captured array {i} ('{name}') must be {dtype} of shape {shape}, "
                f"got {got}"
            )


def _index_of(captures: list[Any], var: Any) -> int:
    for i, c in enumerate(captures):
        if c is var:
            return i
    raise ValueError(f"variable '{_name(var)}' is updated but not captured")


def _name(capture: Any) -> str:
    return str(getattr(capture, "name", None) or "capture")
