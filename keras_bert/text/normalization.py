"""BERT text normalisation and pre-tokenisation as TensorFlow ops, exactly as Hugging Face does it.

Raw strings become words with the rules of `tokenizers`' `BertNormalizer` + `BertPreTokenizer`:

1. Invalid UTF-8 is replaced by U+FFFD (`tf.strings.unicode_transcode`), which clean_text then
   deletes, so an invalid byte sequence behaves like a deleted control character. This is what
   `tokenizers` gives for `bytes.decode("utf-8", errors="replace")` of the same input.
2. The raw text is split on whitespace (\\t \\n \\r and Unicode Z*), and the special tokens
   [PAD] [UNK] [CLS] [SEP] [MASK] (case-sensitive, as written), punctuation and CJK ideographs
   become words of their own. Splitting before normalising keeps offsets into the raw text.
3. Each word loses its control and format characters (clean_text; control characters do not
   separate words: "a\\x0bb" is one word "ab"). Uncased: NFD, drop nonspacing marks, lowercase
   per character as Rust does (no final-sigma rule, "ß" stays "ß", letters newer than
   TensorFlow's ICU included). Special-token words are kept as written.
   Words that become empty are dropped.

The character classes come from `unicode_tables`, i.e. from `tokenizers` itself, not from the
Unicode version of RE2 or ICU. Normalisation never creates a separator in a word except for four
characters that become punctuation under NFD, which step 2 already splits off in uncased mode.
"""

from collections.abc import Callable, Sequence

import tensorflow as tf

from keras_bert.text import unicode_tables
from keras_bert.text.special_tokens import SPECIAL_TOKENS
from keras_bert.text.text_ops import regex_split_with_offsets, tf_text


def char_class(*range_tables: Sequence[tuple[int, int]]) -> str:
    """The body of an RE2 character class matching the code points of `range_tables`."""
    parts = []
    for table in range_tables:
        for first, last in table:
            part = f"\\x{{{first:X}}}"
            parts.append(part if first == last else f"{part}-\\x{{{last:X}}}")
    return "".join(parts)


_SPECIAL_TOKEN_PATTERN = r"\[(?:" + "|".join(token[1:-1] for token in SPECIAL_TOKENS) + r")\]"
_WHITESPACE_PATTERN = f"[{char_class(unicode_tables.WHITESPACE_CHARS)}]+"
_REMOVED_PATTERN = f"[{char_class(unicode_tables.REMOVED_CHARS)}]+"
_NONSPACING_MARK_PATTERN = f"[{char_class(unicode_tables.NONSPACING_MARKS)}]+"
# ASCII without NUL is valid UTF-8 that needs no sanitising.
_ASCII_TEXT_PATTERN = r"[\x01-\x7f]*"
# Printable ASCII words need nothing but (uncased) ASCII lowercasing.
_PRINTABLE_ASCII_PATTERN = "[ -~]*"


def _split_patterns(lowercase: bool) -> tuple[str, str]:
    """Regexes (delimiters, kept delimiters) of step 2.

    The alternatives match disjoint characters except that special tokens start with "[", so
    they come before punctuation; whitespace comes first because RE2 is faster that way.
    """
    tables = [unicode_tables.PUNCTUATION_CHARS, unicode_tables.CJK_CHARS]
    if lowercase:
        tables.append(unicode_tables.UNCASED_PUNCTUATION_CHARS)
    keep = f"{_SPECIAL_TOKEN_PATTERN}|[{char_class(*tables)}]"
    return f"{_WHITESPACE_PATTERN}|{keep}", keep


_SPLIT_PATTERNS = {lowercase: _split_patterns(lowercase) for lowercase in (False, True)}


def update_non_ascii(
    strings: tf.Tensor,
    ascii_pattern: str,
    ascii_result: tf.Tensor,
    transform: Callable[[tf.Tensor], tf.Tensor],
) -> tf.Tensor:
    """`ascii_result` where `strings` fully match `ascii_pattern`, else `transform(strings)`,
    computing `transform` on the non-matching strings only (a small minority in most text)."""
    positions = tf.where(~tf.strings.regex_full_match(strings, ascii_pattern))
    return tf.tensor_scatter_nd_update(
        ascii_result, positions, transform(tf.gather_nd(strings, positions))
    )


