"""Work skipped on padding where shapes may vary (not under XLA): encoder inputs cut after a
batch's last real position, and the rows of a batch's real tokens."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import keras
import tensorflow as tf
from tensorflow.python.ops import control_flow_util


def in_xla_context() -> bool:
    """Whether the graph being traced compiles with XLA (`jit_compile=True`, `TPUStrategy`),
    where every shape must be known when the step compiles."""
    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


_SCOPE = threading.local()


@contextlib.contextmanager
def feed_forward_on_real_tokens() -> Iterator[None]:
    """Within it, the training calls of `TransformerEncoderBlock` that TensorFlow traces run
    their feed-forward network on the real tokens alone (not under XLA): for a model whose loss
    reads no padded position's output (a classifier's `train_step` enters it), the same loss
    and gradients for the real tokens' share of the feed-forward's work. Thread-local: each
    `MirroredStrategy` replica traces its step in a thread of its own.

    Example:
    >>> with feed_forward_on_real_tokens():
    ...     inside = feed_forward_skips_padding()
    >>> inside, feed_forward_skips_padding()
    (True, False)
    """
    previous = getattr(_SCOPE, "on", False)
    _SCOPE.on = True
    try:
        yield
    finally:
        _SCOPE.on = previous


def feed_forward_skips_padding() -> bool:
    """Whether a training call traced now skips padded tokens in its feed-forward network."""
    return getattr(_SCOPE, "on", False) and not in_xla_context()


def real_token_rows(padding_mask: tf.Tensor) -> tf.Tensor:
    """The rows of a `[batch * sequence, ...]` reshape of a batch that hold real tokens
    (`padding_mask` 1), int32: what a per-token computation gathers to skip the padding.

    Example:
    >>> real_token_rows(tf.constant([[1, 1, 0], [1, 0, 0]])).numpy().tolist()
    [0, 1, 3]
    """
    return tf.cast(tf.where(tf.reshape(padding_mask, [-1]) != 0)[:, 0], tf.int32)


def real_columns(input_mask: tf.Tensor) -> tf.Tensor:
    """How many columns of `input_mask` `[batch, sequence]` hold every real token: those up to
    the last that is real in any row (padding in front or between tokens is kept); 0 when no
    row has one.

    Example:
    >>> int(real_columns(tf.constant([[1, 0, 1, 0, 0], [1, 1, 0, 0, 0]])))
    3
    """
    columns = tf.range(1, tf.shape(input_mask)[1] + 1, dtype=input_mask.dtype)
    ends = tf.where(input_mask != 0, columns[tf.newaxis], tf.zeros_like(input_mask))
    return tf.maximum(tf.reduce_max(ends), 0)  # no rows: 0


@keras.saving.register_keras_serializable(package="keras_bert")
class TrailingPaddingTrim(keras.layers.Layer):
    """Cuts a dict of `[batch, sequence]` encoder inputs after the last position where any
    row's `input_mask` is 1: the columns that are padding in every row go.

    A head that reads one vector a row (a classifier on the first token, or on the masked
    mean) gets the same values from the cut batch: padding is a key no token attends to (its
    attention weight is exactly 0), so it changes no real token's output and no gradient. A
    batch padded to a fixed length (TFRecords written at `seq_length` 128, as TensorFlow
    Model Garden's fine-tuning data is) then costs what its longest row costs. Under XLA
    (`jit_compile=True`, `TPUStrategy`), whose steps compile for one shape, nothing is cut.

    Example:
    >>> import numpy as np
    >>> inputs = {"input_word_ids": np.array([[2, 7, 3, 0], [2, 3, 0, 0]]),
    ...           "input_mask": np.array([[1, 1, 1, 0], [1, 1, 0, 0]])}
    >>> trimmed = TrailingPaddingTrim()(inputs)
    >>> trimmed["input_word_ids"].numpy().tolist()
    [[2, 7, 3], [2, 3, 0]]
    """

    def call(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        if in_xla_context():
            return dict(inputs)
        # At least one column, so that a first token stays.
        length = tf.maximum(real_columns(tf.convert_to_tensor(inputs["input_mask"])), 1)
        return {name: tensor[:, :length] for name, tensor in inputs.items()}

    def compute_output_spec(self, inputs: dict) -> dict:
        return {
            name: keras.KerasTensor((tensor.shape[0], None), dtype=tensor.dtype)
            for name, tensor in inputs.items()
        }
