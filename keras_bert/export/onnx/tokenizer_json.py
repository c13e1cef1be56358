"""`tokenizer.json` for an ONNX export: keras_bert's tokenizer in Hugging Face `tokenizers`'
format, so that a client (ours, `keras_bert.serving.OnnxModel`, or any other) tokenizes in
Rust with the ids the model was trained on.

Each family's tokenizer maps to `tokenizers`' parts:

- WordPiece: `BertNormalizer` + `BertPreTokenizer` + `WordPiece` (100 characters a word at most),
  as keras_bert's `WordPieceTokenizer` follows them.
- byte-level BPE: `ByteLevel` pre-tokenizer (GPT-2's regex) + `BPE` with the merges (after
  `NFC` where the tokenizer normalizes, as GPT-NeoX's `tokenizer.json` does).
- XLM-RoBERTa's unigram model: transformers' own tokenizer (the model's `Precompiled` rules,
  `WhitespaceSplit`, `Metaspace`, `Unigram` under fairseq's ids), which `UnigramTokenizer`
  follows exactly.
- SentencePiece (unigram): the model's own normalization rules (`Precompiled`, its
  `precompiled_charsmap`, the same table `sentencepiece` applies: transformers 5's
  DeBERTa-v2 tokenizer uses NFC instead, and differs on NFKC text), extra whitespace removed,
  `Metaspace` and `Unigram` with the model's scores; for ALBERT first google-research/albert's
  preprocessing (`` and '' to ", NFKD, combining marks removed, lower case).

Special tokens written in the text ("[MASK]", "<mask>") are single tokens, as in keras_bert.
The post-processor adds the family's special tokens and the truncation cuts to the sequence
length (for pairs `tokenizers` cuts as `longest_first_hf`; keras_bert's runtime packs the ids
itself with the export's own truncation). `tokenizer_agreement` compares the ids with
keras_bert's; the export refuses a tokenizer that differs on any text it checks.

Not expressible in `tokenizers`' format:

- ALBERT vocabularies with "9," pieces, which google-research's Python re-splits after
  segmentation (the check refuses them where a text has one).
- How `sentencepiece` (and keras_bert, which follows it) chooses between segmentations of equal
  score: it sums a path's piece scores in float32 along the whole text, so the rounding of the
  running sum decides, and one word can be split two ways in one text (ALBERT, "Duluth 5.06 up
  .02 --- --- -- --": "-" "--", then "--" "-"). `tokenizers`' `Unigram` sums in float64 word
  by word and keeps the first path found (DeBERTa-v3, "Mmmm": "▁M" "m" "mm", `sentencepiece`
  "▁M" "mm" "m"). Of the 187,178 texts of shared/data, 12 differ so for ALBERT and 10 for
  DeBERTa-v3: all ties (the same pieces in another order) but one, whose two paths' scores
  differ by less than float32's rounding of the running sum.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import tensorflow as tf
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
from tokenizers.processors import TemplateProcessing

from keras_bert.errors import ConfigError
from keras_bert.text import python_unicode_tables
from keras_bert.text.byte_pair_tokenizer import BytePairTokenizer
from keras_bert.text.normalization import char_class
from keras_bert.text.sentencepiece_model import read_sentencepiece_proto
from keras_bert.text.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_bert.text.special_tokens import SPECIAL_TOKENS, UNK_TOKEN
from keras_bert.text.unigram_tokenizer import UnigramTokenizer, fairseq_vocabulary
from keras_bert.text.wordpiece_tokenizer import MAX_CHARS_PER_WORD, WordPieceTokenizer

WORD_BOUNDARY = "\u2581"
# What Python's `str.split()` splits on (ALBERT's preprocessing collapses it to one space):
# `\s` in `tokenizers`' regex lacks \x1c-\x1f.
PYTHON_WHITESPACE = f"[{char_class(python_unicode_tables.WHITESPACE_CHARS)}]+"


class TokenizerAgreementError(ValueError):
    """The `tokenizers` form of a tokenizer gives other ids than keras_bert's on some text."""


def hf_tokenizer(preprocessor) -> Tokenizer:
    """The `tokenizers.Tokenizer` of a keras_bert preprocessor (its tokenizer and packing).

    Example:
    >>> from keras_bert.text import BertPreprocessor
    >>> preprocessor = BertPreprocessor(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "."], seq_length=8)
    >>> hf_tokenizer(preprocessor).encode("The [MASK] sat.").ids
    [2, 5, 4, 7, 8, 3]
    """
    layer = preprocessor.tokenizer
    if isinstance(layer, WordPieceTokenizer):
        tokenizer = _wordpiece(layer)
        special = [token for token in SPECIAL_TOKENS if token in set(layer.vocabulary)]
    elif isinstance(layer, BytePairTokenizer):
        tokenizer = _byte_pair(layer)
        special = layer.special_tokens
    elif isinstance(layer, SentencePieceTokenizer):
        tokenizer = _sentencepiece(layer)
        special = layer.special_tokens
    elif isinstance(layer, UnigramTokenizer):
        tokenizer = _unigram(layer)
        special = layer.special_tokens
    else:
        raise ConfigError(f"No tokenizer.json for a {type(layer).__name__}.")
    added_tokens = getattr(layer, "added_tokens", None)
    if added_tokens is None:
        added_tokens = [
            {"content": token, "special": True, "normalized": False} for token in special
        ]
    for token in added_tokens:  # a tokenizer.json's own, with their flags (ModernBERT's)
        flags = {name: token[name] for name in ("lstrip", "rstrip", "normalized") if name in token}
        added = AddedToken(token["content"], special=token["special"], **flags)
        if token["special"]:
            tokenizer.add_special_tokens([added])
        else:
            tokenizer.add_tokens([added])
    packer = preprocessor.packer
    cls, sep = preprocessor.cls_token, preprocessor.sep_token
    separators = " ".join([f"{sep}:0"] * packer.pair_separators)
    second = packer.second_type_id
    tokenizer.post_processor = TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0",
        pair=f"{cls}:0 $A:0 {separators} $B:{second} {sep}:{second}",
        special_tokens=[(cls, packer.cls_id), (sep, packer.sep_id)],
    )
    tokenizer.enable_truncation(preprocessor.seq_length)
    return tokenizer


