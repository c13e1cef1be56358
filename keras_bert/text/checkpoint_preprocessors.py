"""The in-graph preprocessor of a checkpoint directory, chosen by its `model_type`.

- `bert`, `distilbert`: `vocab.txt` → `BertPreprocessor` (WordPiece), `[CLS] A [SEP] B [SEP]`.
- `roberta`: `vocab.json` + `merges.txt` → `BytePairTokenizer`, `<s> A </s></s> B </s>`, one
  token type, padding `<pad>`.
- `albert`: `spiece.model` → `SentencePieceTokenizer` with ALBERT's preprocessing,
  `[CLS] A [SEP] B [SEP]`, padding `<pad>`.
- `deberta-v2` (DeBERTa-v3): `spm.model` → `SentencePieceTokenizer`, `[CLS] A [SEP] B [SEP]`.

Special tokens come from `tokenizer_config.json` when it names them, else the family's defaults.
"""

import json
from pathlib import Path
from typing import Any

from keras_bert.errors import CheckpointError, ConfigError
from keras_bert.text.byte_pair_tokenizer import BytePairTokenizer
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_bert.text.text_preprocessor import TextPreprocessor

# Per family: its special tokens and packing settings (TextPreprocessor arguments).
_FAMILY_PACKING = {
    "roberta": {
        "cls_token": "<s>",
        "sep_token": "</s>",
        "pad_token": "<pad>",
        "pair_separators": 2,
        "second_type_id": 0,
    },
    "albert": {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "<pad>"},
    "deberta-v2": {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]"},
}
_SENTENCEPIECE_FILES = {"albert": "spiece.model", "deberta-v2": "spm.model"}
# Matched as written in the text, as Hugging Face's tokenizers of these families do.
_SENTENCEPIECE_SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "<pad>", "<unk>", "[PAD]", "[UNK]")
MODEL_TYPES = ("bert", "distilbert", *_FAMILY_PACKING)


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


def _required_file(directory: Path, name: str, model_type: str) -> Path:
    path = directory / name
    if not path.is_file():
        raise CheckpointError(
            f"{directory} has no {name}: a {model_type} checkpoint's tokenizer needs it."
        )
    return path


def _family_tokenizer(directory: Path, model_type: str, tokenizer_config: dict):
    if model_type == "roberta":
        return BytePairTokenizer(
            _required_file(directory, "vocab.json", model_type),
            _required_file(directory, "merges.txt", model_type),
            name="tokenizer",
        )
    proto = _required_file(directory, _SENTENCEPIECE_FILES[model_type], model_type)
    if model_type == "albert":
        return SentencePieceTokenizer(
            proto,
            albert_preprocessing=True,
            lowercase=tokenizer_config.get("do_lower_case", True),
            special_tokens=_SENTENCEPIECE_SPECIAL_TOKENS,
            name="tokenizer",
        )
    return SentencePieceTokenizer(
        proto, special_tokens=_SENTENCEPIECE_SPECIAL_TOKENS, name="tokenizer"
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
        ConfigError: the `model_type` has no preprocessor.
        CheckpointError: a tokenizer file is missing or unreadable.
    """
    directory = Path(directory)
    model_type = read_model_type(directory)
    if model_type in ("bert", "distilbert"):
        return BertPreprocessor.from_checkpoint(directory, seq_length=seq_length, **options)
    if model_type not in _FAMILY_PACKING:
        raise ConfigError(
            f"{directory}: no preprocessor for model_type {model_type!r}; "
            f"supported: {', '.join(MODEL_TYPES)}."
        )
    tokenizer_config = _tokenizer_config(directory)
    packing = dict(_FAMILY_PACKING[model_type])
    for name in ("cls_token", "sep_token", "pad_token"):
        if name in tokenizer_config:
            packing[name] = _token_name(tokenizer_config[name])
    try:
        tokenizer = _family_tokenizer(directory, model_type, tokenizer_config)
    except (ValueError, FileNotFoundError) as error:
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(f"{directory}: cannot read the tokenizer: {error}") from None
    return TextPreprocessor(tokenizer, seq_length=seq_length, **packing, **options)
