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

Padding: a padded key gets -10000 added to its scores, as `MASKED_SCORE` in Keras (ONNX Runtime's
default `mask_filter_value`), so outputs equal the Keras model's at every position.

Families: RoBERTa's positions count real tokens from its offset (`CumSum` of the mask),
DistilBERT has no token types (the graph has no `input_type_ids` input) and no pooler,
ALBERT's factorized embeddings are projected to H and its layers reuse their group's weights
(one initializer per weight), DeBERTa-v3 has no absolute positions and zeroes padding.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from keras_bert.errors import ConfigError
from keras_bert.export.onnx.graph_builder import GraphBuilder
from keras_bert.layers.relative_positions import relative_embedding_rows

# Graph inputs, as the SavedModel's `serving_ids` names them.
WORD_IDS, MASK, TYPE_IDS = "input_word_ids", "input_mask", "input_type_ids"
BATCH, SEQUENCE = "batch", "sequence"
# Names DeBERTa's relative-term matmuls (a constant 3-D operand, which int8 leaves alone).
RELATIVE_TERM_PREFIX = "relative_"


def weight(variable) -> np.ndarray:
    """A Keras variable's value as float32 numpy."""
    return np.asarray(variable.numpy(), np.float32)


def layer_norm_epsilon(layer) -> float:
    return float(layer.epsilon)


def input_names(config) -> list[str]:
    """The graph's int32 inputs for an encoder of `config`: token types only where it has
    them."""
    return [WORD_IDS, MASK] + ([TYPE_IDS] if config.type_vocab_size else [])


def unsupported_reason(config) -> str | None:
    """Why an encoder of `config` cannot be written as ONNX, or None."""
    if config.pre_layer_norm:
        return "pre-LayerNorm blocks (pre_layer_norm=True)"
    if config.relative_attention_buckets:
        return "T5 relative attention buckets (relative_attention_buckets)"
    return None


