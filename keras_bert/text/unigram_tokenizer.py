"""`UnigramTokenizer`: raw strings to XLM-RoBERTa's ids in the graph, as Hugging Face's
tokenizer (`tokenizer.json`) gives them."""

import os
from collections.abc import Sequence

import keras
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.text.normalization import replace_invalid_utf8
from keras_bert.text.offsets import lay_end_to_end
from keras_bert.text.precompiled_normalizer import PrecompiledNormalizer, utf8_lengths
from keras_bert.text.ragged_rows import row_ids
from keras_bert.text.sentencepiece_model import SentencePieceModelLayer, read_sentencepiece_proto
from keras_bert.text.special_token_split import SpecialTokens
from keras_bert.text.unigram import UnigramModel

WORD_BOUNDARY = 0x2581  # "▁", SentencePiece's marker of a preceding space
# Rust's `char::is_whitespace` (White_Space), where `tokenizers`' `WhitespaceSplit` splits.
WHITESPACE_CHARS = (
    *range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F,
    0x205F, 0x3000,
)  # fmt: skip
# fairseq's dictionary before a SentencePiece model's pieces, which it shifts by one: its
# `<s>`, `<pad>`, `</s>`, `<unk>` take ids 0-3 and `<mask>` comes after the pieces.
FAIRSEQ_SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>")
FAIRSEQ_MASK_TOKEN = "<mask>"
# The pieces a fairseq SentencePiece model starts with, which that dictionary replaces.
_SENTENCEPIECE_SPECIAL_PIECES = ("<unk>", "<s>", "</s>")


def fairseq_vocabulary(proto: bytes) -> list[tuple[str, float]]:
    """`(piece, score)` of each id of a SentencePiece model under fairseq's dictionary.

    Raises:
        ConfigError: the model does not begin with `<unk>`, `<s>`, `</s>` (it was not trained
            for fairseq's layout, as XLM-RoBERTa's was).
    """
    pieces = read_sentencepiece_proto(proto).pieces
    first = tuple(piece for piece, _, _ in pieces[:3])
    if first != _SENTENCEPIECE_SPECIAL_PIECES:
        raise ConfigError(
            f"The SentencePiece model begins with {first}, not {_SENTENCEPIECE_SPECIAL_PIECES}: "
            "it is not an XLM-RoBERTa (fairseq) model; give the checkpoint's "
            "sentencepiece.bpe.model."
        )
    return [
        *((token, 0.0) for token in FAIRSEQ_SPECIAL_TOKENS),
        *((piece, score) for piece, score, _ in pieces[3:]),
        (FAIRSEQ_MASK_TOKEN, 0.0),
    ]


class _GraphOnce:
    """A `tf.function` of `[batch]` strings, held where TensorFlow's object tracking does not
    look: a SavedModel of the layer keeps its ops inline, not this eager shortcut."""

    def __init__(self, function):
        self._function = tf.function(
            function, input_signature=[tf.TensorSpec([None], tf.string)], autograph=False
        )

    def __call__(self, texts: tf.Tensor):
        return self._function(texts)


