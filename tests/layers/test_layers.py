import contextlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.layers import (
    BertEmbeddings,
    BertPooler,
    ColumnShardedDense,
    MultiHeadSelfAttention,
    RowShardedDense,
    SequenceDense,
    TransformerEncoderBlock,
)
from keras_bert.layers.activations import activation_from_name, gelu, inference_gelu
from keras_bert.layers.padding_skip import RealTokens, real_tokens_only
from tests.layer_checks import check_layer

HIDDEN_STATES = np.random.default_rng(0).normal(size=(2, 5, 16)).astype("float32")
PADDING_MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")


def test_embeddings(tmp_path):
    word_ids = np.array([[2, 7, 9, 3, 0], [2, 5, 3, 0, 0]], "int32")
    type_ids = np.array([[0, 0, 0, 0, 0], [0, 0, 1, 0, 0]], "int32")
    layer = BertEmbeddings(
        vocab_size=10,
        type_vocab_size=2,
        max_position_embeddings=8,
        hidden_size=16,
        dropout_rate=0.0,
    )
    outputs = check_layer(layer, (word_ids, type_ids), tmp_path, expected_shapes=(2, 5, 16))
    # LayerNorm with initial gamma=1, beta=0: every vector has zero mean and unit variance.
    np.testing.assert_allclose(outputs.mean(-1), 0, atol=1e-5)
    np.testing.assert_allclose(outputs.var(-1), 1, atol=1e-3)


def test_self_attention_ignores_padded_keys(tmp_path):
    layer = MultiHeadSelfAttention(hidden_size=16, num_heads=4, attention_dropout_rate=0.0)
    outputs = check_layer(layer, (HIDDEN_STATES, PADDING_MASK), tmp_path, (2, 5, 16))
    # Changing what sits at padded positions changes nothing at real positions.
    noisy = HIDDEN_STATES.copy()
    noisy[1, 3:] = 100.0
    changed = np.asarray(layer(noisy, PADDING_MASK))
    np.testing.assert_allclose(changed[1, :3], outputs[1, :3], atol=1e-6)


def test_self_attention_runs_tensorflows_einsum_at_inference_only():
    layer = MultiHeadSelfAttention(hidden_size=16, num_heads=4, attention_dropout_rate=0.0)
    outputs = {}
    for training in (False, True):
        function = tf.function(lambda x, m, training=training: layer(x, m, training=training))
        graph = function.get_concrete_function(HIDDEN_STATES, PADDING_MASK).graph
        einsum_ops = [op for op in graph.get_operations() if op.type == "Einsum"]
        # Inference: both products over heads as TensorFlow's Einsum op (one oneDNN kernel);
        # training: Keras' transposes around a batched matmul, whose gradients are cheaper.
        assert len(einsum_ops) == (0 if training else 2)
        outputs[training] = np.asarray(function(HIDDEN_STATES, PADDING_MASK))
    np.testing.assert_allclose(outputs[False], outputs[True], atol=1e-6)


@pytest.mark.parametrize("padding_mask", [PADDING_MASK, np.ones_like(PADDING_MASK)])
def test_self_attention_skips_the_mask_at_inference_only_without_padding(padding_mask):
    layer = MultiHeadSelfAttention(hidden_size=16, num_heads=4, attention_dropout_rate=0.0)
    outputs = {}
    for training in (False, True):
        function = tf.function(lambda x, m, training=training: layer(x, m, training=training))
        graph = function.get_concrete_function(HIDDEN_STATES, padding_mask).graph
        # Inference branches on whether any key is padding; training always adds the mask.
        branches = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
        assert len(branches) == (0 if training else 1)
        outputs[training] = np.asarray(function(HIDDEN_STATES, padding_mask))
    np.testing.assert_allclose(outputs[False], outputs[True], atol=1e-6)


def test_self_attention_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        MultiHeadSelfAttention(hidden_size=10, num_heads=4)


