"""Relative positions: DeBERTa's log-bucketed distances and relative embedding table, and T5's
buckets (the `relative_attention_buckets` budget switch)."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert.layers.layer_normalization import FastLayerNormalization


def relative_position_buckets(
    seq_length: int, position_buckets: int, max_relative_positions: int
) -> np.ndarray:
    """The bucketed distance `i - j` from query `i` to key `j`, `[seq_length, seq_length]`.

    Distances below `position_buckets / 2` keep their value; longer ones share log-spaced
    buckets up to `max_relative_positions` (DeBERTa's `make_log_bucket_position`, computed in
    float32 as it is). Without buckets (`position_buckets <= 0`) the distances are exact.

    Example:
    >>> relative_position_buckets(3, 16, 512).tolist()
    [[0, -1, -2], [1, 0, -1], [2, 1, 0]]
    >>> int(relative_position_buckets(200, 16, 512)[199, 0])
    14
    """
    positions = np.arange(seq_length)
    relative = positions[:, None] - positions[None, :]
    if position_buckets <= 0 or max_relative_positions <= 0:
        return relative.astype(np.int32)
    middle = position_buckets // 2
    sign = np.sign(relative)
    distance = np.where(np.abs(relative) < middle, middle - 1, np.abs(relative))
    log_ratio = np.log(distance.astype(np.float32) / np.float32(middle)) / np.log(
        np.float32((max_relative_positions - 1) / middle)
    )
    log_position = np.ceil(log_ratio * np.float32(middle - 1)) + middle
    buckets = np.where(distance <= middle, relative, log_position * sign)
    return buckets.astype(np.int32)


def t5_relative_position_buckets(sequence_length, num_buckets: int, max_distance: int):
    """T5's bidirectional buckets of key − query offsets (Raffel et al. 2020, after Shaw et al.
    2018): half the buckets per direction, one per offset up to a quarter of `num_buckets`,
    then logarithmically wider up to `max_distance`, beyond which offsets share the last bucket.

    Returns:
        int32 `[sequence_length, sequence_length]`: the bucket of each (query, key) pair.

    Example:
    >>> t5_relative_position_buckets(4, 8, 16).numpy().tolist()
    [[0, 5, 6, 6], [1, 0, 5, 6], [2, 1, 0, 5], [2, 2, 1, 0]]
    """
    positions = ops.arange(sequence_length, dtype="int32")
    offset = positions[None, :] - positions[:, None]
    half = num_buckets // 2
    direction = ops.where(offset > 0, half, 0)
    distance = ops.abs(offset)
    exact = half // 2
    logarithmic = exact + ops.cast(
        ops.log(ops.maximum(ops.cast(distance, "float32"), 1.0) / exact)
        / np.log(max_distance / exact)
        * (half - exact),
        "int32",
    )
    bucket = ops.where(distance < exact, distance, ops.minimum(logarithmic, half - 1))
    return direction + bucket


def local_attention_bias(
    num_buckets: int, num_heads: int, max_distance: int, strength: float
) -> np.ndarray:
    """A T5 bias table `[num_buckets, num_heads]` that starts each head on one neighbour: head
    `h` gets `strength` at offset −1, +1, −2, +2, ... (by `h`), 0 elsewhere. The fixed
    previous- and next-token heads of Raganato et al. (2020), here only the starting point of
    learned biases: the model sees its neighbours from the first step.

    Example:
    >>> local_attention_bias(8, 3, 16, 5.0)[:, 0].tolist()  # head 0: the previous token
    [0.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    """
    table = np.zeros((num_buckets, num_heads), np.float32)
    offsets = t5_relative_position_buckets(2 * num_heads + 1, num_buckets, max_distance)
    middle = num_heads  # the query in the middle of 2 * num_heads + 1 positions
    for head in range(num_heads):
        distance = head // 2 + 1
        key = middle - distance if head % 2 == 0 else middle + distance
        table[int(offsets[middle, key]), head] = strength
    return table


def relative_embedding_rows(
    seq_length: int, span: int, position_buckets: int, max_relative_positions: int
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Which rows of the `[2 * span, hidden]` relative embedding table attention reads.

    Returns `(content_to_position, position_to_content, start, stop)`: the two terms' row for
    every (query, key) pair, counted from `start`, and the rows `[start, stop)` a sequence of
    `seq_length` reaches at all (at 128 tokens and 256 buckets: 255 of 512 rows), so that only
    those are projected and scored. Content→position reads row `bucket(i - j) + span` for query
    `i`, key `j`; position→content reads, for the same pair, row `-bucket(j - i) + span` (both
    clipped to the table, as DeBERTa clips them).

    Example:
    >>> c2p, p2c, start, stop = relative_embedding_rows(3, 16, 16, 512)
    >>> c2p.tolist(), (start, stop)
    ([[2, 1, 0], [3, 2, 1], [4, 3, 2]], (14, 19))
    """
    buckets = relative_position_buckets(seq_length, position_buckets, max_relative_positions)
    content_to_position = np.clip(buckets + span, 0, 2 * span - 1)
    position_to_content = np.clip(-buckets.T + span, 0, 2 * span - 1)
    start = int(min(content_to_position.min(), position_to_content.min()))
    stop = int(max(content_to_position.max(), position_to_content.max())) + 1
    return content_to_position - start, position_to_content - start, start, stop


@keras.saving.register_keras_serializable(package="keras_bert")
class RelativeEmbeddings(keras.layers.Layer):
    """DeBERTa's relative position embeddings: a `[2 * span, hidden]` table, LayerNorm'd or not.

    Every encoder block reads the same table (DeBERTa normalizes it once per forward pass); the
    layer is called on the embedding output only to place the table in the functional graph
    and take its compute dtype.

    Args:
        span: relative embeddings on each side of distance 0 (`position_buckets`, or the
            maximum relative distance without buckets).
        hidden_size: embedding width.
        layer_norm: whether to normalize the table (`norm_rel_ebd: layer_norm`).
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: standard deviation of the truncated-normal initializer.

    Example:
    >>> layer = RelativeEmbeddings(span=4, hidden_size=8, layer_norm=True)
    >>> tuple(layer(np.zeros((2, 5, 8))).shape)
    (8, 8)
    """

    def __init__(
        self,
        span: int,
        hidden_size: int,
        layer_norm: bool = True,
        layer_norm_epsilon: float = 1e-7,
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.span = span
        self.hidden_size = hidden_size
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.layer_norm = (
            FastLayerNormalization(
                epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
            )
            if layer_norm
            else None
        )

    def build(self, hidden_states_shape=None):
        # Read in float32: the LayerNorm computes in float32 and casts its output.
        self.embeddings = self.add_weight(
            shape=(2 * self.span, self.hidden_size),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
            autocast=False,
            name="embeddings",
        )
        if self.layer_norm is not None:
            self.layer_norm.build((2 * self.span, self.hidden_size))
        self.built = True

    def call(self, hidden_states):
        table = tf.convert_to_tensor(self.embeddings)  # a read: the LayerNorm gets a tensor
        if self.layer_norm is not None:
            return self.layer_norm(table)
        return ops.cast(table, self.compute_dtype)

    def compute_output_shape(self, hidden_states_shape=None):
        return (2 * self.span, self.hidden_size)

    def get_config(self):
        return {
            **super().get_config(),
            "span": self.span,
            "hidden_size": self.hidden_size,
            "layer_norm": self.layer_norm is not None,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
        }
