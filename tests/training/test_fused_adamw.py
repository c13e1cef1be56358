import gc

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.training.fused_adamw import FusedAdamW
from keras_bert.training.optimization import NO_WEIGHT_DECAY_NAMES


def train(optimizer, steps=5):
    """A few updates of a kernel (decayed), a bias (not decayed) and an embedding table that
    gets sparse (IndexedSlices) gradients; returns the final values."""
    rng = np.random.default_rng(0)
    kernel = keras.Variable(rng.normal(size=(6, 4)).astype("float32"), name="kernel")
    bias = keras.Variable(rng.normal(size=(4,)).astype("float32"), name="bias")
    table = keras.Variable(rng.normal(size=(10, 4)).astype("float32"), name="table")
    optimizer.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY_NAMES))
    for step in range(steps):
        inputs = tf.constant(rng.normal(size=(3, 6)).astype("float32"))
        ids = tf.constant([step % 10, 3, 3])
        with tf.GradientTape() as tape:
            outputs = inputs @ kernel + bias + tf.gather(table, ids)
            loss = tf.reduce_sum(tf.square(outputs - 1.0))
        gradients = tape.gradient(loss, [kernel, bias, table])
        assert isinstance(gradients[2], tf.IndexedSlices)
        optimizer.apply(gradients, [kernel, bias, table])
    return [variable.numpy() for variable in (kernel, bias, table)]


@pytest.mark.parametrize("clip", [None, 1.0])
def test_matches_keras_adamw(clip):
    arguments = dict(learning_rate=0.01, weight_decay=0.1, epsilon=1e-6, global_clipnorm=clip)
    expected = train(keras.optimizers.AdamW(**arguments))
    actual = train(FusedAdamW(**arguments))
    for a, e in zip(actual, expected, strict=True):
        # Float32 rounding of five updates of ~1e-2 each (the fused kernel orders ops its own way).
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)


def test_serializes_like_adamw():
    optimizer = FusedAdamW(learning_rate=0.002, weight_decay=0.01)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert type(restored) is FusedAdamW
    assert restored.get_config() == optimizer.get_config()


def test_trains_a_new_model_after_an_earlier_one_was_deleted():
    # The compiled update is shared by all optimizers: it must not hold on to the variables of
    # the model it was first traced with.
    for seed in range(3):
        keras.utils.set_random_seed(seed)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        model.compile(optimizer=FusedAdamW(learning_rate=0.1, global_clipnorm=1.0), loss="mse")
        before = model.get_weights()[0].copy()
        model.train_on_batch(np.ones((4, 3), "float32"), np.zeros((4, 2), "float32"))
        assert not np.allclose(model.get_weights()[0], before)
        del model
        gc.collect()
