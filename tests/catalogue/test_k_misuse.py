"""Every entry of the K API's bad-input catalogue (`k_misuse.py`) is a ValueError or a
TypeError naming the function and the mistake: never another exception, never a crash."""

from __future__ import annotations

import pytest
from k_misuse import CATALOGUE


@pytest.mark.parametrize(
    ("name", "misuse", "words"),
    CATALOGUE,
    ids=[f"{i}-{name}-{words[0]}" for i, (name, _, words) in enumerate(CATALOGUE)],
)
def test_misuse_is_a_clear_error(name, misuse, words) -> None:
    with pytest.raises((ValueError, TypeError)) as caught:
        misuse()
    message = str(caught.value)
    assert message.startswith(f"K.{name}: "), message
    assert any(word.lower() in message.lower() for word in words), message
