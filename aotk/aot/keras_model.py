"""Keras models as exportable functions: the model's predict step or its training step.

A Keras 2 model running on aotk compiles its steps with `K.function`; exporting a model
exports one of those functions, compiled again with the learning phase fixed (0 to
predict, 1 to train), so the library is the same kind as for any K.function: inputs are
the model's inputs (plus targets and sample weights for the training step), outputs its
predictions (or its loss and metrics).

Keras makes each target placeholder fully dynamic, and the loss broadcasts it against the
prediction: a tie between dims an exported model cannot check. But Keras itself refuses
targets of any shape other than its output's (`Model._standardize_user_data`), so the
training step's library accepts exactly that shape (`checked_shapes`).
"""

from __future__ import annotations

from typing import Any

from aotk import function

Shape = tuple[int | None, ...]

STEPS = ("predict", "train")


def is_keras_model(obj: Any) -> bool:
    """Whether `obj` looks like a Keras 2 model (it builds predict and train functions)."""
    return callable(getattr(obj, "_make_predict_function", None)) and hasattr(obj, "layers")


def step_function(model: Any, step: str, where: str) -> Any:
    """The compiled K.function behind `model.predict` ('predict') or `train_on_batch`."""
    if step not in STEPS:
        raise ValueError(f"{where}: step must be 'predict' or 'train', got {step!r}")
    if step == "train" and getattr(model, "optimizer", None) is None:
        raise ValueError(f"{where}: step='train' needs a compiled model (call model.compile)")
    with function.compiled_on_first_call():  # Keras's own, if made here, only when called
        if step == "train":
            model._make_train_function()
            fn = model.train_function
        else:
            model._make_predict_function()
            fn = model.predict_function
    # Keras feeds the phase of a model with Dropout or BatchNormalization; in the library
    # it is a constant, so C callers pass only the model's own inputs
    return fn.with_fixed_phase(1 if step == "train" else 0, where)


def checked_shapes(model: Any, fn: Any) -> list[Shape]:
    """The input shapes of `model`'s step function `fn`, each target's dims set to what
    Keras checks a target against when it trains (the batch dim stays dynamic)."""
    shapes = [tuple(s) for s in fn._inputs.shapes]
    if not getattr(model, "_is_graph_network", False):  # Keras checks a subclass's none
        return shapes  # (nor has a model that was never compiled any targets)
    position = {id(t): k for k, t in enumerate(fn._input_tensors)}
    feeds = zip(
        getattr(model, "_feed_targets", []),
        getattr(model, "_feed_output_shapes", []),
        getattr(model, "_feed_loss_fns", []),
        strict=True,
    )
    for target, output_shape, loss in feeds:
        k = position.get(id(target))
        checked = _checked_target_shape(tuple(output_shape), loss)
        if k is None or checked is None or len(checked) != len(shapes[k]):
            continue
        shapes[k] = tuple(
            c if s is None and a > 0 else s
            for a, (s, c) in enumerate(zip(shapes[k], checked, strict=True))
        )
    return shapes


def _checked_target_shape(output_shape: Shape, loss: Any) -> Shape | None:
    """The shape Keras 2.2/2.3 checks a target of this output and loss against; None
    for a loss of the user's own, whose targets Keras leaves alone."""
    from keras import backend, losses

    wrapped = getattr(loss, "fn", loss)  # Keras 2.3 wraps a loss function in a Loss
    sparse_class = getattr(losses, "SparseCategoricalCrossentropy", ())
    if wrapped is losses.sparse_categorical_crossentropy or isinstance(loss, sparse_class):
        if backend.image_data_format() == "channels_first" and len(output_shape) in (4, 5):
            return (output_shape[0], 1, *output_shape[2:])
        return (*output_shape[:-1], 1)
    if _users_own(loss, losses):
        return None
    return output_shape


def _users_own(loss: Any, losses: Any) -> bool:
    """Keras's own test of a loss not its own (2.3's, then 2.2's)."""
    if hasattr(losses, "Loss"):
        wrapper = getattr(losses, "LossFunctionWrapper", ())
        if not isinstance(loss, losses.Loss):
            return True
        return isinstance(loss, wrapper) and getattr(losses, loss.fn.__name__, None) is None
    return getattr(losses, getattr(loss, "__name__", ""), None) is None
