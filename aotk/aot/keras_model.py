"""Keras models as exportable functions: the model's predict step or its training step.

A Keras 2 model running on aotk compiles its steps with `K.function`; exporting a model
exports one of those functions, compiled again with the learning phase fixed (0 to
predict, 1 to train), so the library is the same kind as for any K.function: inputs are
the model's inputs (plus targets and sample weights for the training step), outputs its
predictions (or its loss and metrics).
"""

from __future__ import annotations

from typing import Any

STEPS = ("predict", "train")


def is_keras_model(obj: Any) -> bool:
    """Whether `obj` looks like a Keras 2 model (it builds predict and train functions)."""
    return callable(getattr(obj, "_make_predict_function", None)) and hasattr(obj, "layers")


def step_function(model: Any, step: str, where: str) -> Any:
    """The compiled K.function behind `model.predict` ('predict') or `train_on_batch`."""
    if step not in STEPS:
        raise ValueError(f"{where}: step must be 'predict' or 'train', got {step!r}")
    if step == "train":
        if getattr(model, "optimizer", None) is None:
            raise ValueError(f"{where}: step='train' needs a compiled model (call model.compile)")
        model._make_train_function()
        fn = model.train_function
    else:
        model._make_predict_function()
        fn = model.predict_function
    # Keras feeds the phase of a model with Dropout or BatchNormalization; in the library
    # it is a constant, so C callers pass only the model's own inputs
    return fn.with_fixed_phase(1 if step == "train" else 0, where)
