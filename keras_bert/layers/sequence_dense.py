"""A dense layer over the tokens of a sequence, multiplied as one matrix."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class SequenceDense(keras.layers.Dense):
    """`keras.layers.Dense` that multiplies `[batch, sequence, features]` inputs as one
    `[batch * sequence, features]` matrix and reshapes the result back.

    The values are `Dense`'s. What changes is the graph: Keras' `Dense` on a 3-D input puts a
    reshape between the matmul and the bias, so TensorFlow's CPU graph optimizer cannot fuse
    them; here the matmul, the bias and an exact GELU written as
    `x * 0.5 * (1 + erf(x / sqrt(2)))` (`inference_gelu`) are adjacent, and the optimizer runs
    them as one oneDNN kernel (`_MklNativeFusedMatMul`), which computes the bias and GELU on the
    float32 accumulator: a faster bfloat16 serving graph (BENCHMARKS.md, section Serving).
    Inputs of rank 2 go straight to `Dense`.

    Args:
        units: output features.
        **kwargs: the other arguments of `keras.layers.Dense`.

    Example:
    >>> import numpy as np
    >>> layer = SequenceDense(4, kernel_initializer="ones")
    >>> layer(np.ones((2, 3, 5))).shape
    TensorShape([2, 3, 4])
    >>> float(layer(np.ones((2, 3, 5)))[1, 2, 0])
    5.0
    """

    def call(self, inputs, training=None):
        if len(inputs.shape) <= 2:
            return super().call(inputs, training=training)
        leading_shape = ops.shape(inputs)[:-1]
        matrix = ops.reshape(inputs, (-1, inputs.shape[-1]))
        outputs = super().call(matrix, training=training)
        return ops.reshape(outputs, (*leading_shape, self.units))
