"""ELECTRA's objective: the draws follow the generator's distribution (compiled or not), land
only at the masked positions, label what they changed; the discriminator's loss and accuracy."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.models.replaced_token_objective import (
    SAMPLING_BLOCK,
    ReplacedTokenAccuracy,
    ReplacedTokenLoss,
    ReplacedTokenSampler,
    sample_from_logits,
)

VOCABULARY = 30522
DRAWS = 4000


def _frequencies(draws: np.ndarray, classes: int) -> np.ndarray:
    return np.bincount(draws.ravel(), minlength=classes) / draws.size


@pytest.fixture(scope="module")
def distribution() -> np.ndarray:
    """A vocabulary-sized softmax with its mass on entries across several sampling blocks,
    the last (partial) block included."""
    rng = np.random.default_rng(0)
    logits = rng.normal(scale=1.0, size=VOCABULARY).astype("float32") - 12.0
    favoured = [5, SAMPLING_BLOCK - 1, SAMPLING_BLOCK, 7 * SAMPLING_BLOCK + 3, VOCABULARY - 1]
    logits[favoured] = [3.0, 2.0, 2.5, 1.0, 2.2]
    return logits


@pytest.mark.parametrize("jit_compile", [False, True])
def test_draws_follow_the_softmax_with_and_without_xla(distribution, jit_compile):
    logits = tf.tile(tf.constant(distribution)[None, None], [DRAWS // 40, 40, 1])
    draw = tf.function(sample_from_logits, jit_compile=jit_compile)
    draws = draw(logits, tf.constant([3, 4])).numpy()
    assert draws.shape == (DRAWS // 40, 40) and draws.dtype == np.int32
    probabilities = tf.nn.softmax(distribution).numpy()
    frequencies = _frequencies(draws, VOCABULARY)
    # Each entry's frequency within 4 standard errors of its probability.
    tolerance = 4 * np.sqrt(probabilities * (1 - probabilities) / DRAWS) + 1e-3
    assert (np.abs(frequencies - probabilities) <= tolerance).all()
    assert frequencies[VOCABULARY - 1] > 0.05  # the partial last block is drawn from


def test_the_same_seed_draws_the_same_tokens_compiled_or_not(distribution):
    logits = tf.tile(tf.constant(distribution)[None], [64, 1])
    seed = tf.constant([1, 9])
    plain = sample_from_logits(logits, seed)
    compiled = tf.function(sample_from_logits, jit_compile=True)(logits, seed)
    np.testing.assert_array_equal(plain, compiled)
    assert not np.array_equal(plain, sample_from_logits(logits, tf.constant([2, 9])))


def test_no_gradient_flows_through_a_draw(distribution):
    logits = tf.Variable(tf.constant(distribution)[None])
    with tf.GradientTape() as tape:
        draws = sample_from_logits(logits, tf.constant([0, 1]))
        total = tf.reduce_sum(tf.cast(draws, tf.float32))
    assert tape.gradient(total, logits) is None


def test_sampler_replaces_the_masked_positions_and_labels_the_changes():
    sequence = np.array([[2, 4, 9, 4, 3, 0], [2, 8, 4, 3, 0, 0]], "int32")
    positions = np.array([[1, 2, 3], [2, 1, 0]], "int32")  # row 1: one real prediction
    originals = np.array([[11, 9, 12], [13, 8, 0]], "int32")
    weights = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]], "float32")
    # A generator sure of 11, then of 9 (the original: kept), then of 7, then of 6.
    logits = np.full((2, 3, 20), -50.0, "float32")
    for row, column, token in [(0, 0, 11), (0, 1, 9), (0, 2, 7), (1, 0, 6), (1, 1, 5)]:
        logits[row, column, token] = 50.0
    replaced_ids, labels = ReplacedTokenSampler(seed=0)(
        logits, sequence, positions, originals, weights
    )
    # The [MASK]s and the kept token are replaced; padding predictions change nothing.
    assert replaced_ids.numpy().tolist() == [[2, 11, 9, 7, 3, 0], [2, 8, 6, 3, 0, 0]]
    assert labels.numpy().tolist() == [[0, 0, 0, 1, 0, 0], [0, 0, 1, 0, 0, 0]]


def test_sampler_draws_anew_each_call_and_the_same_sequence_from_its_seed(tmp_path):
    logits = np.zeros((8, 20, 50), "float32")
    positions = np.tile(np.arange(1, 21, dtype="int32"), (8, 1))
    originals, weights = np.ones((8, 20), "int32"), np.ones((8, 20), "float32")
    sequence = np.full((8, 24), 4, "int32")
    inputs = [keras.Input((20, 50)), keras.Input((24,), dtype="int32")]
    inputs += [keras.Input((20,), dtype="int32") for _ in range(2)]
    inputs += [keras.Input((20,))]
    model = keras.Model(inputs, ReplacedTokenSampler(seed=3)(*inputs)[0])
    batch = [logits, sequence, positions, originals, weights]
    first, second = model(batch), model(batch)
    assert not np.array_equal(first, second)
    model.save(tmp_path / "sampler.keras")
    restored = keras.saving.load_model(tmp_path / "sampler.keras")
    np.testing.assert_array_equal(restored(batch), first)


def test_loss_is_the_mean_sigmoid_cross_entropy_over_real_tokens():
    labels = np.array([[1.0, 0.0, 1.0, 0.0]], "float32")
    logits = np.array([[2.0, -1.0, -0.5, 4.0]], "float32")
    mask = np.array([[1.0, 1.0, 1.0, 0.0]], "float32")
    expected = keras.losses.BinaryCrossentropy(from_logits=True)(
        labels[:, :3, None], logits[:, :3, None]
    )
    value = ReplacedTokenLoss()(labels, logits, sample_weight=mask)
    np.testing.assert_allclose(float(value), float(expected), rtol=1e-6)
    accuracy = ReplacedTokenAccuracy()
    accuracy.update_state(labels, logits, sample_weight=mask)
    assert float(accuracy.result()) == pytest.approx(2 / 3)
    for item in (ReplacedTokenLoss(), ReplacedTokenAccuracy()):
        assert type(item).from_config(item.get_config()).get_config() == item.get_config()
