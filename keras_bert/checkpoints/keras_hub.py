"""keras-hub models of BERT and XLM-RoBERTa (backbones, text classifiers, masked LMs) as
checkpoints.

A keras-hub model, in memory or saved as `.keras`, is read into a `Checkpoint`: its weights under
the canonical (Google TF1) names that `restore_variables` assigns to keras_bert models, and its
`BertConfig`. keras-hub's `BertBackbone` computes the tanh approximation of GELU, so its config
says `hidden_activation="gelu_approximate"`. keras-hub's `XLMRobertaBackbone` counts positions
from 0 where transformers' counts them after the padding id (from 2, `position_offset`): its
position table comes after two rows that no real token reads, and its one token type is a
zero row, so that the converted model has transformers' layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import keras
import numpy as np

from keras_bert.checkpoints.checkpoint import Checkpoint, CheckpointError
from keras_bert.config import BertConfig
from keras_bert.families import family

# keras-hub's classes of the families keras_bert converts: its backbone, text classifier and
# masked LM.
KERAS_HUB_CLASSES = {
    "bert": ("BertBackbone", "BertTextClassifier", "BertMaskedLM"),
    "xlm-roberta": ("XLMRobertaBackbone", "XLMRobertaTextClassifier", "XLMRobertaMaskedLM"),
}
ROLES = ("backbone", "classifier", "masked_lm")
SUPPORTED_CLASSES = tuple(name for names in KERAS_HUB_CLASSES.values() for name in names)
# transformers' (and keras_bert's) positions of RoBERTa's family start after the padding id.
_ROBERTA_POSITION_OFFSET = 2
# keras-hub activations (by their serialized name) that keras_bert computes the same way.
_ACTIVATIONS = {"gelu": "gelu", "gelu_approximate": "gelu_approximate", "relu": "relu"}


class KerasHubClass(NamedTuple):
    """What a keras-hub model is: its family's `model_type` and its role (`ROLES`)."""

    model_type: str
    role: str


def _keras_hub_classes() -> dict[KerasHubClass, type]:
    try:
        import keras_hub
    except ImportError:
        raise ImportError(
            "Converting keras-hub models needs keras-hub: pip install keras-hub==0.32.0."
        ) from None
    return {
        KerasHubClass(model_type, role): getattr(keras_hub.models, name)
        for model_type, names in KERAS_HUB_CLASSES.items()
        for role, name in zip(ROLES, names, strict=True)
    }


def load_keras_hub_model(model_or_path: Any):
    """The keras-hub BERT model given, or the one saved at a `.keras` path.

    Raises `CheckpointError` for any other object, naming the supported classes.
    """
    model = model_or_path
    if isinstance(model_or_path, (str, Path)):
        path = Path(model_or_path)
        if not path.is_file():
            raise FileNotFoundError(f"No keras-hub model file at {path}.")
        try:
            model = keras.saving.load_model(path, compile=False)
        except (ValueError, TypeError, OSError) as error:
            raise CheckpointError(
                f"Cannot load {path} as a keras-hub model: {str(error).splitlines()[0]}"
            ) from None
    keras_hub_class(model)
    return model


def keras_hub_class(model: Any) -> KerasHubClass:
    """Which of `SUPPORTED_CLASSES` `model` is; `CheckpointError` naming them if none."""
    for kind, model_class in _keras_hub_classes().items():
        if isinstance(model, model_class):
            return kind
    raise CheckpointError(
        f"Cannot convert a {type(model).__module__}.{type(model).__name__}: supported are "
        f"keras-hub's {', '.join(SUPPORTED_CLASSES)} (objects or .keras files)."
    )


def keras_hub_activation(activation: Any) -> str:
    """Our name of a keras-hub layer's activation function."""
    name = keras.activations.serialize(activation)
    # Registered functions serialize as a dict naming "package>function".
    name = name["config"] if isinstance(name, dict) else name
    name = name.rpartition(">")[2]
    if name not in _ACTIVATIONS:
        raise CheckpointError(
            f"keras-hub activation {name!r} has no keras_bert equivalent; supported: "
            f"{', '.join(_ACTIVATIONS)}."
        )
    return _ACTIVATIONS[name]


def _array(variable) -> np.ndarray:
    return np.asarray(variable.numpy(), np.float32)


def _dense(prefix: str, layer, hidden_size: int) -> dict[str, np.ndarray]:
    """A Dense or EinsumDense layer as a `[in, out]` kernel and an `[out]` bias."""
    kernel, bias = _array(layer.kernel), _array(layer.bias)
    if kernel.ndim == 3:  # attention projections: [hidden, heads, head] or [heads, head, hidden]
        kernel = kernel.reshape(hidden_size, hidden_size)
        bias = bias.reshape(hidden_size)
    return {f"{prefix}/kernel": kernel, f"{prefix}/bias": bias}


def _layer_norm(prefix: str, layer) -> dict[str, np.ndarray]:
    return {f"{prefix}/gamma": _array(layer.gamma), f"{prefix}/beta": _array(layer.beta)}


