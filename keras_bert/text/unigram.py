"""`UnigramModel`: the most likely segmentation of words into a unigram vocabulary's pieces, as
Hugging Face `tokenizers`' `Unigram` model finds it, in TensorFlow ops.

Viterbi over each word's code points: the best path to each end position is the best of
(best path to a start) + (score of the piece between them), summed in float64; of equal paths
the one from the earliest start wins (`tokenizers` keeps the first path found and replaces it
only by a strictly better one). A code point that begins no piece of its own length is the
unknown piece, scored 10 below the lowest piece, and a run of unknown pieces is one token.
`sentencepiece` sums in float32 along the whole text, so on ties it may choose otherwise
("Mmmm"); `tokenizers` is the reference here.

The words of a batch are laid out by length (longest first), so that each step of the loop over
end positions reads the words still that long; the paths are then read back from their ends.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from keras_bert.text.precompiled_normalizer import utf8_lengths
from keras_bert.text.ragged_rows import row_ids

# `tokenizers`' (and `sentencepiece`'s) penalty of the unknown piece below the lowest score.
UNKNOWN_PENALTY = 10.0


class UnigramModel(tf.Module):
    """Segments words into the pieces of a unigram vocabulary, as `tokenizers` does.

    Args:
        pieces: `(piece, score)` of each id.
        unk_id: the id of the unknown piece.

    Example:
    >>> model = UnigramModel([("<unk>", 0.0), ("▁a", -1.0), ("b", -2.0), ("▁ab", -4.0)], 0)
    >>> words = tf.strings.unicode_decode(["▁ab", "▁abxy"], "UTF-8")
    >>> ids, starts, ends = model.segment(words)
    >>> ids.to_list(), starts.to_list(), ends.to_list()
    ([[1, 2], [1, 2, 0]], [[0, 2], [0, 2, 3]], [[2, 3], [2, 3, 5]])
    """

    def __init__(self, pieces: Sequence[tuple[str, float]], unk_id: int):
        super().__init__(name="unigram_model")
        # A piece written twice is found under its last id, as in `tokenizers`' HashMap.
        ids = {piece: index for index, (piece, _) in enumerate(pieces)}
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(list(ids)), tf.constant(list(ids.values()), tf.int64)
            ),
            default_value=-1,
        )
        scores = [float(score) for _, score in pieces]
        self._scores = tf.constant(scores, tf.float64)
        self.unk_id = unk_id
        self._unknown_score = min(scores) - UNKNOWN_PENALTY
        self.longest_piece = max(len(piece) for piece, _ in pieces)

    def _candidates(self, words: tf.RaggedTensor) -> tuple[tf.Tensor, tf.Tensor]:
        """The score and id of each piece that ends at each code point of each word.

        Returns:
            `(scores, ids)`, float64 and int64 `[code points, longest_piece]`: row `p` holds the
            pieces that end with flat code point `p`, column `j` the one of `j + 1` code points
            (-inf and -1 where there is none). A code point that is no piece of its own is the
            unknown piece (column 0).
        """
        flat = words.flat_values
        byte_ends = tf.cumsum(tf.cast(utf8_lengths(flat), tf.int64))
        byte_starts = byte_ends - tf.cast(utf8_lengths(flat), tf.int64)
        word = row_ids(words.row_splits)
        word_start = tf.gather(words.row_splits, word)
        position = tf.range(tf.size(flat, out_type=tf.int64))
        first = position[:, tf.newaxis] - tf.range(self.longest_piece, dtype=tf.int64)
        # Only the substrings within a word are looked up (most words are short).
        within_word = tf.where(first >= word_start[:, tf.newaxis])
        end, first = within_word[:, 0], tf.gather_nd(first, within_word)
        word_texts = tf.strings.unicode_encode(words, "UTF-8")
        end_word = tf.gather(word, end)
        start_byte = tf.gather(byte_starts, first)
        substrings = tf.strings.substr(
            tf.gather(word_texts, end_word),
            start_byte - tf.gather(byte_starts, tf.gather(words.row_splits, end_word)),
            tf.gather(byte_ends, end) - start_byte,
        )
        ids = tf.tensor_scatter_nd_update(
            tf.fill([tf.size(flat), self.longest_piece], tf.constant(-1, tf.int64)),
            within_word,
            self._table.lookup(substrings),
        )
        unknown = ids[:, 0] < 0
        ids = tf.concat(
            [
                tf.where(unknown, tf.constant(self.unk_id, tf.int64), ids[:, 0])[:, tf.newaxis],
                ids[:, 1:],
            ],
            1,
        )
        scores = tf.where(
            ids >= 0,
            tf.gather(self._scores, tf.maximum(ids, 0)),
            tf.constant(float("-inf"), tf.float64),
        )
        first_column = tf.where(unknown, tf.constant(self._unknown_score, tf.float64), scores[:, 0])
        return tf.concat([first_column[:, tf.newaxis], scores[:, 1:]], 1), ids

    def segment(
        self, words: tf.RaggedTensor
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """The best segmentation of each word (int32 code points, ragged `[words, (points)]`,
        none empty).

        Returns:
            `(ids, starts, ends)`: each word's piece ids (int32) and their code point spans
            `[start, end)` in the word (int64), ragged `[words, (pieces)]`.
        """
        words = words.with_row_splits_dtype(tf.int64)
        # One word more, so that the loops below run and their arrays are never empty.
        words = tf.concat(
            [words, tf.ragged.constant([[0x2581]], tf.int32, row_splits_dtype=tf.int64)], 0
        )
        lengths = words.row_lengths()
        scores, ids = self._candidates(words)
        longest = self.longest_piece
        # Words by length, longest first: those that reach end position e are a prefix.
        order = tf.argsort(lengths, direction="DESCENDING", stable=True)
        sorted_lengths = tf.gather(lengths, order)
        sorted_starts = tf.gather(words.row_splits[:-1], order)
        # window[w, j]: the best score of word w's first e - 1 - j code points.
        minus_infinity = tf.constant(float("-inf"), tf.float64)
        window = tf.concat(
            [
                tf.zeros([tf.size(order), 1], tf.float64),
                tf.fill([tf.size(order), longest - 1], minus_infinity),
            ],
            axis=1,
        )
        # Of equal paths the earliest start, the longest piece, wins: argmax of reversed columns.
        reversed_columns = tf.range(longest - 1, -1, -1)

        def step(end, window, back_lengths, back_ids):
            reaching = tf.reduce_sum(tf.cast(sorted_lengths >= end, tf.int32))
            window = window[:reaching]
            rows = sorted_starts[:reaching] + end - 1
            totals = window + tf.gather(scores, rows)
            best_column = (
                longest
                - 1
                - tf.argmax(
                    tf.gather(totals, reversed_columns, axis=1), axis=1, output_type=tf.int32
                )
            )
            best = tf.gather(totals, best_column, batch_dims=1)
            back_lengths = back_lengths.write(tf.cast(end - 1, tf.int32), best_column + 1)
            best_id = tf.gather(tf.gather(ids, rows), best_column, batch_dims=1)
            back_ids = back_ids.write(tf.cast(end - 1, tf.int32), best_id)
            window = tf.concat([best[:, tf.newaxis], window[:, :-1]], axis=1)
            return end + 1, window, back_lengths, back_ids

        _, _, back_lengths, back_ids = tf.while_loop(
            lambda end, *_: end <= sorted_lengths[0],
            step,
            (
                tf.constant(1, tf.int64),
                window,
                tf.TensorArray(tf.int32, size=0, dynamic_size=True, infer_shape=False),
                tf.TensorArray(tf.int64, size=0, dynamic_size=True, infer_shape=False),
            ),
            shape_invariants=(
                tf.TensorShape([]),
                tf.TensorShape([None, longest]),
                tf.TensorShape(None),
                tf.TensorShape(None),
            ),
        )
        # Position e's entries follow those of the words reaching the positions before it.
        reaching = tf.math.bincount(
            tf.cast(sorted_lengths, tf.int32), minlength=tf.cast(sorted_lengths[0] + 1, tf.int32)
        )
        reaching = tf.cast(tf.cumsum(reaching, reverse=True)[1:], tf.int64)
        entries_before = tf.concat([[0], tf.cumsum(reaching)[:-1]], 0)
        ids, starts, ends = self._paths(
            tf.reshape(back_lengths.concat(), [-1]),
            tf.reshape(back_ids.concat(), [-1]),
            entries_before,
            sorted_lengths,
        )
        unsorted = tf.math.invert_permutation(order)[:-1]
        return tuple(tf.gather(values, unsorted) for values in (ids, starts, ends))

    def _paths(self, back_lengths, back_ids, entries_before, lengths):
        """Each word's best path, read back from its end (words in their sorted order), with
        each run of unknown pieces fused into one."""
        rank = tf.range(tf.size(lengths, out_type=tf.int64))

        def back(position, pieces, starts):
            live = position > 0
            entry = tf.gather(entries_before, tf.maximum(position - 1, 0)) + rank
            length = tf.where(live, tf.cast(tf.gather(back_lengths, entry), tf.int64), 0)
            pieces = pieces.write(pieces.size(), tf.where(live, tf.gather(back_ids, entry), -1))
            starts = starts.write(starts.size(), position - length)
            return position - length, pieces, starts

        _, pieces, starts = tf.while_loop(
            lambda position, *_: tf.reduce_any(position > 0),
            back,
            (
                lengths,
                tf.TensorArray(tf.int64, size=0, dynamic_size=True),
                tf.TensorArray(tf.int64, size=0, dynamic_size=True),
            ),
        )
        # [steps, words], the last piece first → each word's column read from the last step
        # up: its pieces in order. One gather rather than a transpose, which oneDNN declines
        # for integers, logging an error line, where the CPU has no AVX-512.
        pieces, starts = pieces.stack(), starts.stack()
        steps, words = tf.unstack(tf.shape(pieces, out_type=tf.int64))
        column_order = tf.range(words)[:, None] + words * tf.range(steps - 1, -1, -1)[None, :]
        pieces, starts = (
            tf.gather(tf.reshape(values, [-1]), column_order) for values in (pieces, starts)
        )
        unknown = tf.equal(pieces, self.unk_id)
        after_unknown = tf.pad(unknown[:, :-1], [[0, 0], [1, 0]])
        kept = (pieces >= 0) & tf.logical_not(unknown & after_unknown)
        pieces, starts = (tf.ragged.boolean_mask(values, kept) for values in (pieces, starts))
        # Pieces are contiguous: each ends where the next kept one starts, the last at the end.
        flat_starts = starts.flat_values
        row = row_ids(starts.row_splits)
        is_last = tf.equal(
            tf.range(tf.size(flat_starts, out_type=tf.int64)),
            tf.gather(starts.row_splits[1:] - 1, row),
        )
        ends = tf.where(
            is_last,
            tf.gather(lengths, row),
            tf.concat([flat_starts[1:], [0]], 0),
        )
        return tf.cast(pieces, tf.int32), starts, starts.with_flat_values(ends)
