"""Work skipped on padding where shapes may vary (not under XLA): encoder inputs cut after a
batch's last real position, and the rows of a batch's real tokens."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator

import keras
import tensorflow as tf
from tensorflow.python.ops import control_flow_util

from keras_bert.layers.graph_shared import shared_in_graph


def in_xla_context() -> bool:
    """Whether the graph being traced compiles with XLA (`jit_compile=True`, `TPUStrategy`),
    where every shape must be known when the step compiles."""
    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


_SCOPE = threading.local()


@contextlib.contextmanager
def real_tokens_only(compiled_attention: bool = False) -> Iterator[None]:
    """Within it, the calls of `TransformerEncoderBlock` that TensorFlow traces compute the
    real tokens alone (not under XLA): their projections, norms and feed-forward run on the
    rows of a batch's real tokens, the attention's scores on the batch; padded positions come
    out as another token's values. For a model whose outputs (or loss) read no padded
    position: a classifier's steps enter it, and so does a classifier's serving function (the
    same logits, for the real tokens' share of the work). Thread-local: each
    `MirroredStrategy` replica traces its step in a thread of its own.

    With `compiled_attention`, each attention's scores, softmax and context (the part that
    sees the batch's padded layout) run XLA-compiled, one compile per shape: for a serving
    function that TensorFlow Serving runs with `--xla_cpu_compilation_enabled=true`, where
    XLA computes a batch's many small per-head products faster than oneDNN's batched matmul.

    Example:
    >>> with real_tokens_only():
    ...     inside = computes_real_tokens_only(), attention_compiles()
    >>> inside, computes_real_tokens_only()
    ((True, False), False)
    """
    previous = getattr(_SCOPE, "on", False), getattr(_SCOPE, "compiled_attention", False)
    _SCOPE.on, _SCOPE.compiled_attention = True, compiled_attention
    try:
        yield
    finally:
        _SCOPE.on, _SCOPE.compiled_attention = previous


def computes_real_tokens_only() -> bool:
    """Whether a block call traced now computes the real tokens alone (`real_tokens_only`)."""
    return getattr(_SCOPE, "on", False) and not in_xla_context()


def attention_compiles() -> bool:
    """Whether an attention on real tokens traced now compiles its scores and context
    (`real_tokens_only(compiled_attention=True)`)."""
    return computes_real_tokens_only() and getattr(_SCOPE, "compiled_attention", False)


@dataclasses.dataclass(frozen=True)
class RealTokens:
    """Where a batch's real tokens are among its `[batch * sequence]` positions: what a
    computation on the real tokens alone gathers from the batch and spreads back to it.

    Attributes:
        rows: int32 `[real tokens]`, the positions that hold real tokens (`padding_mask` 1);
            a batch with none computes its first position.
        by_position: int32 `[batch * sequence]`, the real token each position reads when
            spread back: its own, or at a padded position the real token before it.

    Example:
    >>> real = RealTokens.of(tf.constant([[1, 1, 0], [1, 0, 0]]))
    >>> real.rows.numpy().tolist(), real.by_position.numpy().tolist()
    ([0, 1, 3], [0, 1, 1, 2, 2, 2])
    >>> tokens = real.gather(tf.reshape(tf.range(6.0), (2, 3, 1)))
    >>> tokens[:, 0].numpy().tolist()
    [0.0, 1.0, 3.0]
    >>> real.spread(tokens, tf.constant([2, 3, 1]))[..., 0].numpy().tolist()
    [[0.0, 1.0, 1.0], [3.0, 3.0, 3.0]]
    """

    rows: tf.Tensor
    by_position: tf.Tensor

    @classmethod
    def of(cls, padding_mask: tf.Tensor) -> RealTokens:
        """The real tokens of `padding_mask` `[batch, sequence]` (built once per traced graph
        and mask: every block of a model reads the same)."""
        padding_mask = tf.convert_to_tensor(padding_mask)

        def build() -> RealTokens:
            real = tf.reshape(padding_mask, [-1]) != 0
            first = tf.range(tf.size(real)) == 0
            real = tf.logical_or(real, tf.logical_and(first, tf.logical_not(tf.reduce_any(real))))
            counts = tf.cumsum(tf.cast(real, tf.int32))
            return cls(tf.cast(tf.where(real)[:, 0], tf.int32), tf.maximum(counts - 1, 0))

        return shared_in_graph(("real tokens", padding_mask.ref()), build)

    def gather(self, values: tf.Tensor) -> tf.Tensor:
        """`[real tokens, features]`: the real tokens' rows of `values` `[batch, sequence,
        features]`."""
        return tf.gather(tf.reshape(values, [-1, tf.shape(values)[-1]]), self.rows)

    def spread(self, tokens: tf.Tensor, shape: tf.Tensor) -> tf.Tensor:
        """`tokens` `[real tokens, features]` back in a batch of `shape` `[batch, sequence,
        features]`, a padded position holding the real token's before it (a value no real
        token reads: padding is a key of attention weight 0)."""
        return tf.reshape(tf.gather(tokens, self.by_position), shape)


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