@pytest.mark.parametrize(
    "activation, pre_layer_norm, feed_forward_shards",
    [
        ("gelu", False, 1),
        ("gelu_approximate", False, 1),
        ("relu", False, 1),
        ("gelu", True, 1),
        ("gelu", False, 2),
    ],
)
def test_encoder_block(tmp_path, activation, pre_layer_norm, feed_forward_shards):
    layer = TransformerEncoderBlock(
        pre_layer_norm=pre_layer_norm,
        feed_forward_shards=feed_forward_shards,
        hidden_size=16,
        num_heads=4,
        intermediate_size=32,
        hidden_activation=activation,
        dropout_rate=0.0,
        attention_dropout_rate=0.0,
    )
    check_layer(layer, (HIDDEN_STATES, PADDING_MASK), tmp_path, expected_shapes=(2, 5, 16))


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"pre_layer_norm": True},
        {"feed_forward_shards": 2},
        {"gated_feed_forward": True},
        {"rotary_base": 10000.0},
        {"attention_window": 1},
        {"relative_attention_buckets": 8},
        {"query_block_size": 2},
    ],
)
@pytest.mark.parametrize("training", [True, False])
def test_encoder_block_computes_the_real_tokens_alone_with_the_same_outputs(settings, training):
    # Dropout off: in `real_tokens_only` a call computes the real tokens alone, which changes no
    # real token's output and no weight's gradient.
    layer = TransformerEncoderBlock(
        hidden_size=16, num_heads=4, intermediate_size=32, dropout_rate=0.0,
        attention_dropout_rate=0.0, **settings,
    )  # fmt: skip
    layer(HIDDEN_STATES, PADDING_MASK)  # built eagerly
    real = PADDING_MASK.astype(bool)

    def outputs_and_gradients(skip_padding):
        with tf.GradientTape() as tape:
            with real_tokens_only() if skip_padding else contextlib.nullcontext():
                outputs = tf.function(layer)(HIDDEN_STATES, PADDING_MASK, training=training)
            loss = tf.reduce_sum(tf.boolean_mask(outputs, real) ** 2)
        return outputs.numpy(), tape.gradient(loss, layer.trainable_variables)

    every_position, every_gradient = outputs_and_gradients(False)
    real_only, real_only_gradients = outputs_and_gradients(True)
    np.testing.assert_allclose(real_only[real], every_position[real], atol=1e-5)
    assert np.abs(real_only[~real] - every_position[~real]).max() > 1e-5  # padding skipped
    for gradient, expected in zip(real_only_gradients, every_gradient, strict=True):
        np.testing.assert_allclose(
            tf.convert_to_tensor(gradient), tf.convert_to_tensor(expected), atol=1e-5
        )


def test_real_tokens_of_a_batch_without_any_compute_its_first_position():
    real = RealTokens.of(tf.zeros((2, 3), tf.int32))
    assert real.rows.numpy().tolist() == [0]
    layer = TransformerEncoderBlock(hidden_size=16, num_heads=4, intermediate_size=32)
    with real_tokens_only():
        outputs = tf.function(layer)(HIDDEN_STATES[:, :3], np.zeros((2, 3), "int32"))
    assert outputs.shape == (2, 3, 16) and np.isfinite(outputs.numpy()).all()


