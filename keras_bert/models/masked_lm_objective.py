"""The masked-LM objective over a whole vocabulary: cross-entropy and top-1 accuracy.

Both are written for logits of `[..., vocabulary]` with tens of thousands of classes, where the
generic Keras versions spend more time than the decoder matmul that produced the logits: TF's
fused `SparseSoftmaxCrossEntropyWithLogits` kernel is several times slower on CPU than oneDNN's
softmax, and `argmax` is a slow single pass. Here the loss takes the softmax once and writes its
gradient (softmax - one-hot) by hand; accuracy compares the label's logit with the row maximum.
"""

from __future__ import annotations

import keras
import tensorflow as tf

# The loss saturates here (-log of float32's smallest normal number, ~87.3 nats) when the
# label's probability underflows; the gradient stays exact.
SMALLEST_PROBABILITY = 1.1754944e-38


@tf.custom_gradient
def sparse_softmax_cross_entropy(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    """-log softmax(logits)[label] for int `labels [...]` and float32 `logits [..., classes]`.

    Example:
    >>> logits = tf.constant([[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    >>> [round(float(value), 4) for value in sparse_softmax_cross_entropy([0, 2], logits)]
    [0.1698, 1.0986]
    """
    labels = tf.cast(labels, tf.int32)
    shape = tf.shape(logits)
    probabilities = tf.nn.softmax(tf.reshape(logits, [-1, shape[-1]]))
    flat_labels = tf.reshape(labels, [-1])
    label_index = tf.stack([tf.range(tf.size(flat_labels)), flat_labels], axis=1)
    label_probability = tf.gather_nd(probabilities, label_index)
    loss = -tf.math.log(tf.maximum(label_probability, SMALLEST_PROBABILITY))

    def gradient(upstream):
        upstream = tf.reshape(upstream, [-1])
        # (softmax - one_hot(label)) * upstream, with the one-hot part as a scatter.
        logits_gradient = tf.tensor_scatter_nd_sub(
            probabilities * upstream[:, None], label_index, upstream
        )
        return None, tf.reshape(logits_gradient, shape)

    return tf.reshape(loss, tf.shape(labels)), gradient


def top_logit_matches(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    """1.0 where the label's logit is the largest of its row, else 0.0 (float32 `[...]`).

    Example:
    >>> top_logit_matches([0, 2], tf.constant([[2.0, 0.0, -1.0], [0.0, 3.0, 0.0]])).numpy()
    array([1., 0.], dtype=float32)
    """
    labels = tf.cast(labels, tf.int32)
    label_logit = tf.gather(logits, labels[..., None], batch_dims=len(labels.shape))[..., 0]
    return tf.cast(label_logit >= tf.reduce_max(logits, axis=-1), tf.float32)


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMLoss(keras.losses.Loss):
    """Sparse softmax cross-entropy from logits, for a vocabulary-sized softmax.

    Equal to `keras.losses.SparseCategoricalCrossentropy(from_logits=True)` (to float32
    rounding) and several times faster on CPU at BERT's vocabulary size. The default reduction
    averages over the real predictions: pass `masked_lm_weights` as sample weights.

    Example:
    >>> loss = MaskedLMLoss()
    >>> logits = tf.constant([[[2.0, 0.0, -1.0], [0.0, 0.0, 0.0]]])
    >>> round(float(loss([[0, 2]], logits, sample_weight=[[1.0, 0.0]])), 4)
    0.1698
    """

    def __init__(self, name: str = "masked_lm_loss", reduction="mean_with_sample_weight", **kw):
        super().__init__(name=name, reduction=reduction, **kw)

    def call(self, y_true, y_pred):
        return sparse_softmax_cross_entropy(y_true, y_pred)

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMAccuracy(keras.metrics.MeanMetricWrapper):
    """Share of predictions whose label has the largest logit (top-1 accuracy).

    Matches `keras.metrics.SparseCategoricalAccuracy` except on exact ties for the maximum,
    which count as correct here; pass `masked_lm_weights` as sample weights.

    Example:
    >>> accuracy = MaskedLMAccuracy()
    >>> accuracy.update_state([[0, 2]], tf.constant([[[2.0, 0.0, -1.0], [0.0, 3.0, 0.0]]]))
    >>> float(accuracy.result())
    0.5
    """

    def __init__(self, name: str = "accuracy", dtype=None):
        super().__init__(top_logit_matches, name=name, dtype=dtype)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}
