"""Hugging Face BERT checkpoints: `config.json` + `model.safetensors` (or `pytorch_model.bin`),
read without torch."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.checkpoints.layouts import is_read_by_models, with_model_prefix
from keras_bert.checkpoints.torch_pickle import read_torch_state_dict
from keras_bert.config import BertConfig
from keras_bert.errors import CheckpointError
from keras_bert.families import family

logger = logging.getLogger(__name__)

WEIGHTS_FILE = "model.safetensors"
SHARDED_INDEX_FILE = "model.safetensors.index.json"
TORCH_WEIGHTS_FILE = "pytorch_model.bin"
TORCH_SHARDED_INDEX_FILE = "pytorch_model.bin.index.json"
# The weights a directory may hold, in the order they are preferred: (single file, index).
WEIGHTS_FORMATS = (
    (WEIGHTS_FILE, SHARDED_INDEX_FILE),
    (TORCH_WEIGHTS_FILE, TORCH_SHARDED_INDEX_FILE),
)

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
    return any((directory / name).is_file() for names in WEIGHTS_FORMATS for name in names)


def canonical_name(name: str, model_type: str = "bert") -> tuple[str, bool] | None:
    """The canonical name of a Hugging Face tensor and whether it must be transposed.

    `None` for tensors that carry no weights (buffers, the decoder tied to the embeddings).
    Linear weights are stored `[out, in]` by PyTorch and need a transpose; the NSP output
    weights are `[2, hidden]` in both layouts. The family's names (`tensor_names` of its record
    in `keras_bert.families`) are read as the BERT names of the same weights; a bare model's
    names (`AutoModel.save_pretrained`: `embeddings.`, `encoder.`, ...) as those under the
    family's prefix. Tensors of modules no model reads (a classifier, TinyBERT's `fit_denses`)
    keep a name outside `bert/` and `cls/`.

    Example:
    >>> canonical_name("distilbert.transformer.layer.1.attention.q_lin.weight", "distilbert")
    ('bert/encoder/layer_1/attention/self/query/kernel', True)
    """
    name = with_model_prefix(name)
    for pattern, replacement in family(model_type).tensor_names:
        name = re.sub(pattern, replacement, name)
    if _SKIPPED.search(name):
        return None
    if name in _RENAMED:
        return _RENAMED[name], False
    path = re.sub(r"encoder\.layer\.(\d+)", r"encoder.layer_\1", name)
    module, _, parameter = path.rpartition(".")
    module = module.replace(".", "/")
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


def weights_files(directory: Path) -> list[str]:
    """The weights files of a directory, in the first format it holds (safetensors first),
    shards listed by their index.

    Example:
    >>> weights_files(Path("../shared/reference/variants/roberta"))
    ['model.safetensors']
    """
    for single_file, index_file in WEIGHTS_FORMATS:
        if (directory / single_file).is_file():
            return [single_file]
        if (directory / index_file).is_file():
            index = json.loads((directory / index_file).read_text("utf-8"))
            return sorted(set(index["weight_map"].values()))
    expected = [name for names in WEIGHTS_FORMATS for name in names]
    raise CheckpointError(
        f"No weights in {directory}: expected {', '.join(expected[:-1])} or {expected[-1]}."
    )


def read_weights_file(weights_file: Path) -> dict[str, np.ndarray]:
    """The tensors of a safetensors or `torch.save` file, by their Hugging Face names."""
    if weights_file.suffix == ".safetensors":
        return _read_safetensors(weights_file)
    return read_torch_state_dict(weights_file)


def read_huggingface_checkpoint(
    directory: Path, weights_files: Sequence[Path], config: BertConfig
) -> Checkpoint:
    """Reads the weights of a directory (safetensors or `pytorch_model.bin`, one file or its
    shards, in `weights_files`) under its config. Tensors that no model reads are logged once and
    left out."""
    tensors: dict[str, np.ndarray] = {}
    ignored: list[str] = []
    for weights_file in weights_files:
        for name, value in read_weights_file(weights_file).items():
            converted = canonical_name(name, config.model_type)
            if converted is None:
                continue
            canonical, transpose = converted
            if not is_read_by_models(canonical):
                ignored.append(name)
                continue
            # One copy at most: none for a contiguous float32 array, one for a view or a cast.
            tensors[canonical] = np.ascontiguousarray(value.T if transpose else value, np.float32)
    has_pooler = any(name.startswith("bert/pooler/") for name in tensors)
    if family(config.model_type).pooler_optional and not has_pooler:
        # The family's masked-LM checkpoints (RobertaForMaskedLM) are saved without a pooler.
        config = config.replace(pooler=False)
    source = str(weights_files[0])
    if ignored:
        logger.warning("%s: ignored %d tensors no model reads: %s", source, len(ignored), ignored)
    return Checkpoint(config, tensors, directory, source=source, ignored=tuple(ignored))
