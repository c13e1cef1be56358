"""Static pretraining examples in sharded TFRecord files, in the original BERT format.

Feature names in the files are those of Google's `create_pretraining_data.py` (`input_ids`,
`segment_ids`, ...), so its `run_pretraining.py` reads our files and we read its files; the
reader renames them to ours (`input_word_ids`, `input_type_ids`, ...).
"""

from __future__ import annotations

import os
from pathlib import Path

import tensorflow as tf

from keras_bert.data.streaming import pretraining_dataset

# Our feature name → the original file feature name.
_FILE_NAMES = {
    "input_word_ids": "input_ids",
    "input_mask": "input_mask",
    "input_type_ids": "segment_ids",
    "masked_lm_positions": "masked_lm_positions",
    "masked_lm_ids": "masked_lm_ids",
    "masked_lm_weights": "masked_lm_weights",
    "next_sentence_labels": "next_sentence_labels",
}


def serialize_features(example: dict) -> bytes:
    """One example's pretraining features (numpy arrays by `FEATURE_NAMES`) as a serialized
    `tf.train.Example` under Google's feature names (`segment_ids`, ...).

    Example:
    >>> import numpy as np
    >>> record = serialize_features({"input_type_ids": np.array([0, 1]),
    ...                              "masked_lm_weights": np.array([1.0])})
    >>> sorted(tf.train.Example.FromString(record).features.feature)
    ['masked_lm_weights', 'segment_ids']
    """

    def int_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values.reshape(-1)))

    def float_feature(values):
        return tf.train.Feature(float_list=tf.train.FloatList(value=values.reshape(-1)))

    features = {
        _FILE_NAMES[name]: (float_feature if value.dtype.kind == "f" else int_feature)(value)
        for name, value in example.items()
    }
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def write_pretraining_tfrecords(
    dataset: tf.data.Dataset, output_dir: str | os.PathLike, num_shards: int = 1
) -> list[Path]:
    """Writes batches of pretraining features round-robin into `num_shards` files.

    Args:
        dataset: batches of dicts with the `FEATURE_NAMES` (e.g. `pretraining_dataset`).
        output_dir: created if needed; files are `pretraining-00000-of-00004.tfrecord`, ...
        num_shards: number of files (at least the number of hosts that will read them).

    Returns:
        The paths written.
    """
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    paths = [
        output_dir / f"pretraining-{index:05d}-of-{num_shards:05d}.tfrecord"
        for index in range(num_shards)
    ]
    writers = [tf.io.TFRecordWriter(str(path)) for path in paths]
    count = 0
    try:
        for batch in dataset.as_numpy_iterator():
            for row in range(len(batch["next_sentence_labels"])):
                example = {name: values[row] for name, values in batch.items()}
                writers[count % num_shards].write(serialize_features(example))
                count += 1
    finally:
        for writer in writers:
            writer.close()
    return paths


def read_pretraining_tfrecords(
    file_pattern: str | os.PathLike,
    batch_size: int,
    seq_length: int,
    max_predictions_per_seq: int,
    shuffle: bool = True,
    seed: int = 0,
    num_epochs: int | None = None,
) -> tf.data.Dataset:
    """Batches of static pretraining features from TFRecord files written by
    `write_pretraining_tfrecords` or by the original `create_pretraining_data.py`.

    Files are the unit of sharding between workers (`AutoShardPolicy.FILE` by default), so
    write at least as many shards as workers.

    Returns:
        A dataset of dicts with `FEATURE_NAMES`, fixed shapes, `drop_remainder=True`.
    """
    files = tf.data.Dataset.list_files(str(file_pattern), shuffle=shuffle, seed=seed)
    sequence = tf.io.FixedLenFeature([seq_length], tf.int64)
    predictions = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
    spec = {
        "input_ids": sequence,
        "input_mask": sequence,
        "segment_ids": sequence,
        "masked_lm_positions": predictions,
        "masked_lm_ids": predictions,
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }

    def parse(serialized):
        parsed = tf.io.parse_example(serialized, spec)
        features = {}
        for name, file_name in _FILE_NAMES.items():
            value = parsed[file_name]
            features[name] = value if value.dtype == tf.float32 else tf.cast(value, tf.int32)
        features["next_sentence_labels"] = features["next_sentence_labels"][:, 0]
        return features

    dataset = files.interleave(
        tf.data.TFRecordDataset,
        cycle_length=tf.data.AUTOTUNE,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if shuffle:
        dataset = dataset.shuffle(10_000, seed=seed)
    dataset = dataset.repeat(num_epochs).batch(batch_size, drop_remainder=True)
    return dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def create_pretraining_tfrecords(
    documents,
    vocabulary,
    output_dir: str | os.PathLike,
    config=None,
    dupe_factor: int = 10,
    num_shards: int = 1,
    seed: int = 12345,
) -> list[Path]:
    """Static examples for TPU jobs: `dupe_factor` passes over the documents, each with its
    own pairs and masks, written to `num_shards` TFRecord files (the original
    `create_pretraining_data.py`).

    Args:
        documents: tokenized documents (see `tokenize_documents`).
        vocabulary: the WordPiece tokens.
        output_dir: where the shards go.
        config: a `PretrainingDataConfig`.
        dupe_factor: passes over the data, each masked differently.
        num_shards: files to write.
        seed: the seed of pairs and masks.
    """
    dataset = pretraining_dataset(
        documents,
        vocabulary,
        batch_size=256,
        config=config,
        seed=seed,
        num_epochs=dupe_factor,
        drop_remainder=False,
    )
    return write_pretraining_tfrecords(dataset, output_dir, num_shards)
