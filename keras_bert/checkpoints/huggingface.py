"""Hugging Face BERT checkpoints: `config.json` + `model.safetensors`, read without torch."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from keras_bert.checkpoints.checkpoint import Checkpoint, read_original_config
from keras_bert.errors import CheckpointError

WEIGHTS_FILE = "model.safetensors"
SHARDED_INDEX_FILE = "model.safetensors.index.json"

# Buffers and tied copies that carry no weights of their own.
_SKIPPED = re.compile(r"(^|\.)position_ids$|^cls\.predictions\.decoder\.(weight|bias)$")
# Names whose canonical form does not follow the module path.
_RENAMED = {
    "cls.predictions.bias": "cls/predictions/output_bias",
    "cls.seq_relationship.weight": "cls/seq_relationship/output_weights",
    "cls.seq_relationship.bias": "cls/seq_relationship/output_bias",
}
_LAYER_NORM_PARAMETERS = {"weight": "gamma", "gamma": "gamma", "bias": "beta", "beta": "beta"}
# The family's tensor names rewritten to BERT's (Hugging Face's `BertForPreTraining`), by
# `model_type`; each family is BERT's blocks under other names.
_FAMILY_NAMES: dict[str, list[tuple[str, str]]] = {
    "bert": [],
    "roberta": [
        (r"^roberta\.", "bert."),
        (r"^lm_head\.dense\.", "cls.predictions.transform.dense."),
        (r"^lm_head\.layer_norm\.", "cls.predictions.transform.LayerNorm."),
        (r"^lm_head\.bias$", "cls.predictions.bias"),
        (r"^lm_head\.decoder\.", "cls.predictions.decoder."),
    ],
    "albert": [
        (r"^albert\.", "bert."),
        (r"albert_layer_groups\.(\d+)\.albert_layers\.(\d+)\.", r"group_\1.inner_\2."),
        (r"attention\.(query|key|value)\.", r"attention.self.\1."),
        (r"attention\.dense\.", "attention.output.dense."),
        (r"attention\.LayerNorm\.", "attention.output.LayerNorm."),
        (r"\.ffn\.", ".intermediate.dense."),
        (r"\.ffn_output\.", ".output.dense."),
        (r"full_layer_layer_norm\.", "output.LayerNorm."),
        (r"^bert\.pooler\.", "bert.pooler.dense."),
        (r"^predictions\.dense\.", "cls.predictions.transform.dense."),
        (r"^predictions\.LayerNorm\.", "cls.predictions.transform.LayerNorm."),
        (r"^predictions\.bias$", "cls.predictions.bias"),
        (r"^predictions\.decoder\.", "cls.predictions.decoder."),
        # The sentence-order head sits where BERT's next-sentence head does.
        (r"^sop_classifier\.classifier\.", "cls.seq_relationship."),
    ],
    "distilbert": [
        (r"^distilbert\.", "bert."),
        (r"transformer\.layer\.", "encoder.layer."),
        (r"attention\.q_lin\.", "attention.self.query."),
        (r"attention\.k_lin\.", "attention.self.key."),
        (r"attention\.v_lin\.", "attention.self.value."),
        (r"attention\.out_lin\.", "attention.output.dense."),
        (r"sa_layer_norm\.", "attention.output.LayerNorm."),
        (r"ffn\.lin1\.", "intermediate.dense."),
        (r"ffn\.lin2\.", "output.dense."),
        (r"output_layer_norm\.", "output.LayerNorm."),
        (r"^vocab_transform\.", "cls.predictions.transform.dense."),
        (r"^vocab_layer_norm\.", "cls.predictions.transform.LayerNorm."),
        (r"^vocab_projector\.bias$", "cls.predictions.bias"),
        (r"^vocab_projector\.weight$", "cls.predictions.decoder.weight"),
    ],
    "deberta-v2": [
        (r"^deberta\.", "bert."),
        (r"attention\.self\.(query|key|value)_proj\.", r"attention.self.\1."),
        # The masked-LM head of `legacy: false` checkpoints (`cls.predictions` otherwise).
        (r"^lm_predictions\.lm_head\.(dense|LayerNorm)\.", r"cls.predictions.transform.\1."),
        (r"^lm_predictions\.lm_head\.bias$", "cls.predictions.bias"),
        # The replaced-token-detection head of ELECTRA-style pretraining: no model reads it.
        (r"^mask_predictions\.", "cls.mask_predictions."),
    ],
}


def is_huggingface_directory(directory: Path) -> bool:
    return (directory / WEIGHTS_FILE).is_file() or (directory / SHARDED_INDEX_FILE).is_file()


def canonical_name(name: str, model_type: str = "bert") -> tuple[str, bool] | None:
    """The canonical name of a Hugging Face tensor and whether it must be transposed.

    `None` for tensors that carry no weights (buffers, the decoder tied to the embeddings).
    Linear weights are stored `[out, in]` by PyTorch and need a transpose; the NSP output
    weights are `[2, hidden]` in both layouts. RoBERTa's and DistilBERT's names are read as
    the BERT names of the same weights.

    Example:
    >>> canonical_name("distilbert.transformer.layer.1.attention.q_lin.weight", "distilbert")
    ('bert/encoder/layer_1/attention/self/query/kernel', True)
    """
    for pattern, replacement in _FAMILY_NAMES[model_type]:
        name = re.sub(pattern, replacement, name)
    name = name.removeprefix("bert.")
    if _SKIPPED.search(name):
        return None
    if name in _RENAMED:
        return _RENAMED[name], False
    path = re.sub(r"encoder\.layer\.(\d+)", r"encoder.layer_\1", name)
    module, _, parameter = path.rpartition(".")
    module = module.replace(".", "/")
    if not module.startswith("cls/"):
        module = f"bert/{module}"
    if module.endswith("LayerNorm"):
        return f"{module}/{_LAYER_NORM_PARAMETERS.get(parameter, parameter)}", False
    if parameter == "weight" and module.endswith("_embeddings"):
        return module, False
    if parameter == "weight":
        return f"{module}/kernel", True
    return f"{module}/{parameter}", False


def _read_safetensors(weights_file: Path) -> dict[str, np.ndarray]:
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        return load_file(weights_file)
    except FileNotFoundError:
        raise CheckpointError(f"Missing weights file {weights_file}.") from None
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(
            f"Cannot read {weights_file}: {error}. The file is truncated or not a safetensors "
            "file; download it again."
        ) from None


def read_huggingface_checkpoint(directory: Path, weights_file: Path | None = None) -> Checkpoint:
    """Reads `config.json` and the safetensors weights (single file or sharded) of a directory."""
    config = read_original_config(directory / "config.json")

    if weights_file is None and not (directory / WEIGHTS_FILE).is_file():
        index = json.loads((directory / SHARDED_INDEX_FILE).read_text("utf-8"))
        shard_files = sorted(set(index["weight_map"].values()))
    else:
        shard_files = [(weights_file or directory / WEIGHTS_FILE).name]

    tensors: dict[str, np.ndarray] = {}
    for shard_file in shard_files:
        for name, value in _read_safetensors(directory / shard_file).items():
            converted = canonical_name(name, config.model_type)
            if converted is None:
                continue
            canonical, transpose = converted
            value = value.astype(np.float32)
            tensors[canonical] = np.ascontiguousarray(value.T) if transpose else value
    if config.model_type != "bert" and not any(name.startswith("bert/pooler/") for name in tensors):
        # The family's masked-LM checkpoints (RobertaForMaskedLM) are saved without a pooler.
        config = config.replace(pooler=False)
    return Checkpoint(config, tensors, directory, source=str(directory / shard_files[0]))
