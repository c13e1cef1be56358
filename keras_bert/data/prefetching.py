"""The end of fine-tuning's input pipelines: batches prefetched, without tf.data's autotuning
thread, whose wait ends every `fit`, `evaluate` and `predict` late in TensorFlow 2.21."""

from __future__ import annotations

import tensorflow as tf


def prefetched(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset`, prefetched, with tf.data's autotuning model off and one thread of its own.

    With autotuning on, destroying an iterator (Keras does at the end of every `fit`,
    `evaluate` and `predict`) waits for the autotuning thread's next optimization, which comes
    at doubling intervals of up to 60 s: fine-tuning runs of 35 s to 36 min ended 1 to 56 s
    after their last step, idle (TensorFlow 2.21, AMD EPYC, 2 cores). Fine-tuning's pipelines
    need no tuning (tokenizing a batch takes milliseconds, a step hundreds); on one thread of
    their own they keep the tuned speed, where `AUTOTUNE`'s default of a call per core took
    8% longer a step (1,000 CoNLL-2003 sentences, 3 epochs: 15.2 s an epoch against 15.0 s
    tuned and 16.2 s per core; the run 59 s against 93 s). The prefetch buffer still grows as
    the consumer needs.

    Example:
    >>> batches = prefetched(tf.data.Dataset.range(4).batch(2))
    >>> [batch.tolist() for batch in batches.as_numpy_iterator()]
    [[0, 1], [2, 3]]
    >>> batches.options().autotune.enabled, batches.options().threading.private_threadpool_size
    (False, 1)
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    options.threading.private_threadpool_size = 1
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)
