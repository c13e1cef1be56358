"""`PrecompiledNormalizer`: a SentencePiece model's normalization rules (its
`precompiled_charsmap`) applied as Hugging Face `tokenizers`' `Precompiled` normalizer does, in
TensorFlow ops.

The charsmap is a double-array trie (darts-clone) from strings to their replacements: NFKC plus
SentencePiece's own rules (`nmt_nfkc` maps tabs and zero-width spaces to a space, removes
control characters). `sentencepiece` replaces the longest matching key at each position;
`tokenizers` walks the text grapheme cluster by grapheme cluster instead:

- a cluster of fewer than 6 UTF-8 bytes that begins with a key is replaced whole by the value
  of the shortest such key (so "ﬁ" + U+0301 becomes "fi": the accent goes with the cluster);
- any other cluster is replaced code point by code point, each by its single-character key
  (so keys of several code points apply only to short clusters that begin with them).

This layer does exactly that (`keras_bert.text.graphemes` finds the clusters), and says which
input code points each output code point comes from, for offsets.
"""

from __future__ import annotations

import struct

import numpy as np
import tensorflow as tf

from keras_bert.text.graphemes import grapheme_starts
from keras_bert.text.ragged_rows import repeat, row_ids

# `tokenizers` looks a cluster up whole only below this many UTF-8 bytes.
_WHOLE_CLUSTER_BYTES = 6
_NO_RULE = -1


def charsmap_rules(charsmap: bytes) -> dict[str, str]:
    """The rules of a `precompiled_charsmap` that `tokenizers` can apply: each key of fewer than
    6 UTF-8 bytes (single code points, and keys that begin a short cluster) and the string that
    replaces it.

    The charsmap is a little-endian uint32 size of the trie in bytes, the trie's uint32 units
    (darts-clone's double array: a unit holds its label byte, an offset to its children and
    whether a value hangs below it), then the replacements, each ending in a NUL byte. The
    trie is walked a byte level at a time, every node of a level at once.

    Example:
    >>> from keras_bert.text.sentencepiece_model import read_sentencepiece_proto
    >>> path = "../shared/reference/variants/xlm_roberta/sentencepiece.bpe.model"
    >>> model = read_sentencepiece_proto(open(path, "rb").read())
    >>> rules = charsmap_rules(model.precompiled_charsmap)
    >>> rules["ﬁ"], rules["\\t"], rules["e\\u0301"], len(rules)
    ('fi', ' ', 'é', 7750)
    """
    if not charsmap:
        return {}
    (trie_bytes,) = struct.unpack_from("<I", charsmap)
    units = np.frombuffer(charsmap, "<u4", trie_bytes // 4, 4).astype(np.int64)
    replacements = charsmap[4 + trie_bytes :]

    def offset(unit: np.ndarray) -> np.ndarray:
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)

    labels = np.arange(1, 256)
    nodes, keys = np.zeros(1, np.int64), [b""]
    rules: dict[str, str] = {}
    for _ in range(_WHOLE_CLUSTER_BYTES - 1):
        children = (nodes ^ offset(units[nodes]))[:, np.newaxis] ^ labels
        inside = children < len(units)
        found = inside & ((units[np.where(inside, children, 0)] & ((1 << 31) | 0xFF)) == labels)
        parent, label = np.nonzero(found)
        nodes = children[parent, label]
        keys = [keys[index] + bytes([byte]) for index, byte in zip(parent, label + 1, strict=True)]
        for node in np.flatnonzero((units[nodes] >> 8) & 1):
            start = int(units[nodes[node] ^ offset(units[nodes[node]])] & ((1 << 31) - 1))
            end = replacements.index(b"\0", start)
            rules[keys[node].decode("utf-8")] = replacements[start:end].decode("utf-8")
    return rules


def utf8_lengths(code_points: tf.Tensor) -> tf.Tensor:
    """The UTF-8 byte count of each int32 code point."""
    return 1 + sum(tf.cast(code_points >= limit, tf.int32) for limit in (0x80, 0x800, 0x10000))


