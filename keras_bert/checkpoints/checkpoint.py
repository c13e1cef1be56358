"""A pretrained checkpoint in memory: canonical tensors and config."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

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


def read_config_values(config_file: Path) -> dict[str, Any]:
    """The values of a checkpoint's `bert_config.json` (Google) or `config.json` (Hugging Face)."""
    if not config_file.is_file():
        raise CheckpointError(
            f"No {config_file.name} beside the checkpoint in {config_file.parent}."
        )
    try:
        return json.loads(config_file.read_text("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CheckpointError(f"Unusable config {config_file}: {error}") from None


def original_config(values: dict[str, Any], config_file: Path) -> BertConfig:
    """The `BertConfig` of a checkpoint's config values (read from `config_file`)."""
    try:
        return BertConfig.from_original_dict(values)
    except ConfigError as error:
        raise CheckpointError(f"Unusable config {config_file}: {error}") from None


def read_original_config(config_file: Path) -> BertConfig:
    """The config of a checkpoint: `bert_config.json` (Google) or `config.json` (Hugging Face)."""
    return original_config(read_config_values(config_file), config_file)
