"""`SpecialTokens`: special tokens written in raw text ("a <mask>") found with TensorFlow ops."""

from collections.abc import Collection, Mapping

import tensorflow as tf

from keras_bert.text.byte_level_unicode_tables import WHITESPACE_CHARS
from keras_bert.text.normalization import char_class

# Never in valid UTF-8, so it can mark split points in sanitised text.
MARKER = b"\xff"
# What an added token's `lstrip` / `rstrip` takes beside it in `tokenizers`: Rust's
# `char::is_whitespace`, Unicode's White_Space.
_WHITESPACE = f"[{char_class(WHITESPACE_CHARS)}]"


def _escaped(token: str) -> str:
    return "".join(f"\\x{{{ord(char):X}}}" for char in token)


class SpecialTokens(tf.Module):
    """The special (added) tokens of a vocabulary, matched as written (case-sensitive) in text,
    as `tokenizers` matches the added tokens of a `tokenizer.json`:

    - the longest token that starts leftmost wins ("[MASK]" before "[MASK" where both are);
    - a token with `lstrip` (`rstrip`) takes the whitespace before (after) it into its part,
      which then gives no token of its own (ModernBERT's "[MASK]": "a  [MASK]" is "a", "[MASK]");
    - `normalized` tokens are matched after the others, in the text between them (those of
      GPT-NeoX-style vocabularies: runs of spaces).

    Args:
        ids: each special token's id.
        lstrip: the tokens that take the whitespace before them.
        rstrip: the tokens that take the whitespace after them.
        normalized: the tokens matched in a second pass.

    Example:
    >>> import tensorflow as tf
    >>> special = SpecialTokens({"<mask>": 4})
    >>> parts = special.split(tf.constant(["a <mask>."]))
    >>> parts.to_list(), special.ids(parts.flat_values).numpy().tolist()
    ([[b'a ', b'<mask>', b'.']], [-1, 4, -1])
    >>> special = SpecialTokens({"[MASK]": 4}, lstrip={"[MASK]"})
    >>> parts = special.split(tf.constant(["a  [MASK]."]))
    >>> parts.to_list(), special.ids(parts.flat_values).numpy().tolist()
    ([[b'a', b'  [MASK]', b'.']], [-1, 4, -1])
    """

    def __init__(
        self,
        ids: Mapping[str, int],
        lstrip: Collection[str] = (),
        rstrip: Collection[str] = (),
        normalized: Collection[str] = (),
    ):
        super().__init__(name="special_tokens")
        self.tokens = list(ids)
        self._patterns = []  # one per pass: the tokens of each, longest first
        for in_pass in (lambda token: token not in normalized, lambda token: token in normalized):
            tokens = sorted(filter(in_pass, self.tokens), key=len, reverse=True)
            self._patterns.append(
                "|".join(
                    (f"{_WHITESPACE}*" if token in lstrip else "")
                    + _escaped(token)
                    + (f"{_WHITESPACE}*" if token in rstrip else "")
                    for token in tokens
                )
            )
        # Each token's id, looked up as written, and without the whitespace a strip took
        # (by the sides it strips: "", "left", "right", "left right").
        self._tables = {}
        for sides in ("", "left", "right", "left right"):
            keys = [
                token
                for token in self.tokens
                if ("left" not in sides or token in lstrip)
                and ("right" not in sides or token in rstrip)
            ]
            if keys:  # a table cannot be empty
                self._tables[sides] = tf.lookup.StaticHashTable(
                    tf.lookup.KeyValueTensorInitializer(
                        tf.constant(keys, tf.string),
                        tf.constant([ids[token] for token in keys], tf.int64),
                    ),
                    default_value=-1,
                )

    def split(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Sanitised (valid UTF-8) texts `[batch]` → parts `[batch, (parts)]`, each special
        token (with the whitespace it strips) a part of its own, the text between them the
        others (possibly empty). (A tokenizer with a normalizer runs it between the passes:
        `split_pass`.)"""
        parts = tf.RaggedTensor.from_tensor(texts[:, tf.newaxis])
        return self.split_pass(self.split_pass(parts, 0), 1)

    def split_pass(self, parts: tf.RaggedTensor, index: int) -> tf.RaggedTensor:
        """`parts` `[batch, (parts)]` with the tokens of pass `index` (0: those matched as
        written, 1: the `normalized` ones) cut out of every part that is no token yet."""
        pattern = self._patterns[index]
        if not pattern:
            return parts
        flat = parts.flat_values
        marked = tf.strings.regex_replace(flat, pattern, MARKER + b"\\0" + MARKER)
        split = tf.strings.split(tf.where(self.ids(flat) >= 0, flat, marked), MARKER)
        return parts.with_flat_values(split).merge_dims(1, 2)

    def ids(self, parts: tf.Tensor) -> tf.Tensor:
        """The int64 id of each part that is a special token, -1 for the others."""
        found = tf.fill(tf.shape(parts), tf.constant(-1, tf.int64))
        for sides, table in self._tables.items():
            key = parts
            if "left" in sides:
                key = tf.strings.regex_replace(key, f"^{_WHITESPACE}+", "")
            if "right" in sides:
                key = tf.strings.regex_replace(key, f"{_WHITESPACE}+$", "")
            found = tf.where(found >= 0, found, table.lookup(key))
        return found

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
