"""DeBERTa's disentangled self-attention: content and relative-position terms, XLA-friendly."""

from __future__ import annotations

import math

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert.layers.dropout import FastDropout
from keras_bert.layers.relative_positions import relative_embedding_rows
from keras_bert.layers.self_attention import (
    MultiHeadSelfAttention,
    head_einsum,
    query_positions_shape,
)


@keras.saving.register_keras_serializable(package="keras_bert")
class DisentangledSelfAttention(MultiHeadSelfAttention):
    """Self-attention whose scores add DeBERTa's relative-position terms to content→content.

    For query `i` and key `j` with relative row `r = bucket(i - j) + span`, the score is
    `(q_i·k_j + q_i·K_r [c2p] + k_j·Q_r' [p2c]) / sqrt(head_size · (1 + number of terms))`,
    where `K` and `Q` are the relative embeddings through the key and query projections
    (shared with the content ones under `share_att_key`, DeBERTa-v3's setting) and `r'` is
    position→content's row. Only the table rows a sequence of this length reaches are
    projected; each term is one matmul against them and one gather along a single axis with
    indices fixed when the length is (at trace time for static shapes), so the layer compiles
    with XLA (`jit_compile=True`, TPUs). A length unknown at trace time reads indices for
    `max_relative_positions` tokens and may not exceed them.

    Args:
        hidden_size: width of inputs and outputs; must be divisible by `num_heads`.
        num_heads: number of attention heads.
        position_buckets: log buckets of relative distances (DeBERTa-v3: 256); -1 for none.
        max_relative_positions: the distance the buckets reach (DeBERTa-v3: 512).
        pos_att_type: the terms besides content→content, e.g. "p2c|c2p".
        share_att_key: whether the relative embeddings use the content query/key projections.
        position_dropout_rate: dropout on the relative embeddings.
        attention_dropout_rate: dropout on the attention probabilities.
        initializer_range: standard deviation of the truncated-normal initializer.

    Call args:
        hidden_states: float tensor `[batch, sequence, hidden_size]`.
        padding_mask: 1 for real tokens, 0 for padding, `[batch, sequence]`.
        relative_embeddings: the `[2 * span, hidden_size]` table (`RelativeEmbeddings`).
        return_attention_scores: also return the scaled scores before mask and softmax.
        first_token_only: the output at the first position only, `[batch, 1, hidden_size]`.

    Example:
    >>> attention = DisentangledSelfAttention(hidden_size=8, num_heads=2, position_buckets=4,
    ...                                       max_relative_positions=16)
    >>> outputs = attention(np.ones((1, 3, 8)), np.array([[1, 1, 0]]), np.ones((8, 8)))
    >>> tuple(outputs.shape)
    (1, 3, 8)
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        position_buckets: int = 256,
        max_relative_positions: int = 512,
        pos_att_type: str = "p2c|c2p",
        share_att_key: bool = True,
        position_dropout_rate: float = 0.1,
        attention_dropout_rate: float = 0.1,
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(
            hidden_size,
            num_heads,
            attention_dropout_rate=attention_dropout_rate,
            initializer_range=initializer_range,
            **kwargs,
        )
        self.position_buckets = position_buckets
        self.max_relative_positions = max_relative_positions
        self.pos_att_type = pos_att_type
        self.terms = tuple(term.strip() for term in pos_att_type.lower().split("|") if term.strip())
        self.share_att_key = share_att_key
        self.position_dropout_rate = position_dropout_rate
        self.span = position_buckets if position_buckets > 0 else max_relative_positions
        # DeBERTa-v2 without shared keys projects relative embeddings through their own layers.
        own_projections = not share_att_key
        self.pos_key_proj = (
            self._projection("pos_key_proj") if own_projections and "c2p" in self.terms else None
        )
        self.pos_query_proj = (
            self._projection("pos_query_proj") if own_projections and "p2c" in self.terms else None
        )
        self.position_dropout = FastDropout(position_dropout_rate, dtype=self.dtype_policy)

    def build(self, hidden_states_shape, padding_mask_shape=None, relative_embeddings_shape=None):
        super().build(hidden_states_shape)
        for projection in (self.pos_key_proj, self.pos_query_proj):
            if projection is not None:
                projection.build(hidden_states_shape)
        self.built = True

    @property
    def score_scale(self) -> float:
        """1 / sqrt(head_size * (1 + number of relative terms)), as DeBERTa scales its sum of
        terms."""
        return 1.0 / math.sqrt(self.head_size * (1 + len(self.terms)))

    def _relative_rows(self, hidden_states):
        """Flat gather indices of both terms `[query * key]` and the table rows they read."""
        seq_length = hidden_states.shape[1]
        static = seq_length is not None
        content_to_position, position_to_content, start, stop = relative_embedding_rows(
            seq_length if static else self.max_relative_positions,
            self.span,
            self.position_buckets,
            self.max_relative_positions,
        )
        if not static:  # every row; the indices are cut to the length at run time
            content_to_position, position_to_content = (
                content_to_position + start,
                position_to_content + start,
            )
            start, stop = 0, 2 * self.span
        num_rows = stop - start
        # c2p reads [query i, row] and p2c [key j, row]: offsets into the flattened scores.
        positions = np.arange(content_to_position.shape[0])
        flat_indices = {
            "c2p": (content_to_position + positions[:, None] * num_rows).astype("int32"),
            "p2c": (position_to_content + positions[None, :] * num_rows).astype("int32"),
        }
        if not static:
            length = ops.shape(hidden_states)[1]
            flat_indices = {
                term: ops.convert_to_tensor(index)[:length, :length]
                for term, index in flat_indices.items()
            }
        return flat_indices, start, stop

    def call(
        self,
        hidden_states,
        padding_mask,
        relative_embeddings,
        training=None,
        return_attention_scores=False,
        first_token_only=False,
    ):
        flat_indices, start, stop = self._relative_rows(hidden_states)
        relative_embeddings = self.position_dropout(
            relative_embeddings[start:stop], training=training
        )
        scale = self.score_scale
        query, key, value = self._project_heads(hidden_states, scale)

        scores = head_einsum(training)("bqnh,bknh->bnqk", query, key)
        if "c2p" in self.terms:
            position_key = self._split_rows((self.pos_key_proj or self.key)(relative_embeddings))
            row_scores = ops.einsum("bqnh,rnh->bnqr", query, position_key)
            scores = scores + self._gather_rows(row_scores, flat_indices["c2p"])
        if "p2c" in self.terms:
            position_query = (self.pos_query_proj or self.query)(relative_embeddings)
            position_query = self._split_rows(position_query * ops.cast(scale, query.dtype))
            row_scores = ops.einsum("bknh,rnh->bnkr", key, position_query)
            scores = scores + self._gather_rows(row_scores, flat_indices["p2c"])
        if first_token_only:
            # The relative terms index queries by position: every token's scores, the first kept.
            scores = scores[:, :, :1]
        return self._attend(
            scores,
            value,
            padding_mask,
            query_positions_shape(tf.shape(hidden_states), first_token_only),
            training,
            return_attention_scores,
        )

    def _split_rows(self, rows):
        return ops.reshape(rows, (-1, self.num_heads, self.head_size))

    @staticmethod
    def _gather_rows(row_scores, flat_index):
        """`[batch, heads, sequence, rows]` scores → `[batch, heads, query, key]` at the
        flattened (position, row) offsets of `flat_index` `[query, key]`: one gather along one
        axis, with indices XLA sees as constants."""
        batch_size, num_heads = ops.shape(row_scores)[0], ops.shape(row_scores)[1]
        flat = ops.reshape(row_scores, (batch_size, num_heads, -1))
        gathered = ops.take(flat, ops.reshape(flat_index, (-1,)), axis=2)
        length = ops.shape(flat_index)[0]
        return ops.reshape(gathered, (batch_size, num_heads, length, length))

    def get_config(self):
        return {
            **super().get_config(),
            "position_buckets": self.position_buckets,
            "max_relative_positions": self.max_relative_positions,
            "pos_att_type": self.pos_att_type,
            "share_att_key": self.share_att_key,
            "position_dropout_rate": self.position_dropout_rate,
        }
