"""`save_checkpoint`: a keras_bert model written as a Hugging Face checkpoint directory, which
transformers' `AutoModel*.from_pretrained` and keras_bert's `from_checkpoint` both read.

The directory is written whole or not at all: its files go into a temporary directory beside
it, renamed into place when every file is written.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import keras

from keras_bert.checkpoints.hub import CONFIG_FILE
from keras_bert.checkpoints.huggingface import WEIGHTS_FILE
from keras_bert.errors import ConfigError, PublishError
from keras_bert.families import family
from keras_bert.publishing.model_card import model_card
from keras_bert.publishing.tokenizer_files import write_tokenizer_files
from keras_bert.publishing.transformers_twin import TransformersTwin, transformers_twin

MODEL_CARD = "README.md"
# What decides which model a directory holds: an earlier save of the same model may be replaced.
_MODEL_FILES = (CONFIG_FILE, WEIGHTS_FILE)


def _max_length(twin: TransformersTwin, model_type: str) -> int:
    """The longest input of the model: its learned positions, less RoBERTa's offset."""
    positions = twin.config["max_position_embeddings"]
    if family(model_type).positions_after_padding:
        positions -= twin.config["pad_token_id"] + 1
    return positions


def _write_files(twin: TransformersTwin, preprocessor, directory: Path, card: str) -> None:
    from safetensors.numpy import save_file

    model_type = twin.config["model_type"]
    write_tokenizer_files(
        preprocessor,
        family(model_type),
        directory,
        _max_length(twin, model_type),
        token_types=twin.config.get("type_vocab_size", 0) > 0,
    )
    save_file(twin.tensors, directory / WEIGHTS_FILE, metadata={"format": "pt"})
    config = json.dumps(twin.config, indent=2, sort_keys=True, ensure_ascii=False)
    (directory / CONFIG_FILE).write_text(config + "\n", "utf-8")
    (directory / MODEL_CARD).write_text(card, "utf-8")


def _holds_same_model(directory: Path, written: Path) -> bool:
    """Whether `directory` is empty or holds what an earlier save of the same model wrote."""
    found = {path.name for path in directory.iterdir()}
    if not found:
        return True
    return found <= {path.name for path in written.iterdir()} and all(
        (directory / name).is_file()
        and (directory / name).read_bytes() == (written / name).read_bytes()
        for name in _MODEL_FILES
    )


def _sibling(directory: Path, role: str) -> Path:
    """A new hidden directory beside `directory` (with the permissions of any new directory)."""
    path = directory.parent / f".{directory.name}.{role}.{uuid.uuid4().hex[:12]}"
    path.mkdir()
    return path


def _move_into_place(written: Path, directory: Path) -> None:
    """Renames the finished `written` to `directory`, replacing an earlier save of the same
    model; a directory holding anything else is left as it is, with an error."""
    if not directory.exists():
        written.rename(directory)
        return
    if not directory.is_dir() or not _holds_same_model(directory, written):
        raise PublishError(
            f"{directory} already holds another model (or other files): save to a new "
            "directory, or remove it first."
        )
    replaced = _sibling(directory, "old")
    directory.rename(replaced / directory.name)
    written.rename(directory)
    shutil.rmtree(replaced)


def save_checkpoint(
    model: keras.Model,
    directory: str | os.PathLike,
    preprocessor: keras.layers.Layer | None = None,
    task: str | None = None,
    base_model: str | None = None,
    dataset: str | None = None,
    metrics: Mapping[str, Any] | None = None,
    repo_id: str | None = None,
) -> Path:
    """Writes `model` as a Hugging Face checkpoint: transformers' `config.json` and
    `model.safetensors` of its twin (`*ForSequenceClassification`, `*ForMaskedLM`, ...), the
    tokenizer files and a model card.

    `AutoModelFor<task>.from_pretrained(directory)` and `AutoTokenizer.from_pretrained(directory)`
    load it; so do keras_bert's `from_checkpoint(directory)` (head and labels included) and
    `load_preprocessor(directory)`. Saving again the same model into its directory replaces it.

    Args:
        model: a `BertEncoder` or a task model (`BertClassifier`, `BertTokenClassifier`,
            `BertQuestionAnswerer`, `BertMaskedLM`, `BertPretrainer` of BERT or ALBERT).
        directory: the directory to write (its parent is created).
        preprocessor: the preprocessor whose tokenizer the model reads (default: the one the
            model carries, as models of `from_checkpoint` and the fine-tuning jobs do).
        task: None for the model with its head; "encoder" for its encoder alone;
            "masked_lm" for a `BertPretrainer`'s masked LM alone.
        base_model: the checkpoint it was trained from, for the model card (a Hub id also
            goes into its metadata).
        dataset: what it was trained on, for the model card.
        metrics: the run's `metrics.json` summary, for the model card.
        repo_id: the Hub id it is to be pushed to, which the model card names (default: the
            directory's name).

    Returns:
        The directory.

    Raises:
        ConfigError: transformers has no twin of the model (see `transformers_twin`), or no
            preprocessor is given or carried.
        PublishError: `directory` holds another model or other files.

    Example:
    >>> import tempfile
    >>> from keras_bert import BertClassifier, load_preprocessor
    >>> checkpoint = "../shared/reference/variants/distilbert"
    >>> classifier = BertClassifier.from_checkpoint(checkpoint, num_classes=2, seq_length=16)
    >>> directory = save_checkpoint(classifier, f"{tempfile.mkdtemp()}/sentiment")
    >>> sorted(path.name for path in directory.iterdir())  # doctest: +NORMALIZE_WHITESPACE
    ['README.md', 'config.json', 'model.safetensors', 'special_tokens_map.json',
     'tokenizer.json', 'tokenizer_config.json', 'vocab.txt']
    >>> BertClassifier.from_checkpoint(directory).num_classes
    2
    """
    preprocessor = preprocessor or getattr(model, "preprocessor", None)
    if preprocessor is None:
        raise ConfigError(
            f"The {type(model).__name__} carries no preprocessor, and its tokenizer files are "
            "part of the checkpoint: pass preprocessor= (e.g. load_preprocessor(checkpoint))."
        )
    twin = transformers_twin(model, task, preprocessor.packer)
    directory = Path(directory)
    card = model_card(twin, repo_id or directory.name, base_model, dataset, metrics)
    directory.parent.mkdir(parents=True, exist_ok=True)
    written = _sibling(directory, "new")
    try:
        _write_files(twin, preprocessor, written, card)
        _move_into_place(written, directory)
    finally:
        shutil.rmtree(written, ignore_errors=True)
    return directory
