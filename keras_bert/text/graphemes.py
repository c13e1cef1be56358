"""Extended grapheme clusters (UAX #29, Unicode 16.0) of code point sequences, as TensorFlow ops.

The rules of `unicode-segmentation`, which `tokenizers`' `Precompiled` normalizer (XLM-RoBERTa's)
walks text by: a cluster breaks between two code points unless

- GB3: CR × LF;
- GB6-GB8: Hangul jamo and syllables join (L × L V LV LVT, LV V × V T, LVT T × T);
- GB9, GB9a: Extend, ZWJ and SpacingMark join what precedes them; GB9b: Prepend joins what
  follows it (none of these across a Control, CR or LF: GB4, GB5);
- GB9c: an Indic consonant joins a preceding consonant + [Extend Linker]* with a Linker;
- GB11: an Extended_Pictographic joins Extended_Pictographic Extend* ZWJ before it (emoji
  ZWJ sequences);
- GB12, GB13: regional indicators pair up (flags).

The contextual rules (GB9c, GB11, GB12-13) look back over runs of code points; each is a cumulative
sum over the batch's flat code points, so the whole batch is a few vectorized ops.
"""

import functools

import numpy as np
import tensorflow as tf

from keras_bert.text import grapheme_tables
from keras_bert.text.ragged_rows import row_ids

# Grapheme_Cluster_Break values (the low 4 bits of a code point's properties).
OTHER, CR, LF, CONTROL, EXTEND, ZWJ, REGIONAL_INDICATOR, PREPEND, SPACING_MARK = range(9)
L, V, T, LV, LVT = range(9, 14)
# Flags above them.
EXTENDED_PICTOGRAPHIC, CONJUNCT_CONSONANT, CONJUNCT_LINKER, CONJUNCT_EXTEND = 16, 32, 64, 128
_BREAK_VALUE_BITS = 15
_HANGUL_SYLLABLES = (0xAC00, 0xD7A3)
_HANGUL_TRAILING_COUNT = 28


@functools.cache
def _property_runs() -> tuple[np.ndarray, np.ndarray]:
    """`(starts, properties)`: the first code point of each run of equal properties, and them."""
    properties = np.zeros(0x110000, np.int32)
    for value, table in (
        (CONTROL, grapheme_tables.CONTROL_CHARS),
        (EXTEND, grapheme_tables.EXTEND_CHARS),
        (SPACING_MARK, grapheme_tables.SPACING_MARK_CHARS),
        (PREPEND, grapheme_tables.PREPEND_CHARS),
        (REGIONAL_INDICATOR, grapheme_tables.REGIONAL_INDICATOR_CHARS),
        (L, grapheme_tables.HANGUL_L_CHARS),
        (V, grapheme_tables.HANGUL_V_CHARS),
        (T, grapheme_tables.HANGUL_T_CHARS),
    ):
        for first, last in table:
            properties[first : last + 1] = value
    properties[[0x0D, 0x0A, 0x200D]] = CR, LF, ZWJ
    first, last = _HANGUL_SYLLABLES
    syllables = np.arange(first, last + 1)
    properties[syllables] = np.where((syllables - first) % _HANGUL_TRAILING_COUNT == 0, LV, LVT)
    for flag, table in (
        (EXTENDED_PICTOGRAPHIC, grapheme_tables.EXTENDED_PICTOGRAPHIC_CHARS),
        (CONJUNCT_CONSONANT, grapheme_tables.CONJUNCT_CONSONANT_CHARS),
        (CONJUNCT_LINKER, grapheme_tables.CONJUNCT_LINKER_CHARS),
        (CONJUNCT_EXTEND, grapheme_tables.CONJUNCT_EXTEND_CHARS),
    ):
        for first, last in table:
            properties[first : last + 1] |= flag
    starts = np.flatnonzero(np.diff(properties, prepend=-1)).astype(np.int32)
    return starts, properties[starts]


def code_point_properties(code_points: tf.Tensor) -> tf.Tensor:
    """The int32 properties of int32 code points: the Grapheme_Cluster_Break value (low 4 bits)
    and the Extended_Pictographic and Indic_Conjunct_Break flags.

    Example:
    >>> properties = code_point_properties(tf.constant([0x61, 0x301, 0x1F600, 0x915])).numpy()
    >>> (properties & 15).tolist()  # Other, Extend, Other, Other
    [0, 4, 0, 0]
    >>> [bool(properties[2] & EXTENDED_PICTOGRAPHIC), bool(properties[3] & CONJUNCT_CONSONANT)]
    [True, True]
    """
    starts, properties = _property_runs()
    runs = tf.searchsorted(tf.constant(starts), code_points, side="right") - 1
    return tf.gather(tf.constant(properties), runs)


