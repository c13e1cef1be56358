"""`truncated_lengths` against the loops it replaces, and `BertPacker` layouts."""

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from keras_bert.text import BertPacker, truncated_lengths

lengths = st.integers(min_value=0, max_value=300)
budgets = st.integers(min_value=0, max_value=260)


def bert_truncate_seq_pair(length_a: int, length_b: int, budget: int) -> tuple[int, int]:
    """Original BERT's `_truncate_seq_pair` (run_classifier.py), on lengths."""
    while length_a + length_b > budget:
        if length_a > length_b:
            length_a -= 1
        else:
            length_b -= 1
    return length_a, length_b


def _truncated(length_a: int, length_b: int, budget: int, truncation: str) -> tuple[int, int]:
    kept_a, kept_b = truncated_lengths(
        tf.constant([length_a]), tf.constant([length_b]), budget, truncation
    )
    return int(kept_a[0]), int(kept_b[0])


@given(lengths, lengths, budgets)
def test_longest_first_is_bert_truncate_seq_pair(length_a, length_b, budget):
    assert _truncated(length_a, length_b, budget, "longest_first") == bert_truncate_seq_pair(
        length_a, length_b, budget
    )


@given(lengths, lengths, budgets)
def test_round_robin_is_tensorflow_text_round_robin_trimmer(length_a, length_b, budget):
    segments = [
        tf.ragged.constant([[1] * length_a], tf.int32),
        tf.ragged.constant([[2] * length_b], tf.int32),
    ]
    trimmed = tf_text.RoundRobinTrimmer(budget).trim(segments)
    expected = tuple(int(segment.row_lengths()[0]) for segment in trimmed)
    assert _truncated(length_a, length_b, budget, "round_robin") == expected
    assert _truncated(length_a, length_b, budget, "longest_first") == expected


@pytest.fixture(scope="module")
def truncating_hf_tokenizer(minilm_dir):
    return Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))


@settings(max_examples=settings.default.max_examples // 2)
@given(st.integers(1, 80), st.integers(1, 80), st.integers(5, 100))
def test_longest_first_hf_is_tokenizers_truncation(
    truncating_hf_tokenizer, length_a, length_b, seq_length
):
    truncating_hf_tokenizer.enable_truncation(seq_length)
    encoding = truncating_hf_tokenizer.encode(
        " ".join(["a"] * length_a), " ".join(["b"] * length_b)
    )
    expected = (encoding.tokens.count("a"), encoding.tokens.count("b"))
    assert _truncated(length_a, length_b, seq_length - 3, "longest_first_hf") == expected


def test_waterfall_fills_a_first():
    assert _truncated(10, 10, 15, "waterfall") == (10, 5)
    assert _truncated(20, 10, 15, "waterfall") == (15, 0)
    assert _truncated(3, 20, 15, "waterfall") == (3, 12)


def test_packs_single_segments_with_truncation_and_padding():
    packer = BertPacker(seq_length=6, cls_id=101, sep_id=102, pad_id=0)
    packed = packer(tf.ragged.constant([[5, 6, 7, 8, 9], [5], []], tf.int32))
    np.testing.assert_array_equal(
        packed["input_word_ids"],
        [[101, 5, 6, 7, 8, 102], [101, 5, 102, 0, 0, 0], [101, 102, 0, 0, 0, 0]],
    )
    np.testing.assert_array_equal(
        packed["input_mask"], [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(packed["input_type_ids"], np.zeros([3, 6]))
    assert all(tensor.dtype == tf.int32 for tensor in packed.values())


def test_packs_pairs_with_segment_ids():
    packer = BertPacker(seq_length=9, cls_id=101, sep_id=102, pad_id=0)
    packed = packer(
        [
            tf.ragged.constant([[1, 2, 3, 4, 5], [1]], tf.int32),
            tf.ragged.constant([[6, 7, 8, 9], [6]], tf.int32),
        ]
    )
    np.testing.assert_array_equal(
        packed["input_word_ids"],
        [[101, 1, 2, 3, 102, 6, 7, 8, 102], [101, 1, 102, 6, 102, 0, 0, 0, 0]],
    )
    np.testing.assert_array_equal(
        packed["input_type_ids"], [[0, 0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(
        packed["input_mask"], [[1, 1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0, 0, 0]]
    )


def test_rejects_too_short_seq_length_and_unknown_truncation():
    with pytest.raises(ValueError, match="at least 3"):
        BertPacker(seq_length=2, cls_id=101, sep_id=102)
    with pytest.raises(ValueError, match="truncation"):
        BertPacker(seq_length=8, cls_id=101, sep_id=102, truncation="longest")
    pair = [tf.ragged.constant([[1]], tf.int32)] * 2
    with pytest.raises(ValueError, match="at least 5 for pairs"):
        BertPacker(seq_length=4, cls_id=101, sep_id=102)(pair)


def test_config_round_trip():
    packer = BertPacker(seq_length=16, cls_id=2, sep_id=3, pad_id=1, truncation="waterfall")
    assert BertPacker.from_config(packer.get_config()).get_config() == packer.get_config()
    # Saved models name it by its registered name (a function defined between the decorator
    # and the class once took the registration).
    assert keras.saving.get_registered_name(BertPacker) == "keras_bert>BertPacker"
