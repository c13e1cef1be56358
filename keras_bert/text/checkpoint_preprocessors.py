"""The in-graph preprocessor of a checkpoint, chosen by its `model_type`.

The family's record (`keras_bert.families`) names its tokenizer, the files it reads and how it
packs pairs:

- `bert`, `distilbert`: `vocab.txt` → `BertPreprocessor` (WordPiece), `[CLS] A [SEP] B [SEP]`.
- `roberta`: `vocab.json` + `merges.txt` → `BytePairTokenizer`, `<s> A </s></s> B </s>`, one
  token type, padding `<pad>`.
- `modernbert`: `tokenizer.json` → `BytePairTokenizer.from_tokenizer_json` (its added tokens
  with their flags), `[CLS] A [SEP] B [SEP]`, one token type.
- `albert`: `spiece.model` → `SentencePieceTokenizer` with ALBERT's preprocessing,
  `[CLS] A [SEP] B [SEP]`, padding `<pad>`.
- `deberta-v2` (DeBERTa-v3): `spm.model` → `SentencePieceTokenizer`, `[CLS] A [SEP] B [SEP]`.
- `xlm-roberta`: `sentencepiece.bpe.model` → `UnigramTokenizer` (fairseq's ids, Hugging Face's
  steps), packed as RoBERTa.

Special tokens come from `tokenizer_config.json` when it names them, else the family's defaults.
"""

import dataclasses
from typing import Any

import keras

from keras_bert.checkpoints.location import CheckpointFiles
from keras_bert.errors import CheckpointError, ConfigError
from keras_bert.text.byte_pair_tokenizer import TOKENIZER_JSON, BytePairTokenizer
from keras_bert.text.preprocessor import BertPreprocessor, TextPreprocessor
from keras_bert.text.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_bert.text.unigram_tokenizer import UnigramTokenizer


def _family_tokenizer(checkpoint: CheckpointFiles) -> keras.Layer:
    """The byte-pair, SentencePiece or unigram tokenizer layer of a family's checkpoint."""
    record = checkpoint.family
    files = checkpoint.tokenizer_files
    if record.tokenizer.kind == "byte_pair" and files[0].name == TOKENIZER_JSON:
        return BytePairTokenizer.from_tokenizer_json(files[0], name="tokenizer")
    if record.tokenizer.kind == "byte_pair":
        return BytePairTokenizer(*files, name="tokenizer")
    if record.tokenizer.kind == "unigram":
        return UnigramTokenizer(
            *files, special_tokens=record.tokenizer.special_tokens, name="tokenizer"
        )
    albert_preprocessing = record.tokenizer.albert_preprocessing
    return SentencePieceTokenizer(
        *files,
        albert_preprocessing=albert_preprocessing,
        lowercase=albert_preprocessing and checkpoint.tokenizer_config.get("do_lower_case", True),
        special_tokens=record.tokenizer.special_tokens,
        name="tokenizer",
    )


def _preprocessor(
    checkpoint: CheckpointFiles, seq_length: int | None, **options: Any
) -> BertPreprocessor | TextPreprocessor:
    try:
        record = checkpoint.family
    except ConfigError as error:
        raise ConfigError(f"{checkpoint.directory}: no preprocessor: {error}") from None
    seq_length = checkpoint.packed_length(seq_length)
    packing = {**dataclasses.asdict(record.packing), **checkpoint.packing_tokens}
    if record.tokenizer.kind != "wordpiece":
        try:
            tokenizer = _family_tokenizer(checkpoint)
        except (ValueError, FileNotFoundError) as error:
            if isinstance(error, CheckpointError):
                raise
            raise CheckpointError(
                f"{checkpoint.directory}: cannot read the tokenizer: {error}"
            ) from None
        preprocessor = TextPreprocessor(tokenizer, seq_length=seq_length, **packing, **options)
    else:
        (vocabulary_file,) = checkpoint.tokenizer_files
        lowercase = checkpoint.tokenizer_config.get("do_lower_case")
        preprocessor = BertPreprocessor(
            vocabulary_file, lowercase=lowercase, seq_length=seq_length, **packing, **options
        )
    checkpoint.check_vocabulary_size(preprocessor.tokenizer.vocabulary_size)
    return preprocessor


def checkpoint_preprocessor(
    checkpoint: CheckpointFiles, seq_length: int | None = None, **options: Any
) -> BertPreprocessor | TextPreprocessor:
    """The preprocessor of a checkpoint of any supported family (`keras_bert.load_preprocessor`
    takes its path or Hub id).

    Args:
        checkpoint: the checkpoint's files (`keras_bert.checkpoints.find_checkpoint`).
        seq_length: length of the packed inputs (default 128, or the most tokens the model
            reads where that is less); longer texts are cut to it.
        **options: further preprocessor arguments (`truncation`, `name`).

    Raises:
        ConfigError: the `model_type` has no family record.
        CheckpointError: a tokenizer file is missing or unreadable; the message says how to take
            the tokenizer of another checkpoint, for checkpoints published without their own.

    Example:
    >>> from keras_bert.checkpoints import find_checkpoint
    >>> albert = find_checkpoint("../shared/reference/variants/albert", weights=False)
    >>> checkpoint_preprocessor(albert, 8)(["The cat sat."])["input_word_ids"].numpy().tolist()
    [[2, 7, 419, 34, 973, 8, 3, 0]]
    """
    try:
        return _preprocessor(checkpoint, seq_length, **options)
    except (CheckpointError, FileNotFoundError) as error:
        raise CheckpointError(
            f"{error} If {checkpoint.name} was published without its tokenizer, take the one it "
            "was trained with: load_preprocessor(..., vocabulary_from=<its directory or Hub id>)."
        ) from None
