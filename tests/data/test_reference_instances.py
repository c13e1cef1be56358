"""The tests' reference of the instance rules (`reference_instances.py`) follows Google's
rules; `test_graph_instances.py` holds the library's builder against it."""

import numpy as np
import pytest

from keras_bert.errors import ConfigError, DataError
from tests.data.reference_instances import create_instances


def _synthetic_documents(num_documents=20, num_sentences=30):
    """Token id = 10000 * document + 10 * sentence + position: every id says where it is from."""
    return [
        [
            np.array([10000 * doc + 10 * sentence + k for k in range(3)], np.int32)
            for sentence in range(num_sentences)
        ]
        for doc in range(1, num_documents + 1)
    ]


def test_pairs_follow_the_original_rules():
    seq_length = 32
    instances = create_instances(_synthetic_documents(), seq_length, seed=3)
    assert instances
    for instance in instances:
        a, b = instance.tokens_a, instance.tokens_b
        assert len(a) >= 1 and len(b) >= 1
        assert len(a) + len(b) <= seq_length - 3
        assert len(set(a // 10000)) == 1  # A is from one document
        if instance.next_sentence_label == 0:
            # The actual continuation: same document, every B sentence after every A sentence.
            assert set(b // 10000) == set(a // 10000)
            assert (a % 10000 // 10).max() < (b % 10000 // 10).min()
        else:
            assert set(b // 10000) != set(a // 10000)


def test_instances_are_deterministic_under_a_seed_and_change_with_the_epoch():
    documents = _synthetic_documents()

    def as_lists(instances):
        return [
            (i.tokens_a.tolist(), i.tokens_b.tolist(), i.next_sentence_label) for i in instances
        ]

    first = as_lists(create_instances(documents, 32, seed=1, epoch=0))
    assert first == as_lists(create_instances(documents, 32, seed=1, epoch=0))
    assert first != as_lists(create_instances(documents, 32, seed=1, epoch=1))
    assert first != as_lists(create_instances(documents, 32, seed=2, epoch=0))


def test_short_sequences_appear_at_short_seq_prob():
    documents = _synthetic_documents(num_documents=400, num_sentences=60)

    def short_share(short_seq_prob):
        instances = create_instances(documents, 64, seed=0, short_seq_prob=short_seq_prob)
        return np.mean([len(i.tokens_a) + len(i.tokens_b) < 58 for i in instances])

    # Without short targets only the last chunk of a document is short (about 1 in 4 here);
    # documents with a short target add many short sequences.
    assert 0.2 < short_share(0.0) < 0.3
    assert short_share(0.0) + 0.1 < short_share(0.1) < short_share(0.5) - 0.2


def test_without_pairs_documents_are_packed_one_by_one_or_across_at_a_separator():
    documents = _synthetic_documents(num_sentences=7)  # 21 tokens: documents end mid-sequence
    separator = 3
    instances = create_instances(
        documents, 32, seed=0, next_sentence_prediction=False, document_separator=separator
    )
    crossings = 0
    for instance in instances:
        tokens = instance.tokens_a
        assert len(tokens) <= 30 and len(instance.tokens_b) == 0
        # Each part between separators is whole sentences of one document, in order.
        parts = np.split(tokens, np.flatnonzero(tokens == separator))
        parts = [part[part != separator] for part in parts if len(part[part != separator])]
        crossings += len(parts) - 1
        for part in parts:
            assert len(set(part // 10000)) == 1 and np.all(np.diff(part) > 0)
        for before, after in zip(parts, parts[1:], strict=False):
            assert before[0] // 10000 != after[0] // 10000  # a new document after a separator
    assert crossings >= len(documents) // 2  # documents share sequences
    # Every token of the corpus is used once.
    used = np.concatenate([instance.tokens_a for instance in instances])
    assert sorted(used[used != separator]) == sorted(np.concatenate(sum(documents, [])))

    instances = create_instances(_synthetic_documents(), 32, seed=0, next_sentence_prediction=False)
    for instance in instances:
        assert instance.next_sentence_label == 0 and len(instance.tokens_b) == 0
        assert 1 <= len(instance.tokens_a) <= 30 and len(instance.tokens_a) % 3 == 0
        assert np.all(np.diff(instance.tokens_a) > 0)  # in document order
        assert len(set(instance.tokens_a // 10000)) == 1


def test_next_sentence_labels_are_balanced_on_the_real_corpus(wikipedia_documents):
    instances = create_instances(wikipedia_documents, 128, seed=0)
    labels = np.array([instance.next_sentence_label for instance in instances])
    assert len(labels) > 4000
    assert abs(labels.mean() - 0.5) <= 0.02


def test_sentence_order_pairs_are_consecutive_and_swapped_half_the_time(wikipedia_documents):
    instances = create_instances(
        _synthetic_documents(), 32, seed=4, next_sentence_prediction=False,
        sentence_order_prediction=True,
    )  # fmt: skip
    for instance in instances:
        a, b = instance.tokens_a, instance.tokens_b
        assert len(set(np.concatenate([a, b]) // 10000)) == 1  # one document
        first, second = (b, a) if instance.next_sentence_label else (a, b)
        assert (first % 10000 // 10).max() < (second % 10000 // 10).min()
    real = create_instances(
        wikipedia_documents, 128, seed=0, next_sentence_prediction=False,
        sentence_order_prediction=True,
    )  # fmt: skip
    labels = np.array([instance.next_sentence_label for instance in real])
    assert len(labels) > 4000 and abs(labels.mean() - 0.5) <= 0.01
    with pytest.raises(ConfigError, match="not both"):
        create_instances(_synthetic_documents(), 32, seed=0, sentence_order_prediction=True)
    with pytest.raises(DataError, match="Sentence-order prediction needs a document"):
        create_instances(
            [[np.arange(3)]], 32, 0, next_sentence_prediction=False, sentence_order_prediction=True
        )
