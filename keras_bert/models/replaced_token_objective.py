"""ELECTRA's replaced-token-detection objective: replacements sampled from a generator's
masked-LM distribution, and the discriminator's per-token loss and accuracy.

The sample is drawn by the Gumbel-max trick (the argmax of the logits plus Gumbel noise is a
draw from their softmax): element-wise ops and one reduction on static shapes, so it compiles
with XLA (TPUs), and the stateless random numbers come out alike with and without it. No
gradient flows through the draw, as in the paper: the generator learns from its masked-LM loss
only.
"""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops


def sample_from_logits(logits: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    """One draw from `softmax(logits)` along the last axis: int32 `[...]` of float `[...,
    classes]`, a deterministic function of `seed` (int `[2]`), without gradient.

    Example:
    >>> logits = tf.math.log(tf.constant([[0.7, 0.2, 0.1]]))
    >>> draws = sample_from_logits(tf.tile(logits, [20000, 1]), tf.constant([1, 2]))
    >>> [round(float(tf.reduce_mean(tf.cast(draws == k, tf.float32))), 2) for k in range(3)]
    [0.7, 0.2, 0.1]
    """
    logits = tf.stop_gradient(tf.cast(logits, tf.float32))
    uniform = tf.random.stateless_uniform(tf.shape(logits), tf.cast(seed, tf.int32))
    # -log(-log(u)): Gumbel noise; u = 0 gives -inf (never drawn), never NaN.
    gumbel = -tf.math.log(-tf.math.log(uniform))
    return tf.argmax(logits + gumbel, axis=-1, output_type=tf.int32)


@keras.saving.register_keras_serializable(package="keras_bert")
class ReplacedTokenSampler(keras.layers.Layer):
    """Puts a generator's samples at the masked positions: the discriminator's input and its
    labels.

    Each masked position gets a token drawn from the generator's distribution there (the
    `[MASK]`s and the masked tokens left as they were alike, as ELECTRA does); a position is
    labelled replaced where the draw differs from the original token (a right guess counts as
    original). Padding predictions (weight 0) change nothing. New draws on every call, from the
    layer's seed generator (saved with the model, so a resumed run continues its sequence).

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
