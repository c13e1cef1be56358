"""`UnigramTokenizer`'s parts against `tokenizers`: its whitespace, its Viterbi on ties and
unknown pieces, fairseq's dictionary; and its faults."""

import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers

from keras_bert.errors import ConfigError
from keras_bert.text import UnigramTokenizer
from keras_bert.text.unigram import UnigramModel
from keras_bert.text.unigram_tokenizer import WHITESPACE_CHARS
from tests.text.test_unicode_tables import CODE_POINTS

# Pieces whose scores tie in many ways: "mmm" is "m" "mm", "mm" "m" or "mmm" alike, "xy" is as
# good as "x" "y"; "q" is no piece (unknown), "ß" only inside "ßa".
TIED_PIECES = [
    ("<unk>", 0.0),
    ("\u2581", -1.0),
    ("\u2581m", -2.0),
    ("m", -1.5),
    ("mm", -3.0),
    ("mmm", -4.5),
    ("x", -0.75),
    ("y", -0.25),
    ("xy", -1.0),
    ("ßa", -2.5),
    ("a", -3.0),
    ("\u2581xy", -2.0),
]


@pytest.mark.slow  # 1.1M probes
def test_whitespace_is_where_tokenizers_splits_words():
    # "a<c>a" probes, space-separated: one word of three characters unless c splits it.
    text = " ".join(f"a{chr(code_point)}a" for code_point in CODE_POINTS)
    words = pre_tokenizers.WhitespaceSplit().pre_tokenize_str(text)
    kept = {ord(word[1]) for word, _ in words if len(word) == 3}
    assert set(WHITESPACE_CHARS) == set(CODE_POINTS) - kept


@pytest.fixture(scope="module")
def segment():
    """`UnigramModel(TIED_PIECES).segment` of strings, traced once."""
    model = UnigramModel(TIED_PIECES, 0)
    return tf.function(
        lambda words: model.segment(tf.strings.unicode_decode(words, "UTF-8")),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )


@settings(max_examples=settings.default.max_examples // 2)
@given(words=st.lists(st.text("\u2581mxyqßa", min_size=1, max_size=16), min_size=1, max_size=8))
def test_segmentation_breaks_ties_and_fuses_unknowns_as_tokenizers(segment, words):
    reference = Tokenizer(models.Unigram(TIED_PIECES, 0, False))
    expected = [reference.encode(word).ids for word in words]
    ids, starts, ends = segment(tf.constant(words))
    assert ids.to_list() == expected
    for word, word_starts, word_ends in zip(words, starts.to_list(), ends.to_list(), strict=True):
        assert word_starts[0] == 0 and word_ends[-1] == len(word)
        assert word_starts[1:] == word_ends[:-1]


def test_vocabulary_is_fairseq_dictionary(reference_dir):
    tokenizer = UnigramTokenizer(
        reference_dir / "variants" / "xlm_roberta" / "sentencepiece.bpe.model"
    )
    reference = Tokenizer.from_file(
        str(reference_dir / "variants" / "xlm_roberta" / "tokenizer.json")
    )
    assert tokenizer.vocabulary == [
        reference.id_to_token(index) for index in range(reference.get_vocab_size())
    ]
    assert tokenizer.vocabulary[:4] == ["<s>", "<pad>", "</s>", "<unk>"]


def test_a_model_not_laid_out_for_fairseq_is_refused(reference_dir):
    deberta = reference_dir / "variants" / "deberta_v3" / "spm.model"
    with pytest.raises(ConfigError, match=r"not an XLM-RoBERTa \(fairseq\) model; give"):
        UnigramTokenizer(deberta)
    with pytest.raises(ConfigError, match="is not a SentencePiece model .*: replace it"):
        UnigramTokenizer(b"\x08\x01 not a model \xff")
