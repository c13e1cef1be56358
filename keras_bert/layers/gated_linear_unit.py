"""The gate of a gated feed-forward layer (GLU variants; GeGLU with GELU)."""

import keras
import tensorflow as tf

from keras_bert.layers.activations import activation_from_name


@keras.saving.register_keras_serializable(package="keras_bert")
class GatedLinearUnit(keras.layers.Layer):
    """The gated linear unit of Shazeer 2020 ("GLU Variants Improve Transformer") on a
    projection to twice the width: its first half through the activation, times its second
    half (the gate). With GELU this is GeGLU, ModernBERT's feed-forward: transformers' `Wi`
    projects to `[input | gate]`, and `Wo` reads `gelu(input) * gate`.

    Args:
        activation: the activation of the first half ("gelu", "gelu_approximate", "relu").

    Call args:
        projected: float `[..., 2 * width]`.

    Returns:
        `[..., width]`.

    Example:
    >>> import numpy as np
    >>> unit = GatedLinearUnit("relu")
    >>> unit(np.array([[-1.0, 2.0, 3.0, 4.0]])).numpy().tolist()
    [[0.0, 8.0]]
    """

    def __init__(self, activation: str = "gelu", **kwargs):
        super().__init__(**kwargs)
        self.activation_name = activation
        # `activation`: read and swapped as dense layers' are (serving's `inference_gelu`).
        self.activation = activation_from_name(activation, self.dtype_policy)
        self.built = True

    def call(self, projected):
        inputs, gate = tf.split(projected, 2, axis=-1)
        return self.activation(inputs) * gate

    def compute_output_shape(self, projected_shape):
        return (*projected_shape[:-1], projected_shape[-1] // 2)

    def get_config(self):
        return {**super().get_config(), "activation": self.activation_name}
