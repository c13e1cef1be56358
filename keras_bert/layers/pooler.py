"""BERT's pooler: a tanh dense layer on the first ([CLS]) position."""

import keras


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPooler(keras.layers.Layer):
    """Maps the `[CLS]` vector of a sequence through a dense layer with tanh.

    Args:
        hidden_size: width of the input and the pooled output.
        initializer_range: standard deviation of the truncated-normal initializer.

    Example:
    >>> import numpy as np
    >>> tuple(BertPooler(hidden_size=8)(np.ones((2, 5, 8))).shape)
    (2, 8)
    """

    def __init__(self, hidden_size: int, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_size,
            activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )

    def build(self, sequence_shape):
        self.dense.build((sequence_shape[0], sequence_shape[-1]))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def compute_output_shape(self, sequence_shape):
        return (sequence_shape[0], self.hidden_size)

    def get_config(self):
        return {
            **super().get_config(),
            "hidden_size": self.hidden_size,
            "initializer_range": self.initializer_range,
        }
