"""Hugging Face BERT checkpoints: `config.json` + `model.safetensors` (or `pytorch_model.bin`),
read without torch."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np

from keras_bert.checkpoints.checkpoint import Checkpoint, read_original_config
from keras_bert.checkpoints.layouts import is_read_by_models, with_model_prefix
from keras_bert.checkpoints.torch_pickle import read_torch_state_dict
from keras_bert.errors import CheckpointError

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
    return any((directory / name).is_file() for names in WEIGHTS_FORMATS for name in names)


def canonical_name(name: str, model_type: str = "bert") -> tuple[str, bool] | None:
    """The canonical name of a Hugging Face tensor and whether it must be transposed.

    `None` for tensors that carry no weights (buffers, the decoder tied to the embeddings).
    Linear weights are stored `[out, in]` by PyTorch and need a transpose; the NSP output
    weights are `[2, hidden]` in both layouts. RoBERTa's and DistilBERT's names are read as
    the BERT names of the same weights; a bare model's names (`AutoModel.save_pretrained`:
    `embeddings.`, `encoder.`, ...) as those under the family's prefix. Tensors of modules no
    model reads (a classifier, TinyBERT's `fit_denses`) keep a name outside `bert/` and `cls/`.

    Example:
    >>> canonical_name("distilbert.transformer.layer.1.attention.q_lin.weight", "distilbert")
    ('bert/encoder/layer_1/attention/self/query/kernel', True)
    """
    name = with_model_prefix(name)
    for pattern, replacement in _FAMILY_NAMES[model_type]:
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


def read_huggingface_checkpoint(directory: Path, weights_file: Path | None = None) -> Checkpoint:
    """Reads `config.json` and the weights (safetensors or `pytorch_model.bin`, single file or
    sharded) of a directory. Tensors that no model reads are logged once and left out."""
    config = read_original_config(directory / "config.json")
    shard_files = [weights_file.name] if weights_file else weights_files(directory)

    tensors: dict[str, np.ndarray] = {}
    ignored: list[str] = []
    for shard_file in shard_files:
        for name, value in read_weights_file(directory / shard_file).items():
            converted = canonical_name(name, config.model_type)
            if converted is None:
                continue
            canonical, transpose = converted
            if not is_read_by_models(canonical):
                ignored.append(name)
                continue
            # One copy at most: none for a contiguous float32 array, one for a view or a cast.
            tensors[canonical] = np.ascontiguousarray(value.T if transpose else value, np.float32)
    if config.model_type != "bert" and not any(name.startswith("bert/pooler/") for name in tensors):
        # The family's masked-LM checkpoints (RobertaForMaskedLM) are saved without a pooler.
        config = config.replace(pooler=False)
    source = str(directory / shard_files[0])
    if ignored:
        logger.warning("%s: ignored %d tensors no model reads: %s", source, len(ignored), ignored)
    return Checkpoint(config, tensors, directory, source=source, ignored=tuple(ignored))
