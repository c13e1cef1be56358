"""A `BertEncoder` of any family written as an ONNX graph that ONNX Runtime runs fused.

The graph is written from the encoder's config and weights, not converted from TensorFlow: each
block is ONNX Runtime's fused operators (`com.microsoft`), the ones its own optimizer would
produce from a PyTorch export:

- self-attention: one `Attention` node (the query, key and value projections as one matmul,
  scaled dot products, the padding mask, softmax, the weighted sum), or for DeBERTa one
  `MultiHeadAttention` node fed its relative-position terms as `attention_bias`;
- the output projection and feed-forward output: `MatMul` into `SkipLayerNormalization`
  (bias, residual and LayerNorm in one pass);
- the feed-forward activation: `BiasGelu` (exact GELU), `FastGelu` (tanh form, ALBERT's
  `gelu_new`) or `Add` + `Relu`.

Why not tf2onnx (1.17, measured by `bench/bench_onnx_converters.py` on the MiniLM-L6
classifier, AMD EPYC with AVX-512, 2 cores shared with other jobs): it converts the traced
model only with a handler for TensorFlow's `Erfc` (the exact GELU), into 852 nodes with no
fused attention, in 45 s; ONNX Runtime's Python optimizer (`opt_level=0`, which needs sympy)
fuses no attention in it (model types "bert_tf" and "bert"; "bert_keras" fails) and leaves an
invalid model (the `If` nodes of the padding mask's `tf.cond`); and the converted graph fails
in ONNX Runtime at the attention's `Reshape` (its shape arithmetic reads the
`[batch * sequence, hidden]` shape from before `SequenceDense`'s reshape). This writer: 58 nodes,
one `Attention` per layer, logits within 1.0e-7 of Keras on the 1,033 dev sentences, 0.6 s.

What the layers hold, the graph reads from them, never from a copy of its own: the padding
mask's score (`MASKED_SCORE`, added to a padded key's scores, so outputs equal the Keras model's at
every position), each attention's scale (`score_scale`), each dense layer's activation
(`activation_name`: an activation without an ONNX form is an error, never a substitute),
RoBERTa's position offset and DeBERTa's relative rows (`relative_embedding_rows`), LayerNorm
epsilons. Each weight is one initializer, however many layers read it (`GraphBuilder.weight`).

Families: RoBERTa's positions count real tokens from its offset (`CumSum` of the mask, the rule of
`BertEmbeddings.position_ids`), DistilBERT has no token types (the graph has no
`input_type_ids` input) and no pooler, ALBERT's factorized embeddings are projected to H and
its layers reuse their group's blocks (and so their initializers), DeBERTa-v3 has no absolute
positions and zeroes padding; its relative table, LayerNorm and the query and key projections
of the table are nodes on the stored weights, which ONNX Runtime folds into constants when it
loads the model. ModernBERT's pre-LN blocks are `LayerNormalization` (without a bias) and `Add`
nodes, its GeGLU a `Split` into the activation times the gate, its attention rotary positions
and, in its local layers, attention in blocks of the window (`rotary_attention`: standard
operators, linear in the length).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from keras_bert.errors import ConfigError
from keras_bert.export.onnx.graph_builder import MICROSOFT_DOMAIN, GraphBuilder
from keras_bert.export.onnx.rotary_attention import (
    attention_context,
    attention_in_query_blocks,
    padding_bias,
    rotary_tables,
    rotate,
    windowed_attention,
)
from keras_bert.layers.activations import activation_name
from keras_bert.layers.relative_positions import relative_embedding_rows
from keras_bert.layers.self_attention import MASKED_SCORE
from keras_bert.serving.graph_runtimes import BATCH, SEQUENCE  # the axes OnnxModel reads

# Graph inputs, as the SavedModel's `serving_ids` names them.
WORD_IDS, MASK, TYPE_IDS = "input_word_ids", "input_mask", "input_type_ids"
# Names DeBERTa's relative-position matmuls (of the relative table, and of the activations with
# its projected rows), which int8 leaves alone.
RELATIVE_TERM_PREFIX = "relative_"
# In the names of one query's attention products, which int8 also leaves in float32.
FIRST_QUERY_PREFIX = "first_query_"
# Each activation name (`activation_name`) as ONNX: (operator, its domain, the operator that
# also adds a bias first, or None).
ONNX_ACTIVATIONS: dict[str, tuple[str, str, str | None]] = {
    "gelu": ("Gelu", MICROSOFT_DOMAIN, "BiasGelu"),  # exact: erf
    "gelu_approximate": ("FastGelu", MICROSOFT_DOMAIN, "FastGelu"),  # tanh form
    "relu": ("Relu", "", None),
    "tanh": ("Tanh", "", None),
}
LINEAR = "linear"


def layer_norm_epsilon(layer) -> float:
    return float(layer.epsilon)


def input_names(config) -> list[str]:
    """The graph's int32 inputs for an encoder of `config`: token types only where it has
    them."""
    return [WORD_IDS, MASK] + ([TYPE_IDS] if config.type_vocab_size else [])


def unsupported_reason(config) -> str | None:
    """Why an encoder of `config` cannot be written as ONNX, or None."""
    if config.gated_feed_forward and not config.pre_layer_norm:
        return "a gated feed-forward in post-LayerNorm blocks"
    if config.relative_attention_buckets:
        return "T5 relative attention buckets (relative_attention_buckets)"
    return None


class EncoderGraph:
    """Writes an encoder's graph into a `GraphBuilder`: `write(builder)` declares the inputs
    and returns the `sequence_output` value, the `first_token_output` (its first position) and
    `pooled_output` if the encoder has a pooler. A graph that needs the first position alone (a
    classifier's) writes it with `write(builder, first_token_only=True)`: the last block then
    computes that position by itself, every token still a key and a value, as the Keras
    encoder's `pooled_output` does.

    Args:
        encoder: a float32 `BertEncoder` (`feed_forward_shards=1`).
        fused_attention: BERT's self-attention as one `Attention` node; else its input
            projection as a `MatMul` into `MultiHeadAttention` (what static int8 quantizes).

    Raises:
        ConfigError: for an encoder whose config the graph does not cover
            (`unsupported_reason`).
    """

    def __init__(self, encoder, fused_attention: bool = True):
        self.encoder = encoder
        self.fused_attention = fused_attention
        self.config = encoder.bert_config
        reason = unsupported_reason(self.config)
        if reason or encoder.feed_forward_shards != 1:
            raise ConfigError(
                f"The ONNX export does not cover {reason or 'feed_forward_shards > 1'}."
            )

    def write(self, builder: GraphBuilder, first_token_only: bool = False) -> dict[str, str]:
        """Declares the inputs and writes the encoder; returns its output values by name (no
        `sequence_output` with `first_token_only`). `GraphBuilder.model` keeps only the ones
        the graph's outputs read."""
        self.builder = builder
        self._rotary_tables = {}  # by base: the rotation's cosines and sines
        for name in input_names(self.config):
            builder.input(name, TensorProto.INT32, [BATCH, SEQUENCE])
        hidden = self._embeddings()
        relative_bias = self.relative_positions() if self.config.relative_attention else None
        blocks = [
            block
            for group in self.config.layer_groups
            for block in self.encoder.block_groups[group]
        ]
        for index, block in enumerate(blocks):
            last = index == len(blocks) - 1
            hidden = self._block(block, hidden, relative_bias, first_token_only and last)
        if self.encoder.final_layer_norm is not None:
            hidden = self.layer_norm(hidden, self.encoder.final_layer_norm, "final_layer_norm")
        first = builder.op("Gather", hidden, builder.constant("zero", np.array(0)), axis=1)
        outputs = {"first_token_output": first}
        if not first_token_only:
            outputs["sequence_output"] = hidden
        if self.encoder.pooler is not None:
            outputs["pooled_output"] = self.dense(first, self.encoder.pooler.dense, "pooler")
        return outputs

    # Building blocks shared with the task heads ------------------------------------------

    def dense(self, value: str, layer, name: str) -> str:
        """A Keras dense layer: `value @ kernel + bias` through the layer's own activation (the
        bias and a GELU in one node)."""
        builder = self.builder
        product = builder.op(
            "MatMul", value, builder.weight(f"{name}/kernel", layer.kernel), name=name
        )
        bias = None if layer.bias is None else builder.weight(f"{name}/bias", layer.bias)
        activation = self.activation_of(layer)
        if activation == LINEAR:
            return product if bias is None else builder.op("Add", product, bias)
        op_type, domain, with_bias = ONNX_ACTIVATIONS[activation]
        if bias is not None and with_bias:
            return builder.op(with_bias, product, bias, domain=domain)
        if bias is not None:
            product = builder.op("Add", product, bias)
        return builder.op(op_type, product, domain=domain)

    def activation_of(self, layer) -> str:
        """The name of a dense layer's activation (`activation_name`), one that
        `ONNX_ACTIVATIONS` writes or "linear"; a `ConfigError` for any other."""
        return self._activation_name(layer.activation, layer.name)

    def _activation_name(self, function, owner: str) -> str:
        try:
            name = activation_name(function)
        except ValueError as error:
            raise ConfigError(f"The ONNX export has no form of {owner}'s activation.") from error
        if name != LINEAR and name not in ONNX_ACTIVATIONS:
            raise ConfigError(f"The ONNX export has no form of {owner}'s activation {name!r}.")
        return name

    def layer_norm(self, value: str, layer, name: str) -> str:
        """A Keras LayerNormalization (without its bias input where it has none)."""
        builder = self.builder
        beta = () if layer.beta is None else (builder.weight(f"{name}/beta", layer.beta),)
        return builder.op(
            "LayerNormalization",
            value,
            builder.weight(f"{name}/gamma", layer.gamma),
            *beta,
            axis=-1,
            epsilon=layer_norm_epsilon(layer),
        )

    def activate(self, value: str, function, name: str) -> str:
        """`function` (a GELU, `activation_name`'s) of `value`, as `ONNX_ACTIVATIONS` writes it."""
        op_type, domain, _ = ONNX_ACTIVATIONS[self._activation_name(function, name)]
        return self.builder.op(op_type, value, domain=domain)

    def real_tokens(self) -> str:
        """The mask as float32 `[batch, sequence, 1]`."""
        builder = self.builder
        mask = builder.op("Cast", MASK, to=TensorProto.FLOAT)
        return builder.op("Unsqueeze", mask, builder.constant("minus_one", np.array([-1])))

    def position_ids(self) -> str:
        """`BertEmbeddings.position_ids`: 0, 1, ... (`[sequence]`), or with the layer's
        `position_offset` (RoBERTa) `[batch, sequence]` ids that count real tokens from it
        (padding: `position_offset - 1`)."""
        builder = self.builder
        offset = self.encoder.embeddings.position_offset
        if not offset:
            return builder.op(
                "Range",
                builder.constant("zero", np.array(0)),
                self._sequence_length(),
                builder.constant("one", np.array(1)),
            )
        counted = builder.op("CumSum", MASK, builder.constant("one", np.array(1)))
        return builder.op(
            "Add",
            builder.op("Mul", counted, MASK),
            builder.constant("position_offset", np.array(offset - 1, np.int32)),
        )

    # The encoder --------------------------------------------------------------------------

    def _sequence_length(self) -> str:
        """The inputs' sequence length, an int64 scalar."""
        builder = self.builder
        return builder.op(
            "Gather", builder.op("Shape", WORD_IDS), builder.constant("one", np.array(1))
        )

    def _embeddings(self) -> str:
        builder, layer = self.builder, self.encoder.embeddings
        summed = builder.op(
            "Gather",
            builder.weight("token_embedding", layer.token_embedding.embeddings),
            WORD_IDS,
        )
        if layer.segment_embedding is not None:
            table = builder.weight("segment_embedding", layer.segment_embedding.embeddings)
            summed = builder.op("Add", summed, builder.op("Gather", table, TYPE_IDS))
        if layer.position_embedding is not None:
            table = builder.weight("position_embedding", layer.position_embedding.embeddings)
            summed = builder.op("Add", summed, builder.op("Gather", table, self.position_ids()))
        hidden = self.layer_norm(summed, layer.layer_norm, "embeddings/layer_norm")
        if layer.zero_padding:
            hidden = builder.op("Mul", hidden, self.real_tokens())
        if self.encoder.embedding_projection is not None:
            hidden = self.dense(hidden, self.encoder.embedding_projection, "embedding_projection")
        return hidden

    def _block(self, block, hidden: str, relative_bias, first_token_only: bool = False) -> str:
        """A Transformer block; with `first_token_only` its output at the first position alone
        (`[batch, 1, hidden]`), which attends to every token."""
        if block.pre_layer_norm:
            return self._pre_layer_norm_block(block, hidden, relative_bias, first_token_only)
        name = block.name
        attention = block.attention
        context = self._attention_context(block, hidden, relative_bias, first_token_only)
        hidden = self._skip_layer_norm(
            self._projection(context, attention.output_dense, f"{name}/attention_output"),
            self._first_position(hidden) if first_token_only else hidden,
            block.attention_layer_norm,
            attention.output_dense.bias,
            f"{name}/attention",
        )
        activated = self.dense(hidden, block.intermediate_dense, f"{name}/intermediate")
        return self._skip_layer_norm(
            self._projection(activated, block.output_dense, f"{name}/output"),
            hidden,
            block.output_layer_norm,
            block.output_dense.bias,
            f"{name}/output",
        )

    def _pre_layer_norm_block(
        self, block, hidden: str, relative_bias, first_token_only: bool = False
    ) -> str:
        """A pre-LN block (ModernBERT's): each branch reads its input normalized (the first
        block's attention, where it has no LayerNorm, the embeddings' output) and adds to it."""
        builder, name = self.builder, block.name
        normalized = hidden
        if block.attention_layer_norm is not None:
            normalized = self.layer_norm(
                hidden, block.attention_layer_norm, f"{name}/attention_layer_norm"
            )
        context = self._attention_context(block, normalized, relative_bias, first_token_only)
        attended = self.dense(context, block.attention.output_dense, f"{name}/attention_output")
        residual = self._first_position(hidden) if first_token_only else hidden
        hidden = builder.op("Add", residual, attended)
        normalized = self.layer_norm(hidden, block.output_layer_norm, f"{name}/output_layer_norm")
        intermediate = self.dense(normalized, block.intermediate_dense, f"{name}/intermediate")
        if block.gate is not None:  # GeGLU: the activation of the first half times the second
            inputs, gate = builder.op("Split", intermediate, axis=-1, outputs=2)
            activated = self.activate(inputs, block.gate.activation, f"{name}/gate")
            intermediate = builder.op("Mul", activated, gate)
        return builder.op(
            "Add", hidden, self.dense(intermediate, block.output_dense, f"{name}/output")
        )

    def _attention_context(
        self, block, hidden: str, relative_bias, first_token_only: bool = False
    ) -> str:
        """The context of a block's attention, `[batch, sequence, hidden]` (`[batch, 1,
        hidden]` with `first_token_only`), before its output projection."""
        name = block.name
        attention = block.attention
        if attention.rotary_base or getattr(attention, "attention_window", 0):
            return self._rotary_attention(attention, hidden, name, first_token_only)
        if relative_bias is not None:
            return self._disentangled_attention(
                attention, hidden, relative_bias, name, first_token_only
            )
        if first_token_only:
            return self._first_query_attention(
                attention, *self._query_key_value(attention, hidden, name, first_token_only), name
            )
        if self.fused_attention:
            return self._fused_attention(attention, hidden, name)
        return self._multi_head_attention(
            attention, *self._query_key_value(attention, hidden, name, first_token_only)
        )

    def _rotary_attention(self, attention, hidden: str, name: str, first_token_only: bool) -> str:
        """ModernBERT's attention: rotated queries and keys, over every key or within the
        layer's window (`rotary_attention`); with `first_token_only` the first query alone
        (position 0, which the rotation leaves as it is) over the keys it sees."""
        builder = self.builder
        heads, head_size = attention.num_heads, attention.head_size
        split = builder.constant("heads_shape", np.array([0, 0, heads, head_size]))

        def by_head(projected: str, rotated: bool) -> str:  # → [batch, heads, sequence, size]
            projected = builder.op("Reshape", projected, split)
            if rotated and attention.rotary_base:
                projected = rotate(builder, projected, self._rotations(attention))
            return builder.op("Transpose", projected, perm=[0, 2, 1, 3])

        query, key, value = self._query_key_value(attention, hidden, name)
        query, key, value = by_head(query, True), by_head(key, True), by_head(value, False)
        window = getattr(attention, "attention_window", 0)
        if first_token_only:
            query = self._first_position(query, axis=2)
            mask = MASK
            if window:  # the keys the first query sees
                key, value = (self._first_positions(heads, window + 1, 2) for heads in (key, value))
                mask = self._first_positions(MASK, window + 1, 1)
            context = self._context_over_keys(attention, query, key, value, mask, name)
        elif window:
            scale = attention.score_scale
            context = windowed_attention(builder, query, key, value, MASK, window, scale, name)
        else:
            context = self._context_over_keys(attention, query, key, value, MASK, name, True)
        return builder.op(
            "Reshape",
            builder.op("Transpose", context, perm=[0, 2, 1, 3]),
            builder.constant("hidden_shape", np.array([0, 0, attention.hidden_size])),
        )

    def _rotations(self, attention) -> tuple[str, str]:
        """The rotation tables of the attention's base, written once per graph."""
        base = attention.rotary_base
        if base not in self._rotary_tables:
            self._rotary_tables[base] = rotary_tables(
                self.builder, self._sequence_length(), attention.head_size, base
            )
        return self._rotary_tables[base]

    def _context_over_keys(
        self, attention, query, key, value, mask: str, name: str, every_query: bool = False
    ) -> str:
        """Every query over every key of `mask` `[batch, keys]`: `[batch, heads, query, size]`;
        `every_query` (a layer's whole sequence), in the layer's query blocks if it has them."""
        builder = self.builder
        real = builder.op("Cast", mask, to=TensorProto.FLOAT)
        bias = builder.op(
            "Unsqueeze", padding_bias(builder, real), builder.constant("key_axes", np.array([1, 2]))
        )
        if every_query and attention.query_block_size:
            return attention_in_query_blocks(
                builder, query, key, value, bias, attention.score_scale,
                attention.query_block_size, name,
            )  # fmt: skip
        return attention_context(builder, query, key, value, bias, attention.score_scale, 4, name)

    def _first_positions(self, value: str, count: int, axis: int) -> str:
        """`value`'s first `count` positions of `axis` (all of them where it has fewer)."""
        builder = self.builder
        return builder.op(
            "Slice",
            value,
            builder.constant("zero_axis", np.array([0])),
            builder.constant(f"first_{count}", np.array([count])),
            builder.constant(f"slice_axis_{axis}", np.array([axis])),
        )

    def _projection(self, value: str, layer, name: str) -> str:
        """`value @ kernel` of a linear dense layer whose bias the next node adds."""
        if self.activation_of(layer) != LINEAR:
            raise ConfigError(f"The ONNX export expects {layer.name} without an activation.")
        return self.builder.op(
            "MatMul", value, self.builder.weight(f"{name}/kernel", layer.kernel), name=name
        )

    def _skip_layer_norm(self, value: str, residual: str, layer, bias, name: str) -> str:
        builder = self.builder
        return builder.contrib(
            "SkipLayerNormalization",
            value,
            residual,
            builder.weight(f"{name}/layer_norm/gamma", layer.gamma),
            builder.weight(f"{name}/layer_norm/beta", layer.beta),
            builder.weight(f"{name}/bias", bias),
            epsilon=layer_norm_epsilon(layer),
        )

    def _qkv_weights(self, attention, name: str) -> tuple[str, str | None]:
        """The query, key and value kernels `[hidden, 3 * hidden]` and biases (None without:
        ModernBERT's) as one each."""
        projections = (attention.query, attention.key, attention.value)
        for projection in projections:
            if self.activation_of(projection) != LINEAR:
                raise ConfigError(f"The ONNX export expects {projection.name} to be linear.")
        builder = self.builder
        kernel = builder.weight(f"{name}/attention/qkv_kernel", *(p.kernel for p in projections))
        if attention.query.bias is None:
            return kernel, None
        return kernel, builder.weight(f"{name}/attention/qkv_bias", *(p.bias for p in projections))

    def _query_key_value(
        self, attention, hidden: str, name: str, first_token_only: bool = False
    ) -> list[str]:
        """The query, key and value `[batch, sequence, hidden]`: one `MatMul` and its bias;
        with `first_token_only` the query of the first position alone (`[batch, 1, hidden]`)."""
        builder = self.builder
        kernel, bias = self._qkv_weights(attention, name)
        qkv = builder.op("MatMul", hidden, kernel, name=f"{name}/attention/qkv")
        if bias is not None:
            qkv = builder.op("Add", qkv, bias)
        query, key, value = builder.op("Split", qkv, self._qkv_split(attention), axis=-1, outputs=3)
        return [self._first_position(query) if first_token_only else query, key, value]

    def _first_position(self, value: str, axis: int = 1) -> str:
        """`value` at index 0 of `axis`, which it keeps (length 1)."""
        builder = self.builder
        return builder.op(
            "Slice",
            value,
            builder.constant("zero_axis", np.array([0])),
            builder.constant("one_axis", np.array([1])),
            builder.constant("slice_axis", np.array([axis])),
        )

    def _qkv_split(self, attention) -> str:
        return self.builder.constant("qkv_split", np.array([attention.hidden_size] * 3))

    def _multi_head_attention(self, attention, query, key, value, scores_bias=None) -> str:
        """ONNX Runtime's `MultiHeadAttention`: masked softmax and context of projected
        queries, keys and values, with `scores_bias` added to the scaled scores."""
        return self.builder.contrib(
            "MultiHeadAttention",
            query,
            key,
            value,
            "",
            MASK,
            *([scores_bias] if scores_bias is not None else []),
            num_heads=attention.num_heads,
            scale=attention.score_scale,
            mask_filter_value=MASKED_SCORE,
        )

    def _first_query_attention(self, attention, query: str, key: str, value: str, name: str) -> str:
        """One query's attention over every key (`[batch, 1, hidden]` out) in standard ONNX
        operators, which every ONNX runtime reads (OpenVINO reads no `MultiHeadAttention`)."""
        builder = self.builder
        heads = attention.num_heads
        split = builder.constant("heads_shape", np.array([0, -1, heads, attention.head_size]))

        def by_head(projected: str, permutation: list[int]) -> str:
            return builder.op(
                "Transpose", builder.op("Reshape", projected, split), perm=permutation
            )

        scores = builder.op(  # [batch, heads, 1, sequence]
            "MatMul",
            by_head(query, [0, 2, 1, 3]),
            by_head(key, [0, 2, 3, 1]),
            name=f"{name}/{FIRST_QUERY_PREFIX}scores",
        )
        scale = builder.constant("score_scale", np.array(attention.score_scale))
        # MASKED_SCORE where input_mask is 0, as the Keras layer adds it.
        padding = builder.op(
            "Mul",
            builder.op(
                "Sub",
                builder.op("Cast", MASK, to=TensorProto.FLOAT),
                builder.constant("one_float", np.array(1.0)),
            ),
            builder.constant("masked_score", np.array(-MASKED_SCORE)),
        )
        padding = builder.op("Unsqueeze", padding, builder.constant("key_axes", np.array([1, 2])))
        probabilities = builder.op(
            "Softmax", builder.op("Add", builder.op("Mul", scores, scale), padding), axis=-1
        )
        context = builder.op(
            "MatMul",
            probabilities,
            by_head(value, [0, 2, 1, 3]),
            name=f"{name}/{FIRST_QUERY_PREFIX}context",
        )
        return builder.op(
            "Reshape",
            builder.op("Transpose", context, perm=[0, 2, 1, 3]),
            builder.constant("query_shape", np.array([0, 1, attention.hidden_size])),
        )

    def _fused_attention(self, attention, hidden: str, name: str) -> str:
        """ONNX Runtime's `Attention`: one node for projections, masked softmax and context."""
        kernel, bias = self._qkv_weights(attention, name)
        return self.builder.contrib(
            "Attention",
            hidden,
            kernel,
            bias,
            MASK,
            num_heads=attention.num_heads,
            scale=attention.score_scale,
            mask_filter_value=MASKED_SCORE,
            name=f"{name}/attention",
        )

    # DeBERTa ------------------------------------------------------------------------------

    def relative_positions(self) -> dict[str, str]:
        """The relative rows of every (query, key) pair, `[sequence, sequence]` int64, for
        c2p and for p2c (transposed: `[key, query]`), cut from tables of the longest sequence
        (`max_position_embeddings`) at run time; and the relative embedding table, through its
        LayerNorm if the layer has one."""
        builder, config = self.builder, self.config
        longest = config.max_position_embeddings
        span = config.relative_attention_span
        content_to_position, position_to_content, start, _ = relative_embedding_rows(
            longest, span, config.position_buckets, config.relative_position_range
        )
        rows = {}
        # Both depend on i - j only: keep one row per distance, -(longest-1) ... longest-1.
        for term, matrix in (
            ("c2p", content_to_position + start),
            ("p2c", position_to_content.T + start),
        ):
            by_distance = np.concatenate([matrix[0, ::-1], matrix[1:, 0]])  # i - j = -(L-1) ... L-1
            rows[term] = builder.constant(f"relative_rows/{term}", by_distance.astype(np.int64))
        length = self._sequence_length()
        positions = builder.op(
            "Range",
            builder.constant("zero64", np.array(0, np.int64)),
            length,
            builder.constant("one64", np.array(1, np.int64)),
        )
        distance = builder.op(
            "Sub",
            builder.op("Unsqueeze", positions, builder.constant("minus_one", np.array([-1]))),
            builder.op("Unsqueeze", positions, builder.constant("zero_axis", np.array([0]))),
        )
        index = builder.op(
            "Add",
            distance,
            builder.constant("relative_rows/center", np.array(longest - 1, np.int64)),
        )
        layer = self.encoder.relative_embeddings
        table = builder.weight("relative_embeddings", layer.embeddings)
        if layer.layer_norm is not None:
            table = self.layer_norm(table, layer.layer_norm, "relative_embeddings/layer_norm")
        relative = {term: builder.op("Gather", rows[term], index) for term in rows}
        return relative | {"table": table}

    def _disentangled_attention(
        self, attention, hidden: str, relative: dict, name: str, first_token_only: bool = False
    ) -> str:
        """DeBERTa's attention: content→content in ONNX Runtime's `MultiHeadAttention`, the
        c2p and p2c terms as its `attention_bias`, `scale * (q·K_r + k·Q_r)` at each pair's
        relative row. The relative keys and queries (the table through the key and query
        projections) depend on weights only, so ONNX Runtime folds them into constants when it
        loads the model: each term is one batched matmul and one `GatherElements`. With
        `first_token_only`, the first query's row of each (`[batch, 1, hidden]` out)."""
        builder = self.builder
        heads, head_size = attention.num_heads, attention.head_size
        query, key, value = self._query_key_value(attention, hidden, name, first_token_only)
        kernel, bias = self._qkv_weights(attention, name)
        table = relative["table"]
        scale = builder.constant(f"{name}/attention/score_scale", np.array(attention.score_scale))
        table_qkv = None  # the table through the content projections (DeBERTa-v3's shared keys)
        scores_bias = None
        for term, content, own_projection, shared_index in (
            ("c2p", query, attention.pos_key_proj, 1),
            ("p2c", key, attention.pos_query_proj, 0),
        ):
            if term not in attention.terms:
                continue
            if own_projection is not None:
                rows = self.dense(
                    table, own_projection, f"{name}/{RELATIVE_TERM_PREFIX}{term}_rows"
                )
            else:
                if table_qkv is None:
                    product = builder.op(
                        "MatMul", table, kernel, name=f"{name}/{RELATIVE_TERM_PREFIX}qkv"
                    )
                    table_qkv = builder.op(
                        "Split",
                        builder.op("Add", product, bias),
                        self._qkv_split(attention),
                        axis=-1,
                        outputs=3,
                    )
                rows = table_qkv[shared_index]
            # [rows, hidden] → [heads, head_size, rows], scaled as the content scores.
            rows_shape = builder.constant("rows_shape", np.array([0, heads, head_size]))
            rows = builder.op("Transpose", builder.op("Reshape", rows, rows_shape), perm=[1, 2, 0])
            scores = builder.op(
                "MatMul",
                self._split_heads(content, attention),
                builder.op("Mul", rows, scale),
                name=f"{name}/{RELATIVE_TERM_PREFIX}{term}",
            )
            pairs = relative[term]  # [query, key] (c2p) or [key, query] (p2c) rows
            if first_token_only:
                pairs = self._first_position(pairs, axis=0 if term == "c2p" else 1)
            # Broadcast to [batch, heads, query, key] (p2c: [..., key, query]).
            batch_heads = builder.op("Shape", scores, start=0, end=2)
            ones = builder.constant("ones_2", np.array([1, 1]))
            index = builder.op("Expand", pairs, builder.op("Concat", batch_heads, ones, axis=0))
            # [batch, heads, query, rows] → [batch, heads, query, key]: each pair's row.
            gathered = builder.op("GatherElements", scores, index, axis=3)
            if term == "p2c":  # computed as [key, query]
                gathered = builder.op("Transpose", gathered, perm=[0, 1, 3, 2])
            scores_bias = (
                gathered if scores_bias is None else builder.op("Add", scores_bias, gathered)
            )
        return self._multi_head_attention(attention, query, key, value, scores_bias)

    def _split_heads(self, value: str, attention) -> str:
        """`[batch, sequence, hidden]` → `[batch, heads, sequence, head_size]`."""
        builder = self.builder
        shape = builder.constant(
            "heads_shape", np.array([0, 0, attention.num_heads, attention.head_size])
        )
        return builder.op("Transpose", builder.op("Reshape", value, shape), perm=[0, 2, 1, 3])
