"""Rotary position embeddings: queries and keys rotated by their position (RoFormer's RoPE)."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.layers.graph_shared import shared_in_graph


def inverse_frequencies(head_size: int, base: float) -> np.ndarray:
    """The rotation speed of each pair of dimensions, float32 `[head_size / 2]`:
    `1 / base ** (2i / head_size)`, rounded as transformers computes it in float32 (the power
    rounded once from float64: the same bits).

    Example:
    >>> inverse_frequencies(8, 10_000.0).tolist()
    [1.0, 0.10000000149011612, 0.009999999776482582, 0.0010000000474974513]
    """
    exponents = np.arange(0, head_size, 2, dtype=np.float32) / np.float32(head_size)
    powers = (np.float64(base) ** exponents.astype(np.float64)).astype(np.float32)
    return np.float32(1.0) / powers


def rotary_angles(sequence_length: tf.Tensor, head_size: int, base: float) -> tf.Tensor:
    """The rotation angle of every position and dimension, float32 `[sequence, head_size]`:
    position × frequency, the frequencies of the two halves of a head alike.

    Example:
    >>> rotary_angles(3, 4, 10_000.0).numpy().tolist()
    [[0.0, 0.0, 0.0, 0.0], [1.0, 0.009999999776482582, 1.0, 0.009999999776482582], \
[2.0, 0.019999999552965164, 2.0, 0.019999999552965164]]
    """
    positions = tf.range(sequence_length, dtype=tf.float32)
    angles = positions[:, None] * inverse_frequencies(head_size, base)[None, :]
    return tf.concat([angles, angles], axis=-1)


@keras.saving.register_keras_serializable(package="keras_bert")
class RotaryEmbedding(keras.layers.Layer):
    """Rotates each head's vectors by their position (Su et al. 2021, "RoFormer"), as GPT-NeoX,
    transformers' ModernBERT and the ONNX export rotate them: dimension `i` of the first half
    and dimension `i` of the second half form a pair, turned by `position / base ** (2i / d)`:
    `x * cos + rotate_half(x) * sin` with `rotate_half(x) = [-x2, x1]`. The dot product of a
    rotated query and key then depends on their distance, not on where they are.

    No weights: the angles come from the positions 0, 1, ... of the sequence axis (a first
    token alone is position 0, which it leaves as it is). Computed in float32 and cast back to
    the input's dtype, as transformers computes it.

    Args:
        head_size: dimensions of a head (even).
        base: the base of the frequencies (ModernBERT: 160,000 in its global layers, 10,000 in
            its local ones).

    Call args:
        heads: float `[batch, sequence, heads, head_size]`.

    Example:
    >>> rotary = RotaryEmbedding(head_size=2, base=10_000.0)
    >>> x = tf.constant([[[[1.0, 0.0]], [[1.0, 0.0]]]])  # one head at positions 0 and 1
    >>> [[round(value, 4) for value in head] for head in rotary(x)[0, :, 0].numpy().tolist()]
    [[1.0, 0.0], [0.5403, 0.8415]]
    """

    def __init__(self, head_size: int, base: float = 10_000.0, **kwargs):
        super().__init__(**kwargs)
        if head_size % 2:
            raise ValueError(f"Rotary positions need an even head_size, got {head_size}.")
        self.head_size = head_size
        self.base = base
        self.built = True

    def call(self, heads):
        cos, signed_sin = self._tables(heads)
        heads32 = tf.cast(heads, tf.float32)
        # rotate_half(x) * sin as a roll of the two halves times `signed_sin`: one op where a
        # split, a negation and a concatenation took three (the same products, bit for bit).
        halves_swapped = tf.roll(heads32, shift=self.head_size // 2, axis=-1)
        rotated = heads32 * cos + halves_swapped * signed_sin
        return tf.cast(rotated, heads.dtype)

    def _tables(self, heads) -> tuple[tf.Tensor, tf.Tensor]:
        """`cos` of the angles and their `sin` negated in the first half, float32 `[sequence,
        1, head_size]`; for a static length, built once per traced graph (every layer of that
        base reads the same two: at ModernBERT-base's 512 tokens 4 tables of 128 KB, not 88,
        each folded into a constant by Grappler; its first call's resident memory 10 MB lower,
        15 MB at 2,048 and 8,192 tokens; Zen 5, 2026-12-04)."""

        def build() -> tuple[tf.Tensor, tf.Tensor]:
            angles = rotary_angles(tf.shape(heads)[1], self.head_size, self.base)
            first_half_negated = np.repeat([-1.0, 1.0], self.head_size // 2).astype(np.float32)
            return tf.cos(angles)[:, None, :], (tf.sin(angles) * first_half_negated)[:, None, :]

        length = heads.shape[1]
        if length is None:  # lengths known only when run may differ between tensors
            return build()
        return shared_in_graph(("rotary", length, self.head_size, self.base), build)

    def compute_output_shape(self, heads_shape):
        return heads_shape

    def get_config(self):
        return {**super().get_config(), "head_size": self.head_size, "base": self.base}
