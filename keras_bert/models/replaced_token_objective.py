"""ELECTRA's replaced-token-detection objective: replacements sampled from a generator's
masked-LM distribution, and the discriminator's per-token loss and accuracy.

A draw from a softmax over a vocabulary of tens of thousands costs more than the rest of the
objective if done the usual ways on a CPU: the Gumbel-max trick draws a random number per
vocabulary entry, `tf.random.stateless_categorical` runs a sequential cumulative sum per row;
either made ELECTRA's train step 1.6-2.4 times the masked LM's (the step without drawing: 1.01
times). `sample_from_logits` inverts the cumulative distribution in two levels instead (blocks of
`SAMPLING_BLOCK` entries, then the entries of the block drawn), one uniform number per draw, in a
function XLA compiles whether or not the step is compiled (so a step with and without
`jit_compile` draws the same tokens, as TPUs do): one fused pass of `exp` over the logits.
No gradient flows through the draw, as in the paper: the generator learns from its masked-LM
loss only.
"""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

# Vocabulary entries per block of the two-level draw (the second level reads one block a row).
SAMPLING_BLOCK = 128


def _prefix_sums(values: tf.Tensor) -> tf.Tensor:
    """Inclusive cumulative sums along the last (short) axis, as one matmul: XLA's CPU
    cumulative sum is a sequential window."""
    size = values.shape[-1]
    return tf.matmul(values, tf.linalg.band_part(tf.ones([size, size], values.dtype), 0, -1))


