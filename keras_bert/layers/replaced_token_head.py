"""ELECTRA's replaced-token-detection head: one logit per token, replaced or original."""

from __future__ import annotations

import keras
from keras import ops

from keras_bert.layers.activations import activation_from_name
from keras_bert.layers.sequence_dense import SequenceDense


@keras.saving.register_keras_serializable(package="keras_bert")
class ReplacedTokenHead(keras.layers.Layer):
    """Scores every token of a sequence: dense → activation → dense to one logit, positive
    where the token looks replaced (ELECTRA's discriminator, Clark et al. 2020; transformers'
    `ElectraDiscriminatorPredictions`).

    Args:
        hidden_size: width of the input and of the first dense layer.
        hidden_activation: activation of the first dense layer ("gelu", "gelu_approximate",
            "relu"; the encoder's).
        initializer_range: standard deviation of the truncated-normal initializer.

    Call args:
        sequence_output: float `[batch, sequence, hidden]`.

    Returns:
        float32 logits `[batch, sequence]`.

    Example:
    >>> import numpy as np
    >>> tuple(ReplacedTokenHead(hidden_size=8)(np.ones((2, 5, 8))).shape)
    (2, 5)
    """

    def __init__(
        self,
        hidden_size: int,
        hidden_activation: str = "gelu",
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.hidden_activation = hidden_activation
        self.initializer_range = initializer_range
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.dense = SequenceDense(
            hidden_size,
            activation=activation_from_name(hidden_activation, self.dtype_policy),
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="dense",
        )
        self.prediction = SequenceDense(
            1, kernel_initializer=initializer, dtype=self.dtype_policy, name="dense_prediction"
        )

    def build(self, sequence_output_shape):
        self.dense.build(sequence_output_shape)
        self.prediction.build((*sequence_output_shape[:-1], self.hidden_size))
        self.built = True

    def call(self, sequence_output):
        logits = self.prediction(self.dense(sequence_output))[..., 0]
        return ops.cast(logits, "float32")

    def compute_output_shape(self, sequence_output_shape):
        return tuple(sequence_output_shape[:-1])

    def get_config(self):
        return {
            **super().get_config(),
            "hidden_size": self.hidden_size,
            "hidden_activation": self.hidden_activation,
            "initializer_range": self.initializer_range,
        }
