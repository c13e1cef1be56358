"""The character tables of the family's tokenizers, re-derived from their sources: Python's
`str`/`unicodedata` (ALBERT's preprocessing) and `tokenizers`' regex engine (byte-level BPE)."""

import unicodedata

from tokenizers import Regex, pre_tokenizers

from keras_bert.text import byte_level_unicode_tables, python_unicode_tables
from tests.text.test_unicode_tables import CODE_POINTS, _ranges


def test_python_tables_are_those_of_str_and_unicodedata():
    chars = [chr(code_point) for code_point in CODE_POINTS]
    spaces = [ord(char) for char in chars if char.isspace()]
    combining = [ord(char) for char in chars if unicodedata.combining(char)]
    assert python_unicode_tables.WHITESPACE_CHARS == _ranges(spaces)
    assert python_unicode_tables.COMBINING_CHARS == _ranges(combining)


def _matched_by_tokenizers(pattern: str) -> tuple[tuple[int, int], ...]:
    """The code points that `pattern` matches in `tokenizers`' regex engine."""
    text = "".join(map(chr, CODE_POINTS))
    split = pre_tokenizers.Split(Regex(pattern), behavior="removed")
    unmatched = bytearray(len(CODE_POINTS))
    for _, (start, end) in split.pre_tokenize_str(text):  # offsets count characters
        unmatched[start:end] = b"\x01" * (end - start)
    pairs = zip(CODE_POINTS, unmatched, strict=True)
    return _ranges([code_point for code_point, kept in pairs if not kept])


def test_byte_level_tables_are_those_of_tokenizers():
    assert byte_level_unicode_tables.WHITESPACE_CHARS == _matched_by_tokenizers(r"\s")
    assert byte_level_unicode_tables.LETTER_CHARS == _matched_by_tokenizers(r"\p{L}")
    assert byte_level_unicode_tables.NUMBER_CHARS == _matched_by_tokenizers(r"\p{N}")
