"""A pretrained checkpoint in memory: canonical tensors and config."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from keras_bert.config import BertConfig
from keras_bert.errors import CheckpointError, ConfigError


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
        ignored: the names of the tensors read but left out, as no model reads them (a
            classifier head, TinyBERT's `fit_denses`).
    """

    config: BertConfig
    tensors: dict[str, np.ndarray]
    directory: Path
    source: str
    ignored: tuple[str, ...] = ()

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
