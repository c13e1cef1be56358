"""`SpecialTokens`: special tokens written in raw text ("a <mask>") found with TensorFlow ops."""

from collections.abc import Mapping

import tensorflow as tf

# Never in valid UTF-8, so it can mark split points in sanitised text.
MARKER = b"\xff"


class SpecialTokens(tf.Module):
    """The special tokens of a vocabulary, matched as written (case-sensitive) in text.

    Args:
        ids: each special token's id.

    Example:
    >>> import tensorflow as tf
    >>> special = SpecialTokens({"<mask>": 4})
    >>> parts = special.split(tf.constant(["a <mask>."]))
    >>> parts.to_list(), special.ids(parts.flat_values).numpy().tolist()
    ([[b'a ', b'<mask>', b'.']], [-1, 4, -1])
    """

    def __init__(self, ids: Mapping[str, int]):
        super().__init__(name="special_tokens")
        self.tokens = list(ids)
        self._pattern = "|".join(
            "".join(f"\\x{{{ord(char):X}}}" for char in token) for token in self.tokens
        )
        self._table = None  # a table cannot be empty
        if self.tokens:
            self._table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(self.tokens, tf.string),
                    tf.constant([ids[token] for token in self.tokens], tf.int64),
                ),
                default_value=-1,
            )

    def split(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Sanitised (valid UTF-8) texts `[batch]` → parts `[batch, (parts)]`, each special
        token a part of its own, the text between them the others (possibly empty)."""
        if not self.tokens:
            return tf.RaggedTensor.from_tensor(texts[:, tf.newaxis])
        marked = tf.strings.regex_replace(texts, self._pattern, MARKER + b"\\0" + MARKER)
        return tf.strings.split(marked, MARKER)

    def ids(self, parts: tf.Tensor) -> tf.Tensor:
        """The int64 id of each part that is a special token, -1 for the others."""
        if self._table is None:
            return tf.fill(tf.shape(parts), tf.constant(-1, tf.int64))
        return self._table.lookup(parts)

    def with_special_ids(self, parts: tf.Tensor, pieces: tf.RaggedTensor) -> tf.RaggedTensor:
        """`pieces` `[parts, (pieces)]` of flat `parts`, with each special token's pieces
        replaced by its id alone."""
        special_ids = tf.cast(self.ids(parts), pieces.dtype)
        specials = tf.RaggedTensor.from_tensor(
            special_ids[:, tf.newaxis], row_splits_dtype=pieces.row_splits.dtype
        )
        rows = tf.range(tf.size(parts, out_type=tf.int64))
        rows = tf.where(special_ids >= 0, rows + tf.size(parts, out_type=tf.int64), rows)
        return tf.gather(tf.concat([pieces, specials], axis=0), rows)
