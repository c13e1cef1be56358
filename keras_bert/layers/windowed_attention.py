"""Self-attention within a window (ModernBERT's local layers), in blocks: time and memory
grow linearly with the length, not as a masked `[sequence, sequence]` score matrix."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert.layers.graph_shared import shared_in_graph
from keras_bert.layers.self_attention import (
    MASKED_SCORE,
    MultiHeadSelfAttention,
    head_einsum,
    query_positions_shape,
)


def neighbourhoods(blocks: tf.Tensor, axis: int) -> tf.Tensor:
    """Each block beside its two neighbours: `[..., blocks, block, ...]` → `[..., blocks,
    3 * block, ...]` (block `i - 1`, `i`, `i + 1` along `axis + 1`; zeros past either end).

    One gather of the blocks padded with one on each side, three consecutive blocks for each:
    a single copy of the neighbourhoods (three slices and their concatenation copied them
    twice: ModernBERT-base's window layer at 2,048 tokens 21 ms instead of 29, its keys and
    values cut apart; AMD EPYC Zen 4, 2026-12-07).

    Example:
    >>> neighbourhoods(tf.constant([[1, 2], [3, 4], [5, 6]]), axis=0).numpy().tolist()
    [[0, 0, 1, 2, 3, 4], [1, 2, 3, 4, 5, 6], [3, 4, 5, 6, 0, 0]]
    """
    padding = [[0, 0]] * len(blocks.shape)
    padding[axis] = [1, 1]
    dims = [
        static or dynamic
        for static, dynamic in zip(blocks.shape, tf.unstack(tf.shape(blocks)), strict=True)
    ]
    three_in_a_row = tf.range(dims[axis])[:, None] + tf.range(3)[None, :]
    # [..., blocks, 3, block, ...]
    gathered = tf.gather(tf.pad(blocks, padding), three_in_a_row, axis=axis)
    return tf.reshape(gathered, [*dims[: axis + 1], 3 * dims[axis + 1], *dims[axis + 2 :]])


def window_blocks(length: tf.Tensor, window: int) -> tuple[tf.Tensor, tf.Tensor]:
    """How `WindowedSelfAttention` cuts `length` positions: blocks of `window` positions (one
    block if the sequence is shorter), and how many (the last padded).

    Example:
    >>> [int(value) for value in window_blocks(tf.constant(7), 3)]
    [3, 3]
    """
    block = tf.minimum(window, length)
    return block, (length + block - 1) // block


def window_band(block_length: tf.Tensor, window: int) -> tf.Tensor:
    """`[block, 3 * block]` booleans: which keys of a block's neighbourhood (`neighbourhoods`) its
    queries see, those at most `window` positions away.

    Example:
    >>> window_band(2, 1).numpy().astype(int).tolist()
    [[0, 1, 1, 1, 0, 0], [0, 0, 1, 1, 1, 0]]
    """
    queries = tf.range(block_length)[:, None]
    keys = tf.range(3 * block_length)[None, :] - block_length
    return tf.abs(keys - queries) <= window


def window_mask(padding_mask: tf.Tensor, window: int, dtype: tf.DType) -> tf.Tensor:
    """What `WindowedSelfAttention` adds to the scores of each block's neighbourhood:
    `MASKED_SCORE` where a key is padding or more than `window` positions from the query, 0
    elsewhere; `[batch, 1, blocks, block, 3 * block]` (blocks of `window` positions, one if the
    sequence is shorter), of `dtype`.

    Example (the second block, position 1: its neighbourhood is positions 0-2, 2 is padding):
    >>> mask = window_mask(tf.constant([[1, 1, 0]]), window=1, dtype=tf.float32)
    >>> (mask[0, 0, 1] < 0).numpy().tolist()
    [[False, False, True]]
    """
    batch, length = tf.shape(padding_mask)[0], tf.shape(padding_mask)[1]
    block, count = window_blocks(length, window)
    key_is_real = tf.reshape(
        tf.pad(tf.cast(padding_mask, tf.bool), [[0, 0], [0, count * block - length]]),
        [batch, count, block],
    )
    seen = window_band(block, window)[None, None] & neighbourhoods(key_is_real, axis=1)[:, :, None]
    return tf.cast(~seen[:, None], dtype) * tf.cast(MASKED_SCORE, dtype)


@keras.saving.register_keras_serializable(package="keras_bert")
class WindowedSelfAttention(MultiHeadSelfAttention):
    """Self-attention in which each token attends to the tokens at most `attention_window`
    positions away (and not to padding), as ModernBERT's local layers do (transformers' sliding
    window mask `|i - j| <= local_attention // 2`).

    The sequence is cut into blocks of `attention_window` tokens (fewer if the sequence is
    shorter); the queries of a block attend to the keys of its block and its two neighbours,
    the `3 * block` keys the window can reach, masked to the window. Scores and memory are
    `sequence × 3 × attention_window` per head, linear in the length: at ModernBERT-base's
    8,192 tokens and window 64 a layer scores 192 keys per query instead of 8,192. The rest
    (projections, rotary positions, dropout, output) is `MultiHeadSelfAttention`'s.

    Args:
        hidden_size: width of inputs and outputs; must be divisible by `num_heads`.
        num_heads: number of attention heads.
        attention_window: how far a token sees, in positions on each side (positive).
        **kwargs: the other `MultiHeadSelfAttention` arguments (`rotary_base`, `use_bias`, ...).

    Call args:
        hidden_states: float tensor `[batch, sequence, hidden_size]`.
        padding_mask: 1 for real tokens, 0 for padding, `[batch, sequence]`.
        first_token_only: the output at the first position only, `[batch, 1, hidden_size]`
            (it reads the first `attention_window + 1` tokens).

    Example:
    >>> import numpy as np
    >>> attention = WindowedSelfAttention(hidden_size=8, num_heads=2, attention_window=2)
    >>> tuple(attention(np.ones((1, 7, 8)), np.array([[1, 1, 1, 1, 1, 0, 0]])).shape)
    (1, 7, 8)
    """

    def __init__(self, hidden_size: int, num_heads: int, attention_window: int, **kwargs):
        if kwargs.get("relative_attention_buckets"):
            raise ValueError("Windowed attention has no T5 relative attention buckets.")
        super().__init__(hidden_size, num_heads, **kwargs)
        if attention_window < 1:
            raise ValueError(f"attention_window must be positive, got {attention_window}.")
        self.attention_window = attention_window

    def call(
        self,
        hidden_states,
        padding_mask,
        training=None,
        return_attention_scores=False,
        first_token_only=False,
    ):
        if return_attention_scores:
            raise ValueError("Windowed attention does not return a [query, key] score matrix.")
        query, key, value = self._project_heads(hidden_states, self.score_scale, first_token_only)
        if first_token_only:
            reach = self.attention_window + 1
            scores = head_einsum(training)("bqnh,bknh->bnqk", query, key[:, :reach])
            output_shape = query_positions_shape(tf.shape(hidden_states), first_token_only)
            return self._attend(
                scores, value[:, :reach], padding_mask[:, :reach], output_shape, training, False
            )
        context = self.heads_context(query, key, value, padding_mask, training)
        return self.project_context(context, tf.shape(hidden_states))

    def heads_context(self, query, key, value, padding_mask, training):
        """The context `[batch, sequence, heads, head_size]` of the window's keys."""
        batch, length = tf.shape(query)[0], tf.shape(query)[1]
        block, count = window_blocks(length, self.attention_window)
        padded = count * block

        def in_blocks(heads):
            """`[batch, sequence, heads, size]` → `[batch, heads, blocks, block, size]`."""
            by_head = tf.pad(
                tf.transpose(heads, [0, 2, 1, 3]), [[0, 0], [0, 0], [0, padded - length], [0, 0]]
            )
            return tf.reshape(by_head, [batch, self.num_heads, count, block, self.head_size])

        # `[batch, heads, blocks, 3 * block, size]` each.
        keys, values = (neighbourhoods(in_blocks(heads), axis=2) for heads in (key, value))
        scores = tf.matmul(in_blocks(query), keys, transpose_b=True)
        padding_mask = tf.convert_to_tensor(padding_mask)
        unseen = shared_in_graph(  # the same in every window layer of a model
            ("window", padding_mask.ref(), self.attention_window, scores.dtype),
            lambda: window_mask(padding_mask, self.attention_window, scores.dtype),
        )
        probabilities = self.dropout(ops.softmax(scores + unseen, axis=-1), training=training)
        context = tf.matmul(probabilities, values)  # [batch, heads, blocks, block, size]
        context = tf.reshape(context, [batch, self.num_heads, padded, self.head_size])
        return tf.transpose(context[:, :, :length], [0, 2, 1, 3])

    def get_config(self):
        return {**super().get_config(), "attention_window": self.attention_window}