class PrecompiledNormalizer(tf.Module):
    """Normalizes code points with a charsmap's rules, as `tokenizers`' `Precompiled` does.

    Args:
        charsmap: a SentencePiece model's `precompiled_charsmap` (empty: text is kept as is).

    Example:
    >>> from keras_bert.text.sentencepiece_model import read_sentencepiece_proto
    >>> path = "../shared/reference/variants/xlm_roberta/sentencepiece.bpe.model"
    >>> normalizer = PrecompiledNormalizer(
    ...     read_sentencepiece_proto(open(path, "rb").read()).precompiled_charsmap)
    >>> texts = tf.strings.unicode_decode(["ﬁ\\u0301x ①", "cafe\\u0301"], "UTF-8")
    >>> normalized, starts, ends = normalizer.normalize(texts)
    >>> tf.strings.unicode_encode(normalized, "UTF-8").numpy().tolist()
    [b'fix 1', b'caf\\xc3\\xa9']
    >>> starts.to_list(), ends.to_list()  # the input code points of each output code point
    ([[0, 0, 2, 3, 4], [5, 6, 7, 8]], [[2, 2, 3, 4, 5], [6, 7, 8, 10]])
    """

    def __init__(self, charsmap: bytes):
        super().__init__(name="precompiled_normalizer")
        rules = charsmap_rules(charsmap)
        single = {key: value for key, value in rules.items() if len(key) == 1}
        longer = {key: value for key, value in rules.items() if len(key) > 1}
        self._has_rules = bool(rules)
        if not self._has_rules:
            return
        # ASCII that no rule touches (as a key's first or second code point): most text.
        touched = {key[0] for key in single} | {key[1] for key in longer}
        self._untouched_ascii = tf.constant([chr(code) not in touched for code in range(128)])
        replacements = [*single.values(), *longer.values()]
        self._replacements = tf.ragged.constant(
            [[ord(char) for char in value] for value in replacements],
            dtype=tf.int32,
            ragged_rank=1,
            row_splits_dtype=tf.int64,
        )
        self._single = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant([ord(key) for key in single], tf.int64),
                tf.range(len(single), dtype=tf.int64),
            ),
            default_value=_NO_RULE,
        )
        self._longest_key = max((len(key) for key in longer), default=1)
        self._longer = None
        if longer:
            self._longer = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(list(longer)),
                    tf.range(len(single), len(replacements), dtype=tf.int64),
                ),
                default_value=_NO_RULE,
            )

    def normalize(
        self, code_points: tf.RaggedTensor
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """Normalizes each row of int32 code points `[batch, (code points)]`.

        Returns:
            `(normalized, source_starts, source_ends)`: the int32 code points of each row after
            normalization, and for each the flat indices `[start, end)` of the input code points
            it comes from (a whole cluster's, or its own code point's), int64, all ragged
            `[batch, (normalized code points)]`.
        """
        code_points = code_points.with_row_splits_dtype(tf.int64)
        flat = code_points.flat_values
        position = tf.range(tf.size(flat, out_type=tf.int64))
        if not self._has_rules:
            return (
                code_points,
                code_points.with_flat_values(position),
                code_points.with_flat_values(position + 1),
            )
        untouched = (flat < 128) & tf.gather(self._untouched_ascii, tf.minimum(flat, 127))
        row_of = row_ids(code_points.row_splits)
        kept = tf.math.unsorted_segment_min(
            tf.cast(untouched, tf.int32), row_of, code_points.nrows()
        )
        # Rows the rules leave as they are stay; the others are normalized, sources mapped back.
        changed = tf.where(kept == 0)[:, 0]
        in_changed = tf.gather(kept == 0, row_of)
        normalized, starts, ends = self._normalize(
            tf.RaggedTensor.from_row_lengths(
                tf.boolean_mask(flat, in_changed),
                tf.gather(code_points.row_lengths(), changed),
                validate=False,
            )
        )
        positions = tf.boolean_mask(position, in_changed)
        starts = tf.gather(positions, starts.flat_values)
        ends = tf.gather(positions, ends.flat_values - 1) + 1
        lengths = tf.tensor_scatter_nd_update(
            code_points.row_lengths(), changed[:, tf.newaxis], normalized.row_lengths()
        )
        # Each row's values: its own, or its normalized ones after all of the input's.
        first = tf.tensor_scatter_nd_update(
            code_points.row_starts(),
            changed[:, tf.newaxis],
            tf.size(flat, out_type=tf.int64) + normalized.row_starts(),
        )
        taken = tf.ragged.range(first, first + lengths).flat_values
        return tuple(
            tf.RaggedTensor.from_row_lengths(
                tf.gather(tf.concat(values, 0), taken), lengths, validate=False
            )
            for values in (
                (flat, normalized.flat_values),
                (position, starts),
                (position + 1, ends),
            )
        )

    def _normalize(
        self, code_points: tf.RaggedTensor
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """`normalize` of rows that the rules may change."""
        flat = code_points.flat_values
        position = tf.range(tf.size(flat, out_type=tf.int64))
        starts = grapheme_starts(code_points).flat_values
        cluster = tf.cumsum(tf.cast(starts, tf.int64)) - 1
        cluster_start = tf.where(starts)[:, 0]
        clusters = tf.size(cluster_start, out_type=tf.int64)
        cluster_sizes = tf.math.unsorted_segment_sum(tf.ones_like(cluster), cluster, clusters)
        cluster_bytes = tf.math.unsorted_segment_sum(utf8_lengths(flat), cluster, clusters)
        rule = self._single.lookup(tf.cast(flat, tf.int64))
        cluster_rule = self._cluster_rules(flat, rule, cluster_start, cluster_sizes, cluster_bytes)
        # A cluster replaced whole: its first code point gives the replacement, the rest nothing.
        whole = tf.gather(cluster_rule, cluster) != _NO_RULE
        dropped = tf.constant(-2, tf.int64)
        rule = tf.where(whole, tf.where(starts, tf.gather(cluster_rule, cluster), dropped), rule)
        has_rule = rule >= 0
        safe_rule = tf.maximum(rule, 0)
        replacement_starts = tf.gather(self._replacements.row_splits, safe_rule)
        replacement_lengths = tf.gather(self._replacements.row_lengths(), safe_rule)
        lengths = tf.where(has_rule, replacement_lengths, tf.cast(rule == _NO_RULE, tf.int64))
        sources = tf.concat([self._replacements.flat_values, flat], axis=0)
        offsets = tf.where(
            has_rule, replacement_starts, self._replacements.row_splits[-1] + position
        )
        taken = tf.ragged.range(offsets, offsets + lengths).flat_values
        normalized = tf.gather(sources, taken)
        source_start = tf.where(whole, tf.gather(cluster_start, cluster), position)
        source_end = tf.where(
            whole, tf.gather(cluster_start + cluster_sizes, cluster), position + 1
        )
        row_lengths = tf.math.unsorted_segment_sum(
            lengths, row_ids(code_points.row_splits), code_points.nrows()
        )

        def rows(values: tf.Tensor) -> tf.RaggedTensor:
            return tf.RaggedTensor.from_row_lengths(values, row_lengths, validate=False)

        source_spans = repeat(tf.stack([source_start, source_end], axis=1), lengths)
        return rows(normalized), rows(source_spans[:, 0]), rows(source_spans[:, 1])

    def _cluster_rules(
        self,
        flat: tf.Tensor,
        rule: tf.Tensor,
        cluster_start: tf.Tensor,
        cluster_sizes: tf.Tensor,
        cluster_bytes: tf.Tensor,
    ) -> tf.Tensor:
        """The rule replacing each cluster whole (`_NO_RULE` for those replaced code point by
        code point): that of its shortest prefix with one, for clusters of two or more code
        points and fewer than 6 bytes."""
        candidate = tf.where((cluster_sizes > 1) & (cluster_bytes < _WHOLE_CLUSTER_BYTES))[:, 0]
        first = tf.gather(cluster_start, candidate)
        sizes = tf.gather(cluster_sizes, candidate)
        found = tf.fill(tf.shape(candidate), tf.constant(_NO_RULE, tf.int64))
        if self._longer is not None:
            last = tf.size(flat, out_type=tf.int64) - 1
            # From the longest prefix down: a shorter prefix with a rule replaces a longer one.
            for length in range(self._longest_key, 1, -1):
                prefix = tf.minimum(first[:, tf.newaxis] + tf.range(length, dtype=tf.int64), last)
                keys = tf.strings.unicode_encode(tf.gather(flat, prefix), "UTF-8")
                prefix_rule = tf.where(sizes >= length, self._longer.lookup(keys), _NO_RULE)
                found = tf.where(prefix_rule != _NO_RULE, prefix_rule, found)
        first_rule = tf.gather(rule, first)
        found = tf.where(first_rule != _NO_RULE, first_rule, found)
        return tf.tensor_scatter_nd_update(
            tf.fill(tf.shape(cluster_sizes), tf.constant(_NO_RULE, tf.int64)),
            candidate[:, tf.newaxis],
            found,
        )
