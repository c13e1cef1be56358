"""A pretrained checkpoint in memory, and detection of its format on disk."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from keras_bert.config import BertConfig, ConfigError


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, or does not fit the model it is loaded into."""


@dataclasses.dataclass
class Checkpoint:
    """Weights of a pretrained BERT under canonical names, with its config.

    Canonical names are those of Google's original TF1 checkpoints (`bert/embeddings/...`,
    `bert/encoder/layer_N/...`, `bert/pooler/...`, `cls/...`) with dense kernels stored
    `[in, out]`; every reader converts into them.

    Args:
        config: the model's sizes.
        tensors: canonical name → float32 array.
        directory: the folder holding the checkpoint (and usually `vocab.txt`).
        source: a description of where the tensors came from, for error messages.
    """

    config: BertConfig
    tensors: dict[str, np.ndarray]
    directory: Path
    source: str

    @property
    def vocabulary_file(self) -> Path:
        return self.directory / "vocab.txt"


def read_original_config(config_file: Path) -> BertConfig:
    """The config of a checkpoint: `bert_config.json` (Google) or `config.json` (Hugging Face)."""
    if not config_file.is_file():
        raise CheckpointError(
            f"No {config_file.name} beside the checkpoint in {config_file.parent}."
        )
    try:
        return BertConfig.from_original_dict(json.loads(config_file.read_text("utf-8")))
    except (ConfigError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"Unusable config {config_file}: {error}") from None


def load_checkpoint(path: str | Path) -> Checkpoint:
    """Reads a Hugging Face or Google BERT checkpoint from a directory or a file path.

    Accepted: a directory with `config.json` + `model.safetensors` (Hugging Face), a directory
    with `bert_config.json` + `bert_model.ckpt.index` (Google), a `.safetensors` file, or a TF
    checkpoint prefix such as `.../bert_model.ckpt`.
    """
    from keras_bert.checkpoints import google, huggingface

    path = Path(path)
    if path.is_dir():
        if huggingface.is_huggingface_directory(path):
            return huggingface.read_huggingface_checkpoint(path)
        prefix = google.find_checkpoint_prefix(path)
        if prefix is not None:
            return google.read_google_checkpoint(prefix)
        contents = ", ".join(sorted(child.name for child in path.iterdir())[:20]) or "nothing"
        raise CheckpointError(
            f"No BERT checkpoint in {path}: expected config.json + model.safetensors (Hugging "
            f"Face) or bert_config.json + bert_model.ckpt.index (Google); found {contents}."
        )
    if path.suffix == ".safetensors" and path.is_file():
        return huggingface.read_huggingface_checkpoint(path.parent, weights_file=path)
    if Path(f"{path}.index").is_file():
        return google.read_google_checkpoint(path)
    raise FileNotFoundError(f"No checkpoint at {path}: it is neither a directory nor a file.")
