"""One precision check for every layer and model (after keras-hub's `run_precision_test`):
under `float32`, `mixed_bfloat16` and `mixed_float16` the weights stay float32, outputs come
in the policy's compute dtype (or float32 where a layer promises it), match float32 within the
dtype's precision, and the policy survives a `.keras` round trip."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np

POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")
# Relative to the outputs' scale: bfloat16 keeps 8 mantissa bits, float16 11.
TOLERANCES = {"float32": 1e-6, "mixed_bfloat16": 6e-2, "mixed_float16": 1e-2}


def _call(layer, inputs):
    return layer(inputs) if isinstance(inputs, dict) else layer(*inputs)


def _float_outputs(outputs) -> list:
    return [tensor for tensor in keras.tree.flatten(outputs) if "float" in str(tensor.dtype)]


def check_precision(build: Callable[[str], keras.layers.Layer], inputs, tmp_path: Path) -> None:
    """Runs a layer or model built by `build(policy)` under every policy.

    Args:
        build: makes a fresh layer with `dtype=policy` (dropout off, so outputs compare).
        inputs: a tuple of positional numpy inputs, or a dict for models taking a dict.
        tmp_path: where the `.keras` files go.
    """
    reference = build("float32")
    reference_outputs = _float_outputs(_call(reference, inputs))
    for policy in POLICIES:
        layer = build(policy)
        _call(layer, inputs)
        layer.set_weights(reference.get_weights())
        assert layer.dtype_policy.name == policy
        assert all(weight.dtype == "float32" for weight in layer.weights), policy
        outputs = _float_outputs(_call(layer, inputs))
        compute_dtype = keras.dtype_policies.get(policy).compute_dtype
        for output, expected in zip(outputs, reference_outputs, strict=True):
            dtype = keras.backend.standardize_dtype(output.dtype)
            assert dtype in (compute_dtype, "float32"), (policy, dtype)
            actual, expected = np.asarray(output, "float32"), np.asarray(expected)
            scale = 1.0 + np.abs(expected).max()
            assert np.abs(actual - expected).max() <= TOLERANCES[policy] * scale, policy

        # The policy survives `.keras`: models save themselves, layers inside a model.
        path = tmp_path / f"{layer.name}_{policy}.keras"
        if isinstance(layer, keras.Model):
            layer.save(path)
            restored = keras.saving.load_model(path)
        else:
            symbolic = keras.tree.map_structure(
                lambda value: keras.Input(value.shape[1:], dtype=str(value.dtype)), inputs
            )
            keras.Model(symbolic, _call(layer, symbolic)).save(path)
            restored = keras.saving.load_model(path).get_layer(layer.name)
        assert restored.dtype_policy.name == policy
        assert {sub.dtype_policy.name for sub in restored._flatten_layers()} <= {policy, "float32"}
