"""Every error of a public K function names that function.

Composite functions are built from others: `K.softmax` from `K.max` and `K.sum`,
`K.update_add` from `K.add`, and a mistake caught inside one of those would be reported
under the inner name, which the user never called. `name_errors` wraps each public
function of the backend's namespace so that a ValueError or TypeError that does not
already start with the function's own name gets it in front ("K.softmax: K.max: axis 2
is out of range for rank 2"). The type is kept, so callers (Keras among them) that
catch one still do; internal calls between backend modules are not wrapped.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, MutableMapping
from typing import Any


def name_errors(namespace: MutableMapping[str, Any]) -> None:
    """Wrap the public functions of `namespace` (its `__all__`-style names) in place."""
    for name, value in list(namespace.items()):
        if not name.startswith("_") and inspect.isfunction(value):
            namespace[name] = _named(value, f"K.{name}")


def _named(fn: Callable[..., Any], where: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ValueError, TypeError) as err:
            message = str(err)
            if message.startswith(f"{where}:"):
                raise
            kind = ValueError if isinstance(err, ValueError) else TypeError
            # the original frames stay, without a second "during handling" traceback
            raise kind(f"{where}: {message}").with_traceback(err.__traceback__) from None

    return call
