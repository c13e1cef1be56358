"""Layer normalization over the last axis: with a closed-form gradient, computed in float32, for
training, and in the form oneDNN fuses into one kernel, for serving."""

import keras
import tensorflow as tf


@tf.custom_gradient
def layer_normalization(
    x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor, epsilon: float
) -> tf.Tensor:
    """`(x - mean) / sqrt(variance + epsilon) * gamma + beta` over the last axis of `x`.

    Statistics and gradients are computed in float32 whatever the dtypes of `x`, `gamma` and
    `beta` (the result has `x`'s dtype, each gradient its input's). The gradient is the closed form
    `dx = (g - mean(g) - x_hat * mean(g * x_hat)) / sigma` with `g = dy * gamma`: a few fused
    passes instead of differentiating through the moments op by op.

    Example:
    >>> x = tf.constant([[1.0, 2.0, 3.0]])
    >>> [round(float(v), 4) for v in layer_normalization(x, tf.ones(3), tf.zeros(3), 1e-12)[0]]
    [-1.2247, 0.0, 1.2247]
    """
    normalized, inverse_sigma = _standardized(x, epsilon)
    gamma32, beta32 = tf.cast(gamma, tf.float32), tf.cast(beta, tf.float32)

    def gradient(upstream):
        upstream = tf.cast(upstream, tf.float32)
        batch_axes = list(range(len(x.shape) - 1))
        scaled = upstream * gamma32
        x_gradient = inverse_sigma * (
            scaled
            - tf.reduce_mean(scaled, axis=-1, keepdims=True)
            - normalized * tf.reduce_mean(scaled * normalized, axis=-1, keepdims=True)
        )
        return (
            tf.cast(x_gradient, x.dtype),
            tf.cast(tf.reduce_sum(upstream * normalized, axis=batch_axes), gamma.dtype),
            tf.cast(tf.reduce_sum(upstream, axis=batch_axes), beta.dtype),
            None,
        )

    return tf.cast(normalized * gamma32 + beta32, x.dtype), gradient


def _standardized(x: tf.Tensor, epsilon: float) -> tuple[tf.Tensor, tf.Tensor]:
    """`(x - mean) / sigma` over the last axis, and `1 / sigma`, in float32."""
    x32 = tf.cast(x, tf.float32)
    centered = x32 - tf.reduce_mean(x32, axis=-1, keepdims=True)
    inverse_sigma = tf.math.rsqrt(
        tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True) + epsilon
    )
    return centered * inverse_sigma, inverse_sigma


def element_wise_layer_normalization(
    x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor, epsilon: float
) -> tf.Tensor:
    """`layer_normalization`'s ops and values without its gradient, for graphs that serve: a
    SavedModel that holds a custom gradient warns each time TensorFlow loads it.

    Example:
    >>> x = tf.constant([[1.0, 2.0, 3.0]])
    >>> values = element_wise_layer_normalization(x, tf.ones(3), tf.zeros(3), 1e-12)
    >>> [round(float(v), 4) for v in values[0]]
    [-1.2247, 0.0, 1.2247]
    """
    normalized, _ = _standardized(x, epsilon)
    return tf.cast(normalized * tf.cast(gamma, tf.float32) + tf.cast(beta, tf.float32), x.dtype)


# From this many values on, oneDNN's fused layer-norm kernel (`fused_layer_normalization`) costs
# less than the element-wise ops: its call costs about 0.1 ms whatever the size, theirs grows
# with it (AMD EPYC Zen 5, one layer norm over rows of 384 in a TensorFlow session, the
# element-wise ops against the kernel: 0.09 against 0.15 ms at 98,304 values in bfloat16, 0.12
# against 0.12 in float32; 0.20 against 0.15 at 110,592; 0.38 against 0.19 at 245,760).
FUSED_KERNEL_MIN_VALUES = 100_000


def fused_layer_normalization(
    x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor, epsilon: float
) -> tf.Tensor:
    """`layer_normalization`'s values, for graphs that serve (no gradient), in the form that
    TensorFlow's CPU graph optimizer fuses into one oneDNN kernel (`_MklLayerNorm`, where oneDNN
    is on, as the TF Serving command of `keras_bert.export` runs it). It pays from
    `FUSED_KERNEL_MIN_VALUES` values on; below, the element-wise ops cost less
    (`element_wise_layer_normalization`).

    The form is Keras 2's layer norm, the one pattern the optimizer matches: each row is a
    channel of a training-mode `FusedBatchNormV3`, then gamma and beta. Without oneDNN that op is
    2-3 times slower than the element-wise ops (docs/serving.md). Choose between the two forms
    outside the model (`keras_bert.export.signatures`), not with a `tf.cond` around each layer
    norm: TensorFlow 2.21 with oneDNN fails such a graph ("Retval[0] does not have value") when
    a session runs it on fed ids (`serving_ids`), and only there.

    Example:
    >>> x = tf.constant([[1.0, 2.0, 3.0]])
    >>> values = fused_layer_normalization(x, tf.ones(3), tf.zeros(3), 1e-12)
    >>> [round(float(v), 4) for v in values[0]]
    [-1.2247, 0.0, 1.2247]
    """
    shape = tf.shape(x)
    rows = tf.reduce_prod(shape[:-1])
    normalized = tf.raw_ops.FusedBatchNormV3(
        x=tf.reshape(x, tf.stack([1, rows, shape[-1], 1])),
        scale=tf.fill([rows], 1.0),
        offset=tf.fill([rows], 0.0),
        mean=tf.constant([], tf.float32),
        variance=tf.constant([], tf.float32),
        epsilon=epsilon,
        data_format="NCHW",
        is_training=True,
    ).y
    normalized = tf.reshape(normalized, shape)
    return normalized * tf.cast(gamma, x.dtype) + tf.cast(beta, x.dtype)


@keras.saving.register_keras_serializable(package="keras_bert")
class FastLayerNormalization(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` over the last axis, using `layer_normalization`.

    Same weights, config and float32 statistics as Keras' layer; in a bfloat16 training step its
    hand-written gradient costs about half of Keras' differentiated moments. `center=False` (no
    beta: ModernBERT's LayerNorms) adds zeros. Other axes, or `scale=False`, fall back to Keras'
    implementation. `normalize` is the function it applies: serving modules trace their model with
    `element_wise_layer_normalization`, bfloat16 ones also with `fused_layer_normalization`
    (`keras_bert.export.serving_copy.layer_normalization_form`).

    Example:
    >>> layer = FastLayerNormalization(epsilon=1e-12)
    >>> [round(float(v), 4) for v in layer(tf.constant([[1.0, 2.0, 3.0]]))[0]]
    [-1.2247, 0.0, 1.2247]
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.normalize = layer_normalization

    def call(self, inputs):
        last_axis_only = list(self.axis) in ([-1], [len(inputs.shape) - 1])
        if not (last_axis_only and self.scale and not self.rms_scaling):
            return super().call(inputs)
        # Read the variables here: gradients reach them through the reads.
        gamma = tf.convert_to_tensor(self.gamma)
        beta = tf.convert_to_tensor(self.beta) if self.center else tf.zeros_like(gamma)
        outputs = self.normalize(inputs, gamma, beta, self.epsilon)
        return tf.cast(outputs, self.compute_dtype)
