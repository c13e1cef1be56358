"""One check for every layer and model: eager and symbolic calls, config and `.keras` round trips,
and a training step. Every layer test goes through `check_layer`."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np


def _symbolic_inputs(inputs):
    if isinstance(inputs, dict):
        return {
            name: keras.Input(shape=value.shape[1:], dtype=str(value.dtype), name=name)
            for name, value in inputs.items()
        }
    return [keras.Input(shape=value.shape[1:], dtype=str(value.dtype)) for value in inputs]


def _call(layer, inputs, **kwargs):
    return layer(inputs, **kwargs) if isinstance(inputs, dict) else layer(*inputs, **kwargs)


def _as_numpy(outputs):
    return keras.tree.map_structure(lambda tensor: np.asarray(tensor), outputs)


def _assert_same(actual, expected, atol=0.0):
    keras.tree.assert_same_structure(actual, expected)
    for got, want in zip(keras.tree.flatten(actual), keras.tree.flatten(expected), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=atol, rtol=0)


def check_layer(layer: keras.layers.Layer, inputs, tmp_path: Path, expected_shapes=None):
    """Checks a layer or model end to end and returns its eager outputs.

    Args:
        layer: the layer under test (freshly constructed).
        inputs: a tuple of positional numpy inputs, or a dict for models taking a dict.
        tmp_path: where the `.keras` file goes.
        expected_shapes: the output shape, or a structure of shapes matching the outputs.
    """
    eager_outputs = _as_numpy(_call(layer, inputs))
    if expected_shapes is not None:
        shapes = keras.tree.map_structure(lambda array: array.shape, eager_outputs)
        assert shapes == expected_shapes, f"{shapes} != {expected_shapes}"

    # Symbolic call inside a functional model gives the same numbers.
    symbolic_inputs = _symbolic_inputs(inputs)
    model = keras.Model(symbolic_inputs, _call(layer, symbolic_inputs))
    model_inputs = inputs if isinstance(inputs, dict) else list(inputs)
    _assert_same(_as_numpy(model(model_inputs)), eager_outputs)

    # get_config / from_config builds the same layer.
    config = layer.get_config()
    clone = layer.__class__.from_config(config)
    _call(clone, inputs)
    clone.set_weights(layer.get_weights())
    assert clone.get_config() == config
    _assert_same(_as_numpy(_call(clone, inputs)), eager_outputs)

    # .keras save and load give identical outputs.
    path = tmp_path / f"{layer.name}.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    _assert_same(_as_numpy(restored(model_inputs)), eager_outputs)

    # One training step runs, gives a finite loss and moves the weights (of the restored copy,
    # so that the layer under test keeps its weights).
    first_float_output = next(
        tensor for tensor in keras.tree.flatten(restored.outputs) if "float" in str(tensor.dtype)
    )
    trainable = keras.Model(restored.inputs, first_float_output)
    trainable.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    before = [np.array(weight) for weight in trainable.trainable_weights]
    target = np.ones(first_float_output.shape[1:], "float32")[None]
    target = np.repeat(target, next(iter(keras.tree.flatten(inputs))).shape[0], axis=0)
    history = trainable.fit(model_inputs, target, epochs=1, batch_size=len(target), verbose=0)
    assert np.isfinite(history.history["loss"][0])
    after = [np.array(weight) for weight in trainable.trainable_weights]
    assert any(not np.array_equal(b, a) for b, a in zip(before, after, strict=True))
    return eager_outputs
