"""One policy for class labels outside [0, classes), in every op that takes them (see the
README): no class is selected. Values written by hand."""

from __future__ import annotations

import numpy as np

from aotk import backend as K


def test_a_label_outside_the_classes_selects_no_class_in_every_op() -> None:
    labels = K.placeholder((None,), dtype="int32")
    scores = K.placeholder((None, 3))
    f = K.function(
        [labels, scores],
        [
            K.one_hot(labels, 3),
            K.in_top_k(scores, labels, 3),
            K.sparse_categorical_crossentropy(labels, scores),
        ],
    )
    given = np.array([0, 3, -1, 2], np.int32)
    uniform = np.full((4, 3), 1 / 3, np.float32)
    one_hot, in_top, loss = f([given, uniform])
    np.testing.assert_array_equal(one_hot, [[1, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(in_top, [True, False, False, True])
    np.testing.assert_allclose(loss[[0, 3]], np.log(3.0), rtol=1e-6)
    assert np.isnan(loss[1]) and np.isnan(loss[2])


def test_gather_counts_negative_indices_from_the_end_as_numpy_does() -> None:
    i = K.placeholder((None,), dtype="int32")
    f = K.function([i], [K.gather(K.constant(np.array([10.0, 20.0, 30.0])), i)])
    np.testing.assert_array_equal(
        f([np.array([-1, -3, -4, 3, 1], np.int32)])[0], [30, 10, 0, 0, 20]
    )
