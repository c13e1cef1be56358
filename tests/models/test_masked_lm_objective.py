import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.models.masked_lm_objective import (
    MaskedLMAccuracy,
    MaskedLMLoss,
    sparse_softmax_cross_entropy,
)

VOCABULARY = 30522


@pytest.fixture(scope="module")
def predictions():
    rng = np.random.default_rng(0)
    logits = tf.constant(rng.normal(scale=4.0, size=(4, 20, VOCABULARY)).astype("float32"))
    labels = tf.constant(rng.integers(0, VOCABULARY, (4, 20)).astype("int32"))
    weights = tf.constant((rng.random((4, 20)) < 0.8).astype("float32"))
    return logits, labels, weights


def loss_and_gradient(loss, logits, labels, weights):
    with tf.GradientTape() as tape:
        tape.watch(logits)
        value = loss(labels, logits, sample_weight=weights)
    return float(value), tape.gradient(value, logits).numpy()


def test_loss_and_gradient_match_keras(predictions):
    reference = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight"
    )
    expected_value, expected_gradient = loss_and_gradient(reference, *predictions)
    value, gradient = loss_and_gradient(MaskedLMLoss(), *predictions)
    np.testing.assert_allclose(value, expected_value, rtol=1e-6)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-5, atol=1e-12)
    # Predictions with weight 0 get no gradient at all.
    assert not gradient[predictions[2].numpy() == 0].any()


def test_loss_saturates_where_the_label_probability_underflows():
    logits = tf.constant([[0.0, -200.0], [0.0, -50.0]])
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = sparse_softmax_cross_entropy(tf.constant([1, 1]), logits)
    np.testing.assert_allclose(loss.numpy(), [-np.log(np.finfo("float32").tiny), 50.0], rtol=1e-6)
    # The gradient is still softmax - one-hot.
    np.testing.assert_allclose(tape.gradient(loss, logits).numpy(), [[1, -1], [1, -1]], atol=1e-6)


def test_accuracy_matches_keras(predictions):
    logits, labels, weights = predictions
    # Make about half of the predictions correct.
    labels = tf.where(weights > 0.5, tf.argmax(logits, axis=-1, output_type="int32"), labels)
    reference = keras.metrics.SparseCategoricalAccuracy()
    reference.update_state(labels, logits, sample_weight=weights)
    accuracy = MaskedLMAccuracy()
    accuracy.update_state(labels, logits, sample_weight=weights)
    assert 0.5 < float(accuracy.result()) == pytest.approx(float(reference.result()))


def test_loss_and_metric_serialize():
    for item in (MaskedLMLoss(), MaskedLMAccuracy(name="mlm_accuracy")):
        restored = type(item).from_config(item.get_config())
        assert restored.get_config() == item.get_config()