@tf.function(jit_compile=True, autograph=False)
def _draw(logits: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    """One draw per row of float32 `[rows, classes]` logits (see `sample_from_logits`)."""
    rows, classes = tf.shape(logits)[0], logits.shape[-1]
    full_blocks, tail = divmod(classes, SAMPLING_BLOCK)
    # Relative weights, the largest 1: exp(logit - max).
    largest = tf.reduce_max(logits, axis=-1, keepdims=True)
    sums = []
    if full_blocks:
        head = logits[:, : full_blocks * SAMPLING_BLOCK] - largest
        blocks = tf.reshape(head, [rows, full_blocks, SAMPLING_BLOCK])
        sums.append(tf.reduce_sum(tf.exp(blocks), axis=-1))
    if tail:
        sums.append(tf.reduce_sum(tf.exp(logits[:, -tail:] - largest), axis=-1, keepdims=True))
    block_sums = tf.concat(sums, axis=-1)
    cumulative = _prefix_sums(block_sums)
    target = tf.random.stateless_uniform([rows, 1], seed) * cumulative[:, -1:]
    # The block whose cumulative weight first exceeds the target, then the entry within it.
    last_block = block_sums.shape[-1] - 1
    block = tf.minimum(tf.reduce_sum(tf.cast(cumulative <= target, tf.int32), -1), last_block)
    before = tf.gather(cumulative, block, batch_dims=1) - tf.gather(block_sums, block, batch_dims=1)
    entries = block[:, None] * SAMPLING_BLOCK + tf.range(SAMPLING_BLOCK)[None, :]
    in_vocabulary = entries < classes
    entry_logits = tf.gather(logits, tf.minimum(entries, classes - 1), batch_dims=1)
    weights = tf.where(in_vocabulary, tf.exp(entry_logits - largest), 0.0)
    below = tf.reduce_sum(tf.cast(_prefix_sums(weights) <= target - before[:, None], tf.int32), -1)
    valid = tf.reduce_sum(tf.cast(in_vocabulary, tf.int32), -1)
    return block * SAMPLING_BLOCK + tf.minimum(below, valid - 1)


def sample_from_logits(logits: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    """One draw from `softmax(logits)` along the last axis: int32 `[...]` of float `[...,
    classes]`, a deterministic function of `seed` (int `[2]`), without gradient; the same
    tokens in a step compiled with XLA and in one that is not.

    Example:
    >>> logits = tf.math.log(tf.constant([[0.7, 0.2, 0.1] + [0.0] * 200]))
    >>> draws = sample_from_logits(tf.tile(logits, [20000, 1]), tf.constant([1, 2]))
    >>> [round(float(tf.reduce_mean(tf.cast(draws == k, tf.float32))), 2) for k in range(4)]
    [0.7, 0.2, 0.1, 0.0]
    """
    logits = tf.stop_gradient(tf.cast(logits, tf.float32))
    shape = tf.shape(logits)
    flat = tf.reshape(logits, [-1, logits.shape[-1]])
    return tf.reshape(_draw(flat, tf.cast(seed, tf.int32)), shape[:-1])


@keras.saving.register_keras_serializable(package="keras_bert")
class ReplacedTokenSampler(keras.layers.Layer):
    """Puts a generator's samples at the masked positions: the discriminator's input and its
    labels.

    Each masked position gets a token drawn from the generator's distribution there (the
    `[MASK]`s and the masked tokens left as they were alike, as ELECTRA does); a position is
    labelled replaced where the draw differs from the original token (a right guess counts as
    original). Padding predictions (weight 0) change nothing. New draws on every call, from the
    layer's seed generator (as dropout's: a layer built with the same seed draws the same
    sequence).

    Args:
        seed: the seed of the draws (default: from Keras' global seed).

    Call args:
        masked_lm_logits: float `[batch, predictions, vocabulary]`, the generator's.
        input_word_ids: int `[batch, sequence]`, the masked input.
        masked_lm_positions: int `[batch, predictions]`.
        masked_lm_ids: int `[batch, predictions]`, the original tokens there.
        masked_lm_weights: float `[batch, predictions]`, 1.0 for real predictions.

    Returns:
        `(replaced_word_ids, replaced)`: int32 `[batch, sequence]` ids with the samples in,
        and float32 `[batch, sequence]` labels, 1.0 where a token was replaced.

    Example:
    >>> import numpy as np
    >>> logits = np.full((1, 2, 6), -30.0, "float32")
    >>> logits[0, 0, 5] = logits[0, 1, 3] = 30.0  # the generator is sure: 5, then 3
    >>> ids, replaced = ReplacedTokenSampler(seed=0)(
    ...     logits, np.array([[2, 4, 4, 3]]), np.array([[1, 2]]), np.array([[5, 5]]),
    ...     np.array([[1.0, 1.0]]))
    >>> ids.numpy().tolist(), replaced.numpy().tolist()
    ([[2, 5, 3, 3]], [[0.0, 0.0, 1.0, 0.0]])
    """

    def __init__(self, seed: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed, name="seed_generator")

    def call(
        self,
        masked_lm_logits,
        input_word_ids,
        masked_lm_positions,
        masked_lm_ids,
        masked_lm_weights,
    ):
        sampled = sample_from_logits(masked_lm_logits, self.seed_generator.next())
        input_word_ids = ops.cast(input_word_ids, "int32")
        is_prediction = ops.cast(masked_lm_weights, "float32") > 0
        replaced = is_prediction & (sampled != ops.cast(masked_lm_ids, "int32"))
        # [batch, predictions, sequence]: where each real prediction sits (one-hot rows; no
        # scatter, so the shapes stay static).
        sequence = ops.arange(ops.shape(input_word_ids)[1], dtype="int32")
        at = (ops.cast(masked_lm_positions, "int32")[:, :, None] == sequence[None, None, :]) & (
            is_prediction[:, :, None]
        )
        predicted = ops.any(at, axis=1)
        samples = ops.sum(ops.where(at, sampled[:, :, None], 0), axis=1)
        replaced_word_ids = ops.where(predicted, samples, input_word_ids)
        labels = ops.cast(ops.any(at & replaced[:, :, None], axis=1), "float32")
        return replaced_word_ids, labels

    def compute_output_spec(self, masked_lm_logits, input_word_ids, *args):
        shape = input_word_ids.shape
        return (
            keras.KerasTensor(shape, dtype="int32"),
            keras.KerasTensor(shape, dtype="float32"),
        )

    def get_config(self):
        return {**super().get_config(), "seed": self.seed}


def replaced_token_cross_entropy(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    """Sigmoid cross-entropy of float32 logits against 0/1 labels, per token.

    Example:
    >>> values = replaced_token_cross_entropy(tf.constant([1.0, 0.0]), tf.constant([0.0, 2.0]))
    >>> [round(float(value), 4) for value in values]
    [0.6931, 2.1269]
    """
    labels = tf.cast(labels, tf.float32)
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=tf.cast(logits, "float32"))


@keras.saving.register_keras_serializable(package="keras_bert")
class ReplacedTokenLoss(keras.losses.Loss):
    """The discriminator's loss: sigmoid cross-entropy per token, averaged over the sample
    weights (pass the `input_mask`: every real token counts, padding none).

    Example:
    >>> loss = ReplacedTokenLoss()
    >>> round(float(loss([[1.0, 0.0, 0.0]], [[0.0, 2.0, 9.0]], sample_weight=[[1, 1, 0]])), 4)
    1.41
    """

    def __init__(
        self, name: str = "replaced_token_loss", reduction="mean_with_sample_weight", **kwargs
    ):
        super().__init__(name=name, reduction=reduction, **kwargs)

    def call(self, y_true, y_pred):
        return replaced_token_cross_entropy(y_true, y_pred)

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}


def replaced_token_matches(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    """1.0 where a positive logit says replaced and the label agrees (or both say original).

    Example:
    >>> replaced_token_matches([1.0, 0.0, 1.0], tf.constant([0.5, 0.5, -1.0])).numpy()
    array([1., 0., 0.], dtype=float32)
    """
    predicted = tf.cast(logits, tf.float32) > 0
    return tf.cast(predicted == (tf.cast(labels, tf.float32) > 0.5), tf.float32)


@keras.saving.register_keras_serializable(package="keras_bert")
class ReplacedTokenAccuracy(keras.metrics.MeanMetricWrapper):
    """Share of tokens the discriminator classifies right (replaced where its logit is
    positive); pass the `input_mask` as sample weights.

    Example:
    >>> accuracy = ReplacedTokenAccuracy()
    >>> accuracy.update_state([[1.0, 0.0]], [[3.0, 1.0]])
    >>> float(accuracy.result())
    0.5
    """

    def __init__(self, name: str = "accuracy", dtype=None):
        super().__init__(replaced_token_matches, name=name, dtype=dtype)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}