def _wordpiece(layer: WordPieceTokenizer) -> Tokenizer:
    vocabulary = {token: index for index, token in enumerate(layer.vocabulary)}
    tokenizer = Tokenizer(
        models.WordPiece(
            vocabulary, unk_token=UNK_TOKEN, max_input_chars_per_word=MAX_CHARS_PER_WORD
        )
    )
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=layer.lowercase
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    return tokenizer


def _byte_pair(layer: BytePairTokenizer) -> Tokenizer:
    merges = [tuple(line.split(" ")) for line in layer.merges]
    tokenizer = Tokenizer(models.BPE(layer.vocabulary, merges, fuse_unk=False))
    if layer.normalizer == "nfc":
        tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def _sentencepiece(layer: SentencePieceTokenizer) -> Tokenizer:
    model = read_sentencepiece_proto(layer.proto)
    pieces = model.pieces
    tokenizer = Tokenizer(
        models.Unigram([(piece, score) for piece, score, _ in pieces], model.unk_id, False)
    )
    steps = []
    if layer.albert_preprocessing:
        steps += [
            normalizers.Replace(Regex(PYTHON_WHITESPACE), " "),
            normalizers.Strip(),
            normalizers.Replace("``", '"'),
            normalizers.Replace("''", '"'),
            normalizers.NFKD(),
            normalizers.StripAccents(),
        ]
        if layer.lowercase:
            steps.append(normalizers.Lowercase())
    if model.precompiled_charsmap:
        steps.append(normalizers.Precompiled(model.precompiled_charsmap))
    if model.remove_extra_whitespaces:
        steps += [normalizers.Replace(Regex(" {2,}"), " "), normalizers.Strip()]
    tokenizer.normalizer = normalizers.Sequence(steps)
    scheme = "always" if model.add_dummy_prefix else "never"
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement=WORD_BOUNDARY, prepend_scheme=scheme
    )
    tokenizer.decoder = decoders.Metaspace(replacement=WORD_BOUNDARY, prepend_scheme=scheme)
    return tokenizer


def _unigram(layer: UnigramTokenizer) -> Tokenizer:
    """transformers' XLM-RoBERTa tokenizer: the charsmap, whitespace, `Metaspace`, `Unigram`."""
    tokenizer = Tokenizer(models.Unigram(fairseq_vocabulary(layer.proto), layer.unk_id, False))
    charsmap = read_sentencepiece_proto(layer.proto).precompiled_charsmap
    tokenizer.normalizer = normalizers.Precompiled(charsmap) if charsmap else None
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Metaspace(replacement=WORD_BOUNDARY, prepend_scheme="always"),
        ]
    )
    tokenizer.decoder = decoders.Metaspace(replacement=WORD_BOUNDARY, prepend_scheme="always")
    return tokenizer


@dataclasses.dataclass(frozen=True)
class TokenizerAgreement:
    """Texts compared, how many got identical ids, and the first that did not (or None)."""

    texts: int
    identical: int
    first_difference: str | None = None


def tokenizer_agreement(
    tokenizer: Tokenizer, preprocessor, texts: Sequence[str], batch_size: int = 256
) -> TokenizerAgreement:
    """Compares `tokenizer`'s ids (no special tokens, no truncation) with keras_bert's on
    `texts`."""
    tokenizer = Tokenizer.from_str(tokenizer.to_str())
    tokenizer.no_truncation()
    identical, first = 0, None
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start : start + batch_size])
        ours = preprocessor.tokenizer(tf.constant(batch)).to_list()
        theirs = tokenizer.encode_batch(batch, add_special_tokens=False)
        for text, our_ids, encoding in zip(batch, ours, theirs, strict=True):
            if our_ids == encoding.ids:
                identical += 1
            elif first is None:
                first = text
    return TokenizerAgreement(len(texts), identical, first)


def check_tokenizer(tokenizer: Tokenizer, preprocessor, texts: Sequence[str]) -> TokenizerAgreement:
    """`tokenizer_agreement`, raising `TokenizerAgreementError` unless every text agrees."""
    agreement = tokenizer_agreement(tokenizer, preprocessor, texts)
    if agreement.identical != agreement.texts:
        raise TokenizerAgreementError(
            f"tokenizer.json gives other ids than keras_bert's tokenizer on "
            f"{agreement.texts - agreement.identical} of {agreement.texts} texts, e.g. "
            f"{agreement.first_difference!r}; export with --format savedmodel."
        )
    return agreement
