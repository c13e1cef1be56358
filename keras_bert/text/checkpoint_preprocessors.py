"""The in-graph preprocessor of a checkpoint directory, chosen by its `model_type`.

The family's record (`keras_bert.families`) names its tokenizer, the files it reads and how it
packs pairs:

- `bert`, `distilbert`: `vocab.txt` → `BertPreprocessor` (WordPiece), `[CLS] A [SEP] B [SEP]`.
- `roberta`: `vocab.json` + `merges.txt` → `BytePairTokenizer`, `<s> A </s></s> B </s>`, one
  token type, padding `<pad>`.
- `albert`: `spiece.model` → `SentencePieceTokenizer` with ALBERT's preprocessing,
  `[CLS] A [SEP] B [SEP]`, padding `<pad>`.
- `deberta-v2` (DeBERTa-v3): `spm.model` → `SentencePieceTokenizer`, `[CLS] A [SEP] B [SEP]`.

Special tokens come from `tokenizer_config.json` when it names them, else the family's defaults.
"""

import dataclasses
import json
from pathlib import Path
from typing import Any

import keras

from keras_bert.errors import CheckpointError, ConfigError
from keras_bert.families import Family, family
from keras_bert.text.byte_pair_tokenizer import BytePairTokenizer
from keras_bert.text.preprocessor import BertPreprocessor, TextPreprocessor
from keras_bert.text.sentencepiece_tokenizer import SentencePieceTokenizer


def read_model_type(directory: Path) -> str:
    """The `model_type` of a checkpoint directory's `config.json` ("bert" for a Google one)."""
    config_file = directory / "config.json"
    if not config_file.is_file():
        return "bert"  # Google's bert_config.json has no model_type
    with open(config_file, encoding="utf-8") as file:
        return json.load(file).get("model_type", "bert")


def _tokenizer_config(directory: Path) -> dict[str, Any]:
    config_file = directory / "tokenizer_config.json"
    if not config_file.is_file():
        return {}
    with open(config_file, encoding="utf-8") as file:
        return json.load(file)


def _token_name(value: str | dict) -> str:
    """A special token of `tokenizer_config.json`: a string, or an AddedToken's dict."""
    return value["content"] if isinstance(value, dict) else value


def _tokenizer_files(directory: Path, record: Family) -> list[Path]:
    paths = [directory / name for name in record.tokenizer.files]
    for path in paths:
        if not path.is_file():
            raise CheckpointError(
                f"{directory} has no {path.name}: a {record.model_type} checkpoint's tokenizer "
                "needs it."
            )
    return paths


def _family_tokenizer(directory: Path, record: Family, tokenizer_config: dict) -> keras.Layer:
    """The byte-pair or SentencePiece tokenizer layer of a family's checkpoint directory."""
    files = _tokenizer_files(directory, record)
    if record.tokenizer.kind == "byte_pair":
        return BytePairTokenizer(*files, name="tokenizer")
    albert_preprocessing = record.tokenizer.albert_preprocessing
    return SentencePieceTokenizer(
        *files,
        albert_preprocessing=albert_preprocessing,
        lowercase=albert_preprocessing and tokenizer_config.get("do_lower_case", True),
        special_tokens=record.tokenizer.special_tokens,
        name="tokenizer",
    )


def checkpoint_preprocessor(
    directory: str | Path, seq_length: int = 128, **options: Any
) -> BertPreprocessor | TextPreprocessor:
    """The preprocessor of a checkpoint directory of any supported family.

    Args:
        directory: a Hugging Face (or Google BERT) checkpoint directory.
        seq_length: length of the packed inputs.
        **options: further preprocessor arguments (`truncation`, `name`).

    Raises:
        ConfigError: the `model_type` has no family record.
        CheckpointError: a tokenizer file is missing or unreadable.

    Example:
    >>> preprocessor = checkpoint_preprocessor("../shared/reference/variants/albert", 8)
    >>> preprocessor(["The cat sat."])["input_word_ids"].numpy().tolist()
    [[2, 7, 419, 34, 973, 8, 3, 0]]
    """
    directory = Path(directory)
    try:
        record = family(read_model_type(directory))
    except ConfigError as error:
        raise ConfigError(f"{directory}: no preprocessor: {error}") from None
    tokenizer_config = _tokenizer_config(directory)
    packing = dataclasses.asdict(record.packing)
    for name in ("cls_token", "sep_token", "pad_token"):
        if name in tokenizer_config:
            packing[name] = _token_name(tokenizer_config[name])
    if record.tokenizer.kind == "wordpiece":
        _tokenizer_files(directory, record)
        return BertPreprocessor.from_checkpoint(
            directory, seq_length=seq_length, **packing, **options
        )
    try:
        tokenizer = _family_tokenizer(directory, record, tokenizer_config)
    except (ValueError, FileNotFoundError) as error:
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(f"{directory}: cannot read the tokenizer: {error}") from None
    return TextPreprocessor(tokenizer, seq_length=seq_length, **packing, **options)
