"""The feed-forward activations a BERT config can name."""

from collections.abc import Callable

import keras
import tensorflow as tf

SQRT_HALF = 0.7071067811865476
INVERSE_SQRT_2PI = 0.3989422804014327


@tf.custom_gradient
def gelu(x: tf.Tensor) -> tf.Tensor:
    """Exact GELU, `x * Phi(x)`, computed in float32 with a hand-written gradient.

    Same values as `keras.activations.gelu(x, approximate=False)`; bfloat16 inputs are computed
    in float32, where TF's CPU kernels are vectorised. `Phi` comes from `erfc`, which keeps its
    relative precision far into the negative tail; `1 + erf` (the form TensorFlow fuses into a
    matmul, `inference_gelu`) loses it there, and moves this encoder's outputs at padded
    positions by up to 1.5e-4 from Hugging Face's. The gradient `Phi(x) + x * phi(x)` is one
    XLA-compiled pass over `x` and the upstream gradient (about ten element-wise TF ops
    otherwise) that keeps only `x` from the forward pass: about 5% of a BERT-Base bfloat16
    training step on CPU. (Exports leave custom gradients out, so serving needs no XLA.)

    Example:
    >>> [round(float(value), 4) for value in gelu(tf.constant([-1.0, 0.0, 2.0]))]
    [-0.1587, 0.0, 1.9545]
    """
    x32 = tf.cast(x, tf.float32)

    def gradient(upstream):
        return _gelu_gradient(x, upstream)

    return tf.cast(x32 * _normal_cdf(x32), x.dtype), gradient


def _normal_cdf(x: tf.Tensor) -> tf.Tensor:
    return 0.5 * tf.math.erfc(x * -SQRT_HALF)


@tf.function(jit_compile=True, autograph=False)
def _gelu_gradient(x: tf.Tensor, upstream: tf.Tensor) -> tf.Tensor:
    x32 = tf.cast(x, tf.float32)
    pdf = tf.exp(-0.5 * tf.square(x32)) * INVERSE_SQRT_2PI
    return tf.cast(tf.cast(upstream, tf.float32) * (_normal_cdf(x32) + x32 * pdf), x.dtype)


def inference_gelu(x: tf.Tensor) -> tf.Tensor:
    """Exact GELU in the input's dtype, `x * 0.5 * (1 + erf(x / sqrt(2)))`, for models that
    store their weights in bfloat16 (they serve; they do not train).

    After a matmul and bias (`SequenceDense`), TensorFlow's CPU graph optimizer fuses the three
    into one oneDNN kernel, which computes the bias and GELU on the float32 accumulator: more
    precise than `gelu` on the bfloat16 matmul output, and without its casts (BENCHMARKS.md,
    section Serving). Unfused (in training graphs, where the
    gradient needs the input), bfloat16 element-wise kernels are slow and coarse on CPU, which
    is why `gelu` computes in float32.

    Example:
    >>> [round(float(value), 2) for value in inference_gelu(tf.constant([-1.0, 0.0, 2.0]))]
    [-0.16, 0.0, 1.95]
    """
    half, one = tf.cast(0.5, x.dtype), tf.cast(1.0, x.dtype)
    return x * half * (one + tf.math.erf(x * tf.cast(SQRT_HALF, x.dtype)))


def gelu_approximate(x):
    """GELU's tanh approximation (Hugging Face's "gelu_new", ALBERT's activation).

    Example:
    >>> [round(float(value), 4) for value in gelu_approximate(tf.constant([-1.0, 0.0, 2.0]))]
    [-0.1588, 0.0, 1.9546]
    """
    return keras.activations.gelu(x, approximate=True)


# The `BertConfig.hidden_activation` names and their functions (`activation_from_name`).
HIDDEN_ACTIVATIONS: dict[str, Callable] = {
    "gelu": gelu,
    "gelu_approximate": gelu_approximate,
    "relu": keras.activations.relu,
}


def activation_from_name(name: str, dtype_policy: keras.DTypePolicy | None = None) -> Callable:
    """The activation function for a `BertConfig.hidden_activation` name; under a
    `dtype_policy` that stores weights in bfloat16, "gelu" is `inference_gelu`."""
    if name == "gelu" and dtype_policy is not None and dtype_policy.variable_dtype == "bfloat16":
        return inference_gelu
    if name not in HIDDEN_ACTIVATIONS:
        raise ValueError(
            f"Unknown activation {name!r}; expected one of {', '.join(HIDDEN_ACTIVATIONS)}."
        )
    return HIDDEN_ACTIVATIONS[name]


def activation_name(function: Callable) -> str:
    """The name of a dense layer's activation function: its `HIDDEN_ACTIVATIONS` name (exact
    GELU in either form is "gelu"), else Keras' name ("tanh", "linear", ...). What the ONNX
    export reads from each layer.

    Example:
    >>> activation_name(activation_from_name("gelu_approximate"))
    'gelu_approximate'
    >>> activation_name(keras.activations.tanh), activation_name(keras.activations.linear)
    ('tanh', 'linear')
    """
    for name, known in (*HIDDEN_ACTIVATIONS.items(), ("gelu", inference_gelu)):
        if function is known:
            return name
    name = getattr(function, "__name__", "")
    if getattr(keras.activations, name, None) is not function:
        raise ValueError(f"No name for the activation {function!r}.")
    return name