class EncoderGraph:
    """Writes an encoder's graph into a `GraphBuilder`: `write(builder)` declares the inputs
    and returns the `sequence_output` value (and `pooled_output` if the encoder has a pooler).

    Args:
        encoder: a float32 `BertEncoder` (`feed_forward_shards=1`).

    Raises:
        ConfigError: for an encoder whose config the graph does not cover
            (`unsupported_reason`).
    """

    def __init__(self, encoder):
        self.encoder = encoder
        self.config = encoder.bert_config
        reason = unsupported_reason(self.config)
        if reason or encoder.feed_forward_shards != 1:
            raise ConfigError(
                f"The ONNX export does not cover {reason or 'feed_forward_shards > 1'}."
            )
        self._block_weights: dict[int, dict[str, str]] = {}

    def write(self, builder: GraphBuilder) -> dict[str, str]:
        """Declares the inputs and writes the encoder; returns its output values by name."""
        self.builder = builder
        for name in input_names(self.config):
            builder.input(name, TensorProto.INT32, [BATCH, SEQUENCE])
        hidden = self._embeddings()
        relative_bias = self._relative_positions() if self.config.relative_attention else None
        for group in self.config.layer_groups:
            for block in self.encoder.block_groups[group]:
                hidden = self._block(block, hidden, relative_bias)
        outputs = {"sequence_output": hidden}
        if self.encoder.pooler is not None:
            dense = self.encoder.pooler.dense
            first = builder.op("Gather", hidden, builder.constant("zero", np.array(0)), axis=1)
            outputs["pooled_output"] = builder.op("Tanh", self.dense(first, dense, "pooler"))
        return outputs

    # Building blocks shared with the task heads ------------------------------------------

    def dense(self, value: str, layer, name: str) -> str:
        """`value @ kernel + bias` of a Keras dense layer (no activation)."""
        builder = self.builder
        product = builder.op(
            "MatMul", value, builder.constant(f"{name}/kernel", weight(layer.kernel)), name=name
        )
        if layer.bias is None:
            return product
        return builder.op("Add", product, builder.constant(f"{name}/bias", weight(layer.bias)))

    def layer_norm(self, value: str, layer, name: str) -> str:
        builder = self.builder
        return builder.op(
            "LayerNormalization",
            value,
            builder.constant(f"{name}/gamma", weight(layer.gamma)),
            builder.constant(f"{name}/beta", weight(layer.beta)),
            axis=-1,
            epsilon=layer_norm_epsilon(layer),
        )

    def activation(self, value: str, name: str) -> str:
        """`value` through an activation named as `BertConfig.hidden_activation` or a Keras
        activation string ("tanh", "relu", "gelu")."""
        builder = self.builder
        if name == "gelu":
            return builder.contrib("Gelu", value)
        if name == "gelu_approximate":
            return builder.contrib("FastGelu", value)
        if name in ("relu", "tanh"):
            return builder.op(name.capitalize(), value)
        raise ConfigError(f"No ONNX activation for {name!r}.")

    # The encoder --------------------------------------------------------------------------

    def _embeddings(self) -> str:
        builder, layer = self.builder, self.encoder.embeddings
        summed = builder.op(
            "Gather",
            builder.constant("token_embedding", weight(layer.token_embedding.embeddings)),
            WORD_IDS,
        )
        if layer.segment_embedding is not None:
            table = builder.constant(
                "segment_embedding", weight(layer.segment_embedding.embeddings)
            )
            summed = builder.op("Add", summed, builder.op("Gather", table, TYPE_IDS))
        if layer.position_embedding is not None:
            table = builder.constant(
                "position_embedding", weight(layer.position_embedding.embeddings)
            )
            summed = builder.op("Add", summed, builder.op("Gather", table, self._positions()))
        hidden = self.layer_norm(summed, layer.layer_norm, "embeddings/layer_norm")
        if layer.zero_padding:
            hidden = builder.op("Mul", hidden, self._real_tokens())
        if self.encoder.embedding_projection is not None:
            hidden = self.dense(hidden, self.encoder.embedding_projection, "embedding_projection")
        return hidden

    def _positions(self) -> str:
        """Position ids: 0, 1, ... (`[sequence]`), or RoBERTa's `[batch, sequence]` ids that
        count real tokens from `position_offset` (padding: `position_offset - 1`)."""
        builder = self.builder
        offset = self.config.position_offset
        if not offset:
            length = builder.op(
                "Gather", builder.op("Shape", WORD_IDS), builder.constant("one", np.array(1))
            )
            return builder.op(
                "Range",
                builder.constant("zero", np.array(0)),
                length,
                builder.constant("one", np.array(1)),
            )
        counted = builder.op("CumSum", MASK, builder.constant("one", np.array(1)))
        return builder.op(
            "Add",
            builder.op("Mul", counted, MASK),
            builder.constant("position_offset", np.array(offset - 1, np.int32)),
        )

    def _real_tokens(self) -> str:
        """The mask as float32 `[batch, sequence, 1]`."""
        builder = self.builder
        mask = builder.op("Cast", MASK, to=TensorProto.FLOAT)
        return builder.op("Unsqueeze", mask, builder.constant("minus_one", np.array([-1])))

    def _block(self, block, hidden: str, relative_bias) -> str:
        builder = self.builder
        name = block.name
        attention = block.attention
        if relative_bias is None:
            context = self._fused_attention(attention, hidden, name)
        else:
            context = self._disentangled_attention(attention, hidden, relative_bias, name)
        hidden = self._skip_layer_norm(
            builder.op(
                "MatMul",
                context,
                builder.constant(
                    f"{name}/attention_output/kernel", weight(attention.output_dense.kernel)
                ),
                name=f"{name}/attention_output",
            ),
            hidden,
            block.attention_layer_norm,
            attention.output_dense.bias,
            f"{name}/attention",
        )
        intermediate = block.intermediate_dense
        product = builder.op(
            "MatMul",
            hidden,
            builder.constant(f"{name}/intermediate/kernel", weight(intermediate.kernel)),
            name=f"{name}/intermediate",
        )
        bias = builder.constant(f"{name}/intermediate/bias", weight(intermediate.bias))
        activation = block.hidden_activation
        if activation == "gelu":
            activated = builder.contrib("BiasGelu", product, bias)
        elif activation == "gelu_approximate":
            activated = builder.contrib("FastGelu", product, bias)
        else:
            activated = builder.op("Relu", builder.op("Add", product, bias))
        output = block.output_dense
        product = builder.op(
            "MatMul",
            activated,
            builder.constant(f"{name}/output/kernel", weight(output.kernel)),
            name=f"{name}/output",
        )
        return self._skip_layer_norm(
            product, hidden, block.output_layer_norm, output.bias, f"{name}/output"
        )

    def _skip_layer_norm(self, value: str, residual: str, layer, bias, name: str) -> str:
        builder = self.builder
        return builder.contrib(
            "SkipLayerNormalization",
            value,
            residual,
            builder.constant(f"{name}/layer_norm/gamma", weight(layer.gamma)),
            builder.constant(f"{name}/layer_norm/beta", weight(layer.beta)),
            builder.constant(f"{name}/bias", weight(bias)),
            epsilon=layer_norm_epsilon(layer),
        )

    def _fused_attention(self, attention, hidden: str, name: str) -> str:
        """ONNX Runtime's `Attention`: one node for projections, masked softmax and context."""
        builder = self.builder
        kernels = [
            weight(projection.kernel)
            for projection in (attention.query, attention.key, attention.value)
        ]
        biases = [
            weight(projection.bias)
            for projection in (attention.query, attention.key, attention.value)
        ]
        return builder.contrib(
            "Attention",
            hidden,
            builder.constant(f"{name}/attention/qkv_kernel", np.concatenate(kernels, axis=1)),
            builder.constant(f"{name}/attention/qkv_bias", np.concatenate(biases)),
            MASK,
            num_heads=attention.num_heads,
            mask_filter_value=-10000.0,
            name=f"{name}/attention",
        )

    # DeBERTa ------------------------------------------------------------------------------

    def _relative_positions(self) -> dict[str, str]:
        """The relative rows of every (query, key) pair, `[sequence, sequence]` int64, for
        c2p and for p2c (transposed: `[key, query]`), cut from tables of the longest sequence
        (`max_position_embeddings`) at run time; and the relative embedding table after its
        LayerNorm (numpy: a constant)."""
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
        length = builder.op(
            "Gather", builder.op("Shape", WORD_IDS), builder.constant("one", np.array(1))
        )
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
        table = self._relative_table()
        relative = {term: builder.op("Gather", rows[term], index) for term in rows}
        length_axis = builder.constant("zero_axis", np.array([0]))
        return relative | {"table": table, "length": builder.op("Unsqueeze", length, length_axis)}

    def _relative_table(self) -> np.ndarray:
        layer = self.encoder.relative_embeddings
        table = weight(layer.embeddings)
        if layer.layer_norm is not None:
            mean = table.mean(-1, keepdims=True)
            variance = ((table - mean) ** 2).mean(-1, keepdims=True)
            table = (table - mean) / np.sqrt(variance + layer.layer_norm.epsilon)
            table = table * weight(layer.layer_norm.gamma) + weight(layer.layer_norm.beta)
        return table.astype(np.float32)

    def _disentangled_attention(self, attention, hidden: str, relative: dict, name: str) -> str:
        """DeBERTa's attention: content→content in ONNX Runtime's `MultiHeadAttention`, the
        c2p and p2c terms as its `attention_bias`, `scale * (q·K_r + k·Q_r)` at each pair's
        relative row. The relative keys and queries are constants (the table through the
        projections), so each term is one batched matmul and one `GatherElements`."""
        builder = self.builder
        heads, head_size = attention.num_heads, attention.head_size
        scale = 1.0 / math.sqrt(head_size * (1 + len(attention.terms)))
        projections = [attention.query, attention.key, attention.value]
        qkv = builder.op(
            "Add",
            builder.op(
                "MatMul",
                hidden,
                builder.constant(
                    f"{name}/attention/qkv_kernel",
                    np.concatenate([weight(p.kernel) for p in projections], 1),
                ),
                name=f"{name}/attention/qkv",
            ),
            builder.constant(
                f"{name}/attention/qkv_bias", np.concatenate([weight(p.bias) for p in projections])
            ),
        )
        hidden_size = heads * head_size
        query, key, value = builder.op(
            "Split",
            qkv,
            builder.constant("qkv_split", np.array([hidden_size] * 3)),
            axis=-1,
            outputs=3,
        )
        bias = None
        table = relative["table"]
        for term, content, projection in (
            ("c2p", query, attention.pos_key_proj or attention.key),
            ("p2c", key, attention.pos_query_proj or attention.query),
        ):
            if term not in attention.terms:
                continue
            # [heads, head_size, rows]: the relative rows through the projection, per head.
            rows = table @ weight(projection.kernel) + weight(projection.bias)
            rows = rows.reshape(-1, heads, head_size).transpose(1, 2, 0) * scale
            scores = builder.op(
                "MatMul",
                self._split_heads(content),
                builder.constant(f"{name}/attention/{term}_rows", rows),
                name=f"{name}/{RELATIVE_TERM_PREFIX}{term}",
            )
            # [batch, heads, query, key]: the scores' shape with the sequence as last axis.
            pair_shape = builder.op("Shape", scores, start=0, end=3)
            pair_shape = builder.op("Concat", pair_shape, relative["length"], axis=0)
            index = builder.op("Expand", relative[term], pair_shape)
            # [batch, heads, query, rows] → [batch, heads, query, key]: each pair's row.
            gathered = builder.op("GatherElements", scores, index, axis=3)
            if term == "p2c":  # computed as [key, query]
                gathered = builder.op("Transpose", gathered, perm=[0, 1, 3, 2])
            bias = gathered if bias is None else builder.op("Add", bias, gathered)
        return builder.contrib(
            "MultiHeadAttention",
            query,
            key,
            value,
            "",
            MASK,
            *([bias] if bias is not None else []),
            num_heads=heads,
            scale=scale,
            mask_filter_value=-10000.0,
        )

    def _split_heads(self, value: str) -> str:
        """`[batch, sequence, hidden]` → `[batch, heads, sequence, head_size]`."""
        builder = self.builder
        shape = builder.constant(
            "heads_shape", np.array([0, 0, self.config.num_heads, self.config.head_size])
        )
        return builder.op("Transpose", builder.op("Reshape", value, shape), perm=[0, 2, 1, 3])
