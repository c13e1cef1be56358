"""ModernBERT's layers: rotary positions, the GeGLU gate, attention within a window (in blocks,
linear in the length) and the encoder block made of them, against plain numpy."""

import numpy as np
import pytest
import tensorflow as tf
from scipy.special import erf

from keras_bert.layers import TransformerEncoderBlock
from keras_bert.layers.gated_linear_unit import GatedLinearUnit
from keras_bert.layers.rotary_embedding import RotaryEmbedding, inverse_frequencies
from keras_bert.layers.windowed_attention import WindowedSelfAttention
from tests.layer_checks import check_layer

RANDOM = np.random.default_rng(0)
HIDDEN, HEADS = 16, 2
HEAD_SIZE = HIDDEN // HEADS

# ModernBERT's block: rotary positions, attention within a window, GeGLU, no biases.
MODERNBERT_BLOCK = {
    "dropout_rate": 0.0,
    "attention_dropout_rate": 0.0,
    "pre_layer_norm": True,
    "rotary_base": 10_000.0,
    "attention_window": 2,
    "gated_feed_forward": True,
    "use_bias": False,
    "layer_norm_bias": False,
    "attention_layer_norm": False,
}


def _rotated(heads: np.ndarray, base: float) -> np.ndarray:
    """transformers' `apply_rotary_pos_emb` on `[batch, sequence, heads, size]`, in float64."""
    angles = np.arange(heads.shape[1])[:, None] * inverse_frequencies(heads.shape[-1], base)
    angles = np.concatenate([angles, angles], -1)[None, :, None, :]
    first, second = np.split(heads, 2, axis=-1)
    return heads * np.cos(angles) + np.concatenate([-second, first], -1) * np.sin(angles)


def test_rotary_embedding_rotates_as_transformers_and_scores_by_distance():
    heads = RANDOM.normal(size=(2, 40, HEADS, HEAD_SIZE)).astype("float32")
    rotary = RotaryEmbedding(HEAD_SIZE, base=160_000.0)
    rotated = np.asarray(rotary(heads))
    np.testing.assert_allclose(rotated, _rotated(heads, 160_000.0), atol=1e-5)
    # The same query and key vectors at any two positions i, j score alike for equal i - j.
    same = np.repeat(heads[:, :1], 40, axis=1)
    scores = np.einsum("bqhd,bkhd->bhqk", *[np.asarray(rotary(same))] * 2)
    np.testing.assert_allclose(scores[..., :-1, :-1], scores[..., 1:, 1:], atol=1e-4)
    assert RotaryEmbedding.from_config(rotary.get_config()).base == 160_000.0


def test_rotary_layers_of_one_base_share_their_tables_in_a_trace():
    layers = [RotaryEmbedding(head_size=8, base=base) for base in (160_000.0, 160_000.0, 1e4)]
    heads = np.random.default_rng(0).standard_normal((2, 7, 3, 8)).astype("float32")
    traced = tf.function(lambda x: [layer(layer(x)) for layer in layers])
    graph = traced.get_concrete_function(tf.TensorSpec((2, 7, 3, 8))).graph
    assert [op.type for op in graph.get_operations()].count("Cos") == 2  # one per base
    for layer, output in zip(layers, traced(heads), strict=True):
        np.testing.assert_allclose(output, layer(layer(heads)), atol=1e-6)
    # A length known only at run time: each layer its own tables.
    dynamic = traced.get_concrete_function(tf.TensorSpec((2, None, 3, 8))).graph
    assert [op.type for op in dynamic.get_operations()].count("Cos") == 6


def test_rotary_embedding_needs_an_even_head_size():
    with pytest.raises(ValueError, match="even head_size"):
        RotaryEmbedding(7)


def test_gated_linear_unit_is_gelu_of_the_first_half_times_the_second():
    projected = RANDOM.normal(size=(3, 5, 8)).astype("float32")
    unit = GatedLinearUnit.from_config(GatedLinearUnit("gelu").get_config())
    inputs, gate = projected[..., :4], projected[..., 4:]
    expected = 0.5 * inputs * (1 + erf(inputs / np.sqrt(2))) * gate
    np.testing.assert_allclose(unit(projected), expected, atol=1e-6)


