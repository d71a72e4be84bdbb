"""What Keras 2.2.4 and 2.3.1, written for Python 3.6 and NumPy 1.x, need on today's stack.

They import `collections.Iterable` and friends (moved to `collections.abc`, removed from
`collections` in Python 3.10) and use NumPy aliases removed in NumPy 1.24 (`np.int`,
`np.float`). `install()` restores exactly those names, each as the object it always was an
alias of, and nothing else. `aotk.backend` calls it when Keras loads it as its backend
(`KERAS_BACKEND=aotk.backend`), before Keras imports the modules that need it, so Keras
scripts run unchanged; other programs never see the names.
"""

from __future__ import annotations

import collections
import collections.abc
import sys

import numpy as np

# the collections.abc names Keras 2.2/2.3 reaches through `collections`
_COLLECTIONS = ("Callable", "Container", "Iterable", "Mapping", "MutableMapping", "Sequence")
# NumPy's deprecated aliases of Python builtins that Keras 2.2/2.3 use
_NUMPY = {"int": int, "float": float, "object": object}


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
    return added


def loaded_by_keras() -> bool:
    """Whether multi-backend Keras is importing its backend right now."""
    return "keras.backend.load_backend" in sys.modules
