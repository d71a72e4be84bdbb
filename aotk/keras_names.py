"""The backend names Keras 2.3.1 hands on only for the backends it knows.

Keras 2.3.1's `keras.backend` imports a fixed list of names from whichever backend runs,
then `clear_session`, `get_session`, `set_session` and `manual_variable_initialization`
only for TensorFlow (`clear_session` for CNTK too, `pattern_broadcast` for Theano), so a
program calling `keras.backend.clear_session()` on aotk got an AttributeError. Keras 2.2.4
hands on every name of the backend. `expose(backend)` gives `keras.backend` those of the
names `backend` defines that it lacks: at once if `keras.backend` is being imported (Keras
is loading aotk as its backend), else just after Keras imports it (aotk was imported
first). Nothing else of Keras changes; `aotk.backend` calls this only when Keras runs on it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

KNOWN_BACKENDS_ONLY = (
    "clear_session",
    "get_session",
    "set_session",
    "manual_variable_initialization",
    "pattern_broadcast",
)


def expose(backend: Mapping[str, Any]) -> None:
    """Give `keras.backend` the names of KNOWN_BACKENDS_ONLY that `backend` defines, now
    or when Keras imports it."""
    names = {name: backend[name] for name in KNOWN_BACKENDS_ONLY if name in backend}
    module = sys.modules.get("keras.backend")
    if module is not None:
        _add(module, names)
    elif not any(isinstance(f, _AddAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AddAfterImport(names))


def _add(module: ModuleType, names: Mapping[str, Any]) -> None:
    for name, value in names.items():
        if not hasattr(module, name):
            setattr(module, name, value)


class _AddAfterImport(importlib.abc.MetaPathFinder):
    """Finds `keras.backend` with the other finders and adds the names once its code ran."""

    def __init__(self, names: Mapping[str, Any]) -> None:
        self.names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "keras.backend":
            return None
        sys.meta_path.remove(self)  # once: later imports of keras.backend are Keras's own
        for finder in sys.meta_path:
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and isinstance(spec.loader, importlib.abc.Loader):
                spec.loader = _ThenAdd(spec.loader, self.names)
                return spec
            if spec is not None:
                return spec
        return None


class _ThenAdd(importlib.abc.Loader):
    """`loader`, adding `names` to the module after its code ran."""

    def __init__(self, loader: importlib.abc.Loader, names: Mapping[str, Any]) -> None:
        self.loader = loader
        self.names = names

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        _add(module, self.names)

    def __getattr__(self, name: str) -> Any:  # get_code, get_source, ... for tools
        return getattr(self.loader, name)
