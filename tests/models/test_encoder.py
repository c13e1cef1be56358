import re
from collections import Counter

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.errors import DataError
from keras_bert.layers import MultiHeadSelfAttention
from tests.layer_checks import check_layer

TINY = BertConfig.preset("tiny", vocab_size=50, max_position_embeddings=16)
INPUTS = {
    "input_word_ids": np.array([[2, 11, 12, 3, 0, 0], [2, 13, 3, 14, 15, 3]], "int32"),
    "input_mask": np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], "int32"),
    "input_type_ids": np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]], "int32"),
}


def test_encoder_layer_checks(tmp_path):
    encoder = BertEncoder(TINY.replace(dropout_rate=0.0, attention_dropout_rate=0.0))
    check_layer(
        encoder,
        INPUTS,
        tmp_path,
        expected_shapes={
            "pooled_output": (2, 128),
            "first_token_output": (2, 128),
            "sequence_output": (2, 6, 128),
        },
    )


def test_sharded_feed_forward_keeps_the_values_and_the_weights_file(tmp_path):
    """Blocks whose feed-forward weights are stored in 2 or 4 column blocks compute the same
    encoder, and their weights file loads into the one-block layout and back."""
    encoder = BertEncoder(TINY)
    reference = np.asarray(encoder(INPUTS)["sequence_output"])
    encoder.save_weights(tmp_path / "encoder.weights.h5")
    for shards in (2, 4):
        sharded = BertEncoder(TINY, feed_forward_shards=shards)
        sharded.load_weights(tmp_path / "encoder.weights.h5")
        kernels = sharded.blocks[0].intermediate_dense.kernels
        assert [tuple(kernel.shape) for kernel in kernels] == [(128, 512 // shards)] * shards
        outputs = np.asarray(sharded(INPUTS)["sequence_output"])
        np.testing.assert_allclose(outputs, reference, rtol=1e-5, atol=1e-5)
    sharded.save_weights(tmp_path / "sharded.weights.h5")
    unsharded = BertEncoder(TINY)
    unsharded.load_weights(tmp_path / "sharded.weights.h5")
    np.testing.assert_allclose(unsharded(INPUTS)["sequence_output"], reference, atol=1e-5)
    assert BertEncoder.from_config(sharded.get_config()).feed_forward_shards == 4


def test_all_layer_outputs():
    encoder = BertEncoder(TINY, output_all_layers=True)
    outputs = encoder(INPUTS)
    assert len(outputs["encoder_outputs"]) == TINY.num_layers
    assert outputs["embedding_output"].shape == (2, 6, 128)
    np.testing.assert_array_equal(outputs["encoder_outputs"][-1], outputs["sequence_output"])


def test_padding_does_not_change_real_tokens():
    encoder = BertEncoder(TINY)
    short = {name: value[:1, :4] for name, value in INPUTS.items()}
    padded = {name: value[:1] for name, value in INPUTS.items()}
    np.testing.assert_allclose(
        encoder(short)["sequence_output"],
        np.asarray(encoder(padded)["sequence_output"])[:, :4],
        atol=1e-5,
    )


@pytest.mark.parametrize(
    "switches",
    [
        {},
        {"pre_layer_norm": True},
        {"relative_attention_buckets": 8},
        {"num_layer_groups": 1},  # ALBERT: the last block is every layer's
        {"relative_attention": True, "max_relative_positions": 16, "pos_att_type": "p2c|c2p"},
        {"pooler": False},
    ],
    ids=["bert", "pre_layer_norm", "t5_buckets", "albert", "deberta", "no_pooler"],
)
def test_first_token_and_pooled_outputs_are_the_sequence_outputs_first_token(switches):
    """The last block computes [CLS] on its own for the heads on it: the same values as the
    full sequence output's first position, and as the pooler on it."""
    encoder = BertEncoder(TINY.replace(**switches))
    outputs = encoder(INPUTS)
    first_token = np.asarray(outputs["sequence_output"])[:, 0]
    np.testing.assert_allclose(outputs["first_token_output"], first_token, atol=1e-5)
    if encoder.pooler is None:
        assert "pooled_output" not in outputs
    else:
        np.testing.assert_allclose(
            outputs["pooled_output"], encoder.pooler(outputs["sequence_output"]), atol=1e-5
        )


@pytest.mark.parametrize("output", ["first_token_output", "pooled_output"])
def test_a_graph_of_the_first_token_projects_only_first_tokens_in_the_last_block(output):
    """Of the matmuls `output` depends on, the last block's query, attention output and
    feed-forward take one row a sequence; its keys and values still take every token."""
    encoder = BertEncoder(TINY)
    batch_size, seq_length = INPUTS["input_mask"].shape
    graph = (
        tf.function(lambda inputs: encoder(inputs)[output])
        .get_concrete_function(
            {name: tf.TensorSpec(value.shape, tf.int32) for name, value in INPUTS.items()}
        )
        .graph
    )
    rows = Counter()
    pending, seen = [graph.outputs[0].op], set()
    while pending:
        operation = pending.pop()
        if operation.name in seen:
            continue
        seen.add(operation.name)
        if operation.type == "MatMul":
            rows[operation.outputs[0].shape[0]] += 1
        pending.extend(tensor.op for tensor in operation.inputs)
    # Every block projects query, key, value, attention output and the feed-forward's two.
    assert rows[batch_size * seq_length] == 6 * (TINY.num_layers - 1) + 2
    assert rows[batch_size] == 4 + (output == "pooled_output")  # and the pooler's dense


def test_parameter_counts_match_published_models():
    # Hugging Face BertModel and keras-hub's bert_base_en count 109,482,240 with the pooler.
    assert BertEncoder(BertConfig.preset("base")).count_params() == 109_482_240
    assert BertEncoder(BertConfig.preset("large")).count_params() == 335_141_888


@pytest.mark.parametrize(
    "switches, checked_variable",
    [
        ({"pre_layer_norm": True}, "bert/encoder/final_layer_norm/gamma"),
        (
            {"relative_attention_buckets": 8},
            "bert/encoder/layer_1/attention/self/relative_attention_bias",
        ),
    ],
)
def test_budget_switches_round_trip_through_a_google_checkpoint(
    switches, checked_variable, tmp_path
):
    from keras_bert.checkpoints import encoder_variables, save_google_checkpoint

    config = TINY.replace(**switches, dropout_rate=0.0, attention_dropout_rate=0.0)
    encoder = BertEncoder(config, output_all_layers=True)
    variables = encoder_variables(encoder)
    assert checked_variable in variables
    # Weights away from their zero or one initial values, so that restoring them shows.
    random = np.random.default_rng(0)
    for variable in variables.values():
        variable.assign(np.asarray(variable) + random.normal(0, 0.1, variable.shape))
    outputs = encoder(INPUTS)
    if config.pre_layer_norm:
        # The last block's sum, normalized once more.
        assert not np.allclose(outputs["encoder_outputs"][-1], outputs["sequence_output"])
    tensors = {name: np.asarray(variable) for name, variable in variables.items()}
    save_google_checkpoint(tensors, config, tmp_path)
    restored = BertEncoder.from_checkpoint(tmp_path, output_all_layers=True)
    assert restored.bert_config == config
    np.testing.assert_allclose(
        restored(INPUTS)["sequence_output"], outputs["sequence_output"], atol=1e-5
    )


def test_relative_attention_bias_reaches_the_scores_by_offset_bucket():
    attention = MultiHeadSelfAttention(8, 2, relative_attention_buckets=8)
    hidden = np.random.default_rng(1).normal(size=(1, 5, 8)).astype("float32")
    mask = np.ones((1, 5), "int32")
    _, plain = attention(hidden, mask, return_attention_scores=True)
    bias = np.zeros((8, 2), "float32")
    bias[5, 1] = 3.0  # head 1, the key one place after the query
    attention.relative_attention_bias.assign(bias)
    _, biased = attention(hidden, mask, return_attention_scores=True)
    difference = np.asarray(biased - plain)
    assert np.allclose(difference[0, 0], 0)
    np.testing.assert_allclose(difference[0, 1], 3.0 * np.eye(5, k=1), atol=1e-6)


def test_local_attention_bias_starts_each_head_on_a_neighbour():
    hidden = np.random.default_rng(2).normal(size=(1, 6, 8)).astype("float32")
    mask = np.ones((1, 6), "int32")
    local, plain = (
        MultiHeadSelfAttention(8, 2, relative_attention_buckets=16, local_attention_bias=bias)
        for bias in (4.0, 0.0)
    )
    for attention in (local, plain):
        attention(hidden, mask)
    for name in ("query", "key", "value", "output_dense"):
        getattr(plain, name).set_weights(getattr(local, name).get_weights())
    difference = np.asarray(
        local(hidden, mask, return_attention_scores=True)[1]
        - plain(hidden, mask, return_attention_scores=True)[1]
    )
    # Head 0 starts on the previous token, head 1 on the next one.
    np.testing.assert_allclose(difference[0, 0], 4.0 * np.eye(6, k=-1), atol=1e-5)
    np.testing.assert_allclose(difference[0, 1], 4.0 * np.eye(6, k=1), atol=1e-5)


@pytest.mark.parametrize("call", ["call", "predict"])
@pytest.mark.parametrize(
    "name, value, refused",
    [
        ("input_word_ids", 50, "token id 50 is not one of this bert model's 50 token ids (0-49)"),
        ("input_word_ids", -1, "token id -1 is not one of this bert model's 50 token ids"),
        ("input_type_ids", 2, "token type 2 is not one of this bert model's 2 token types (0-1)"),
    ],
)
def test_ids_past_the_tables_are_data_errors_not_gather_errors(call, name, value, refused):
    encoder = BertEncoder(TINY)
    inputs = {**INPUTS, name: np.where(INPUTS["input_mask"] == 1, INPUTS[name], value)}
    run = encoder.predict if call == "predict" else encoder
    with pytest.raises(DataError, match=re.escape(refused)):
        run(inputs)


def test_rows_past_the_positions_and_texts_are_data_errors():
    """BERT's positions are columns: a 17-wide row is refused for a 16-position model however
    much of it is padding. RoBERTa's count real tokens: padding past them is read."""
    encoder = BertEncoder(TINY)
    wide = {name: np.zeros((1, 17), "int32") for name in INPUTS}
    with pytest.raises(DataError, match="holds 17 ids per row; this bert model reads at most 16"):
        encoder(wide)
    with pytest.raises(DataError, match=r"not texts: pack them with its checkpoint's prepro"):
        encoder(["A wonderful film"])
    roberta = BertEncoder.from_checkpoint("../shared/reference/variants/roberta")
    longest = roberta.bert_config.longest_input
    padded = {name: np.zeros((1, longest + 8), "int32") for name in INPUTS}
    padded["input_mask"][:, :longest] = 1
    assert roberta(padded)["sequence_output"].shape == (1, longest + 8, 64)
    padded["input_mask"][:, :] = 1
    with pytest.raises(DataError, match=f"holds {longest + 8} tokens per row; this roberta"):
        roberta(padded)
