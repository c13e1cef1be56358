import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers.dropout import FastDropout


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_mask_statistics_and_gradient(dtype):
    layer = FastDropout(0.1, seed=3, dtype=dtype)
    inputs = tf.ones((1000, 1000), dtype)
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        outputs = layer(inputs, training=True)
    assert outputs.dtype == dtype
    dropped = float(tf.reduce_mean(tf.cast(outputs == 0, "float32")))
    assert abs(dropped - 0.1) < 0.002  # 10 standard deviations over 1M draws
    kept_values = set(np.unique(tf.cast(outputs, "float32").numpy())) - {0.0}
    assert len(kept_values) == 1 and abs(kept_values.pop() - 1 / 0.9) < 1e-2
    # The gradient is the mask itself.
    np.testing.assert_array_equal(tape.gradient(outputs, inputs).numpy(), outputs.numpy())


def test_new_mask_per_call_and_reproducible_from_the_seed():
    inputs = tf.ones((64, 64))
    first, second = FastDropout(0.5, seed=7), FastDropout(0.5, seed=7)
    masks = [first(inputs, training=True).numpy() for _ in range(2)]
    assert not np.array_equal(masks[0], masks[1])
    np.testing.assert_array_equal(second(inputs, training=True).numpy(), masks[0])


def test_inference_and_rate_zero_are_the_identity():
    inputs = tf.random.normal((3, 5))
    np.testing.assert_array_equal(FastDropout(0.3)(inputs).numpy(), inputs.numpy())
    np.testing.assert_array_equal(FastDropout(0.0)(inputs, training=True).numpy(), inputs.numpy())


def test_config_is_keras_dropout_config():
    layer = FastDropout(0.2, seed=1, name="dropout")
    config = layer.get_config()
    assert config == keras.layers.Dropout(0.2, seed=1, name="dropout").get_config()
    assert FastDropout.from_config(config).get_config() == config
