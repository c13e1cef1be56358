"""A Transformer encoder block: post-LayerNorm as in BERT, or pre-LayerNorm."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert.layers.activations import activation_from_name
from keras_bert.layers.disentangled_attention import DisentangledSelfAttention
from keras_bert.layers.dropout import FastDropout
from keras_bert.layers.gated_linear_unit import GatedLinearUnit
from keras_bert.layers.layer_normalization import FastLayerNormalization
from keras_bert.layers.padding_skip import RealTokens, computes_real_tokens_only
from keras_bert.layers.self_attention import AttentionOutputSpec, MultiHeadSelfAttention
from keras_bert.layers.sequence_dense import SequenceDense
from keras_bert.layers.sharded_dense import ColumnShardedDense, RowShardedDense
from keras_bert.layers.windowed_attention import WindowedSelfAttention


@keras.saving.register_keras_serializable(package="keras_bert")
class TransformerEncoderBlock(AttentionOutputSpec, keras.layers.Layer):
    """Self-attention and a feed-forward network, each with residual + LayerNorm.

    Post-LN (BERT): `x = LayerNorm(x + Dropout(Attention(x)))`, then
    `x = LayerNorm(x + Dropout(Dense(Activation(Dense(x)))))`.
    Pre-LN (`pre_layer_norm=True`; Xiong et al. 2020, "On Layer Normalization in the
    Transformer Architecture": trains without a long warm-up and at higher learning rates):
    `x = x + Dropout(Attention(LayerNorm(x)))`, then
    `x = x + Dropout(Dense(Activation(Dense(LayerNorm(x)))))`; the encoder then normalizes the
    last block's output once more.

    ModernBERT's blocks are pre-LN with rotary positions (`rotary_base`), global or windowed
    attention (`attention_window`), a GeGLU feed-forward (`gated_feed_forward`), no biases
    (`use_bias`, `layer_norm_bias`), and a first block that reads the embeddings' LayerNorm
    (`attention_layer_norm=False`).

    Args:
        hidden_size: width of inputs and outputs.
        num_heads: attention heads; must divide `hidden_size`.
        intermediate_size: width of the feed-forward layer.
        hidden_activation: "gelu", "gelu_approximate" or "relu".
        dropout_rate: dropout on both residual branches.
        attention_dropout_rate: dropout on attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: standard deviation of the truncated-normal initializer.
        pre_layer_norm: normalize each branch's input instead of the residual sum.
        relative_attention_buckets: T5's relative attention bias (see
            `MultiHeadSelfAttention`); 0 in BERT.
        local_attention_bias: its initial bias toward each head's neighbour.
        disentangled_attention: DeBERTa's attention settings (`position_buckets`,
            `max_relative_positions`, `pos_att_type`, `share_att_key`: see
            `DisentangledSelfAttention`), or None for BERT's self-attention.
        feed_forward_shards: store the feed-forward weights as this many independent blocks
            (`ColumnShardedDense` into `RowShardedDense`: the same values, computed as
            independent matmul chains that a CPU runs in parallel); 1 (one `SequenceDense`
            each) for training and checkpoints, 2 for serving on small CPUs.
        rotary_base: rotary positions of this base on queries and keys (`RotaryEmbedding`); 0
            for none.
        attention_window: attend to the tokens at most this many positions away
            (`WindowedSelfAttention`); 0 attends to every token.
        gated_feed_forward: the first feed-forward projection is twice as wide and gated
            (`GatedLinearUnit` with `hidden_activation`: GeGLU).
        use_bias: whether the dense layers have biases.
        layer_norm_bias: whether the LayerNorms have a bias (beta).
        attention_layer_norm: with `pre_layer_norm`, whether the attention's input is
            normalized (False: the block's input is normalized already).
        query_block_size: global attention over more tokens than this runs, at inference, in
            blocks of this many queries (see `MultiHeadSelfAttention`); 0 for none.

    Call args:
        hidden_states: float tensor [batch, sequence, hidden_size].
        padding_mask: 1 for real tokens, 0 for padding, [batch, sequence].
        relative_embeddings: the relative position table, with `disentangled_attention`.
        return_attention_scores: also return the attention scores `[batch, heads, query, key]`
            (before the padding mask and softmax).
        training: whether dropout is on. Within `padding_skip.real_tokens_only` (a
            classifier's training step and serving function; not with `first_token_only`,
            scores or relative embeddings), a call computes the real tokens alone and a padded
            position's output is another token's: the real tokens' outputs are those of every
            other call.
        first_token_only: compute the block's output at the first position only,
            `[batch, 1, hidden_size]` (every token is still attended to): the last block under
            the `[CLS]` pooler, for about a sixth of its work at BERT's 128 tokens.

    Example:
    >>> import numpy as np
    >>> block = TransformerEncoderBlock(hidden_size=8, num_heads=2, intermediate_size=32)
    >>> tuple(block(np.ones((1, 3, 8)), np.array([[1, 1, 0]])).shape)
    (1, 3, 8)
    >>> tuple(block(np.ones((1, 3, 8)), np.array([[1, 1, 0]]), first_token_only=True).shape)
    (1, 1, 8)
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        intermediate_size: int,
        hidden_activation: str = "gelu",
        dropout_rate: float = 0.1,
        attention_dropout_rate: float = 0.1,
        layer_norm_epsilon: float = 1e-12,
        initializer_range: float = 0.02,
        pre_layer_norm: bool = False,
        relative_attention_buckets: int = 0,
        local_attention_bias: float = 0.0,
        disentangled_attention: dict | None = None,
        feed_forward_shards: int = 1,
        rotary_base: float = 0.0,
        attention_window: int = 0,
        gated_feed_forward: bool = False,
        use_bias: bool = True,
        layer_norm_bias: bool = True,
        attention_layer_norm: bool = True,
        query_block_size: int = 0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if (gated_feed_forward or not use_bias) and feed_forward_shards != 1:
            raise ValueError(
                "A gated feed-forward, or one without biases, keeps its weights in one block "
                "(feed_forward_shards=1)."
            )
        if not (attention_layer_norm or pre_layer_norm):
            raise ValueError("Post-LN blocks always normalize the attention's output.")
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_activation = hidden_activation
        self.dropout_rate = dropout_rate
        self.attention_dropout_rate = attention_dropout_rate
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.pre_layer_norm = pre_layer_norm
        self.relative_attention_buckets = relative_attention_buckets
        self.local_attention_bias = local_attention_bias
        self.disentangled_attention = disentangled_attention
        self.feed_forward_shards = feed_forward_shards
        self.rotary_base = rotary_base
        self.attention_window = attention_window
        self.gated_feed_forward = gated_feed_forward
        self.use_bias = use_bias
        self.layer_norm_bias = layer_norm_bias
        self.normalizes_attention_input = attention_layer_norm
        self.query_block_size = query_block_size

        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        attention_options = {
            "attention_dropout_rate": attention_dropout_rate,
            "initializer_range": initializer_range,
            "rotary_base": rotary_base,
            "use_bias": use_bias,
            "dtype": self.dtype_policy,
            "name": "attention",
        }
        if attention_window:
            self.attention = WindowedSelfAttention(
                hidden_size, num_heads, attention_window, **attention_options
            )
        elif disentangled_attention is None:
            self.attention = MultiHeadSelfAttention(
                hidden_size,
                num_heads,
                relative_attention_buckets=relative_attention_buckets,
                local_attention_bias=local_attention_bias,
                query_block_size=query_block_size,
                **attention_options,
            )
        else:
            self.attention = DisentangledSelfAttention(
                hidden_size,
                num_heads,
                **disentangled_attention,
                position_dropout_rate=dropout_rate,
                **attention_options,
            )
        self.attention_dropout = FastDropout(dropout_rate, dtype=self.dtype_policy)
        self.attention_layer_norm = (
            self._layer_norm("attention_layer_norm") if attention_layer_norm else None
        )
        # GeGLU: the activation is the gate's, after a projection to twice the width.
        self.gate = (
            GatedLinearUnit(hidden_activation, dtype=self.dtype_policy, name="gate")
            if gated_feed_forward
            else None
        )
        intermediate_options = {
            "activation": None
            if gated_feed_forward
            else activation_from_name(hidden_activation, self.dtype_policy),
            "kernel_initializer": initializer,
            "dtype": self.dtype_policy,
            "name": "intermediate_dense",
        }
        output_options = {
            "kernel_initializer": initializer,
            "dtype": self.dtype_policy,
            "name": "output_dense",
        }
        if feed_forward_shards == 1:
            projected_size = 2 * intermediate_size if gated_feed_forward else intermediate_size
            self.intermediate_dense = SequenceDense(
                projected_size, use_bias=use_bias, **intermediate_options
            )
            self.output_dense = SequenceDense(hidden_size, use_bias=use_bias, **output_options)
        else:
            self.intermediate_dense = ColumnShardedDense(
                intermediate_size, feed_forward_shards, **intermediate_options
            )
            self.output_dense = RowShardedDense(hidden_size, feed_forward_shards, **output_options)
        self.output_dropout = FastDropout(dropout_rate, dtype=self.dtype_policy)
        self.output_layer_norm = self._layer_norm("output_layer_norm")

    def _layer_norm(self, name: str) -> FastLayerNormalization:
        return FastLayerNormalization(
            epsilon=self.layer_norm_epsilon,
            center=self.layer_norm_bias,
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, hidden_states_shape, padding_mask_shape=None, relative_embeddings_shape=None):
        self.attention.build(hidden_states_shape)
        if self.attention_layer_norm is not None:
            self.attention_layer_norm.build(hidden_states_shape)
        self.intermediate_dense.build(hidden_states_shape)
        intermediate_shape = tuple(hidden_states_shape[:-1]) + (self.intermediate_size,)
        if self.feed_forward_shards == 1:
            self.output_dense.build(intermediate_shape)
        else:
            block_shape = intermediate_shape[:-1] + (
                self.intermediate_size // self.feed_forward_shards,
            )
            self.output_dense.build([block_shape] * self.feed_forward_shards)
        self.output_layer_norm.build(hidden_states_shape)
        self.built = True

    def call(
        self,
        hidden_states,
        padding_mask,
        relative_embeddings=None,
        training=None,
        return_attention_scores=False,
        first_token_only=False,
    ):
        if (
            not (first_token_only or return_attention_scores)
            and relative_embeddings is None
            and computes_real_tokens_only()
        ):
            return self._call_on_real_tokens(hidden_states, padding_mask, training)
        attention_input = hidden_states
        if self.pre_layer_norm and self.attention_layer_norm is not None:
            attention_input = self.attention_layer_norm(hidden_states)
        relative_inputs = () if relative_embeddings is None else (relative_embeddings,)
        attention_output = self.attention(
            attention_input,
            padding_mask,
            *relative_inputs,
            training=training,
            return_attention_scores=return_attention_scores,
            first_token_only=first_token_only,
        )
        if return_attention_scores:
            attention_output, attention_scores = attention_output
        if first_token_only:
            hidden_states = hidden_states[:, :1]
        hidden_states = self._after_attention(hidden_states, attention_output, training)
        if return_attention_scores:
            return hidden_states, attention_scores
        return hidden_states

    def _call_on_real_tokens(self, hidden_states, padding_mask, training):
        """`call` on the real tokens alone (`computes_real_tokens_only`): gathered into one
        `[real tokens, hidden]` matrix, every projection, norm and residual of the block runs
        on its rows; only the attention's scores see the batch's `[batch, sequence]` layout
        (`MultiHeadSelfAttention.attend_tokens`). A padded position comes out as the real token
        before it (`RealTokens.spread`)."""
        real_tokens = RealTokens.of(padding_mask)
        shape = tf.shape(hidden_states)
        tokens = real_tokens.gather(hidden_states)
        attention_input = tokens
        if self.pre_layer_norm and self.attention_layer_norm is not None:
            attention_input = self.attention_layer_norm(tokens)
        attention_output = self.attention.attend_tokens(
            attention_input, real_tokens, shape, padding_mask, training=training
        )
        tokens = self._after_attention(tokens, attention_output, training)
        return real_tokens.spread(tokens, shape)

    def _after_attention(self, hidden_states, attention_output, training):
        """The residual and norm around the attention's output, then the feed-forward's."""
        attention_output = self.attention_dropout(attention_output, training=training)
        hidden_states = hidden_states + attention_output
        if not self.pre_layer_norm:
            hidden_states = self.attention_layer_norm(hidden_states)
        feed_forward_input = hidden_states
        if self.pre_layer_norm:
            feed_forward_input = self.output_layer_norm(hidden_states)
        feed_forward_output = self._feed_forward(feed_forward_input)
        feed_forward_output = self.output_dropout(feed_forward_output, training=training)
        hidden_states = hidden_states + feed_forward_output
        if not self.pre_layer_norm:
            hidden_states = self.output_layer_norm(hidden_states)
        return hidden_states

    def _feed_forward(self, hidden_states):
        """The intermediate and output projections of every token, as one `[batch * sequence,
        hidden]` matrix: the same products, without shape ops around each projection."""
        tokens = ops.reshape(hidden_states, (-1, self.hidden_size))
        intermediate = self.intermediate_dense(tokens)
        if self.gate is not None:
            intermediate = self.gate(intermediate)
        return ops.reshape(self.output_dense(intermediate), tf.shape(hidden_states))

    def get_config(self):
        return {
            **super().get_config(),
            "hidden_size": self.hidden_size,
            "num_heads": self.num_heads,
            "intermediate_size": self.intermediate_size,
            "hidden_activation": self.hidden_activation,
            "dropout_rate": self.dropout_rate,
            "attention_dropout_rate": self.attention_dropout_rate,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "pre_layer_norm": self.pre_layer_norm,
            "relative_attention_buckets": self.relative_attention_buckets,
            "local_attention_bias": self.local_attention_bias,
            "disentangled_attention": self.disentangled_attention,
            "feed_forward_shards": self.feed_forward_shards,
            "rotary_base": self.rotary_base,
            "attention_window": self.attention_window,
            "gated_feed_forward": self.gated_feed_forward,
            "use_bias": self.use_bias,
            "layer_norm_bias": self.layer_norm_bias,
            "attention_layer_norm": self.normalizes_attention_input,
            "query_block_size": self.query_block_size,
        }