def _shifted(values: tf.Tensor, steps: int, fill) -> tf.Tensor:
    """`values` moved `steps` places later: `result[i] = values[i - steps]`, `fill` before."""
    padding = tf.fill([tf.minimum(steps, tf.size(values))], tf.constant(fill, values.dtype))
    return tf.concat([padding, values[: tf.maximum(tf.size(values) - steps, 0)]], axis=0)


def _last_index_outside(run: tf.Tensor) -> tf.Tensor:
    """For each position `i`, the last position `j <= i` where `run` is False (-1 if none)."""
    outside = tf.logical_not(run)
    anchors = tf.concat([[-1], tf.where(outside)[:, 0]], axis=0)
    return tf.gather(anchors, tf.cumsum(tf.cast(outside, tf.int64)))


def grapheme_starts(code_points: tf.RaggedTensor) -> tf.RaggedTensor:
    """Whether each code point starts an extended grapheme cluster of its row.

    Args:
        code_points: int32 code points, ragged `[batch, (code points)]`.

    Returns:
        bool, ragged like `code_points`.

    Example:
    >>> text = tf.strings.unicode_decode(["e\\u0301\\r\\n🇩🇪🇫🇷👩\\u200d💻"], "UTF-8")
    >>> grapheme_starts(text).to_list()
    [[True, False, True, False, True, False, True, False, True, False, False]]
    """
    flat = code_points.flat_values
    properties = code_point_properties(flat)
    value = properties & _BREAK_VALUE_BITS
    previous = _shifted(value, 1, OTHER)
    position = tf.range(tf.size(flat, out_type=tf.int64))
    row_start = tf.gather(code_points.row_splits, row_ids(code_points.row_splits))
    is_row_start = tf.equal(position, row_start)

    def flag(name: int) -> tf.Tensor:
        return tf.not_equal(properties & name, 0)

    def within_row(anchor: tf.Tensor) -> tf.Tensor:
        return anchor >= row_start

    def one_of(values: tf.Tensor, *names: int) -> tf.Tensor:
        return tf.reduce_any(tf.equal(values[:, tf.newaxis], tf.constant(names)), axis=1)

    # GB9c: consonant [extend linker]* linker [extend linker]* × consonant.
    consonant, linker = flag(CONJUNCT_CONSONANT), flag(CONJUNCT_LINKER)
    anchor = _shifted(_last_index_outside(linker | flag(CONJUNCT_EXTEND)), 1, -1)
    linkers = tf.cumsum(tf.cast(linker, tf.int64))
    linkers_since = _shifted(linkers, 1, 0) - tf.gather(linkers, tf.maximum(anchor, 0))
    conjunct = (
        consonant
        & within_row(anchor)
        & tf.gather(consonant, tf.maximum(anchor, 0))
        & (linkers_since > 0)
    )
    # GB11: extended pictographic extend* ZWJ × extended pictographic.
    pictographic = flag(EXTENDED_PICTOGRAPHIC)
    anchor = _shifted(_last_index_outside(tf.equal(value, EXTEND)), 2, -1)
    emoji_sequence = (
        pictographic
        & tf.equal(previous, ZWJ)
        & within_row(anchor)
        & tf.gather(pictographic, tf.maximum(anchor, 0))
    )
    # GB12, GB13: an odd number of regional indicators before this one pairs it.
    indicator = tf.equal(value, REGIONAL_INDICATOR)
    anchor = tf.maximum(_shifted(_last_index_outside(indicator), 1, -1), row_start - 1)
    indicator_pair = indicator & tf.equal(previous, REGIONAL_INDICATOR)
    indicator_pair &= tf.equal((position - 1 - anchor) % 2, 1)

    controls = one_of(previous, CR, LF, CONTROL) | one_of(value, CR, LF, CONTROL)
    joined = (tf.equal(previous, CR) & tf.equal(value, LF)) | (
        tf.logical_not(controls)
        & (
            (tf.equal(previous, L) & one_of(value, L, V, LV, LVT))
            | (one_of(previous, LV, V) & one_of(value, V, T))
            | (one_of(previous, LVT, T) & tf.equal(value, T))
            | one_of(value, EXTEND, ZWJ, SPACING_MARK)
            | tf.equal(previous, PREPEND)
            | conjunct
            | emoji_sequence
            | indicator_pair
        )
    )
    return code_points.with_flat_values(is_row_start | tf.logical_not(joined))
