"""What Keras 2.2.4 and 2.3.1, written for Python 3.6 and NumPy 1.x, need on today's stack.

They import `collections.Iterable` and friends (moved to `collections.abc`, removed from
`collections` in Python 3.10), use NumPy aliases removed in NumPy 1.24 and 2.0 (`np.int`,
`np.Inf`, `np.string_`, `np.unicode_`), and read HDF5 attributes as h5py 2 returned them:
strings as `bytes` and lists of names as `S` arrays, where h5py 3 gives `str` and object
arrays. `install()` restores exactly those names, each as the object it always was an
alias of, and h5py 2's attribute types. `aotk.backend` calls it on import when Keras loads
it as its backend or `KERAS_BACKEND=aotk.backend` is set, before Keras imports the modules
that need it, so Keras scripts run unchanged; other programs never see the changes.
"""

from __future__ import annotations

import collections
import collections.abc
import os
import sys
from typing import Any

import numpy as np

# the collections.abc names Keras 2.2/2.3 reaches through `collections`
_COLLECTIONS = ("Callable", "Container", "Iterable", "Mapping", "MutableMapping", "Sequence")
# NumPy's deprecated aliases of Python builtins that Keras 2.2/2.3 use
_NUMPY = {"int": int, "Inf": np.inf, "string_": np.bytes_, "unicode_": np.str_}


def install() -> list[str]:
    """Restore the missing names; return those added (already present ones are kept)."""
    added = []
    for name in _COLLECTIONS:
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))
            added.append(f"collections.{name}")
    for name, value in _NUMPY.items():
        if name not in np.__dict__:
            setattr(np, name, value)
            added.append(f"numpy.{name}")
    if _bytes_attributes():
        added.append("h5py attributes as bytes")
    return added


def _bytes_attributes() -> bool:
    """Make h5py read string attributes as bytes, as h5py 2 did; True if it was changed."""
    try:
        from h5py._hl.attrs import AttributeManager
    except ImportError:  # no h5py: Keras cannot save models, nothing to restore
        return False
    read = AttributeManager.__getitem__
    if getattr(read, "aotk_bytes", False):
        return False

    def read_bytes(self: Any, name: str) -> Any:
        value = read(self, name)
        if isinstance(value, str):
            return value.encode("utf-8")
        if not isinstance(value, np.ndarray) or (value.dtype != object and value.size):
            return value
        # h5py 2 gave lists of names (Keras's only list attributes) as 'S' arrays, which
        # Keras turns into lists; an empty list is one too, or NumPy 2 refuses `if names:`
        items = [v.encode("utf-8") if isinstance(v, str) else v for v in value.ravel()]
        if not all(isinstance(v, bytes) for v in items):
            return value
        return np.array(items, dtype=np.bytes_).reshape(value.shape)

    read_bytes.aotk_bytes = True  # type: ignore[attr-defined]
    AttributeManager.__getitem__ = read_bytes  # type: ignore[method-assign]
    return True


def wanted() -> bool:
    """Whether Keras runs, or is set to run, on aotk (KERAS_BACKEND=aotk.backend)."""
    return (
        os.environ.get("KERAS_BACKEND") == "aotk.backend"
        or "keras.backend.load_backend" in sys.modules
    )