def backbone_config(backbone, model_type: str = "bert") -> BertConfig:
    """The `BertConfig` of a keras-hub backbone of the family (BERT's: tanh GELU, LayerNorm
    epsilon 1e-12; XLM-RoBERTa's: exact GELU, 1e-5, positions after the padding id)."""
    block = backbone.transformer_layers[0]
    sizes = {
        "vocab_size": backbone.vocabulary_size,
        "hidden_size": backbone.hidden_dim,
        "num_layers": backbone.num_layers,
        "num_heads": backbone.num_heads,
        "intermediate_size": backbone.intermediate_dim,
        "hidden_activation": keras_hub_activation(block.activation),
        "dropout_rate": backbone.dropout,
        "attention_dropout_rate": backbone.dropout,
        "layer_norm_epsilon": block.layer_norm_epsilon,
    }
    if model_type == "bert":
        return BertConfig(
            **sizes,
            max_position_embeddings=int(backbone.position_embedding.position_embeddings.shape[0]),
            type_vocab_size=backbone.num_segments,
        )
    return BertConfig(
        **sizes,
        max_position_embeddings=backbone.max_sequence_length + _ROBERTA_POSITION_OFFSET,
        type_vocab_size=1,
        model_type=model_type,
        position_offset=_ROBERTA_POSITION_OFFSET,
        pooler=False,
    )


def _embedding_tensors(backbone, model_type: str) -> dict[str, np.ndarray]:
    """A backbone's embedding tables under canonical names (see the module docstring)."""
    if model_type == "bert":
        return {
            "bert/embeddings/token_type_embeddings": _array(backbone.segment_embedding.embeddings),
            "bert/embeddings/position_embeddings": _array(
                backbone.position_embedding.position_embeddings
            ),
        }
    positions = _array(backbone.embeddings.position_embedding.position_embeddings)
    unread = np.zeros((_ROBERTA_POSITION_OFFSET, backbone.hidden_dim), np.float32)
    return {
        "bert/embeddings/token_type_embeddings": np.zeros((1, backbone.hidden_dim), np.float32),
        "bert/embeddings/position_embeddings": np.concatenate([unread, positions]),
    }


def backbone_tensors(backbone, model_type: str = "bert") -> dict[str, np.ndarray]:
    """The weights of a keras-hub backbone of the family under canonical names (`bert/...`)."""
    hidden_size = backbone.hidden_dim
    tensors = {
        "bert/embeddings/word_embeddings": _array(backbone.token_embedding.embeddings),
        **_embedding_tensors(backbone, model_type),
        **_layer_norm("bert/embeddings/LayerNorm", backbone.embeddings_layer_norm),
    }
    for index, block in enumerate(backbone.transformer_layers):
        if block.normalize_first:
            raise CheckpointError(
                f"{block.name} normalizes first (pre-LayerNorm); BERT's blocks normalize after."
            )
        prefix = f"bert/encoder/layer_{index}"
        attention = block._self_attention_layer
        for projection in ("query", "key", "value"):
            tensors |= _dense(
                f"{prefix}/attention/self/{projection}",
                getattr(attention, f"_{projection}_dense"),
                hidden_size,
            )
        tensors |= _dense(f"{prefix}/attention/output/dense", attention._output_dense, hidden_size)
        tensors |= _layer_norm(
            f"{prefix}/attention/output/LayerNorm", block._self_attention_layer_norm
        )
        tensors |= _dense(
            f"{prefix}/intermediate/dense", block._feedforward_intermediate_dense, hidden_size
        )
        tensors |= _dense(f"{prefix}/output/dense", block._feedforward_output_dense, hidden_size)
        tensors |= _layer_norm(f"{prefix}/output/LayerNorm", block._feedforward_layer_norm)
    if model_type == "bert":
        tensors |= _dense("bert/pooler/dense", backbone.pooled_dense, hidden_size)
    return tensors


def masked_lm_head_tensors(head) -> dict[str, np.ndarray]:
    """The weights of keras-hub's tied `MaskedLMHead` under `cls/predictions/...`."""
    hidden_size = int(head._intermediate_dense.kernel.shape[0])
    return {
        **_dense("cls/predictions/transform/dense", head._intermediate_dense, hidden_size),
        **_layer_norm("cls/predictions/transform/LayerNorm", head._intermediate_layer_norm),
        "cls/predictions/output_bias": _array(head._bias),
    }


def _classifier_tensors(model, model_type: str) -> dict[str, np.ndarray]:
    """A text classifier's head under the names of transformers' head of the family (BERT's
    output layer `classifier/...`; XLM-RoBERTa's `classifier/dense/...` then
    `classifier/out_proj/...`), as `BertClassifier.restore_head` reads them."""
    hidden_size = model.backbone.hidden_dim
    head = family(model_type).classifier_head
    tensors = _dense(head.output_module.replace(".", "/"), model.output_dense, hidden_size)
    if head.dense_module is not None:
        tensors |= _dense(head.dense_module.replace(".", "/"), model.pooled_dense, hidden_size)
    return tensors


def read_keras_hub_model(model, source: str) -> Checkpoint:
    """A keras-hub model of `SUPPORTED_CLASSES` as a `Checkpoint`.

    The classifier's head is stored as `_classifier_tensors` says, the masked-LM head under
    `cls/predictions/...` as in Google's checkpoints.
    """
    kind = keras_hub_class(model)
    backbone = model if kind.role == "backbone" else model.backbone
    tensors = backbone_tensors(backbone, kind.model_type)
    if kind.role == "classifier":
        tensors |= _classifier_tensors(model, kind.model_type)
    if kind.role == "masked_lm":
        if model.masked_lm_head.token_embedding is None:
            raise CheckpointError(
                f"{source}: its masked-LM head has its own output kernel; keras_bert ties the "
                "decoder to the token embeddings."
            )
        tensors |= masked_lm_head_tensors(model.masked_lm_head)
    # A keras-hub model carries its vocabulary in its preprocessor, not in a folder beside it.
    config = backbone_config(backbone, kind.model_type)
    return Checkpoint(config, tensors, Path.cwd(), source=source)
