"""A model's external weights file, mutated: every byte of the header and a sample of the
payload flipped, every truncation length of the header, lengths through the payload,
garbage appended, the file of another model with the same layout. Each is refused at
load with a weights status (11 to 14) and a message naming the file, or, for the
header's unused padding only, loads and computes exactly what the intact file does.
Never a crash or a wrong result. (Weights retrained for the same graph are the same
model's and load: that is what external weights are for.)"""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest
from export_helpers import linear_model

import aotk
from aotk import backend as K
from aotk.aot import layout
from aotk.aot.layout import HEADER

pytestmark = pytest.mark.aot

REFUSED = re.compile(r"aotk_model_create: .*\(status 1[1-4]\)$")
UNUSED_HEADER = range(36, HEADER)  # after magic, version, count, size, model and CRC


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("weights")
    rng = np.random.default_rng(3)
    f = linear_model(rng, 6, 5)
    lib = aotk.export(f, root / "m", "wm", weights="external")
    # the same inputs and variables (names, dtypes, shapes) with sigmoid for tanh: the
    # same weights layout, but another model's
    other_graph = linear_model(rng, 6, 5, activation=K.sigmoid)
    other = aotk.export(other_graph, root / "o", "wm", weights="external")
    x = rng.standard_normal((3, 6)).astype(np.float32)
    want = aotk.load(lib.library, weights=lib.weights)([x, x])
    return lib, other.weights.read_bytes(), [x, x], want


def _mutations(good: bytes) -> list[tuple[str, bytes]]:
    rng = random.Random(0)
    flips = [*range(HEADER), *rng.sample(range(HEADER, len(good)), 48)]
    out = [(f"flip byte {i}", _flip(good, i)) for i in flips]
    cuts = [*range(0, HEADER + 1), *range(HEADER + 1, len(good), max(1, len(good) // 40))]
    out += [(f"truncate to {n}", good[:n]) for n in cuts]
    out += [("append a byte", good + b"\0"), ("append a page", good + bytes(4096))]
    return out


def _flip(data: bytes, i: int) -> bytes:
    return data[:i] + bytes([data[i] ^ 0x5A]) + data[i + 1 :]


def test_every_mutation_is_refused_or_harmless(exported, tmp_path: Path) -> None:
    lib, other, inputs, want = exported
    good = lib.weights.read_bytes()
    cases = [*_mutations(good), ("another model's weights", other)]
    refused = harmless = 0
    for what, data in cases:
        path = tmp_path / "mutated.weights"
        path.write_bytes(data)
        try:
            model = aotk.load(lib.library, weights=path)
        except ValueError as err:
            assert REFUSED.search(str(err)), f"{what}: {err}"
            assert str(path) in str(err) or "another model" in str(err), f"{what}: {err}"
            refused += 1
            continue
        assert what.startswith("flip byte") and int(what.split()[-1]) in UNUSED_HEADER, what
        np.testing.assert_array_equal(model(inputs), want)
        harmless += 1
    assert harmless == len(UNUSED_HEADER) and refused == len(cases) - harmless


def test_the_header_layout_the_mutations_assume() -> None:
    assert layout._HEAD.size == 36 and HEADER == 64
