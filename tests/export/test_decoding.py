"""The in-graph decoders of the serving signatures against plain Python references."""

import itertools

import numpy as np
import tensorflow as tf

from keras_bert.decoding.answers import best_answer_spans
from keras_bert.decoding.bio_tags import bio_spans
from keras_bert.decoding.entities import BioTagTable, bio_entities

TAGS = ["O", "B-a", "I-a", "B-b", "I-b"]


def test_bio_entities_read_tags_as_the_conll_reference_does():
    rng = np.random.default_rng(0)
    rows = [rng.integers(0, len(TAGS), rng.integers(0, 9)) for _ in range(200)]
    word_tags = np.concatenate(rows).astype("int32")
    word_rows = np.repeat(np.arange(len(rows)), [len(row) for row in rows]).astype("int32")
    scores = rng.uniform(size=len(word_tags)).astype("float32")
    table = BioTagTable(TAGS)
    found = {name: value.numpy() for name, value in bio_entities(
        tf.constant(word_tags), tf.constant(word_rows), tf.constant(scores), table
    ).items()}  # fmt: skip
    type_names = [name.decode() for name in table.type_names.numpy()]
    starts = np.concatenate([[0], np.cumsum([len(row) for row in rows])])
    expected = [
        (index, span.label, starts[index] + span.start, starts[index] + span.end - 1)
        for index, row in enumerate(rows)
        for span in bio_spans([TAGS[tag] for tag in row])
    ]
    got = [
        (row, type_names[kind], first, last)
        for row, kind, first, last in zip(
            found["rows"], found["types"], found["first_words"], found["last_words"], strict=True
        )
    ]
    assert got == expected and len(expected) > 100
    for (_, _, first, last), score in zip(expected, found["scores"], strict=True):
        assert abs(score - scores[first : last + 1].mean()) < 1e-6


def test_best_answer_span_is_the_brute_force_best():
    rng = np.random.default_rng(1)
    starts, ends = rng.normal(size=(2, 50, 12)).astype("float32")
    is_context = np.arange(12)[None] >= rng.integers(2, 8, (50, 1))
    first, last, score = best_answer_spans(
        tf.constant(starts), tf.constant(ends), tf.constant(is_context), max_answer_length=3
    )
    for row in range(50):
        positions = np.flatnonzero(is_context[row])
        p_start = np.exp(starts[row, positions]) / np.exp(starts[row, positions]).sum()
        p_end = np.exp(ends[row, positions]) / np.exp(ends[row, positions]).sum()
        best = max(
            (p_start[i] * p_end[j], positions[i], positions[j])
            for i, j in itertools.product(range(len(positions)), repeat=2)
            if 0 <= j - i < 3
        )
        assert (int(first[row]), int(last[row])) == best[1:]
        assert abs(float(score[row]) - best[0]) < 1e-5