def replace_invalid_utf8(texts: tf.Tensor) -> tf.Tensor:
    """`texts` with each invalid UTF-8 sequence replaced by U+FFFD, as Python's
    `bytes.decode("utf-8", errors="replace")` does."""
    return tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")


def _sanitize(texts: tf.Tensor) -> tf.Tensor:
    """Invalid UTF-8 to U+FFFD, and NUL to U+0001 (both deleted by clean_text) because
    RegexSplitWithOffsets stops at a NUL byte; U+0001 keeps the offsets."""
    return tf.strings.regex_replace(replace_invalid_utf8(texts), r"\x00", "\x01")


def _normalize_non_ascii(words: tf.Tensor, lowercase: bool) -> tf.Tensor:
    """clean_text (and NFD, strip marks, lowercase if `lowercase`) of a flat string tensor."""
    words = tf.strings.regex_replace(words, _REMOVED_PATTERN, "")
    if not lowercase:
        return words
    words = tf_text().normalize_utf8(words, "NFD")
    words = tf.strings.regex_replace(words, _NONSPACING_MARK_PATTERN, "")
    return tf.strings.lower(_apply_lowercase_overrides(words), encoding="utf-8")


def _apply_lowercase_overrides(words: tf.Tensor) -> tf.Tensor:
    """Maps the characters of `unicode_tables.LOWERCASE_OVERRIDES` to their lowercase."""
    uppercase, lowercase = zip(*unicode_tables.LOWERCASE_OVERRIDES, strict=True)
    uppercase = tf.constant(uppercase, tf.int32)
    code_points = tf.strings.unicode_decode(words, "UTF-8")
    flat = code_points.flat_values
    positions = tf.minimum(tf.searchsorted(uppercase, flat), len(lowercase) - 1)
    flat = tf.where(tf.gather(uppercase, positions) == flat, tf.gather(lowercase, positions), flat)
    return tf.strings.unicode_encode(code_points.with_flat_values(flat), "UTF-8")


def normalize_words(words: tf.Tensor, lowercase: bool) -> tf.Tensor:
    """Normalises a flat string tensor of raw words (step 3, without dropping empty words).

    Printable-ASCII words, almost all words of English text, take a fast path (ASCII lowercase
    only); the rest go through the full Unicode path. Special-token words are kept as written.
    """
    normalized = update_non_ascii(
        words,
        _PRINTABLE_ASCII_PATTERN,
        tf.strings.lower(words) if lowercase else words,
        lambda non_ascii: _normalize_non_ascii(non_ascii, lowercase),
    )
    if lowercase:
        is_special = tf.strings.regex_full_match(words, _SPECIAL_TOKEN_PATTERN)
        normalized = tf.where(is_special, words, normalized)
    return normalized


def split_words(texts: tf.Tensor, lowercase: bool) -> tuple[tf.RaggedTensor, ...]:
    """Splits raw strings into normalised BERT words with byte offsets into the raw strings.

    Args:
        texts: string tensor of shape `[batch]`.
        lowercase: apply the uncased normalisation.

    Returns:
        `(words, raw_words, starts, ends)`, ragged `[batch, (words)]`: the normalised words, the
        raw text of each word and its byte span `[start, end)` in the (UTF-8 sanitised) input.
    """
    texts = tf.convert_to_tensor(texts, dtype=tf.string)
    texts = update_non_ascii(texts, _ASCII_TEXT_PATTERN, texts, _sanitize)
    delimiters, kept_delimiters = _SPLIT_PATTERNS[lowercase]
    raw_words, starts, ends = regex_split_with_offsets(texts, delimiters, kept_delimiters)
    words = normalize_words(raw_words.flat_values, lowercase)
    # Drop the words that normalisation emptied; a row's kept words start after the words
    # kept before it (one row partition for all four results, no per-word row ids).
    non_empty = tf.strings.length(words) > 0
    kept = tf.where(non_empty)[:, 0]
    kept_before = tf.concat([[0], tf.cumsum(tf.cast(non_empty, tf.int64))], axis=0)
    row_splits = tf.gather(kept_before, raw_words.row_splits)
    return tuple(
        tf.RaggedTensor.from_row_splits(tf.gather(values, kept), row_splits, validate=False)
        for values in (words, raw_words.flat_values, starts.flat_values, ends.flat_values)
    )