def test_pooler_reads_the_first_position(tmp_path):
    layer = BertPooler(hidden_size=16)
    outputs = check_layer(layer, (HIDDEN_STATES,), tmp_path, expected_shapes=(2, 16))
    altered = HIDDEN_STATES.copy()
    altered[:, 1:] = 0.0
    np.testing.assert_array_equal(np.asarray(layer(altered)), outputs)
    kernel, bias = layer.get_weights()
    np.testing.assert_allclose(outputs, np.tanh(HIDDEN_STATES[:, 0] @ kernel + bias), atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_gelu_and_its_gradient_match_tensorflow(dtype):
    """Values and gradients equal TF's exact GELU in float32, rounded once to `dtype`."""
    x = tf.cast(tf.linspace(-8.0, 8.0, 1001), dtype)
    x32 = tf.cast(x, "float32")
    with tf.GradientTape(persistent=True) as tape:
        tape.watch((x, x32))
        ours, reference = gelu(x), tf.nn.gelu(x32, approximate=False)
    assert ours.dtype == dtype
    # float32 is exact to rounding; bfloat16 to half a unit in its 8-bit mantissa.
    rtol = 1e-6 if dtype == "float32" else 2.0**-8
    gradients = (tape.gradient(ours, x), tape.gradient(reference, x32))
    for actual, expected in ((ours, reference), gradients):
        np.testing.assert_allclose(tf.cast(actual, "float32"), expected, rtol=rtol, atol=1e-6)


def test_sequence_dense_equals_dense_on_sequences(tmp_path):
    """The same kernel and bias give Keras' `Dense` outputs, on 3-D and 2-D inputs."""
    layer = SequenceDense(7, activation="relu", name="sequence_dense")
    outputs = check_layer(layer, (HIDDEN_STATES,), tmp_path, expected_shapes=(2, 5, 7))
    dense = keras.layers.Dense(7, activation="relu")
    dense.build(HIDDEN_STATES.shape)
    dense.set_weights(layer.get_weights())
    np.testing.assert_allclose(outputs, dense(HIDDEN_STATES), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(layer(HIDDEN_STATES[:, 0]), outputs[:, 0], rtol=1e-6, atol=1e-6)


def test_sharded_dense_layers_return_and_take_blocks(tmp_path):
    column = ColumnShardedDense(6, shards=3, activation="relu", name="column")
    blocks = check_layer(column, (HIDDEN_STATES,), tmp_path, expected_shapes=[(2, 5, 2)] * 3)
    dense = keras.layers.Dense(6, activation="relu")
    dense.build(HIDDEN_STATES.shape)
    kernels, biases = column.get_weights()[:3], column.get_weights()[3:]
    dense.set_weights([np.concatenate(kernels, 1), np.concatenate(biases)])
    np.testing.assert_allclose(np.concatenate(blocks, -1), dense(HIDDEN_STATES), atol=1e-6)
    row = RowShardedDense(4, shards=3)
    outputs = row(blocks)
    dense = keras.layers.Dense(4)
    dense.build((2, 5, 6))
    dense.set_weights([np.concatenate(row.get_weights()[:3]), row.get_weights()[3]])
    np.testing.assert_allclose(outputs, dense(np.concatenate(blocks, -1)), atol=1e-6)


def test_sharded_dense_rejects_blocks_that_do_not_divide():
    with pytest.raises(ConfigError, match=r"units \(6\) is not divisible by shards \(4\)"):
        ColumnShardedDense(6, shards=4)(HIDDEN_STATES)
    with pytest.raises(ConfigError, match="shards must be a positive integer, got 0"):
        ColumnShardedDense(6, shards=0)(HIDDEN_STATES)
    with pytest.raises(ConfigError, match="expected 2 input blocks, got 3"):
        RowShardedDense(4, shards=2)([HIDDEN_STATES] * 3)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("float32", gelu), ("mixed_bfloat16", gelu), ("bfloat16", inference_gelu)],
)
def test_gelu_runs_in_bfloat16_only_where_weights_are_stored_in_it(policy, expected):
    """Training policies keep the float32 GELU; a bfloat16-weight model gets the fusable form,
    whose values are GELU's to bfloat16 rounding."""
    assert activation_from_name("gelu", keras.DTypePolicy(policy)) is expected
    assert activation_from_name("gelu") is gelu
    x = tf.cast(tf.linspace(-8.0, 8.0, 1001), "bfloat16")
    reference = tf.nn.gelu(tf.cast(x, "float32"), approximate=False)
    np.testing.assert_allclose(
        tf.cast(inference_gelu(x), "float32"), reference, rtol=2.0**-6, atol=2.0**-8
    )
