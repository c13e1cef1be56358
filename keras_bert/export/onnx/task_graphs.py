"""Task models as ONNX graphs: the encoder (`EncoderGraph`) and each task's head, with the
outputs of the SavedModel's `serving_ids` signature (`keras_bert.export.signatures`).

| task | outputs |
|---|---|
| classifier | `logits` `[batch, classes]` (a regressor's `[batch, 1]`) |
| token classifier | `logits` `[batch, sequence, tags]` |
| question answerer | `start_logits`, `end_logits` `[batch, sequence]` |
| encoder | `sequence_output`, `cls_embedding`, `mean_embedding`, `pooled_output` (with a pooler) |
| masked LM | `top_ids`, `top_probabilities` `[batch, max_masks, top_k]`, `num_masks` `[batch]` |

Floats are float32, ids int32. The masked LM reads the first `max_masks` mask tokens of
`input_word_ids`, as `MaskedLMServing` does (padding slots: id -1, probability 0). A classifier
that reads the first token (the pooler's, or its own dense layer's) has its last block computed
at that position alone (`EncoderGraph.write(first_token_only=True)`), and each graph holds only
the nodes and weights its outputs read.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
from onnx import TensorProto

from keras_bert.errors import ConfigError
from keras_bert.export.onnx.encoder_graph import BATCH, SEQUENCE, WORD_IDS, EncoderGraph
from keras_bert.export.onnx.graph_builder import GraphBuilder
from keras_bert.models.task import TOKEN_TRANSFORM

TASKS = ("classifier", "token_classifier", "question_answerer", "encoder", "masked_lm")


@dataclasses.dataclass(frozen=True)
class MaskedLMOptions:
    """What the masked LM's graph returns: `top_k` tokens at each of `max_masks` masks of
    `mask_id`."""

    mask_id: int
    top_k: int = 5
    max_masks: int = 4


def task_of(model) -> str:
    """The task name (`TASKS`) of a keras_bert model."""
    from keras_bert.models import (
        BertClassifier,
        BertEncoder,
        BertMaskedLM,
        BertQuestionAnswerer,
        BertTokenClassifier,
    )
    from keras_bert.models.pretrainer import BertPretrainer

    for model_class, task in (
        (BertClassifier, "classifier"),
        (BertTokenClassifier, "token_classifier"),
        (BertQuestionAnswerer, "question_answerer"),
        (BertEncoder, "encoder"),
        (BertPretrainer, "masked_lm"),
        (BertMaskedLM, "masked_lm"),
    ):
        if isinstance(model, model_class):
            return task
    raise TypeError(f"No ONNX graph for a {type(model).__name__}.")


def task_graph(
    model, masked_lm: MaskedLMOptions | None = None, fused_attention: bool = True
) -> onnx.ModelProto:
    """The ONNX model of a keras_bert task model (see the module for its outputs).

    Args:
        model: a float32 `BertClassifier`, `BertTokenClassifier`, `BertQuestionAnswerer`,
            `BertEncoder`, `BertMaskedLM` or `BertPretrainer`.
        masked_lm: the masked LM's options (required for one).
        fused_attention: self-attention as ONNX Runtime's `Attention` (see `EncoderGraph`).
    """
    task = task_of(model)
    encoder = model if task == "encoder" else model.encoder
    graph = EncoderGraph(encoder, fused_attention)
    builder = GraphBuilder()
    # A classifier reads the first position alone, unless it averages over the tokens.
    first_token_only = task == "classifier" and model.pooling != "mean"
    encoded = graph.write(builder, first_token_only)
    sequence = encoded.get("sequence_output")
    float_outputs: dict[str, tuple[str, list]] = {}
    int_outputs: dict[str, tuple[str, list]] = {}
    if task == "classifier":
        float_outputs["logits"] = (
            _classifier_logits(graph, model, encoded),
            [BATCH, model.num_classes],
        )
    elif task == "token_classifier":
        sequence = _token_transform(graph, model, sequence)
        logits = graph.dense(sequence, model.get_layer("token_logits"), "token_logits")
        float_outputs["logits"] = (logits, [BATCH, SEQUENCE, len(model.label_names)])
    elif task == "question_answerer":
        sequence = _token_transform(graph, model, sequence)
        span_logits = graph.dense(sequence, model.get_layer("span_logits"), "span_logits")
        start, end = builder.op("Split", span_logits, axis=-1, outputs=2)
        squeeze_axis = builder.constant("minus_one", np.array([-1]))
        float_outputs["start_logits"] = (
            builder.op("Squeeze", start, squeeze_axis),
            [BATCH, SEQUENCE],
        )
        float_outputs["end_logits"] = (builder.op("Squeeze", end, squeeze_axis), [BATCH, SEQUENCE])
    elif task == "encoder":
        hidden = encoder.bert_config.hidden_size
        float_outputs["sequence_output"] = (sequence, [BATCH, SEQUENCE, hidden])
        float_outputs["cls_embedding"] = (encoded["first_token_output"], [BATCH, hidden])
        float_outputs["mean_embedding"] = (_mean_over_mask(graph, sequence), [BATCH, hidden])
        if "pooled_output" in encoded:
            float_outputs["pooled_output"] = (encoded["pooled_output"], [BATCH, hidden])
    else:
        if masked_lm is None:
            raise ConfigError("A masked LM's ONNX graph needs its MaskedLMOptions (the mask id).")
        outputs = _masked_lm(graph, model.masked_lm_head, sequence, masked_lm)
        shape = [BATCH, masked_lm.max_masks, masked_lm.top_k]
        int_outputs["top_ids"] = (outputs["top_ids"], shape)
        float_outputs["top_probabilities"] = (outputs["top_probabilities"], shape)
        int_outputs["num_masks"] = (outputs["num_masks"], [BATCH])
    for name, (value, shape) in float_outputs.items():
        builder.output(value, name, TensorProto.FLOAT, shape)
    for name, (value, shape) in int_outputs.items():
        builder.output(value, name, TensorProto.INT32, shape)
    return builder.model(name=f"keras_bert_{task}")


def _mean_over_mask(graph: EncoderGraph, sequence: str) -> str:
    """The mean of the sequence over its real tokens (at least one counted), in float32."""
    builder = graph.builder
    mask = graph.real_tokens()
    axis = builder.constant("one_axis", np.array([1]))
    total = builder.op("ReduceSum", builder.op("Mul", sequence, mask), axis, keepdims=0)
    count = builder.op("ReduceSum", mask, axis, keepdims=0)
    count = builder.op("Max", count, builder.constant("one_float", np.array(1.0, np.float32)))
    return builder.op("Div", total, count)


def _prediction_head(graph: EncoderGraph, model, features: str, name: str) -> str:
    """`features` through the task's `prediction_head` called `name` (its dense layer with its
    activation, and its LayerNorm where it has one), or as they are if it has none."""
    layer_names = {layer.name for layer in model.layers}
    if name not in layer_names:
        return features
    features = graph.dense(features, model.get_layer(name), name)
    if f"{name}_layer_norm" in layer_names:
        layer_norm = model.get_layer(f"{name}_layer_norm")
        features = graph.layer_norm(features, layer_norm, f"{name}_layer_norm")
    return features


def _token_transform(graph: EncoderGraph, model, sequence: str) -> str:
    """Every token through the family's prediction head (`token_transform`: ModernBERT's)."""
    return _prediction_head(graph, model, sequence, TOKEN_TRANSFORM)


def _classifier_logits(graph: EncoderGraph, model, encoded: dict[str, str]) -> str:
    """The family's head (`BertClassifier`): the pooler, the first token, or the mean over the
    mask, through the family's own dense layer (`pre_classifier`, with its activation and
    ModernBERT's LayerNorm) where it has one; then the logits layer (dropout is inactive)."""
    if model.pooling == "mean":
        features = _mean_over_mask(graph, encoded["sequence_output"])
    elif model.uses_pooled_output:
        features = encoded["pooled_output"]
    else:
        features = encoded["first_token_output"]
    features = _prediction_head(graph, model, features, "pre_classifier")
    return graph.dense(features, model.get_layer("logits"), "logits")