def _band_attention(layer: WindowedSelfAttention, hidden: np.ndarray, mask: np.ndarray):
    """Full attention in numpy, each query's scores masked to the keys within the window."""

    def project(dense):
        return (hidden @ np.asarray(dense.kernel)).reshape(*hidden.shape[:2], HEADS, HEAD_SIZE)

    query = _rotated(project(layer.query), layer.rotary_base) / np.sqrt(HEAD_SIZE)
    key, value = _rotated(project(layer.key), layer.rotary_base), project(layer.value)
    positions = np.arange(hidden.shape[1])
    near = np.abs(positions[:, None] - positions[None, :]) <= layer.attention_window
    seen = near[None, None] & mask[:, None, None, :].astype(bool)
    scores = np.where(seen, np.einsum("bqhd,bkhd->bhqk", query, key), -np.inf)
    probabilities = np.exp(scores - scores.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    context = np.einsum("bhqk,bkhd->bqhd", probabilities, value).reshape(hidden.shape)
    return context @ np.asarray(layer.output_dense.kernel)


@pytest.mark.parametrize("length", [1, 3, 4, 7, 22])
def test_windowed_attention_equals_full_attention_masked_to_the_window(length):
    layer = WindowedSelfAttention(
        HIDDEN, HEADS, attention_window=3, rotary_base=10_000.0, use_bias=False
    )
    hidden = RANDOM.normal(size=(2, length, HIDDEN)).astype("float32")
    mask = np.ones((2, length), "int32")
    mask[1, max(1, length - 3) :] = 0
    outputs = np.asarray(layer(hidden, mask))
    expected = _band_attention(layer, hidden, mask)
    real = mask.astype(bool)
    np.testing.assert_allclose(outputs[real], expected[real], atol=2e-5)
    first = np.asarray(layer(hidden, mask, first_token_only=True))
    np.testing.assert_allclose(first[:, 0], expected[:, 0], atol=2e-5)


def test_window_layers_over_one_padding_mask_share_it_in_a_trace():
    layers = [
        WindowedSelfAttention(HIDDEN, HEADS, attention_window=window, use_bias=False)
        for window in (3, 3, 2)
    ]
    hidden = RANDOM.normal(size=(2, 9, HIDDEN)).astype("float32")
    mask = np.array([[1] * 9, [1] * 5 + [0] * 4], "int32")
    traced = tf.function(lambda x, m: [layer(x, m) for layer in layers])
    graph = traced.get_concrete_function(hidden, mask).graph
    assert [op.type for op in graph.get_operations()].count("Abs") == 2  # a band per window
    for layer, output in zip(layers, traced(hidden, mask), strict=True):
        np.testing.assert_allclose(output, layer(hidden, mask), atol=1e-6)


def test_windowed_attention_scores_grow_linearly_with_the_length():
    """No tensor of the graph holds a `[sequence, sequence]` score matrix: at 512 tokens and a
    window of 8, the largest are the keys' (and the values') neighbourhoods, `batch × 512 × 3 ×
    hidden` numbers, and the scores `batch × heads × 512 × 3 × 8`."""
    layer = WindowedSelfAttention(HIDDEN, HEADS, attention_window=8, rotary_base=10_000.0)
    length = 512
    specs = (tf.TensorSpec([1, length, HIDDEN]), tf.TensorSpec([1, length], tf.int32))
    graph = tf.function(lambda hidden, mask: layer(hidden, mask)).get_concrete_function(*specs)
    sizes = [
        output.shape.num_elements() or 0
        for op in graph.graph.get_operations()
        for output in op.outputs
    ]
    assert max(sizes) == length * 3 * HIDDEN < length * length
    assert HEADS * length * 3 * 8 in sizes


def test_modernbert_block_serializes_and_trains(tmp_path):
    block = TransformerEncoderBlock(HIDDEN, HEADS, 24, layer_norm_epsilon=1e-5, **MODERNBERT_BLOCK)
    hidden = RANDOM.normal(size=(2, 9, HIDDEN)).astype("float32")
    mask = np.array([[1] * 9, [1] * 6 + [0] * 3], "int32")
    check_layer(block, (hidden, mask), tmp_path, expected_shapes=(2, 9, HIDDEN))
    assert block.attention_layer_norm is None and block.attention.query.bias is None
    assert block.intermediate_dense.kernel.shape == (HIDDEN, 48)
    assert block.output_layer_norm.beta is None


def test_a_gated_feed_forward_stays_in_one_block():
    with pytest.raises(ValueError, match="feed_forward_shards=1"):
        TransformerEncoderBlock(16, 2, 24, gated_feed_forward=True, feed_forward_shards=2)


def test_global_attention_in_query_blocks_equals_all_queries_at_once():
    """A sequence longer than `query_block_size` attends block after block (no `[sequence,
    sequence]` score matrix); the outputs, and in training the gradients, are those of every
    query at once."""
    from keras_bert.layers import MultiHeadSelfAttention

    blocked = MultiHeadSelfAttention(
        HIDDEN, HEADS, attention_dropout_rate=0.0, rotary_base=160_000.0, query_block_size=4
    )
    hidden = RANDOM.normal(size=(2, 11, HIDDEN)).astype("float32")
    mask = np.ones((2, 11), "int32")
    mask[1, 7:] = 0
    outputs = np.asarray(blocked(hidden, mask))
    at_once = MultiHeadSelfAttention.from_config({**blocked.get_config(), "query_block_size": 0})
    at_once(hidden, mask)
    at_once.set_weights(blocked.get_weights())
    np.testing.assert_allclose(outputs, np.asarray(at_once(hidden, mask)), atol=1e-6)
    gradients = []
    for layer in (blocked, at_once):
        inputs = tf.constant(hidden)
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            loss = tf.reduce_sum(tf.sin(layer(inputs, mask, training=True)))
        gradients.append(tape.gradient(loss, [inputs, *layer.trainable_variables]))
    for ours, theirs in zip(*gradients, strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)
    specs = (tf.TensorSpec([1, 64, HIDDEN]), tf.TensorSpec([1, 64], tf.int32))
    graph = tf.function(lambda x, m: blocked(x, m)).get_concrete_function(*specs).graph
    ops = {op.type for op in graph.get_operations()}
    assert ops & {"While", "StatelessWhile"}  # the blocks are a loop, one block at a time