@keras.saving.register_keras_serializable(package="keras_bert")
class UnigramTokenizer(SentencePieceModelLayer):
    """Tokenizes raw strings into XLM-RoBERTa's ids, exactly as Hugging Face `tokenizers` does.

    The checkpoint's SentencePiece model (`sentencepiece.bpe.model`) under fairseq's dictionary
    (`<s>` 0, `<pad>` 1, `</s>` 2, `<unk>` 3, the model's pieces one id later, `<mask>` last),
    run through the steps of transformers' XLM-RoBERTa tokenizer (its `tokenizer.json`):

    1. special tokens written in the text (`<mask>`, `<s>`, ...) are tokens of their own; the
       text between them is tokenized part by part;
    2. the model's normalization rules, grapheme cluster by grapheme cluster as `tokenizers`
       applies them (`PrecompiledNormalizer`);
    3. split on whitespace (Unicode White_Space), "▁" put before each word and the words cut
       before each "▁" (`WhitespaceSplit`, `Metaspace`);
    4. each word segmented by Viterbi in float64 (`UnigramModel`), runs of unknown pieces fused.

    `sentencepiece` itself differs from this on NFKC text whose grapheme clusters it normalizes
    otherwise ("ﬁ" + U+0301), on whitespace its rules keep (U+0085), on tied segmentations and on
    fullwidth "＜ｓ＞" (a special piece for `tokenizers`); elsewhere, in every script, the ids
    are the same. Invalid UTF-8 is first replaced by U+FFFD, as with
    `bytes.decode("utf-8", errors="replace")`.

    Offsets (`tokenize_with_offsets`, byte offsets into the sanitised input): each piece spans
    the input characters its own characters come from, a grapheme cluster normalized whole
    being its characters' common source; a "▁" piece alone takes the span of the character
    after it, as in `tokenizers`.

    Args:
        proto: the `.model` file (path) or its bytes.
        special_tokens: tokens matched as written in the text; those not in the vocabulary are
            ignored.
        **kwargs: `keras.layers.Layer` arguments.

    Example:
    >>> from keras_bert.text import UnigramTokenizer
    >>> tokenizer = UnigramTokenizer(
    ...     "../shared/reference/variants/xlm_roberta/sentencepiece.bpe.model",
    ...     special_tokens=["<mask>"])
    >>> ids = tokenizer(["Le chat <mask>."])
    >>> tokenizer.id_to_token(ids).to_list()
    [[b'\\xe2\\x96\\x81Le', b'\\xe2\\x96\\x81ch', b'at', b'<mask>', b'\\xe2\\x96\\x81', b'.']]
    >>> tokenizer.token_to_id("<mask>"), tokenizer.vocabulary_size
    (4001, 4002)
    >>> _, starts, ends = tokenizer.tokenize_with_offsets(["Le chat <mask>."])
    >>> starts.to_list(), ends.to_list()
    ([[0, 3, 5, 8, 14, 14]], [[2, 5, 7, 14, 15, 15]])
    """

    def __init__(
        self, proto: str | os.PathLike | bytes, special_tokens: Sequence[str] = (), **kwargs
    ):
        super().__init__(proto, **kwargs)
        pieces = fairseq_vocabulary(self.proto)
        self._set_vocabulary([piece for piece, _ in pieces])
        self._normalizer = PrecompiledNormalizer(
            read_sentencepiece_proto(self.proto).precompiled_charsmap
        )
        self.unk_id = self._token_ids["<unk>"]
        self._model = UnigramModel(pieces, self.unk_id)
        self.special_tokens = [token for token in special_tokens if token in self._token_ids]
        self._special = SpecialTokens(
            {token: self._token_ids[token] for token in self.special_tokens}
        )
        self._whitespace = tf.constant(WHITESPACE_CHARS, tf.int32)
        self._eager_words = _GraphOnce(self._traced_words)

    def _words_with_offsets(self, texts: tf.Tensor) -> tuple[tf.RaggedTensor, ...]:
        """`(ids, starts, ends, word_starts, word_ends)` of each text's words: ids and byte
        spans ragged `[batch, (words), (pieces)]`, the words' spans `[batch, (words)]`.

        A word is a special token, or the text between whitespace after normalization. Called
        eagerly, the ops run as one traced graph (their loops would run op by op in Python).
        """
        texts = tf.convert_to_tensor(texts, dtype=tf.string)
        if tf.executing_eagerly():
            return self._eager_words(texts)
        return self._traced_words(texts)

    def _traced_words(self, texts: tf.Tensor) -> tuple[tf.RaggedTensor, ...]:
        """`_words_with_offsets` as ops of the graph being built."""
        parts = self._special.split(replace_invalid_utf8(texts))
        part_texts = parts.flat_values
        special_ids = self._special.ids(part_texts)
        part_bytes = tf.cast(tf.strings.length(part_texts), tf.int64)
        part_starts, part_ends = (
            span.flat_values
            for span in lay_end_to_end(
                tf.zeros_like(parts.row_starts()), parts.with_flat_values(part_bytes)
            )
        )
        # The text between special tokens, each character's byte span in its text.
        code_points, byte_starts = tf.strings.unicode_decode_with_offsets(
            tf.where(special_ids >= 0, "", part_texts), "UTF-8"
        )
        code_points = code_points.with_row_splits_dtype(tf.int64)
        byte_starts = byte_starts.flat_values + tf.gather(
            part_starts, row_ids(code_points.row_splits)
        )
        byte_ends = byte_starts + tf.cast(utf8_lengths(code_points.flat_values), tf.int64)
        normalized, source_starts, source_ends = self._normalizer.normalize(code_points)
        word_parts, word_tokens = self._part_words(
            normalized,
            tf.gather(byte_starts, source_starts.flat_values),
            tf.gather(byte_ends, source_ends.flat_values - 1),
        )
        # A special token is a word of its own, of one token: its id and the part's span.
        special = tf.where(special_ids >= 0)[:, 0]
        special_tokens = tf.stack(
            [tf.gather(values, special) for values in (special_ids, part_starts, part_ends)], 1
        )
        word_parts = tf.concat([word_parts, special], 0)
        word_tokens = tf.concat(
            [word_tokens, tf.RaggedTensor.from_tensor(special_tokens[:, tf.newaxis])], 0
        )
        # Words in the order of their parts (each part's words in order), tokens in each word.
        order = tf.argsort(word_parts, stable=True)
        word_tokens = tf.gather(word_tokens, order)
        words_per_text = tf.math.unsorted_segment_sum(
            tf.ones_like(order, tf.int64),
            tf.gather(row_ids(parts.row_splits), tf.gather(word_parts, order)),
            parts.nrows(),
        )
        tokens = word_tokens.flat_values

        def nested(values: tf.Tensor) -> tf.RaggedTensor:
            return tf.RaggedTensor.from_row_lengths(
                word_tokens.with_flat_values(values), words_per_text, validate=False
            )

        ids, starts, ends = (nested(tokens[:, column]) for column in range(3))
        # A word spans its first token's start to its last token's end.
        word_spans = (
            tf.gather(starts.values.flat_values, word_tokens.row_starts()),
            tf.gather(ends.values.flat_values, word_tokens.row_limits() - 1),
        )
        word_starts, word_ends = (
            tf.RaggedTensor.from_row_lengths(span, words_per_text, validate=False)
            for span in word_spans
        )
        return tf.cast(ids, tf.int32), starts, ends, word_starts, word_ends

    def _part_words(
        self, normalized: tf.RaggedTensor, source_starts: tf.Tensor, source_ends: tf.Tensor
    ) -> tuple[tf.Tensor, tf.RaggedTensor]:
        """The words of normalized parts, given each normalized code point's source byte span.

        Returns:
            `(word_parts, word_tokens)`: each word's part (int64 `[words]`), and its tokens'
            `(id, start, end)`, int64 ragged `[words, (tokens), 3]`.
        """
        flat = normalized.flat_values
        kept = tf.logical_not(
            tf.reduce_any(tf.equal(flat[:, tf.newaxis], self._whitespace), axis=1)
        )
        position = tf.range(tf.size(flat, out_type=tf.int64))
        part = row_ids(normalized.row_splits)
        previous_kept = tf.concat([[False], kept[:-1]], 0) & tf.not_equal(
            position, tf.gather(normalized.row_splits, part)
        )
        word_start = kept & tf.logical_not(previous_kept)
        boundary = tf.equal(flat, WORD_BOUNDARY)
        cut_start = word_start | (kept & boundary)
        # "▁" before each cut of a word that does not begin with one (`Metaspace`).
        kept_index = tf.where(kept)[:, 0]
        marked = tf.gather(cut_start & tf.logical_not(boundary), kept_index)
        points = tf.ragged.boolean_mask(
            tf.stack(
                [tf.fill(tf.shape(kept_index), WORD_BOUNDARY), tf.gather(flat, kept_index)], 1
            ),
            tf.stack([marked, tf.ones_like(marked)], 1),
        )
        point_row = row_ids(points.row_splits)
        point_source = tf.gather(kept_index, point_row)
        point_starts = tf.gather(source_starts, point_source)
        point_ends = tf.gather(source_ends, point_source)
        cut_of_point = tf.gather(
            tf.cumsum(tf.cast(tf.gather(cut_start, kept_index), tf.int64)) - 1, point_row
        )
        cuts = tf.RaggedTensor.from_value_rowids(
            points.flat_values,
            cut_of_point,
            nrows=tf.reduce_sum(tf.cast(cut_start, tf.int64)),
            validate=False,
        )
        ids, starts, ends = self._segment(cuts)
        first_point = tf.gather(cuts.row_starts(), row_ids(ids.row_splits))
        tokens = tf.stack(
            [
                tf.cast(ids.flat_values, tf.int64),
                tf.gather(point_starts, first_point + starts.flat_values),
                tf.gather(point_ends, first_point + ends.flat_values - 1),
            ],
            1,
        )
        word_of_cut = tf.cumsum(tf.cast(tf.boolean_mask(word_start, cut_start), tf.int64)) - 1
        tokens_per_word = tf.math.unsorted_segment_sum(
            ids.row_lengths(), word_of_cut, tf.reduce_sum(tf.cast(word_start, tf.int64))
        )
        word_tokens = tf.RaggedTensor.from_row_lengths(tokens, tokens_per_word, validate=False)
        return tf.boolean_mask(part, word_start), word_tokens

    def _segment(self, cuts: tf.RaggedTensor) -> tuple[tf.RaggedTensor, ...]:
        """`UnigramModel.segment` of each distinct cut, for every cut."""
        distinct, index = tf.unique(tf.strings.unicode_encode(cuts, "UTF-8"), out_idx=tf.int64)
        ids, starts, ends = self._model.segment(tf.strings.unicode_decode(distinct, "UTF-8"))
        segments = ids.with_flat_values(
            tf.stack([tf.cast(ids.flat_values, tf.int64), starts.flat_values, ends.flat_values], 1)
        )
        segments = tf.gather(segments, index)
        return tuple(
            segments.with_flat_values(segments.flat_values[:, column]) for column in range(3)
        )

    def call(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Ragged int32 ids `[batch, (tokens)]` (int64 row splits) of a `[batch]` string tensor."""
        return self._words_with_offsets(texts)[0].merge_dims(1, 2)

    def get_config(self) -> dict:
        return {**super().get_config(), "special_tokens": self.special_tokens}
