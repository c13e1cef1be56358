"""ModernBERT's attention as ONNX: rotary positions, and attention within a window in blocks, in
standard operators (which ONNX Runtime and OpenVINO both read), the rules of the Keras layers
(`RotaryEmbedding`, `WindowedSelfAttention`) written node by node.

Heads are `[batch, heads, sequence, head_size]` values. The window's queries are cut into
blocks of `window` tokens (fewer for a shorter sequence) that score the keys of their block and
of its two neighbours, masked to the window and the padding: scores and memory grow as
`sequence × 3 × window`, never as `sequence × sequence`. The rotation's frequencies are a
float64 table cast to float32: the float32 values of `inverse_frequencies` exactly, which
`parameter_count` leaves out (they are no weights; Keras' layer has none).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from onnx import TensorProto

from keras_bert.export.onnx.graph_builder import GraphBuilder
from keras_bert.layers.rotary_embedding import inverse_frequencies
from keras_bert.layers.self_attention import MASKED_SCORE

# In the names of the attention's products of activations (scores, weighted values), which
# int8 leaves in float32.
ROTARY_ATTENTION_PREFIX = "rotary_attention_"


def _as_shape(builder: GraphBuilder, scalar: str) -> str:
    """An int64 scalar as a `[1]` value, to concatenate into shapes and pads."""
    return builder.op("Unsqueeze", scalar, builder.constant("zero_axis", np.array([0])))


def _int64(builder: GraphBuilder, name: str, values) -> str:
    return builder.constant(name, np.array(values, np.int64))


def rotary_tables(
    builder: GraphBuilder, sequence_length: str, head_size: int, base: float
) -> tuple[str, str]:
    """The cosines and sines of every position's rotation (`rotary_angles`), float32
    `[sequence, 1, head_size]`, for heads `[batch, sequence, heads, head_size]`; the sines
    negated in the first half (`rotate`'s sign)."""
    frequencies = builder.constant(
        f"rotary_frequencies_{base:g}",
        inverse_frequencies(head_size, base).astype(np.float64),
        keep_float64=True,
    )
    positions = builder.op(
        "Range", _int64(builder, "zero64", 0), sequence_length, _int64(builder, "one64", 1)
    )
    angles = builder.op(
        "Mul",
        builder.op(
            "Unsqueeze",
            builder.op("Cast", positions, to=TensorProto.FLOAT),
            builder.constant("minus_one", np.array([-1])),
        ),
        builder.op("Cast", frequencies, to=TensorProto.FLOAT),
    )
    angles = builder.op("Concat", angles, angles, axis=-1)
    angles = builder.op("Unsqueeze", angles, builder.constant("one_axis", np.array([1])))
    signs = builder.constant(  # the sign of `rotate_half`, a table like the frequencies
        f"rotary_signs_{head_size}", np.repeat([-1.0, 1.0], head_size // 2), keep_float64=True
    )
    signed_sin = builder.op(
        "Mul", builder.op("Sin", angles), builder.op("Cast", signs, to=TensorProto.FLOAT)
    )
    return builder.op("Cos", angles), signed_sin


def rotate(builder: GraphBuilder, heads: str, tables: tuple[str, str]) -> str:
    """`heads * cos + rotate_half(heads) * sin` with `rotate_half(x) = [-x2, x1]`: the halves
    swapped, their sign in the sine table (`rotary_tables`), as `RotaryEmbedding` has it (one
    `Gather` of the swapped dimensions instead is 5% slower in ONNX Runtime)."""
    cos, signed_sin = tables
    first, second = builder.op("Split", heads, axis=-1, outputs=2)
    halves_swapped = builder.op("Concat", second, first, axis=-1)
    return builder.op(
        "Add", builder.op("Mul", heads, cos), builder.op("Mul", halves_swapped, signed_sin)
    )


def padding_bias(builder: GraphBuilder, real: str) -> str:
    """`MASKED_SCORE` where the float32 `real` is 0, else 0: what the Keras layers add to the
    scores of a key they do not see."""
    return builder.op(
        "Mul",
        builder.op("Sub", real, builder.constant("one_float", np.array(1.0))),
        builder.constant("masked_score", np.array(-MASKED_SCORE)),
    )


def attention_context(
    builder: GraphBuilder,
    query: str,
    key: str,
    value: str,
    bias: str,
    scale: float,
    rank: int,
    name: str,
) -> str:
    """Softmax over `scale` × the scores of `query` and `key` (`[..., queries, size]`,
    `[..., keys, size]`, of `rank` axes) plus `bias`, times `value`: `[..., queries, size]`."""
    swapped = [*range(rank - 2), rank - 1, rank - 2]
    scores = builder.op(
        "MatMul",
        query,
        builder.op("Transpose", key, perm=swapped),
        name=f"{name}/{ROTARY_ATTENTION_PREFIX}scores",
    )
    scores = builder.op("Mul", scores, builder.constant("score_scale", np.array(scale)))
    probabilities = builder.op("Softmax", builder.op("Add", scores, bias), axis=-1)
    return builder.op(
        "MatMul", probabilities, value, name=f"{name}/{ROTARY_ATTENTION_PREFIX}context"
    )


class _Blocks(NamedTuple):
    """How a sequence of `length` positions is cut into `count` blocks of `block` (int64
    scalars), the last padded with `padding` (`[1]`) positions."""

    length: str
    block: str
    count: str
    padding: str


def _blocks_of(builder: GraphBuilder, heads: str, block_size: int) -> _Blocks:
    """The blocks of `block_size` positions (one block for a shorter sequence) of the sequence
    axis of `heads` `[batch, heads, sequence, size]`, as the Keras layers cut it."""
    length = builder.op("Gather", builder.op("Shape", heads), builder.constant("two", np.array(2)))
    block = builder.op("Min", length, _int64(builder, f"block_{block_size}", block_size))
    count = builder.op(
        "Div",
        builder.op("Sub", builder.op("Add", length, block), _int64(builder, "one64", 1)),
        block,
    )
    padding = _as_shape(builder, builder.op("Sub", builder.op("Mul", count, block), length))
    return _Blocks(length, block, count, padding)


def _joined(builder: GraphBuilder, context: str, blocks: _Blocks, size: str) -> str:
    """A context in blocks, `[batch, heads, blocks, block, size]`, as `[batch, heads, length,
    size]` (the last block's padding cut off); `size` is the `[1]` head size."""
    context = builder.op(
        "Reshape",
        context,
        builder.op("Concat", _int64(builder, "keep_two", [0, 0]),
                   _int64(builder, "minus_one64", [-1]), size, axis=0),
    )  # fmt: skip
    return builder.op(
        "Slice",
        context,
        _int64(builder, "zero_axis64", [0]),
        _as_shape(builder, blocks.length),
        builder.constant("two_axis", np.array([2])),
    )


def attention_in_query_blocks(
    builder: GraphBuilder,
    query: str,
    key: str,
    value: str,
    bias: str,
    scale: float,
    block_size: int,
    name: str,
) -> str:
    """The softmax of every query's `scale`d scores over every key plus `bias`, times `value`
    (`[batch, heads, sequence, size]` each, `bias` `[batch, 1, 1, sequence]`), `block_size`
    queries at a time in a `Loop`, as `MultiHeadSelfAttention` attends in query blocks: memory
    for a `[block, sequence]` score matrix per head, not `[sequence, sequence]` (ModernBERT-base
    at 8,192 tokens: 14 GB in ONNX Runtime without blocks). A shorter sequence is one block.

    The queries are scaled before their product, as the Keras layer scales them, and the bias
    rides in it: queries `[q * scale, 1]` against keys `[k, bias]`, so that no pass adds it to
    every block's scores (8,192 tokens 5.7% faster, 2,048 1%; AMD EPYC Zen 4, 2026-12-07)."""
    blocks = _blocks_of(builder, query, block_size)
    one_wide = builder.op(  # [batch, heads, sequence, 1]
        "Concat", builder.op("Shape", query, end=3), _int64(builder, "one64_1", [1]), axis=0
    )
    ones = builder.op("Expand", builder.constant("one_float", np.array(1.0)), one_wide)
    scaled = builder.op("Mul", query, builder.constant("score_scale", np.array(scale)))
    queries = _padded_at_the_end(
        builder, builder.op("Concat", scaled, ones, axis=-1), 2, 4, blocks.padding
    )
    bias_by_key = builder.op("Expand", builder.op("Transpose", bias, perm=[0, 1, 3, 2]), one_wide)
    keys_by_column = builder.op(  # [batch, heads, size + 1, sequence]
        "Transpose", builder.op("Concat", key, bias_by_key, axis=-1), perm=[0, 1, 3, 2]
    )
    axis = builder.constant("two_axis", np.array([2]))

    def one_block(iteration: str) -> str:  # [batch, heads, block, size]
        start = _as_shape(builder, builder.op("Mul", iteration, blocks.block))
        end = builder.op("Add", start, _as_shape(builder, blocks.block))
        block_queries = builder.op("Slice", queries, start, end, axis)
        scores = builder.op(
            "MatMul",
            block_queries,
            keys_by_column,
            name=f"{name}/{ROTARY_ATTENTION_PREFIX}scores",
        )
        return builder.op(
            "MatMul",
            builder.op("Softmax", scores, axis=-1),
            value,
            name=f"{name}/{ROTARY_ATTENTION_PREFIX}context",
        )

    contexts = builder.loop(blocks.count, one_block, f"{name}/query_blocks")
    by_batch = builder.op("Transpose", contexts, perm=[1, 2, 0, 3, 4])
    return _joined(builder, by_batch, blocks, builder.op("Shape", query, start=3))


def _three_in_a_row(builder: GraphBuilder, count: str) -> str:
    """`[count, 3]` int64: the indices of each of `count` (a scalar) blocks' neighbourhood among
    the blocks padded with one on each side (`_neighbourhoods`), block `i`'s `[i, i + 1, i + 2]`."""
    first_blocks = builder.op(
        "Range", _int64(builder, "zero64", 0), count, _int64(builder, "one64", 1)
    )
    return builder.op(
        "Add",
        builder.op("Unsqueeze", first_blocks, builder.constant("minus_one", np.array([-1]))),
        _int64(builder, "three_offsets", [0, 1, 2]),
    )


def _neighbourhoods(
    builder: GraphBuilder, blocks: str, axis: int, rank: int, three_in_a_row: str
) -> str:
    """`keras_bert.layers.windowed_attention.neighbourhoods`: each of the blocks along `axis` of
    a `rank`-axis value beside its two neighbours, along `axis + 1`: one `Gather` of three
    consecutive blocks (`three_in_a_row`, `_three_in_a_row`) of the blocks padded with one on
    each side (with the sine's sign, ModernBERT-base 3% faster at 2,048 tokens than three
    slices and their concatenation; ONNX Runtime 1.32, AMD EPYC Zen 4, 2026-12-07)."""
    pads = np.zeros(2 * rank, np.int64)
    pads[axis] = pads[rank + axis] = 1
    padded = builder.op("Pad", blocks, _int64(builder, f"block_pads_{rank}_{axis}", pads))
    # [..., blocks, 3, block, ...]
    gathered = builder.op("Gather", padded, three_in_a_row, axis=axis)
    merged = builder.op(
        "Concat",
        _int64(builder, f"zeros_{axis + 1}", np.zeros(axis + 1, np.int64)),
        _int64(builder, "minus_one64", [-1]),
        builder.op("Shape", blocks, start=axis + 2),
        axis=0,
    )
    return builder.op("Reshape", gathered, merged)


def _padded_at_the_end(builder: GraphBuilder, value: str, axis: int, rank: int, extra: str) -> str:
    """`value` with `extra` (`[1]`) zeros after the end of `axis`."""
    before = _int64(builder, f"zeros_{rank + axis}", np.zeros(rank + axis, np.int64))
    after = _int64(builder, f"zeros_{rank - axis - 1}", np.zeros(rank - axis - 1, np.int64))
    return builder.op("Pad", value, builder.op("Concat", before, extra, after, axis=0))


def windowed_attention(
    builder: GraphBuilder,
    query: str,
    key: str,
    value: str,
    mask: str,
    window: int,
    scale: float,
    name: str,
) -> str:
    """`WindowedSelfAttention`'s context `[batch, heads, sequence, size]`: rotated heads
    (`[batch, heads, sequence, size]`) in blocks, each query seeing the keys at most `window`
    positions away where the int32 `mask` `[batch, sequence]` is 1."""
    cut = _blocks_of(builder, query, window)
    block, count, extra = cut.block, cut.count, cut.padding
    blocks, block_shape = _as_shape(builder, count), _as_shape(builder, block)
    heads_in_blocks = builder.op(
        "Concat", _int64(builder, "keep_two", [0, 0]), blocks, block_shape,
        _int64(builder, "minus_one64", [-1]), axis=0,
    )  # fmt: skip

    def in_blocks(heads: str) -> str:  # [batch, heads, blocks, block, size]
        return builder.op(
            "Reshape", _padded_at_the_end(builder, heads, 2, 4, extra), heads_in_blocks
        )

    three_in_a_row = _three_in_a_row(builder, count)
    keys = _neighbourhoods(builder, in_blocks(key), 2, 5, three_in_a_row)
    values = _neighbourhoods(builder, in_blocks(value), 2, 5, three_in_a_row)
    # Which of a block's 3 × block keys each query sees: real, and at most `window` away.
    real = _padded_at_the_end(builder, builder.op("Cast", mask, to=TensorProto.FLOAT), 1, 2, extra)
    real = builder.op(
        "Reshape",
        real,
        builder.op("Concat", _int64(builder, "keep_one", [0]), blocks, block_shape, axis=0),
    )
    real = _neighbourhoods(builder, real, 1, 3, three_in_a_row)  # [batch, blocks, 3 * block]
    queries = builder.op("Range", _int64(builder, "zero64", 0), block, _int64(builder, "one64", 1))
    keys_at = builder.op(
        "Sub",
        builder.op(
            "Range",
            _int64(builder, "zero64", 0),
            builder.op("Mul", block, _int64(builder, "three64", 3)),
            _int64(builder, "one64", 1),
        ),
        block,
    )
    distances = builder.op(
        "Abs",
        builder.op(
            "Sub",
            builder.op("Unsqueeze", keys_at, builder.constant("zero_axis", np.array([0]))),
            builder.op("Unsqueeze", queries, builder.constant("minus_one", np.array([-1]))),
        ),
    )
    near = builder.op(
        "Cast",
        builder.op("LessOrEqual", distances, _int64(builder, f"window_{window}", window)),
        to=TensorProto.FLOAT,
    )  # [block, 3 * block]
    seen = builder.op(
        "Mul", builder.op("Unsqueeze", real, builder.constant("two_axis", np.array([2]))), near
    )  # [batch, blocks, block, 3 * block]
    bias = padding_bias(
        builder, builder.op("Unsqueeze", seen, builder.constant("one_axis", np.array([1])))
    )
    context = attention_context(builder, in_blocks(query), keys, values, bias, scale, 5, name)
    return _joined(builder, context, cut, builder.op("Shape", query, start=3))
