"""Length buckets: string signatures compute on the length the text needs, not on `seq_length`.

The preprocessor packs every batch to `[batch, seq_length]`. Attention masks the padding, so the
model's outputs at real tokens do not depend on how much padding follows (up to float rounding,
~1e-6): a batch can be cut to its longest sequence. Rounding that length up to a bucket
(16, 32, 64, ... `seq_length`) keeps the number of shapes small, so XLA compiles a few programs
and warm-up requests can cover every one of them before traffic arrives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import tensorflow as tf

SMALLEST_BUCKET = 16


def length_buckets(seq_length: int, smallest: int = SMALLEST_BUCKET) -> tuple[int, ...]:
    """The powers of two from `smallest` below `seq_length`, then `seq_length`.

    Example:
    >>> length_buckets(128)
    (16, 32, 64, 128)
    >>> length_buckets(100), length_buckets(8)
    ((16, 32, 64, 100), (8,))
    """
    buckets = []
    length = smallest
    while length < seq_length:
        buckets.append(length)
        length *= 2
    return (*buckets, seq_length)


def bucket_length(input_mask: tf.Tensor, buckets: Sequence[int]) -> tf.Tensor:
    """The smallest bucket that holds the longest row of `input_mask` `[batch, seq_length]`.

    An empty batch gets the smallest bucket. `buckets` are ascending; the last is the packed
    length, so every row fits in it.
    """
    longest = tf.maximum(tf.reduce_max(tf.reduce_sum(input_mask, axis=1)), 0)  # empty: 0
    bucket_tensor = tf.constant(buckets, input_mask.dtype)
    index = tf.searchsorted(bucket_tensor, longest[tf.newaxis], side="left")[0]
    return bucket_tensor[tf.minimum(index, len(buckets) - 1)]


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


def _cycled_words(text: str, count: int) -> str:
    words = text.split() or ["a"]
    return " ".join(words[index % len(words)] for index in range(count))


def bucket_examples(module) -> list[dict[str, list[str]]]:
    """One-row `serving_default` requests, one per bucket of a serving module.

    Each repeats the words of the first row of `module.example_inputs()` (every input of it, so
    pairs and questions grow too) until the packed length lands in the bucket: warm-up records
    of these make the server run (and XLA compile) every bucket's shape before traffic.
    """
    examples = module.example_inputs()
    counts = range(1, module.preprocessor.seq_length + 1)  # >= 1 word piece per word
    lengthened = {
        name: [_cycled_words(values[0], count) for count in counts]
        for name, values in examples.items()
    }
    packed = module.pack_texts(*(tf.constant(texts) for texts in lengthened.values()))
    lengths = tf.reduce_sum(packed["input_mask"], axis=1).numpy()
    requests, shorter = [], 0
    for bucket in module.buckets:
        fits = [row for row, length in enumerate(lengths) if shorter < length <= bucket]
        if fits:
            requests.append({name: [texts[fits[0]]] for name, texts in lengthened.items()})
        shorter = bucket
    return requests
