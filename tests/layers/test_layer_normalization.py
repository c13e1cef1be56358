import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers.layer_normalization import (
    FastLayerNormalization,
    element_wise_layer_normalization,
    fused_layer_normalization,
    layer_normalization,
)


def output_and_gradients(layer, inputs):
    upstream = tf.random.stateless_normal(inputs.shape, seed=[0, 1])
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        outputs = layer(inputs)
        loss = tf.reduce_sum(tf.cast(outputs, "float32") * upstream)
    gradients = tape.gradient(loss, [inputs, layer.gamma, layer.beta])
    return [tf.cast(value, "float32").numpy() for value in [outputs, *gradients]]


@pytest.mark.parametrize("dtype, tolerance", [("float32", 2e-5), ("mixed_bfloat16", 2e-2)])
def test_values_and_gradients_match_keras(dtype, tolerance):
    inputs = tf.random.stateless_normal((4, 7, 32), seed=[1, 2]) * 3.0 + 1.0
    ours = FastLayerNormalization(epsilon=1e-12, dtype=dtype)
    reference = keras.layers.LayerNormalization(epsilon=1e-12, dtype=dtype)
    for layer in (ours, reference):
        layer.build(inputs.shape)
        layer.set_weights([np.linspace(0.5, 1.5, 32), np.linspace(-0.2, 0.2, 32)])
    actual, expected = output_and_gradients(ours, inputs), output_and_gradients(reference, inputs)
    assert ours(inputs).dtype == reference(inputs).dtype
    for name, a, e in zip(("outputs", "inputs", "gamma", "beta"), actual, expected, strict=True):
        scale = max(1.0, float(np.abs(e).max()))
        np.testing.assert_allclose(a, e, atol=tolerance * scale, err_msg=name)


def test_other_axes_fall_back_to_keras():
    inputs = tf.random.stateless_normal((3, 4, 5), seed=[3, 4])
    ours = FastLayerNormalization(axis=1)
    reference = keras.layers.LayerNormalization(axis=1)
    np.testing.assert_allclose(ours(inputs).numpy(), reference(inputs).numpy(), atol=1e-6)


@pytest.mark.parametrize("dtype, tolerance", [("float32", 1e-5), ("bfloat16", 2e-2)])
@pytest.mark.parametrize("rows", [8, 400])
@pytest.mark.parametrize("form", [fused_layer_normalization, element_wise_layer_normalization])
def test_the_serving_forms_have_the_training_forms_values(dtype, tolerance, rows, form):
    inputs = tf.cast(
        tf.random.stateless_normal((2, rows // 2, 384), seed=[5, 6]) * 3.0 + 1.0, dtype
    )
    gamma = tf.cast(tf.linspace(0.5, 1.5, 384), dtype)
    beta = tf.cast(tf.linspace(-0.2, 0.2, 384), dtype)
    expected = layer_normalization(inputs, gamma, beta, 1e-12)
    static = form(inputs, gamma, beta, 1e-12)
    dynamic_function = tf.function(
        lambda x: form(x, gamma, beta, 1e-12),
        input_signature=[tf.TensorSpec([None, None, 384], dtype)],
    )
    for actual in (static, dynamic_function(inputs)):
        assert actual.dtype == expected.dtype
        np.testing.assert_allclose(
            tf.cast(actual, "float32").numpy(),
            tf.cast(expected, "float32").numpy(),
            atol=tolerance * 4,
        )
