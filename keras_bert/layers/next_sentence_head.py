"""BERT's next-sentence-prediction head on the pooled `[CLS]` output."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class NextSentenceHead(keras.layers.Layer):
    """Two logits from the pooled output: 0 = B follows A, 1 = B is a random span.

    The weights are stored `[2, hidden]` (`output_weights`), as in Google's checkpoints.

    Args:
        initializer_range: standard deviation of the truncated-normal initializer.

    Returns:
        float32 logits `[batch, 2]`.

    Example:
    >>> import numpy as np
    >>> tuple(NextSentenceHead()(np.ones((3, 8))).shape)
    (3, 2)
    """

    def __init__(self, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.initializer_range = initializer_range

    def build(self, pooled_output_shape):
        self.output_weights = self.add_weight(
            shape=(2, pooled_output_shape[-1]),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
            name="output_weights",
        )
        self.output_bias = self.add_weight(shape=(2,), initializer="zeros", name="output_bias")
        self.built = True

    def call(self, pooled_output):
        logits = ops.matmul(pooled_output, ops.transpose(self.output_weights)) + self.output_bias
        return ops.cast(logits, "float32")

    def compute_output_shape(self, pooled_output_shape):
        return (pooled_output_shape[0], 2)

    def get_config(self):
        return {**super().get_config(), "initializer_range": self.initializer_range}
