"""Length buckets: a batch of packed text is computed on the length it needs, not on
`seq_length`, by the serving signatures and by the task models' `predict_entities`, `answer` and
`fill_mask` alike.

The preprocessor packs every batch to `[batch, seq_length]`. Attention masks the padding, so the
model's outputs at real tokens do not depend on how much padding follows (up to float rounding,
~1e-6): a batch can be cut to its longest sequence. Rounding that length up to a bucket (8, 16, 24,
... 64, 80, 96, ... `seq_length`: four per doubling) keeps the number of shapes small, so XLA
compiles a few programs and warm-up requests can cover every one of them before traffic arrives,
while a bucket pads a text by under 8 ids or a quarter of its length (powers of two padded an
18-token request to 32: 20.9 ms against 14.3 on its own length, AVX2 EPYC; buckets of 8 took 9-17%
off the dev sentences' batch-1 p50 in three runs, BENCHMARKS.md). `serving_ids` requests are cut
the same way, whatever width a client pads them to (ONNX Runtime's users pad to 128), and outputs
with one value per position are padded back to the request's width.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import tensorflow as tf

from keras_bert.layers.padding_skip import real_columns

SMALLEST_BUCKET = 8
BUCKETS_PER_DOUBLING = 4


def length_buckets(seq_length: int, smallest: int = SMALLEST_BUCKET) -> tuple[int, ...]:
    """Multiples of `smallest` up to `4 * smallest`, then `BUCKETS_PER_DOUBLING` evenly spaced
    lengths per doubling, below `seq_length`; then `seq_length`.

    Example:
    >>> length_buckets(128)
    (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128)
    >>> length_buckets(512)[-9:]
    (128, 160, 192, 224, 256, 320, 384, 448, 512)
    >>> length_buckets(100), length_buckets(8)
    ((8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 100), (8,))
    """
    buckets = []
    length = smallest
    while length < seq_length:
        buckets.append(length)
        power_of_two = 1 << (length.bit_length() - 1)  # the largest one <= length
        length += max(smallest, power_of_two // BUCKETS_PER_DOUBLING)
    return (*buckets, seq_length)


def bucket_length(input_mask: tf.Tensor, buckets: Sequence[int]) -> tf.Tensor:
    """The smallest bucket that holds every real token of `input_mask` `[batch, seq_length]`:
    the columns up to the last that is real in any row (the longest row when padding trails,
    as packing makes it; padding in front or between tokens is kept, never cut).

    An empty batch gets the smallest bucket. `buckets` are ascending; the last is the packed
    length, so every packed row fits in it. Ids wider than that (a `serving_ids` client's) whose
    real tokens run past the last bucket keep every real column: nothing real is cut.

    Example:
    >>> import tensorflow as tf
    >>> int(bucket_length(tf.constant([[1] * 20 + [0] * 44]), (16, 32, 64)))
    32
    >>> int(bucket_length(tf.constant([[0] * 40 + [1] * 3 + [0] * 21]), (16, 32, 64)))
    64
    >>> int(bucket_length(tf.constant([[1] * 70 + [0] * 10]), (16, 32, 64)))
    70
    """
    longest = real_columns(input_mask)
    bucket_tensor = tf.constant(buckets, input_mask.dtype)
    index = tf.searchsorted(bucket_tensor, longest[tf.newaxis], side="left")[0]
    return tf.maximum(bucket_tensor[tf.minimum(index, len(buckets) - 1)], longest)


def trim_to_bucket(inputs: Mapping[str, tf.Tensor], buckets: Sequence[int]) -> dict[str, tf.Tensor]:
    """Packed inputs (`input_mask` among them) cut to `bucket_length` columns.

    Example:
    >>> import tensorflow as tf
    >>> mask = tf.constant([[1] * 20 + [0] * 44, [1] * 5 + [0] * 59])
    >>> trimmed = trim_to_bucket({"input_mask": mask, "input_word_ids": mask}, (16, 32, 64))
    >>> trimmed["input_word_ids"].shape.as_list()
    [2, 32]
    """
    length = bucket_length(inputs["input_mask"], buckets)
    return {name: tensor[:, :length] for name, tensor in inputs.items()}


def pad_columns(tensor: tf.Tensor, width: tf.Tensor | int, value: float = 0.0) -> tf.Tensor:
    """`tensor` `[batch, columns, ...]` padded with `value` to `width` columns (undoes
    `trim_to_bucket` on an output that has one value per input position).

    Example:
    >>> import tensorflow as tf
    >>> pad_columns(tf.constant([[1.0, 2.0]]), 4, -1.0).numpy().tolist()
    [[1.0, 2.0, -1.0, -1.0]]
    """
    missing = tf.maximum(width - tf.shape(tensor)[1], 0)
    paddings = tf.concat(
        [[[0, 0], [0, missing]], tf.zeros([tf.rank(tensor) - 2, 2], tf.int32)], axis=0
    )
    return tf.pad(tensor, paddings, constant_values=tf.cast(value, tensor.dtype))


def split_by_length(
    input_mask: tf.Tensor, buckets: Sequence[int], call_cost_tokens: int
) -> tuple[tf.Tensor, tf.Tensor]:
    """The rows of a packed batch in order of length and how many of the shortest to run as a
    group of their own: the split where `rows × bucket` of both groups plus the second call
    (`call_cost_tokens`) costs least, or all of them (one group) where no split pays. A
    batch of 32 movie snippets holds about twice the padding of its real tokens; two groups take
    29% of the padded work away, a third would take 8% more (the dev sentences, MiniLM-L6's
    buckets to 64), so two it is: one branch, not a loop, in the graph.

    Returns:
        (order, first_rows): row indices ascending by length (stable), and the number of rows
        of the first group (the batch's rows: one group; 0 for a batch of none).

    Example:
    >>> import tensorflow as tf
    >>> mask = tf.sequence_mask([60, 5, 58, 6, 7], 64, tf.int32)
    >>> order, first_rows = split_by_length(mask, (8, 16, 32, 64), call_cost_tokens=32)
    >>> order.numpy().tolist(), int(first_rows)
    ([1, 3, 4, 2, 0], 3)
    >>> int(split_by_length(mask, (8, 16, 32, 64), call_cost_tokens=1000)[1])
    5
    >>> int(split_by_length(mask[:0], (8, 16, 32, 64), call_cost_tokens=32)[1])
    0
    """
    lengths = tf.reduce_sum(tf.cast(input_mask != 0, tf.int32), axis=1)
    order = tf.argsort(lengths, stable=True)
    bucket_tensor = tf.constant(buckets, tf.int32)
    indices = tf.searchsorted(bucket_tensor, tf.gather(lengths, order), side="left")
    widths = tf.gather(bucket_tensor, tf.minimum(indices, len(buckets) - 1))
    rows = tf.shape(lengths)[0]
    first_rows = tf.range(1, rows + 1)
    longest = widths[-1:]
    cost = (
        first_rows * tf.gather(widths, first_rows - 1)
        + (rows - first_rows) * longest
        + tf.where(first_rows < rows, call_cost_tokens, 0)
    )
    cheapest = tf.cond(rows > 0, lambda: tf.cast(tf.argmin(cost), tf.int32) + 1, lambda: rows)
    return order, cheapest
