"""The tokenizer files of a published model, read by transformers, `tokenizers` and keras_bert.

- the family's own files (its record in `keras_bert.families`): `vocab.txt` (WordPiece),
  `vocab.json` + `merges.txt` (byte-level BPE), `spiece.model` / `spm.model` (SentencePiece),
  `sentencepiece.bpe.model` (XLM-RoBERTa's unigram model); ModernBERT's is `tokenizer.json`
  itself;
- `tokenizer.json`: the preprocessor in `tokenizers`' format (`keras_bert.export.onnx.
  tokenizer_json`), without truncation;
- `tokenizer_config.json` and `special_tokens_map.json`: the special tokens, casing, the longest
  input and the model's inputs.

`tokenizer_config.json` names `PreTrainedTokenizerFast`, so that transformers (4 and 5) loads
`tokenizer.json` as written: the family classes of transformers 5 rebuild their normalizers
from the vocabulary, and those of ALBERT and DeBERTa-v2 then differ from `sentencepiece` (and
keras_bert) on NFKC text. keras_bert reads the family's files and `tokenizer_config.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from keras_bert.decoding.mask_fillers import mask_token_of
from keras_bert.errors import ConfigError
from keras_bert.export.onnx.tokenizer_json import hf_tokenizer, read_sentencepiece_proto
from keras_bert.families import Family
from keras_bert.text.byte_pair_tokenizer import TOKENIZER_JSON, BytePairTokenizer
from keras_bert.text.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_bert.text.special_tokens import UNK_TOKEN
from keras_bert.text.unigram_tokenizer import UnigramTokenizer
from keras_bert.text.vocabulary import save_vocabulary
from keras_bert.text.wordpiece_tokenizer import WordPieceTokenizer

TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
_TOKENIZER_KINDS = {
    WordPieceTokenizer: "wordpiece",
    BytePairTokenizer: "byte_pair",
    SentencePieceTokenizer: "sentencepiece",
    UnigramTokenizer: "unigram",
}
_BYTE_PAIR_UNKNOWN = "<unk>"


def _special_tokens(preprocessor) -> dict[str, str]:
    """The special tokens of `special_tokens_map.json`, as the preprocessor's tokenizer has them."""
    tokenizer = preprocessor.tokenizer
    tokens = {
        "cls_token": preprocessor.cls_token,
        "sep_token": preprocessor.sep_token,
        "pad_token": preprocessor.pad_token,
    }
    if isinstance(tokenizer, WordPieceTokenizer):
        tokens["unk_token"] = UNK_TOKEN
    else:  # transformers' byte-pair and SentencePiece tokenizers name both ends too
        tokens |= {"bos_token": preprocessor.cls_token, "eos_token": preprocessor.sep_token}
        if isinstance(tokenizer, SentencePieceTokenizer):
            unknown_id = read_sentencepiece_proto(tokenizer.proto).unk_id
            tokens["unk_token"] = tokenizer.vocabulary[unknown_id]
        elif isinstance(tokenizer, UnigramTokenizer):
            tokens["unk_token"] = tokenizer.vocabulary[tokenizer.unk_id]
        elif _BYTE_PAIR_UNKNOWN in tokenizer.vocabulary:
            tokens["unk_token"] = _BYTE_PAIR_UNKNOWN
    try:
        tokens["mask_token"] = mask_token_of(tokenizer)
    except ConfigError:  # a vocabulary without one: no masked LM reads it
        pass
    return tokens


def _write_family_files(tokenizer, record: Family, directory: Path) -> None:
    """The family's own tokenizer files (ModernBERT's one is the `tokenizer.json` written
    beside them)."""
    files = [directory / name for name in record.tokenizer.files if name != TOKENIZER_JSON]
    if not files:
        return
    if isinstance(tokenizer, WordPieceTokenizer):
        save_vocabulary(tokenizer.vocabulary, files[0])
    elif isinstance(tokenizer, BytePairTokenizer):
        vocabulary = json.dumps(tokenizer.vocabulary, ensure_ascii=False)
        files[0].write_text(vocabulary, "utf-8")
        merges = "".join(f"{merge}\n" for merge in tokenizer.merges)
        files[1].write_text(f"#version: 0.2\n{merges}", "utf-8")
    else:
        files[0].write_bytes(tokenizer.proto)


def write_tokenizer_files(
    preprocessor, record: Family, directory: Path, max_length: int, token_types: bool
) -> list[str]:
    """Writes the tokenizer files of `preprocessor` (a keras_bert preprocessor of the family of
    `record`) into `directory`; returns their names.

    Args:
        preprocessor: the model's `BertPreprocessor` or `TextPreprocessor`.
        record: the model's family.
        directory: where to write.
        max_length: the longest input the model takes (`model_max_length`).
        token_types: whether the model takes `token_type_ids`.

    Raises:
        ConfigError: the preprocessor's tokenizer is not the family's (keras_bert would read the
            directory with another).

    Example:
    >>> import tempfile
    >>> from keras_bert import load_preprocessor
    >>> from keras_bert.families import family
    >>> preprocessor = load_preprocessor("../shared/reference/variants/albert")
    >>> write_tokenizer_files(preprocessor, family("albert"), Path(tempfile.mkdtemp()), 64, True)
    ['spiece.model', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json']
    """
    tokenizer = preprocessor.tokenizer
    kind = _TOKENIZER_KINDS.get(type(tokenizer))
    if kind != record.tokenizer.kind:
        raise ConfigError(
            f"{record.model_type} models read a {record.tokenizer.kind} tokenizer "
            f"({', '.join(record.tokenizer.files)}); this preprocessor has a "
            f"{type(tokenizer).__name__}."
        )
    _write_family_files(tokenizer, record, directory)
    tokenizer_json = hf_tokenizer(preprocessor)
    tokenizer_json.no_truncation()
    tokenizer_json.save(str(directory / TOKENIZER_JSON))
    special_tokens = _special_tokens(preprocessor)
    settings: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": max_length,
        "model_input_names": [
            "input_ids",
            *(["token_type_ids"] if token_types else []),
            "attention_mask",
        ],
        **special_tokens,
    }
    if isinstance(tokenizer, (WordPieceTokenizer, SentencePieceTokenizer)):
        settings["do_lower_case"] = bool(tokenizer.lowercase)
    for name, values in ((TOKENIZER_CONFIG, settings), (SPECIAL_TOKENS_MAP, special_tokens)):
        (directory / name).write_text(json.dumps(values, indent=2, ensure_ascii=False) + "\n")
    return list(
        dict.fromkeys(
            [*record.tokenizer.files, TOKENIZER_JSON, TOKENIZER_CONFIG, SPECIAL_TOKENS_MAP]
        )
    )