def _masked_lm(
    graph: EncoderGraph, head, sequence: str, options: MaskedLMOptions
) -> dict[str, str]:
    """The top tokens at the first `max_masks` mask ids of each row (`MaskedLMServing`)."""
    builder = graph.builder
    int32 = TensorProto.INT32
    is_mask = builder.op(
        "Cast",
        builder.op(
            "Equal", WORD_IDS, builder.constant("mask_id", np.array(options.mask_id, np.int32))
        ),
        to=int32,
    )
    # The k-th mask of a row is where the running count of masks reaches k (and is a mask).
    counted = builder.op(
        "Mul", builder.op("CumSum", is_mask, builder.constant("one", np.array(1))), is_mask
    )
    slots = builder.constant("mask_slots", np.arange(1, options.max_masks + 1, dtype=np.int32))
    slot_matches = builder.op(
        "Cast",
        builder.op(
            "Equal",
            builder.op("Unsqueeze", counted, builder.constant("minus_one", np.array([-1]))),
            slots,
        ),
        to=TensorProto.FLOAT,
    )  # [batch, sequence, max_masks]
    positions = builder.op("ArgMax", slot_matches, axis=1, keepdims=0)  # [batch, max_masks]
    is_real = builder.op(
        "Greater",
        builder.op("ReduceMax", slot_matches, axes=[1], keepdims=0),
        builder.constant("zero_float", np.array(0.0, np.float32)),
    )
    num_masks = builder.op(
        "Cast",
        builder.op(
            "ReduceSum",
            builder.op("Cast", is_real, to=int32),
            builder.constant("one_axis", np.array([1])),
            keepdims=0,
        ),
        to=int32,
    )
    gathered = builder.op(
        "GatherND",
        sequence,
        builder.op("Unsqueeze", positions, builder.constant("minus_one", np.array([-1]))),
        batch_dims=1,
    )
    transformed = graph.dense(gathered, head.dense, "masked_lm/dense")
    transformed = graph.layer_norm(transformed, head.layer_norm, "masked_lm/layer_norm")
    # The decoder is the token embedding table itself (tied), read transposed by `Gemm`, which
    # takes rows: [batch * max_masks, width] → [batch * max_masks, vocabulary].
    width = builder.constant("masked_lm/rows", np.array([-1, head.token_embedding.output_dim]))
    logits = builder.op(
        "Gemm",
        builder.op("Reshape", transformed, width),
        builder.weight("token_embedding", head.token_embedding.embeddings),
        builder.weight("masked_lm/output_bias", head.output_bias),
        transB=1,
        name="masked_lm/decoder",
    )
    logits_shape = np.array([-1, options.max_masks, head.vocabulary_size])
    logits = builder.op("Reshape", logits, builder.constant("masked_lm/logits_shape", logits_shape))
    probabilities = builder.op("Softmax", logits, axis=-1)
    top_probabilities, top_ids = builder.op(
        "TopK",
        probabilities,
        builder.constant("top_k", np.array([options.top_k])),
        axis=-1,
        outputs=2,
    )
    real = builder.op("Unsqueeze", is_real, builder.constant("minus_one", np.array([-1])))
    return {
        "top_ids": builder.op(
            "Where",
            real,
            builder.op("Cast", top_ids, to=int32),
            builder.constant("minus_one_int32", np.array(-1, np.int32)),
        ),
        "top_probabilities": builder.op(
            "Where",
            real,
            top_probabilities,
            builder.constant("zero_float", np.array(0.0, np.float32)),
        ),
        "num_masks": num_masks,
    }
