"""Batches with little padding: texts of similar length batched together, each batch cut to its
longest sequence. Fine-tuning's input pipelines share them."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

# Lengths within a bucket differ by less than this many tokens.
BUCKET_WIDTH = 8


def trim_padding(features: dict[str, tf.Tensor], *rest):
    """Cuts a batch of packed inputs to its longest real sequence (less work on short texts).

    Example:
    >>> batch = {"input_word_ids": tf.constant([[2, 7, 3, 0], [2, 3, 0, 0]]),
    ...          "input_mask": tf.constant([[1, 1, 1, 0], [1, 1, 0, 0]])}
    >>> trim_padding(batch)[0]["input_word_ids"].shape
    TensorShape([2, 3])
    """
    longest = tf.reduce_max(tf.reduce_sum(features["input_mask"], axis=1))
    return ({name: tensor[:, :longest] for name, tensor in features.items()}, *rest)


def bucket_boundaries(seq_length: int) -> list[int]:
    """The lengths where one bucket ends and the next begins."""
    return list(range(BUCKET_WIDTH, seq_length, BUCKET_WIDTH))


def batch_count_by_length(
    lengths: np.ndarray, batch_size: int, seq_length: int, drop_remainder: bool = False
) -> int:
    """How many batches `batch_by_length` makes of elements of these lengths in one pass: each
    bucket's batches are full but its last (dropped with `drop_remainder`). More than
    `ceil(len / batch_size)`, so an epoch of bucketed batches is longer than one of random
    batches.

    Example:
    >>> batch_count_by_length(np.array([3, 4, 5, 12, 13, 30]), batch_size=2, seq_length=32)
    4
    >>> batch_count_by_length(np.array([3, 4, 5, 12, 13, 30]), 2, 32, drop_remainder=True)
    2
    """
    buckets = np.searchsorted(bucket_boundaries(seq_length), lengths, side="right")
    counts = np.bincount(buckets)
    return int(np.sum(counts // batch_size if drop_remainder else -(-counts // batch_size)))


def batch_by_length(
    dataset: tf.data.Dataset,
    length_of,
    lengths: np.ndarray,
    batch_size: int,
    seq_length: int,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """Batches elements whose lengths fall in the same bucket (`BUCKET_WIDTH` tokens wide up to
    `seq_length`), in the order their buckets fill: shuffled elements give shuffled batches.
    The dataset's `cardinality` is one pass's batches (`batch_count_by_length`), which is what
    `fit` counts as an epoch.

    Args:
        dataset: the elements, shuffled if the batches should be.
        length_of: a function of an element's components that returns its length in tokens.
        lengths: every element's length (in any order), to count the batches.
        batch_size: elements per batch.
        seq_length: the longest length (the last bucket holds it and anything longer).
        drop_remainder: drop each bucket's last, smaller batch (fixed shapes for TPUs).

    Example:
    >>> lengths = np.array([3, 4, 5, 12, 13, 30], np.int32)
    >>> batches = batch_by_length(tf.data.Dataset.from_tensor_slices(lengths), lambda n: n,
    ...                           lengths, batch_size=2, seq_length=32)
    >>> int(batches.cardinality()), [batch.tolist() for batch in batches.as_numpy_iterator()]
    (4, [[3, 4], [12, 13], [5], [30]])
    """
    boundaries = bucket_boundaries(seq_length)
    batches = dataset.bucket_by_sequence_length(
        length_of,
        bucket_boundaries=boundaries,
        bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
        drop_remainder=drop_remainder,
        # Batched as they are (ragged words stay ragged); fixed-shape elements need no padding.
        no_padding=True,
    )
    count = batch_count_by_length(lengths, batch_size, seq_length, drop_remainder)
    return batches.apply(tf.data.experimental.assert_cardinality(count))
