"""The ONNX writer takes its rules from the layers: each rule written in ONNX gives what the
layer computes, so a change to a layer reaches its ONNX twin or fails here."""

from __future__ import annotations

import functools

import keras
import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto

import keras_bert
from keras_bert import BertConfig, BertEncoder
from keras_bert.errors import ConfigError
from keras_bert.export.onnx import task_graph
from keras_bert.export.onnx.encoder_graph import MASK, WORD_IDS, EncoderGraph
from keras_bert.export.onnx.graph_builder import GraphBuilder
from keras_bert.families import FAMILIES
from keras_bert.layers import SequenceDense
from keras_bert.layers.activations import (
    HIDDEN_ACTIVATIONS,
    activation_from_name,
    activation_name,
    inference_gelu,
)
from keras_bert.layers.self_attention import MASKED_SCORE

WIDTH = 6


@functools.cache
def _graph(position_offset: int = 0) -> EncoderGraph:
    """An `EncoderGraph` of a tiny encoder, with an empty builder to write rules into."""
    config = BertConfig.preset("tiny", vocab_size=50, position_offset=position_offset)
    graph = EncoderGraph(BertEncoder(config))
    graph.builder = GraphBuilder()
    return graph


def _run(builder: GraphBuilder, feeds: dict) -> np.ndarray:
    session = onnxruntime.InferenceSession(builder.model().SerializeToString())
    return session.run(None, feeds)[0]


# Every activation a dense layer of ours can hold: the encoder's and masked-LM head's
# (`HIDDEN_ACTIVATIONS`), the pooler's tanh, each family's classifier head's, and bfloat16's GELU.
DENSE_LAYERS = {
    **{
        name: SequenceDense(WIDTH, activation=function)
        for name, function in HIDDEN_ACTIVATIONS.items()
    },
    "bfloat16's gelu": SequenceDense(WIDTH, activation=inference_gelu),
    "tanh": keras.layers.Dense(WIDTH, activation="tanh"),
    "linear": keras.layers.Dense(WIDTH),
    **{
        f"{record.model_type} classifier head": keras.layers.Dense(
            WIDTH, activation=record.classifier_head.activation
        )
        for record in FAMILIES.values()
        if record.classifier_head.activation
    },
}


@pytest.mark.parametrize("layer_name", DENSE_LAYERS)
def test_every_dense_activation_is_written_as_the_layer_computes_it(layer_name):
    layer = DENSE_LAYERS[layer_name]
    inputs = np.linspace(-6, 6, 4 * WIDTH, dtype=np.float32).reshape(4, WIDTH)
    layer.build(inputs.shape)
    layer.bias.assign(np.linspace(-1, 1, WIDTH))  # a bias the fused nodes must add first
    expected = np.asarray(layer(inputs))
    graph = _graph()
    builder = graph.builder = GraphBuilder()
    builder.input("x", TensorProto.FLOAT, ["rows", WIDTH])
    builder.output(graph.dense("x", layer, "dense"), "y", TensorProto.FLOAT, ["rows", WIDTH])
    np.testing.assert_allclose(_run(builder, {"x": inputs}), expected, atol=1e-5)


def test_every_hidden_activation_has_a_name_the_writer_reads():
    assert activation_name(inference_gelu) == "gelu"
    for name in HIDDEN_ACTIVATIONS:
        assert activation_name(activation_from_name(name)) == name


def test_an_activation_without_an_onnx_form_is_an_error_not_a_substitute():
    graph = _graph()
    for activation in ("silu", lambda x: x):
        layer = keras.layers.Dense(WIDTH, activation=activation, name="odd")
        layer.build((None, WIDTH))
        with pytest.raises(ConfigError, match="no form of odd's activation"):
            graph.dense("x", layer, "odd")


@pytest.mark.parametrize("position_offset", [0, 2])
def test_position_ids_are_the_embedding_layers(position_offset):
    graph = _graph(position_offset)
    builder = graph.builder = GraphBuilder()
    for name in (WORD_IDS, MASK):
        builder.input(name, TensorProto.INT32, ["batch", "sequence"])
    id_type = TensorProto.INT32 if position_offset else TensorProto.INT64  # counted, or Range
    builder.output(graph.position_ids(), "positions", id_type, None)
    # Right and left padding, a hole, no real token at all.
    mask = np.array([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 0, 1, 1, 0], [0, 0, 0, 0, 0]], np.int32)
    word_ids = np.ones_like(mask)
    positions = _run(builder, {WORD_IDS: word_ids, MASK: mask})
    expected = graph.encoder.embeddings.position_ids(word_ids, mask)
    np.testing.assert_array_equal(
        np.broadcast_to(positions, mask.shape), np.broadcast_to(expected, mask.shape)
    )


@pytest.mark.parametrize("family", ["bert", "deberta_v3"])
def test_attention_takes_the_layers_mask_score_and_scale(family, reference_dir):
    if family == "bert":
        encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=50))
    else:
        encoder = keras_bert.load_encoder(reference_dir / "variants" / family)
    nodes = [
        node
        for node in task_graph(encoder).graph.node
        if node.op_type in ("Attention", "MultiHeadAttention")
    ]
    assert len(nodes) == len(encoder.blocks)
    for node, block in zip(nodes, encoder.blocks, strict=True):
        attributes = {attribute.name: attribute.f for attribute in node.attribute}
        assert attributes["mask_filter_value"] == MASKED_SCORE
        assert attributes["scale"] == pytest.approx(block.attention.score_scale, rel=1e-7)


def test_the_relative_table_is_the_layers_output(reference_dir):
    encoder = keras_bert.load_encoder(reference_dir / "variants" / "deberta_v3")
    layer = encoder.relative_embeddings
    assert layer.layer_norm is not None  # norm_rel_ebd: layer_norm
    graph = EncoderGraph(encoder)
    builder = graph.builder = GraphBuilder()
    builder.input(WORD_IDS, TensorProto.INT32, ["batch", "sequence"])
    builder.output(graph.relative_positions()["table"], "table", TensorProto.FLOAT, None)
    table = _run(builder, {WORD_IDS: np.ones((1, 3), np.int32)})
    expected = np.asarray(layer(np.zeros((1, 1, encoder.bert_config.hidden_size))))
    np.testing.assert_allclose(table, expected, atol=1e-6)
