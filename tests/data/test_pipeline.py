import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import (
    FEATURE_NAMES,
    MaskingConfig,
    PretrainingDataConfig,
    pretraining_dataset,
    read_pretraining_tfrecords,
    write_pretraining_tfrecords,
)
from keras_bert.errors import DataError

CONFIG = PretrainingDataConfig(seq_length=64, masking=MaskingConfig(max_predictions_per_seq=10))


def _documents(wikipedia_documents):
    return wikipedia_documents[:20]


def test_fixed_shapes_and_dtypes(wikipedia_documents, vocabulary):
    dataset = pretraining_dataset(_documents(wikipedia_documents), vocabulary, 8, CONFIG, seed=0)
    assert set(dataset.element_spec) == set(FEATURE_NAMES)
    shapes = {name: spec.shape.as_list() for name, spec in dataset.element_spec.items()}
    assert shapes["input_word_ids"] == [8, 64] and shapes["masked_lm_positions"] == [8, 10]
    assert shapes["next_sentence_labels"] == [8]
    batch = next(iter(dataset))
    assert batch["masked_lm_weights"].dtype == tf.float32
    assert all(
        batch[name].dtype == tf.int32 for name in FEATURE_NAMES if name != "masked_lm_weights"
    )
    word_ids = batch["input_word_ids"].numpy()
    assert np.all(word_ids[:, 0] == vocabulary.index("[CLS]"))
    # [CLS] A [SEP] B [SEP]: segment 1 on B, two [SEP]s per row.
    assert np.all((word_ids == vocabulary.index("[SEP]")).sum(1) == 2)
    assert np.all(batch["input_type_ids"].numpy().max(1) == 1)


def test_deterministic_under_a_seed_and_resumable(wikipedia_documents, vocabulary):
    documents = _documents(wikipedia_documents)

    def batches(seed, start_batch=0, count=4):
        dataset = pretraining_dataset(
            documents, vocabulary, 8, CONFIG, seed=seed, start_batch=start_batch
        )
        return list(dataset.take(count).as_numpy_iterator())

    first = batches(seed=0)
    for got, want in zip(batches(seed=0), first, strict=True):
        for name in FEATURE_NAMES:
            np.testing.assert_array_equal(got[name], want[name])
    assert not np.array_equal(batches(seed=1)[0]["input_word_ids"], first[0]["input_word_ids"])
    # Skipping two batches gives exactly batches 2 and 3 of the uninterrupted stream.
    for got, want in zip(batches(seed=0, start_batch=2, count=2), first[2:], strict=True):
        for name in FEATURE_NAMES:
            np.testing.assert_array_equal(got[name], want[name])


def test_without_next_sentence_prediction(wikipedia_documents, vocabulary):
    config = PretrainingDataConfig(seq_length=64, next_sentence_prediction=False)
    batch = next(iter(pretraining_dataset(_documents(wikipedia_documents), vocabulary, 8, config)))
    assert np.all(batch["next_sentence_labels"].numpy() == 0)
    assert np.all(batch["input_type_ids"].numpy() == 0)
    assert np.all((batch["input_word_ids"].numpy() == vocabulary.index("[SEP]")).sum(1) == 1)


def test_static_tfrecords_round_trip(tmp_path, wikipedia_documents, vocabulary):
    dataset = pretraining_dataset(
        _documents(wikipedia_documents), vocabulary, 6, CONFIG, seed=0, num_epochs=2
    ).take(4)
    paths = write_pretraining_tfrecords(dataset, tmp_path, num_shards=2)
    assert [path.name for path in paths] == [
        "pretraining-00000-of-00002.tfrecord",
        "pretraining-00001-of-00002.tfrecord",
    ]
    # The files use the original feature names.
    record = next(iter(tf.data.TFRecordDataset(str(paths[0]))))
    names = set(tf.train.Example.FromString(record.numpy()).features.feature)
    assert {"input_ids", "segment_ids", "masked_lm_weights", "next_sentence_labels"} <= names

    written = list(dataset.as_numpy_iterator())
    read = list(
        read_pretraining_tfrecords(
            str(tmp_path / "*.tfrecord"), 4, 64, 10, shuffle=False, num_epochs=1
        ).as_numpy_iterator()
    )
    assert len(read) == 6  # 24 examples in batches of 4

    def rows(batches):
        return sorted(
            tuple(np.concatenate([batch[name][row].reshape(-1) for name in FEATURE_NAMES]))
            for batch in batches
            for row in range(len(batch["next_sentence_labels"]))
        )

    assert rows(read) == rows(written)


def test_next_sentence_prediction_refuses_a_corpus_without_pairs(vocabulary):
    sentence = np.array([5, 6, 7], np.int32)
    with pytest.raises(DataError, match="at least two documents with two sentences"):
        pretraining_dataset([[sentence, sentence]], vocabulary, 2, PretrainingDataConfig(16))
    with pytest.raises(DataError, match="2 document\\(s\\), 0 of them"):
        pretraining_dataset([[sentence], [sentence]], vocabulary, 2, PretrainingDataConfig(16))
    without_pairs = PretrainingDataConfig(16, next_sentence_prediction=False)
    with pytest.raises(DataError, match="no non-empty sentence"):
        pretraining_dataset([], vocabulary, 2, without_pairs)
    # Without NSP one sentence is enough.
    batch = next(iter(pretraining_dataset([[sentence]], vocabulary, 1, without_pairs, 0, 1)))
    assert batch["input_mask"].numpy().tolist() == [[1] * 5 + [0] * 11]
