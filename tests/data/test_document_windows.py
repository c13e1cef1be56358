"""Document windows for tagging: every word scored once, with context from its own document."""

import collections

import numpy as np
import pytest

from keras_bert import load_preprocessor
from keras_bert.data.document_windows import IGNORED_LABEL, document_windows, windows_tags
from keras_bert.data.token_classification import (
    TaggedSentences,
    encode_tags,
    read_conll,
    tag_names_of,
    tagging_windows,
)

CONLL_DEV = "benchmarks/conll2003/eng.testa"


@pytest.fixture(scope="module")
def conll_documents(data_dir) -> TaggedSentences:
    """The first 300 sentences of CoNLL-2003's `eng.testa`: whole documents and a cut one."""
    sentences = read_conll(data_dir / CONLL_DEV)
    return TaggedSentences(sentences.words[:300], sentences.tags[:300], sentences.documents[:300])


@pytest.fixture(scope="module")
def preprocessor(minilm_dir):
    return load_preprocessor(minilm_dir, seq_length=64)


def test_every_word_is_scored_once_with_its_own_tag(conll_documents, preprocessor):
    tag_names = tag_names_of(conll_documents)
    tag_ids = encode_tags(conll_documents, tag_names)
    windows = tagging_windows(conll_documents, preprocessor, tag_ids)
    scored = collections.Counter(word for words in windows.scored_words for word in words)
    all_words = {(s, w) for s, words in enumerate(conll_documents.words) for w in range(len(words))}
    assert set(scored) == all_words and set(scored.values()) == {1}
    # Fewer windows than sentences: a window scores several short sentences.
    assert len(windows) < 0.6 * len(conll_documents)
    for word_ids, labels, words in zip(
        windows.word_ids, windows.labels, windows.scored_words, strict=True
    ):
        assert len(word_ids) <= 64 and word_ids[0] == preprocessor.packer.cls_id
        labelled = [label for label in labels if label != IGNORED_LABEL]
        assert labelled == [tag_ids[sentence][word] for sentence, word in words]
    # Tags read back from the windows are the data's own.
    predicted = [
        np.array([label for label in labels if label != IGNORED_LABEL]) for labels in windows.labels
    ]
    lengths = [len(words) for words in conll_documents.words]
    assert windows_tags(windows, predicted, lengths, tag_names) == [
        [tag_names[i] for i in ids] for ids in tag_ids
    ]


def test_context_comes_from_the_sentences_own_document():
    # Two documents of three one-piece sentences; ids tell the document apart (1x, 2x).
    pieces = [[[10]], [[11]], [[12]], [[20]], [[21]], [[22]]]
    windows = document_windows(
        pieces, documents=[0, 0, 0, 1, 1, 1], seq_length=6, cls_id=1, sep_id=2, context_pieces=1
    )
    for word_ids in windows.word_ids:
        assert len({piece // 10 for piece in word_ids[1:-1]}) == 1
    # Each window scores at most two pieces, with a piece of context on each side it has.
    assert windows.word_ids[0] == [1, 10, 11, 12, 2]
    assert windows.scored_words[:2] == [[(0, 0), (1, 0)], [(2, 0)]]
    assert windows.word_ids[1] == [1, 10, 11, 12, 2]


def test_a_sentence_longer_than_a_window_is_scored_over_several():
    long_sentence = [[100 + word] for word in range(10)]
    windows = document_windows([long_sentence], documents=None, seq_length=6, cls_id=1, sep_id=2)
    assert [len(words) for words in windows.scored_words] == [4, 4, 2]
    assert windows.word_ids[0] == [1, 100, 101, 102, 103, 2]
    # The last window fills itself with what comes before the run it scores.
    assert windows.word_ids[2] == [1, 106, 107, 108, 109, 2]
    assert windows.labels[2] == [IGNORED_LABEL] * 3 + [0, 0, IGNORED_LABEL]


def test_unscored_sentences_are_context_only():
    pieces = [[[10]], [[11]], [[12]]]
    windows = document_windows(
        pieces, documents=[0, 0, 0], seq_length=8, cls_id=1, sep_id=2, scored=[False, True, False]
    )
    assert windows.word_ids == [[1, 10, 11, 12, 2]]
    assert windows.scored_words == [[(1, 0)]]
