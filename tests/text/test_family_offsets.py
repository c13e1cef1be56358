"""Token offsets of the family's tokenizers: byte-level BPE's (RoBERTa's, ModernBERT's) equal
`tokenizers`' offsets trimmed of the space before a word, XLM-RoBERTa's equal `tokenizers`'
offsets but widened to the clusters it composes, the SentencePiece ones equal `sentencepiece`'s
spans (without that space too) wherever a word's pieces spell it and hold them elsewhere; the
ids are always those of `call`."""

import random

import pytest
import sentencepiece
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, processors

import keras_bert
from tests.text.adversarial import ADVERSARIAL_TEXTS
from tests.text.family_references import (
    BYTE_PAIR_FAMILIES,
    SENTENCEPIECE_SPECIAL_TOKENS,
    albert_encode_ids,
    albert_preprocess_text,
)

SAMPLE_SIZE = 1500
FAMILIES = ("roberta", "albert", "deberta_v3", "modernbert", "xlm_roberta")


@pytest.fixture(scope="module")
def sample(corpus_sentences) -> list[str]:
    """Shared sentences drawn at random, plus the adversarial texts."""
    return random.Random(0).sample(corpus_sentences, SAMPLE_SIZE) + ADVERSARIAL_TEXTS


@pytest.fixture(scope="module", params=FAMILIES)
def tokenizer(request, reference_dir):
    tokenizer = keras_bert.load_preprocessor(reference_dir / "variants" / request.param).tokenizer
    tokenizer.family = request.param
    return tokenizer


def _offsets(tokenizer, texts: list[str]) -> list[list[tuple[int, int, int]]]:
    """(id, start, end) of each token, checking the ids against `call` and the word view."""
    constant = tf.constant(texts, tf.string)
    ids, starts, ends = tokenizer.tokenize_with_offsets(constant)
    word_ids, word_starts, word_ends = tokenizer.tokenize_words_with_offsets(constant)
    assert ids.to_list() == tokenizer(constant).to_list() == word_ids.merge_dims(1, 2).to_list()
    spans = zip(texts, word_starts.to_list(), word_ends.to_list(), strict=True)
    for text, row_starts, row_ends in spans:
        raw = text.encode("utf-8", "replace")
        assert all(0 <= s <= e <= len(raw) for s, e in zip(row_starts, row_ends, strict=True))
    return [
        list(zip(*row, strict=True))
        for row in zip(ids.to_list(), starts.to_list(), ends.to_list(), strict=True)
    ]


def _byte_offset(text: str, char_offset: int) -> int:
    return len(text[:char_offset].encode("utf-8"))


