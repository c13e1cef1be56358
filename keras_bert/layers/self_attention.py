"""Multi-head self-attention over a padding mask (bidirectional: no causal mask)."""

import json
import math
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf
from keras import ops

from keras_bert.layers.dropout import FastDropout
from keras_bert.layers.graph_shared import shared_in_graph
from keras_bert.layers.padding_skip import attention_compiles
from keras_bert.layers.relative_positions import (
    local_attention_bias,
    t5_relative_position_buckets,
)
from keras_bert.layers.rotary_embedding import RotaryEmbedding
from keras_bert.layers.sequence_dense import SequenceDense

# Added to the scores of padded keys. The original BERT code used -10000: far enough below any
# real score that softmax gives exactly 0 in float32, and representable in float16 and bfloat16.
MASKED_SCORE = -10000.0


def head_einsum(training: bool | None):
    """The einsum of the two products over heads (scores, weighted values).

    At inference TensorFlow's Einsum op: one oneDNN kernel that reads the heads in place (the
    same outputs, faster). In training Keras' `ops.einsum`, which spells these products as
    transposes around a batched matmul, whose gradients are cheaper (BENCHMARKS.md, section
    Serving, has both measurements).

    Example:
    >>> query, key = tf.ones((1, 2, 3, 4)), tf.ones((1, 5, 3, 4))
    >>> head_einsum(training=False)("bqnh,bknh->bnqk", query, key).shape
    TensorShape([1, 3, 2, 5])
    """
    return ops.einsum if training else tf.einsum


def masked_scores(
    unmasked_scores: tf.Tensor, padding_mask: tf.Tensor, training: bool | None
) -> tf.Tensor:
    """`unmasked_scores` `[batch, heads, query, key]` with `MASKED_SCORE` added at padded keys.

    At inference a batch without padding (sequences that fill every position: 128 ids of text,
    or requests whose length is their bucket's) skips the add, a pass over the largest tensor
    of the layer: bfloat16 MiniLM-L6 serving 128 ids of text, -5%, the same outputs. Training
    always adds (one graph, no branch).

    Example:
    >>> scores = tf.zeros((1, 1, 1, 3))
    >>> masked_scores(scores, tf.constant([[1, 1, 0]]), training=False).numpy().tolist()
    [[[[0.0, 0.0, -10000.0]]]]
    """

    def add_mask():
        key_is_padding = 1.0 - ops.cast(padding_mask[:, None, None, :], unmasked_scores.dtype)
        return unmasked_scores + key_is_padding * ops.cast(MASKED_SCORE, unmasked_scores.dtype)

    if training:
        return add_mask()
    return tf.cond(tf.reduce_all(padding_mask != 0), lambda: unmasked_scores, add_mask)


