"""ALBERT's text preprocessing before SentencePiece, as TensorFlow ops.

The original (google-research/albert `tokenization.preprocess_text`, with the quote rule that
XLNet's `prepro_utils` and Hugging Face's ALBERT tokenizer add) is, in Python:

    text = " ".join(text.strip().split())
    text = text.replace("``", '"').replace("''", '"')
    text = unicodedata.normalize("NFKD", text)
    text = "".join(char for char in text if not unicodedata.combining(char))
    text = text.lower()  # uncased models (do_lower_case)

`albert_preprocess` does the same with Python's own character classes
(`python_unicode_tables`), NFKD from ICU and ICU's full lowercase mapping (the final-sigma rule
included, as `str.lower`). Characters newer than Python 3.11's Unicode 14 may decompose or lower
differently; none of them is in an ALBERT vocabulary, so both sides give `<unk>` for them.
"""

import tensorflow as tf

from keras_bert.text import python_unicode_tables
from keras_bert.text.normalization import char_class, replace_invalid_utf8, update_non_ascii
from keras_bert.text.text_ops import tf_text

_WHITESPACE_PATTERN = f"[{char_class(python_unicode_tables.WHITESPACE_CHARS)}]+"
_COMBINING_PATTERN = f"[{char_class(python_unicode_tables.COMBINING_CHARS)}]+"
# ASCII without NUL is valid UTF-8 that `tf.strings.lower` lowers bytewise; printable ASCII is also
# unchanged by NFKD and has no combining marks.
_ASCII_TEXT_PATTERN = r"[\x01-\x7f]*"
_PRINTABLE_ASCII_PATTERN = "[ -~]*"


def _unicode_lowercase(texts: tf.Tensor) -> tf.Tensor:
    """`str.lower` of each text. `tf.strings.lower` ends a string at its first NUL, so each
    NUL-free part is lowered on its own and the parts joined again, each NUL in its place
    (a separator attribute cannot hold a NUL, a tensor can)."""
    parts = tf.strings.split(texts, "\x00")
    lowered = tf.strings.lower(parts.flat_values, encoding="utf-8")
    terminated = parts.with_flat_values(tf.strings.join([lowered, tf.constant("\x00")]))
    joined = tf.strings.reduce_join(terminated, axis=-1)
    lengths = tf.strings.length(joined) - 1
    return tf.strings.substr(joined, tf.zeros_like(lengths), lengths)


def _strip_accents(texts: tf.Tensor) -> tf.Tensor:
    """NFKD, then without combining marks."""
    decomposed = tf_text().normalize_utf8(texts, "NFKD")
    return tf.strings.regex_replace(decomposed, _COMBINING_PATTERN, "")


def albert_preprocess(texts: tf.Tensor, lowercase: bool) -> tf.Tensor:
    """ALBERT's preprocessing (see the module docstring) of a string tensor of any shape.

    Invalid UTF-8 is first replaced by U+FFFD (as `bytes.decode("utf-8", errors="replace")`).

    Args:
        texts: string tensor.
        lowercase: lower-case the text (uncased models, `do_lower_case`).

    Returns:
        The preprocessed texts, same shape.
    """
    texts = replace_invalid_utf8(tf.convert_to_tensor(texts, dtype=tf.string))
    texts = tf.strings.regex_replace(texts, _WHITESPACE_PATTERN, " ")
    texts = tf.strings.regex_replace(texts, "^ | $", "")
    texts = tf.strings.regex_replace(texts, "``", '"')
    texts = tf.strings.regex_replace(texts, "''", '"')
    texts = update_non_ascii(texts, _PRINTABLE_ASCII_PATTERN, texts, _strip_accents)
    if lowercase:
        texts = update_non_ascii(
            texts, _ASCII_TEXT_PATTERN, tf.strings.lower(texts), _unicode_lowercase
        )
    return texts
