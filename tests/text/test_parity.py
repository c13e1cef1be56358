"""Ids identical to Hugging Face `tokenizers` and to the reference npz, on real and hostile text."""

import numpy as np
import pytest
import tensorflow as tf
from tokenizers import Tokenizer

from keras_bert.text import BertPreprocessor, WordPieceTokenizer
from tests.text.adversarial import ADVERSARIAL_TEXTS

BATCH_SIZE = 4096


def _our_ids(tokenizer: WordPieceTokenizer, texts: list[str]) -> list[list[int]]:
    ids = []
    for start in range(0, len(texts), BATCH_SIZE):
        ids += tokenizer(tf.constant(texts[start : start + BATCH_SIZE])).to_list()
    return ids


def _hf_ids(hf_tokenizer: Tokenizer, texts: list[str]) -> list[list[int]]:
    return [encoding.ids for encoding in hf_tokenizer.encode_batch(texts, add_special_tokens=False)]


def _mismatches(ours: list[list[int]], theirs: list[list[int]], texts: list[str]) -> list:
    return [(text, a, b) for text, a, b in zip(texts, ours, theirs, strict=True) if a != b]


@pytest.mark.parametrize("kind", ["singles", "pairs"])
def test_matches_reference_npz(minilm_dir, reference, kind):
    preprocessor = BertPreprocessor.from_checkpoint(minilm_dir, seq_length=64)
    texts = reference["texts"][kind]
    if kind == "pairs":
        inputs = preprocessor(([a for a, _ in texts], [b for _, b in texts]))
    else:
        inputs = preprocessor(texts)
    np.testing.assert_array_equal(inputs["input_word_ids"], reference[f"{kind}_input_ids"])
    np.testing.assert_array_equal(inputs["input_type_ids"], reference[f"{kind}_token_type_ids"])
    np.testing.assert_array_equal(inputs["input_mask"], reference[f"{kind}_attention_mask"])


def test_adversarial_texts_match_tokenizers(tokenizer, hf_tokenizer):
    ours = _our_ids(tokenizer, ADVERSARIAL_TEXTS)
    assert _mismatches(ours, _hf_ids(hf_tokenizer, ADVERSARIAL_TEXTS), ADVERSARIAL_TEXTS) == []


def test_corpus_sentences_match_tokenizers(tokenizer, hf_tokenizer, corpus_sentences):
    assert len(corpus_sentences) > 60_000
    ours = _our_ids(tokenizer, corpus_sentences)
    assert _mismatches(ours, _hf_ids(hf_tokenizer, corpus_sentences), corpus_sentences) == []


def test_corpus_pairs_match_tokenizers(minilm_dir, corpus_sentences):
    """Consecutive sentences as pairs, packed to 128 with truncation, against `tokenizers`."""
    preprocessor = BertPreprocessor.from_checkpoint(minilm_dir, truncation="longest_first_hf")
    hf_tokenizer = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    hf_tokenizer.enable_truncation(128)
    hf_tokenizer.enable_padding(length=128)
    first, second = corpus_sentences[:-1:2], corpus_sentences[1::2]
    for start in range(0, len(first), BATCH_SIZE):
        batch = slice(start, start + BATCH_SIZE)
        ours = preprocessor((tf.constant(first[batch]), tf.constant(second[batch])))
        theirs = hf_tokenizer.encode_batch(list(zip(first[batch], second[batch], strict=True)))
        np.testing.assert_array_equal(ours["input_word_ids"], [e.ids for e in theirs])
        np.testing.assert_array_equal(ours["input_type_ids"], [e.type_ids for e in theirs])
        np.testing.assert_array_equal(ours["input_mask"], [e.attention_mask for e in theirs])
