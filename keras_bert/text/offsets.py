"""Byte offsets of tokens laid end to end, rounded to whole characters, and turned into the
text's spans and code point offsets, as TensorFlow ops.

The tokenizers that cut a text into words and each word into pieces whose byte lengths they
know (byte-level BPE, SentencePiece) get every piece's span from those lengths alone. Answers
(entities, answer spans) give their spans in code points, into the text after invalid UTF-8
byte sequences are replaced by U+FFFD (`sanitize_utf8`).
"""

import tensorflow as tf

from keras_bert.text.ragged_rows import row_ids


def lay_end_to_end(
    starts: tf.Tensor, lengths: tf.RaggedTensor
) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
    """The spans of items that follow each other without gaps from each row's start.

    Args:
        starts: int64 `[rows]`, where each row's first item starts.
        lengths: int64 ragged `[rows, (items)]`, each item's length.

    Returns:
        `(item_starts, item_ends)`, int64 ragged like `lengths`.

    Example:
    >>> import tensorflow as tf
    >>> lengths = tf.ragged.constant([[3, 1], [2]], dtype=tf.int64)
    >>> starts, ends = lay_end_to_end(tf.constant([0, 10], tf.int64), lengths)
    >>> starts.to_list(), ends.to_list()
    ([[0, 3], [10]], [[3, 4], [12]])
    """
    lengths = tf.cast(lengths, tf.int64)
    ends = tf.cumsum(lengths.flat_values)
    before_row = tf.gather(tf.concat([[0], ends], axis=0), lengths.row_starts())
    ends += tf.gather(tf.cast(starts, tf.int64) - before_row, row_ids(lengths.row_splits))
    return lengths.with_flat_values(ends - lengths.flat_values), lengths.with_flat_values(ends)


def round_to_characters(
    texts: tf.Tensor, starts: tf.RaggedTensor, ends: tf.RaggedTensor
) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
    """Byte spans widened to whole UTF-8 characters: starts down, ends up to a boundary.

    A byte-level token can hold part of a character (an emoji is four byte tokens); each such
    token gets the span of the whole character, as Hugging Face `tokenizers` reports it.

    Args:
        texts: valid UTF-8 strings `[batch]`.
        starts: int64 ragged `[batch, (tokens)]` byte offsets into `texts`.
        ends: the same shape, `ends >= starts`.

    Returns:
        `(starts, ends)` on character boundaries, ragged like the inputs.
    """
    _, char_starts = tf.strings.unicode_decode_with_offsets(texts, "UTF-8")
    text_lengths = tf.cast(tf.strings.length(texts), tf.int64)[:, tf.newaxis]
    boundaries = tf.concat([char_starts, tf.RaggedTensor.from_tensor(text_lengths)], axis=1)
    boundaries = boundaries.to_tensor(tf.int64.max)
    dense_starts, dense_ends = starts.to_tensor(0), ends.to_tensor(0)
    below = tf.searchsorted(boundaries, dense_starts, side="right", out_type=tf.int64) - 1
    above = tf.searchsorted(boundaries, dense_ends, side="left", out_type=tf.int64)
    row_lengths = starts.row_lengths()
    return tuple(
        tf.RaggedTensor.from_tensor(tf.gather(boundaries, index, batch_dims=1), row_lengths)
        for index in (below, above)
    )


def sanitize_utf8(texts: tf.Tensor) -> tf.Tensor:
    """`texts` with invalid UTF-8 replaced by U+FFFD, the text that offsets refer to.

    Example:
    >>> sanitize_utf8(tf.constant([b"caf\\xc3"])).numpy()[0].decode()
    'caf\ufffd'
    """
    return tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")


def char_offsets(texts: tf.Tensor, byte_offsets: tf.Tensor) -> tf.Tensor:
    """Code point offsets (int32) of byte offsets into valid UTF-8 `texts` (same shape).

    Example:
    >>> char_offsets(tf.constant(["Zürich is"]), tf.constant([8])).numpy().tolist()
    [7]
    """
    prefixes = tf.strings.substr(texts, tf.zeros_like(byte_offsets), byte_offsets, unit="BYTE")
    return tf.strings.length(prefixes, unit="UTF8_CHAR")


def byte_substrings(texts: tf.Tensor, starts: tf.Tensor, ends: tf.Tensor) -> tf.Tensor:
    """The bytes `[start, end)` of each text."""
    return tf.strings.substr(texts, starts, ends - starts, unit="BYTE")
