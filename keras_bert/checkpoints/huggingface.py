"""Hugging Face BERT checkpoints: `config.json` + `model.safetensors`, read without torch."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from keras_bert.checkpoints.checkpoint import Checkpoint, read_original_config
from keras_bert.errors import CheckpointError
from keras_bert.families import family

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


def is_huggingface_directory(directory: Path) -> bool:
    return (directory / WEIGHTS_FILE).is_file() or (directory / SHARDED_INDEX_FILE).is_file()


def canonical_name(name: str, model_type: str = "bert") -> tuple[str, bool] | None:
    """The canonical name of a Hugging Face tensor and whether it must be transposed.

    `None` for tensors that carry no weights (buffers, the decoder tied to the embeddings).
    Linear weights are stored `[out, in]` by PyTorch and need a transpose; the NSP output
    weights are `[2, hidden]` in both layouts. The family's names (`tensor_names` of its record
    in `keras_bert.families`) are read as the BERT names of the same weights.

    Example:
    >>> canonical_name("distilbert.transformer.layer.1.attention.q_lin.weight", "distilbert")
    ('bert/encoder/layer_1/attention/self/query/kernel', True)
    """
    for pattern, replacement in family(model_type).tensor_names:
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
    has_pooler = any(name.startswith("bert/pooler/") for name in tensors)
    if family(config.model_type).pooler_optional and not has_pooler:
        # The family's masked-LM checkpoints (RobertaForMaskedLM) are saved without a pooler.
        config = config.replace(pooler=False)
    return Checkpoint(config, tensors, directory, source=str(directory / shard_files[0]))