def _tokenizer_json_offsets(checkpoint, texts):
    reference = Tokenizer.from_file(str(checkpoint / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    if isinstance(reference.model, models.BPE):
        # Byte-level BPE's offsets trimmed of a word's leading space, as RoBERTa's
        # post-processor trims them (ModernBERT's template post-processor keeps the space:
        # keras_bert's spans never do). XLM-RoBERTa's stay as they are: "Ġ" is a plain
        # character there.
        reference.post_processor = processors.ByteLevel(trim_offsets=True)
    return [
        [
            (token_id, _byte_offset(text, start), _byte_offset(text, end))
            for token_id, (start, end) in zip(encoding.ids, encoding.offsets, strict=True)
        ]
        for text, encoding in zip(
            texts, reference.encode_batch(texts, add_special_tokens=False), strict=True
        )
    ]


def _sentencepiece_spans(model, text: str) -> list[tuple[int, int, int]]:
    """(id, start, end) of `sentencepiece`, the start after the whitespace before a word."""
    pieces = model.encode(text, return_type="proto").pieces
    return [
        (piece.id, piece.begin + len(piece.surface) - len(piece.surface.lstrip()), piece.end)
        for piece in pieces
    ]


@pytest.mark.parametrize("family", BYTE_PAIR_FAMILIES)
def test_byte_pair_offsets_equal_tokenizers_offsets(family, reference_dir, sample):
    checkpoint = reference_dir / "variants" / family
    tokenizer = keras_bert.load_preprocessor(checkpoint).tokenizer
    ours, expected = _offsets(tokenizer, sample), _tokenizer_json_offsets(checkpoint, sample)
    wrong = [index for index in range(len(sample)) if ours[index] != expected[index]]
    assert not wrong, [(sample[i], ours[i], expected[i]) for i in wrong[:3]]


def test_xlm_roberta_offsets_equal_tokenizers_offsets_but_around_composed_clusters(
    reference_dir, sample
):
    """A cluster that normalization composes ("e" + U+0301 → "é") is the span of its piece,
    where `tokenizers` gives its first character alone."""
    checkpoint = reference_dir / "variants" / "xlm_roberta"
    tokenizer = keras_bert.load_preprocessor(checkpoint).tokenizer
    ours, expected = _offsets(tokenizer, sample), _tokenizer_json_offsets(checkpoint, sample)
    composed = 0
    for text, our_tokens, tokens in zip(sample, ours, expected, strict=True):
        assert [token[0] for token in our_tokens] == [token[0] for token in tokens], text
        for (_, start, end), (_, expected_start, expected_end) in zip(
            our_tokens, tokens, strict=True
        ):
            if (start, end) != (expected_start, expected_end):
                composed += 1
                assert start == expected_start and end > expected_end, text
                assert "\u0301" in text.encode()[start:end].decode(), text
    assert 0 < composed < len(sample)


@pytest.mark.parametrize("family", ["albert", "deberta_v3"])
def test_sentencepiece_offsets_equal_sentencepiece_spans(family, reference_dir, sample):
    """DeBERTa-v3 on every text without special tokens written in it (sentencepiece's spans
    refer to the raw text); ALBERT on those that its preprocessing only lower-cases and whose
    "9," pieces are not re-split (sentencepiece then sees the same bytes)."""
    checkpoint = reference_dir / "variants" / family
    tokenizer = keras_bert.load_preprocessor(checkpoint).tokenizer
    model = sentencepiece.SentencePieceProcessor(
        model_file=str(checkpoint / ("spiece.model" if family == "albert" else "spm.model"))
    )
    sample = [
        text for text in sample if not any(token in text for token in SENTENCEPIECE_SPECIAL_TOKENS)
    ]
    if family == "albert":
        sample = [
            text
            for text in sample
            if albert_preprocess_text(text) == text.lower()
            and text.isascii()
            and albert_encode_ids(model, text.lower()) == model.encode(text.lower())
        ]
        assert len(sample) > SAMPLE_SIZE // 2
    ours = _offsets(tokenizer, sample)
    exact = inexact = 0
    for text, tokens in zip(sample, ours, strict=True):
        reference_text = text.lower() if family == "albert" else text
        expected = _sentencepiece_spans(model, reference_text)
        assert [token[0] for token in tokens] == [piece[0] for piece in expected], text
        pieces = tokenizer.id_to_token(tf.constant([token[0] for token in tokens], tf.int32))
        for (_, start, end), (_, reference_start, reference_end), piece in zip(
            tokens, expected, pieces.numpy(), strict=True
        ):
            if (start, end) == (reference_start, reference_end):
                exact += 1
                continue
            # Otherwise the whole word's span, around the piece's; or inside a span of
            # sentencepiece's that holds removed characters ("bad \ufffd byte": " \ufffd by").
            inexact += 1
            inside = reference_start <= start <= end <= reference_end
            assert start <= reference_start <= reference_end <= end or inside, (text, piece)
            assert text.encode()[start:end].strip() == text.encode()[start:end], (text, piece)
    assert exact > 20 * inexact


@settings(max_examples=settings.default.max_examples // 8)
@given(texts=st.lists(st.text(max_size=30), min_size=1, max_size=6))
def test_fuzzed_offsets_are_spans_of_the_text(tokenizer, texts):
    for text, tokens in zip(texts, _offsets(tokenizer, texts), strict=True):
        raw = text.encode("utf-8")
        for _, start, end in tokens:
            assert 0 <= start <= end <= len(raw)
            raw[start:end].decode("utf-8")  # whole characters


def test_split_words_follow_the_text_they_were_split_from(reference_dir):
    """Byte-level BPE's words after the first get the space they had in the text; SentencePiece
    tokenizes each word alone."""
    words = tf.ragged.constant([["Barack", "Obama", "visited", "Paris", "."]])
    for family in FAMILIES:
        tokenizer = keras_bert.load_preprocessor(reference_dir / "variants" / family).tokenizer
        pieces = tokenizer.tokenize_split_words(words)
        assert (
            pieces.merge_dims(1, 2).to_list()
            == tokenizer(tf.constant(["Barack Obama visited Paris ."])).to_list()
        )
