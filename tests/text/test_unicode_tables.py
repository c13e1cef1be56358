"""`unicode_tables` and the in-graph normaliser against `tokenizers`, code point by code point."""

import unicodedata

import pytest
import tensorflow as tf
from tokenizers import normalizers, pre_tokenizers

from keras_bert.text import unicode_tables
from keras_bert.text.normalization import split_words

CODE_POINTS = [code_point for code_point in range(0x110000) if not 0xD800 <= code_point <= 0xDFFF]
# Planes 4-13 hold no character in any Unicode version to date and planes 15-16 are private
# use: all alike, removed as controls. One code point in 4,096 of them stands for the rest
# where each is run through the graph; planes 0-3 and 14 go whole.
TEXT_CODE_POINTS = [
    c for c in CODE_POINTS if c < 0x40000 or 0xE0000 <= c < 0xF0000 or c % 4096 == 0
]
# Characters of Unicode 13-16 that TensorFlow-text's ICU decomposes under NFD and the
# `unicode-normalization` crate of `tokenizers` 0.23 does not (Dives Akuru, Todhri, Tulu-Tigalari
# and Kirat Rai letters). No BERT vocabulary has these scripts, so both give [UNK] for the word;
# only the uncased word strings differ (test_parity checks the ids).
NFD_DIFFERENCES = {
    0x105C9, 0x105E4, 0x11383, 0x11385, 0x1138E, 0x11391, 0x113C5, 0x113C7, 0x113C8, 0x11938,
    0x16121, 0x16122, 0x16123, 0x16124, 0x16125, 0x16126, 0x16127, 0x16128, 0x16D68, 0x16D69,
    0x16D6A,
}  # fmt: skip


def _ranges(code_points: list[int]) -> tuple[tuple[int, int], ...]:
    ranges: list[list[int]] = []
    for code_point in code_points:
        if ranges and ranges[-1][1] == code_point - 1:
            ranges[-1][1] = code_point
        else:
            ranges.append([code_point, code_point])
    return tuple((first, last) for first, last in ranges)


def derive_tables() -> dict[str, tuple[tuple[int, int], ...]]:
    """The character classes that the installed `tokenizers` applies (see unicode_tables)."""
    clean = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False
    )
    strip = normalizers.BertNormalizer(
        clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False
    )
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    classes: dict[str, list[int]] = {name: [] for name in ("removed", "space", "marks", "punct")}
    for code_point in CODE_POINTS:
        char = chr(code_point)
        cleaned = clean.normalize_str(char)
        if cleaned in ("", " "):
            classes["removed" if cleaned == "" else "space"].append(code_point)
            continue
        if unicodedata.normalize("NFD", char) == char and strip.normalize_str(char) == "":
            classes["marks"].append(code_point)
        if len(pre_tokenizer.pre_tokenize_str(f"a{char}b")) == 3:
            classes["punct"].append(code_point)
    return {name: _ranges(code_points) for name, code_points in classes.items()}


def test_tables_are_those_of_tokenizers():
    tables = derive_tables()
    assert unicode_tables.REMOVED_CHARS == tables["removed"]
    assert unicode_tables.WHITESPACE_CHARS == tables["space"]
    assert unicode_tables.NONSPACING_MARKS == tables["marks"]
    assert unicode_tables.PUNCTUATION_CHARS == tables["punct"]


def _our_words(texts: list[str], lowercase: bool) -> list[list[str]]:
    words = []
    for start in range(0, len(texts), 65_536):
        batch = split_words(tf.constant(texts[start : start + 65_536]), lowercase)[0]
        words += [[word.decode() for word in row] for row in batch.to_list()]
    return words


@pytest.mark.slow
@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_code_points_normalise_and_split_as_tokenizers(lowercase):
    """Each code point of `TEXT_CODE_POINTS` inside a word and next to itself, uppercased,
    after a space."""
    normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    texts = [f"a{chr(c)}b" for c in TEXT_CODE_POINTS] + [
        f"Ab{chr(c) * 2} {chr(c).upper()}" for c in TEXT_CODE_POINTS
    ]
    expected = [
        [word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))]
        for text in texts
    ]
    ours = _our_words(texts, lowercase)
    mismatches = {
        TEXT_CODE_POINTS[i % len(TEXT_CODE_POINTS)]
        for i in range(len(texts))
        if ours[i] != expected[i]
    }
    assert mismatches == (NFD_DIFFERENCES if lowercase else set())