class AttentionOutputSpec:
    """The symbolic output of a layer (with `num_heads`) called on `hidden_states` as
    `MultiHeadSelfAttention` is: their shape (cut to the first position with
    `first_token_only`), and the attention scores `[batch, num_heads, query, sequence]` with
    `return_attention_scores`. Listed before `keras.layers.Layer` in the layer's bases.

    Example:
    >>> attention = MultiHeadSelfAttention(hidden_size=8, num_heads=2)
    >>> output, scores = attention.compute_output_spec(
    ...     keras.KerasTensor((2, 5, 8)), return_attention_scores=True, first_token_only=True)
    >>> output.shape, scores.shape
    ((2, 1, 8), (2, 2, 1, 5))
    """

    def compute_output_spec(
        self,
        hidden_states,
        *masks_and_tables,
        training=None,
        return_attention_scores=False,
        first_token_only=False,
    ):
        batch_size, sequence_length = hidden_states.shape[0], hidden_states.shape[1]
        query_length = 1 if first_token_only else sequence_length
        output_shape = (batch_size, query_length, *hidden_states.shape[2:])
        output = keras.KerasTensor(output_shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return output
        scores_shape = (batch_size, self.num_heads, query_length, sequence_length)
        return output, keras.KerasTensor(scores_shape, dtype=self.compute_dtype)


@keras.saving.register_keras_serializable(package="keras_bert")
class MultiHeadSelfAttention(AttentionOutputSpec, keras.layers.Layer):
    """Scaled dot-product self-attention with `num_heads` heads and an output projection.

    Args:
        hidden_size: width of inputs and outputs; must be divisible by `num_heads`.
        num_heads: number of attention heads.
        attention_dropout_rate: dropout on the attention probabilities.
        initializer_range: standard deviation of the truncated-normal initializer.
        relative_attention_buckets: if positive, a learned bias per head and bucket of
            key − query offsets (`t5_relative_position_buckets`) is added to the scores (T5's
            relative attention; a budget switch, 0 in BERT).
        relative_attention_max_distance: offsets beyond it share the last bucket.
        local_attention_bias: the initial bias of each head's neighbour (see
            `local_attention_bias`); 0 starts the biases at zero, as T5.
        rotary_base: if positive, queries and keys are rotated by their position
            (`RotaryEmbedding` of this base: ModernBERT's positions).
        use_bias: whether the projections have biases (ModernBERT's have none).
        query_block_size: a sequence longer than this attends in blocks of this many queries,
            one block after another: a `[block, sequence]` score matrix per head in memory
            instead of `[sequence, sequence]` (3.2 GB at ModernBERT-base's 8,192 tokens), in
            training too (each block's scores recomputed by the backward pass; not with
            attention dropout); the same outputs. 0 attends with every query at once.

    Call args:
        hidden_states: float tensor [batch, sequence, hidden_size].
        padding_mask: 1 for real tokens, 0 for padding, [batch, sequence]. Padded keys get no
            attention; padded queries still produce (unused) outputs, as in BERT.
        return_attention_scores: also return the scaled scores `[batch, heads, query, key]`
            before the padding mask and softmax (TinyBERT's attention distillation).
        first_token_only: attend from the first position only (every token is still a key and
            a value): the output `[batch, 1, hidden_size]` is that position's, for a fraction
            of the work (a last block whose only reader is the `[CLS]` pooler).

    Example:
    >>> import numpy as np
    >>> attention = MultiHeadSelfAttention(hidden_size=8, num_heads=2)
    >>> tuple(attention(np.ones((1, 3, 8)), np.array([[1, 1, 0]])).shape)
    (1, 3, 8)
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        attention_dropout_rate: float = 0.1,
        initializer_range: float = 0.02,
        relative_attention_buckets: int = 0,
        relative_attention_max_distance: int = 128,
        local_attention_bias: float = 0.0,
        rotary_base: float = 0.0,
        use_bias: bool = True,
        query_block_size: int = 0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_size % num_heads:
            raise ValueError(
                f"hidden_size ({hidden_size}) is not divisible by num_heads ({num_heads})."
            )
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.attention_dropout_rate = attention_dropout_rate
        self.initializer_range = initializer_range
        self.relative_attention_buckets = relative_attention_buckets
        self.relative_attention_max_distance = relative_attention_max_distance
        self.local_attention_bias = local_attention_bias
        self.rotary_base = rotary_base
        self.use_bias = use_bias
        self.query_block_size = query_block_size
        self.rotary = (
            RotaryEmbedding(self.head_size, rotary_base, dtype=self.dtype_policy, name="rotary")
            if rotary_base
            else None
        )
        self.query = self._projection("query")
        self.key = self._projection("key")
        self.value = self._projection("value")
        self.output_dense = self._projection("output")
        self.dropout = FastDropout(attention_dropout_rate, dtype=self.dtype_policy)

    def _projection(self, name: str) -> SequenceDense:
        return SequenceDense(
            self.hidden_size,
            use_bias=self.use_bias,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, hidden_states_shape, padding_mask_shape=None):
        for projection in (self.query, self.key, self.value, self.output_dense):
            projection.build(hidden_states_shape)
        if self.relative_attention_buckets:
            self.relative_attention_bias = self.add_weight(
                shape=(self.relative_attention_buckets, self.num_heads),
                initializer=keras.initializers.Constant(
                    local_attention_bias(
                        self.relative_attention_buckets,
                        self.num_heads,
                        self.relative_attention_max_distance,
                        self.local_attention_bias,
                    )
                ),
                name="relative_attention_bias",
            )
        self.built = True

    def _relative_attention_bias(self, sequence_length):
        """`[1, heads, query, key]`: each head's learned bias for the pair's offset bucket."""
        buckets = t5_relative_position_buckets(
            sequence_length, self.relative_attention_buckets, self.relative_attention_max_distance
        )
        bias = ops.take(self.relative_attention_bias, buckets, axis=0)
        return ops.transpose(bias, (2, 0, 1))[None]

    @property
    def score_scale(self) -> float:
        """The factor of the query-key products (the ONNX export reads it): 1 / sqrt(head_size)."""
        return 1.0 / math.sqrt(self.head_size)

    def _project_heads(self, hidden_states, query_scale: float, first_token_only: bool = False):
        """The query (times `query_scale`), key and value of each token, split into heads:
        three `[batch, sequence, heads, head_size]` tensors (with `first_token_only`, the
        query of the first token alone: `[batch, 1, heads, head_size]`).

        The tokens are projected as one `[batch * sequence, hidden]` matrix and split into
        heads with one shape tensor: the same products as projecting `[batch, sequence,
        hidden]`, with fewer shape ops to trace and optimize before the first training step
        (with `TransformerEncoderBlock`'s feed-forward, MiniLM-L6's training step builds
        3,661 ops instead of 4,651). With `rotary_base`, queries and keys come rotated by their
        positions (a first token alone is position 0).
        """
        tokens = ops.reshape(hidden_states, (-1, hidden_states.shape[-1]))
        heads_shape = tf.concat([tf.shape(hidden_states)[:2], [self.num_heads, self.head_size]], 0)
        query_shape = query_positions_shape(heads_shape, first_token_only)
        return self._heads_of(
            hidden_states[:, 0] if first_token_only else tokens,
            tokens,
            query_scale,
            lambda query: ops.reshape(query, query_shape),
            lambda rows: ops.reshape(rows, heads_shape),
        )

    def _heads_of(
        self,
        query_rows,
        tokens,
        query_scale: float,
        query_in_heads: Callable[[Any], Any],
        in_heads: Callable[[Any], Any],
    ):
        """The query of `query_rows` (times `query_scale`) and the key and value of `tokens`,
        each a `[rows, hidden_size]` projection laid out in heads by `query_in_heads` /
        `in_heads`; queries and keys rotated by their positions with `rotary_base`."""
        # Scaling the queries instead of the scores: the same product, on a tensor
        # `sequence / head_size` times smaller (half of BERT-Base's at 128 tokens).
        query = self.query(query_rows)
        query = query_in_heads(query * ops.cast(query_scale, query.dtype))
        key = in_heads(self.key(tokens))
        if self.rotary is not None:
            query, key = self.rotary(query), self.rotary(key)
        return query, key, in_heads(self.value(tokens))

    def call(
        self,
        hidden_states,
        padding_mask,
        training=None,
        return_attention_scores=False,
        first_token_only=False,
    ):
        query, key, value = self._project_heads(hidden_states, self.score_scale, first_token_only)
        output_shape = query_positions_shape(tf.shape(hidden_states), first_token_only)
        if not (return_attention_scores or first_token_only):
            context = self.heads_context(query, key, value, padding_mask, training)
            return self.project_context(context, output_shape)
        unmasked_scores = head_einsum(training)("bqnh,bknh->bnqk", query, key)
        if self.relative_attention_buckets:
            bias = self._relative_attention_bias(ops.shape(hidden_states)[1])
            if first_token_only:
                bias = bias[:, :, :1]
            unmasked_scores = unmasked_scores + ops.cast(bias, unmasked_scores.dtype)
        return self._attend(
            unmasked_scores,
            value,
            padding_mask,
            output_shape,
            training,
            return_attention_scores,
        )

    def attend_tokens(self, tokens, real_tokens, shape, padding_mask, training=None):
        """`call`'s output at a batch's real tokens, computed from theirs alone.

        `tokens` `[real tokens, hidden_size]` are the rows `real_tokens.rows`
        (`keras_bert.layers.padding_skip.RealTokens`) of a batch of `shape` `[batch, sequence,
        hidden_size]`: the projections run on these rows, the scores on the batch's `[batch,
        sequence]` layout, its padded keys masked as in `call` (XLA-compiled within
        `real_tokens_only(compiled_attention=True)`). Returns `[real tokens, hidden_size]`.
        """
        heads_shape = tf.concat([shape[:2], [self.num_heads, self.head_size]], 0)

        def in_heads(rows):
            return ops.reshape(real_tokens.spread(rows, shape), heads_shape)

        query, key, value = self._heads_of(tokens, tokens, self.score_scale, in_heads, in_heads)

        def context_of(query, key, value, padding_mask):
            return self.heads_context(query, key, value, padding_mask, training)

        attend = context_of
        if attention_compiles():
            # One compiled function for every block whose context computes alike (no weights
            # of its own in it): XLA compiles it once per shape, not once per block.
            computes_like = id(self) if self.relative_attention_buckets else self.context_config()
            attend = shared_in_graph(
                ("compiled attention", computes_like, bool(training)),
                lambda: tf.function(context_of, jit_compile=True, autograph=False),
            )
        context = attend(query, key, value, tf.convert_to_tensor(padding_mask))
        return self.output_dense(real_tokens.gather(ops.reshape(context, shape)))

    def context_config(self) -> str:
        """What `heads_context` computes from besides its inputs: the layer's class and its
        config without its name (JSON). Layers with equal ones compute equal contexts, relative
        attention buckets (weights of each layer) aside; a subclass (windowed attention) with
        the same config keys still differs by its class.

        Example:
        >>> first, second = (MultiHeadSelfAttention(8, 2, name=name) for name in "ab")
        >>> first.context_config() == second.context_config()
        True
        >>> first.context_config() == MultiHeadSelfAttention(8, 4).context_config()
        False
        """
        config = {key: value for key, value in self.get_config().items() if key != "name"}
        return json.dumps([type(self).__qualname__, config], sort_keys=True, default=str)

    def heads_context(self, query, key, value, padding_mask, training):
        """The context `[batch, sequence, heads, head_size]` of every query (scaled) over
        every key (what `call` projects): in blocks of `query_block_size` queries when the
        sequence is longer (not in training with attention dropout)."""
        static_length = query.shape[1]
        in_blocks = self.query_block_size and not (
            self.relative_attention_buckets
            or (static_length is not None and static_length <= self.query_block_size)
        )
        # A block recomputed for the gradient would draw another dropout mask.
        if in_blocks and not (training and self.attention_dropout_rate):
            return self._context_in_query_blocks(query, key, value, padding_mask, training)
        scores = head_einsum(training)("bqnh,bknh->bnqk", query, key)
        if self.relative_attention_buckets:
            bias = self._relative_attention_bias(ops.shape(query)[1])
            scores = scores + ops.cast(bias, scores.dtype)
        return self._weighted_values(scores, value, padding_mask, training)

    def _weighted_values(self, unmasked_scores, value, padding_mask, training):
        """The softmax of `unmasked_scores` over the real keys (with attention dropout) times
        `value`: the context `[batch, query, heads, head_size]`."""
        probabilities = self._probabilities(unmasked_scores, padding_mask, training)
        return head_einsum(training)("bnqk,bknh->bqnh", probabilities, value)

    def _probabilities(self, unmasked_scores, padding_mask, training):
        """The softmax of `unmasked_scores` `[batch, heads, query, key]` over the real keys,
        with attention dropout."""
        probabilities = ops.softmax(masked_scores(unmasked_scores, padding_mask, training), axis=-1)
        return self.dropout(probabilities, training=training)

    def _context_in_query_blocks(self, query, key, value, padding_mask, training):
        """The context of `query_block_size` queries at a time, one block after another; in
        training the backward pass recomputes a block's scores instead of keeping them, so
        that memory stays a block's whatever the length (8,192 tokens train).

        Keys and values are laid out by head once (`[batch, heads, sequence, head_size]`) and
        each block's two products are batched matmuls reading them in place: an einsum per
        block lays them out again for every block (ModernBERT-base's global attention at
        8,192 tokens, 16 blocks: 1.35 s a layer instead of 1.51; at 2,048, 96 ms instead of
        105; AMD EPYC Zen 4, 2026-12-07)."""

        def attend(block_queries, keys, values):  # [batch, heads, block or sequence, size]
            scores = tf.matmul(block_queries, keys, transpose_b=True)
            return tf.matmul(self._probabilities(scores, padding_mask, training), values)

        if training:
            attend = tf.recompute_grad(attend)
        batch, length = tf.shape(query)[0], tf.shape(query)[1]
        block = tf.minimum(self.query_block_size, length)  # a shorter sequence is one block
        count = (length + block - 1) // block
        padded = tf.pad(query, [[0, 0], [0, count * block - length], [0, 0], [0, 0]])
        blocks = tf.reshape(padded, [batch, count, block, self.num_heads, self.head_size])
        by_head = [0, 2, 1, 3]
        keys, values = tf.transpose(key, by_head), tf.transpose(value, by_head)
        contexts = tf.map_fn(
            lambda block_queries: attend(block_queries, keys, values),
            tf.transpose(blocks, [1, 0, 3, 2, 4]),  # [blocks, batch, heads, block, size]
            parallel_iterations=1,  # one block's scores in memory at a time
            fn_output_signature=tf.TensorSpec(
                [None, self.num_heads, None, self.head_size], query.dtype
            ),
        )
        contexts = tf.reshape(
            tf.transpose(contexts, [1, 0, 3, 2, 4]),
            [batch, count * block, self.num_heads, self.head_size],
        )
        return contexts[:, :length]

    def _attend(
        self, unmasked_scores, value, padding_mask, output_shape, training, return_attention_scores
    ):
        """Masks padded keys, takes the softmax and the weighted sum of `value` (split into
        heads), and projects it as one matrix of tokens into `output_shape`; with the scores
        when asked."""
        context = self._weighted_values(unmasked_scores, value, padding_mask, training)
        output = self.project_context(context, output_shape)
        if return_attention_scores:
            return output, unmasked_scores
        return output

    def project_context(self, context, output_shape):
        """The output projection of the heads' context `[batch, query, heads, head_size]`, as
        one matrix of tokens, into `output_shape`."""
        context = ops.reshape(context, (-1, self.hidden_size))
        return ops.reshape(self.output_dense(context), output_shape)

    def get_config(self):
        return {
            **super().get_config(),
            "hidden_size": self.hidden_size,
            "num_heads": self.num_heads,
            "attention_dropout_rate": self.attention_dropout_rate,
            "initializer_range": self.initializer_range,
            "relative_attention_buckets": self.relative_attention_buckets,
            "relative_attention_max_distance": self.relative_attention_max_distance,
            "local_attention_bias": self.local_attention_bias,
            "rotary_base": self.rotary_base,
            "use_bias": self.use_bias,
            "query_block_size": self.query_block_size,
        }


def query_positions_shape(shape: tf.Tensor, first_token_only: bool) -> tf.Tensor:
    """`shape` (of a `[batch, sequence, ...]` tensor) with the sequence cut to its first
    position when `first_token_only`.

    Example:
    >>> query_positions_shape(tf.constant([2, 7, 8]), first_token_only=True).numpy().tolist()
    [2, 1, 8]
    """
    if not first_token_only:
        return shape
    return tf.concat([shape[:1], [1], shape[2:]], 0)
