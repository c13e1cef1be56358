"""What keras_bert's functional models (encoder, task models) save beside their own settings."""

from __future__ import annotations

from typing import Any

import keras


def set_dtype_policy(model: keras.Model, dtype: Any) -> None:
    """Gives a functional model the dtype policy its layers were built with.

    `keras.Model(inputs, outputs, dtype=...)` drops `dtype`, so a model built under
    `mixed_bfloat16` would report (and save) `float32` and reload as float32.
    """
    if dtype is not None:
        model.dtype_policy = keras.dtype_policies.get(dtype)


def functional_base_config(model: keras.Model) -> dict[str, Any]:
    """What `keras.layers.Layer.get_config` saves (name, trainable, dtype policy), for models
    built as functional graphs, whose own `get_config` would describe the graph instead."""
    return keras.layers.Layer.get_config(model)
