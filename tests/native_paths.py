"""What the tests of the native call path share: their skip mark, and a count of the
calls it declines."""

from __future__ import annotations

from typing import Any

import pytest

from aotk import native_call

needs_native = pytest.mark.skipif(
    native_call.make(0, "v", native_call.Layout([], 0, 0)) is None,
    reason="no native call path here (not CPython, or no C compiler)",
)


def python_calls(f: Any) -> list[int]:
    """Count the calls of `f` that the native path declines."""
    count = [0]
    planned = f._caller._run_planned

    def counted(values: Any) -> Any:
        count[0] += 1
        return planned(values)

    f._caller._run_planned = counted
    return count
