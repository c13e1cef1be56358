import gc

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.training.fused_adamw import FusedAdamW
from keras_bert.training.optimization import NO_WEIGHT_DECAY_NAMES


def train(optimizer, steps=5, loss_scale=1.0):
    """A few updates of a kernel (decayed), a bias (not decayed) and an embedding table that
    gets sparse (IndexedSlices) gradients, with gradients of about `loss_scale`; returns the
    final values."""
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
            loss = loss_scale * tf.reduce_sum(tf.square(outputs - 1.0))
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


class PyTorchAdamW:
    """PyTorch's `torch.optim.AdamW` step (its documented algorithm) in numpy, for reference:
    decay `w -= lr * wd * w`, then `w -= lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)`."""

    def __init__(self, learning_rate, weight_decay, epsilon, beta_1=0.9, beta_2=0.999):
        self.learning_rate, self.weight_decay, self.epsilon = learning_rate, weight_decay, epsilon
        self.beta_1, self.beta_2 = beta_1, beta_2
        self.moments, self.step, self.excluded = {}, 0, []

    def exclude_from_weight_decay(self, var_names):
        self.excluded = var_names

    def apply(self, gradients, variables):
        self.step += 1
        for gradient, variable in zip(gradients, variables, strict=True):
            gradient = np.asarray(tf.convert_to_tensor(gradient))
            weights = variable.numpy()
            if not any(name in variable.name for name in self.excluded):
                weights = weights - self.learning_rate * self.weight_decay * weights
            m, v = self.moments.get(variable.name, (0.0, 0.0))
            m = self.beta_1 * m + (1 - self.beta_1) * gradient
            v = self.beta_2 * v + (1 - self.beta_2) * gradient**2
            self.moments[variable.name] = (m, v)
            corrected_root = np.sqrt(v / (1 - self.beta_2**self.step))
            step_size = self.learning_rate / (1 - self.beta_1**self.step)
            variable.assign(weights - step_size * m / (corrected_root + self.epsilon))


def test_epsilon_after_bias_correction_matches_pytorch_adamw():
    # Gradients of ~1e-7, where the two placements of epsilon differ most: Keras' own places
    # it before the bias correction and moves these weights about 30 times less at step 1.
    arguments = dict(learning_rate=0.01, weight_decay=0.1, epsilon=1e-8)
    expected = train(PyTorchAdamW(**arguments), loss_scale=1e-7)
    actual = train(FusedAdamW(epsilon_after_bias_correction=True, **arguments), loss_scale=1e-7)
    keras_placement = train(FusedAdamW(**arguments), loss_scale=1e-7)
    for a, e, k in zip(actual, expected, keras_placement, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
        assert np.abs(k - e).max() > 1e-3


def test_epsilon_after_bias_correction_survives_serialization():
    optimizer = FusedAdamW(learning_rate=0.002, epsilon_after_bias_correction=True)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert restored.epsilon_after_bias_correction
    with pytest.raises(ValueError, match="amsgrad"):
        FusedAdamW(epsilon_after_bias_correction=True, amsgrad=True)


def test_sparse_updates_move_the_batch_s_rows_as_adamw_and_leave_the_others():
    """`sparse_updates=True`: the rows a sparse gradient has get AdamW on their own (a row
    given twice sums its gradients, as the dense gradient would: clipped, as the recipe does,
    FusedAdamW's dense update sums them too), the others keep their weights; dense variables
    are updated as ever."""
    arguments = dict(learning_rate=0.01, weight_decay=0.1, epsilon=1e-6, global_clipnorm=1.0)
    dense = train(FusedAdamW(**arguments), steps=1)
    sparse = train(FusedAdamW(**arguments, sparse_updates=True), steps=1)
    initial = train(FusedAdamW(**arguments), steps=0)
    for a, e in zip(sparse[:2], dense[:2], strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-6)
    # Step 1 reads rows 0 and 3 (twice): those equal dense AdamW's first step (moments start
    # at zero, so a missed row moves only by its decay there); the rest are untouched.
    read = [0, 3]
    np.testing.assert_allclose(sparse[2][read], dense[2][read], rtol=1e-6, atol=1e-6)
    untouched = [row for row in range(10) if row not in read]
    np.testing.assert_array_equal(sparse[2][untouched], initial[2][untouched])
    assert not np.allclose(dense[2][untouched], initial[2][untouched])  # decayed


def test_sparse_updates_survive_serialization():
    optimizer = FusedAdamW(learning_rate=0.002, weight_decay=0.01, sparse_updates=True)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert restored.sparse_updates
