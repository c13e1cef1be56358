"""`SentencePieceTokenizer`: raw strings to SentencePiece ids (ALBERT, DeBERTa-v3) in the graph."""

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import keras
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.text import python_unicode_tables
from keras_bert.text.albert_preprocessing import albert_preprocess
from keras_bert.text.normalization import char_class, replace_invalid_utf8
from keras_bert.text.offsets import lay_end_to_end
from keras_bert.text.ragged_rows import row_ids
from keras_bert.text.sentencepiece_model import SentencePieceModelLayer
from keras_bert.text.special_token_split import SpecialTokens
from keras_bert.text.text_ops import regex_split_with_offsets, tf_text

if TYPE_CHECKING:
    import tensorflow_text

WORD_BOUNDARY = "\u2581"  # "▁", SentencePiece's marker of a preceding space


def _is_digit_comma(piece: str) -> bool:
    """google-research/albert's test for a piece to re-split: "9," -> "9" ","."""
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


@keras.saving.register_keras_serializable(package="keras_bert")
class SentencePieceTokenizer(SentencePieceModelLayer):
    """Tokenizes raw strings into SentencePiece ids, exactly as the `sentencepiece` library does.

    The model's own normalizer (e.g. `nmt_nfkc`) and segmentation run in tensorflow-text's
    `FastSentencepieceTokenizer` op, which resolves ties between equally scored segmentations
    as `sentencepiece` 0.2 does ("...." is "." "..."); tensorflow-text's older
    `SentencepieceTokenizer` op resolves them otherwise, so it is not used. Invalid UTF-8 is
    first replaced by U+FFFD, as `bytes.decode("utf-8", errors="replace")` does. DeBERTa-v3
    is this and nothing else (`albert_preprocessing=False`).

    With `albert_preprocessing=True` the text first goes through ALBERT's original Python
    preprocessing (`keras_bert.text.albert_preprocessing`: whitespace collapsed, `` and '' to
    ", NFKD without combining marks, lower case if `lowercase`), and pieces of a digit then a
    comma ("▁1990,") are re-split as google-research/albert's `encode_pieces` does.

    On fullwidth letters, ligatures and other NFKC text, Hugging Face's tokenizers in
    transformers 5 give other ids than `sentencepiece` (their normalizer differs); this layer
    follows `sentencepiece`, the library the models were trained with.

    Offsets (`tokenize_with_offsets`, byte offsets into the sanitised input): the normalizers
    run inside tensorflow-text's op, which reports no alignment, so the text is cut into
    whitespace-separated words (the characters the model treats as a space) and each word is
    tokenized alone, which gives the ids of `call`: SentencePiece pieces never cross a space.
    Where a word's pieces spell it (after ALBERT's ASCII lowercasing; "▁" left out), each
    piece gets its exact span, as `sentencepiece`'s own spans without the space before a
    word; in any other word (accents stripped or composed, unknown pieces) every piece gets
    the whole word's span.

    Args:
        proto: the `.model` file (path) or its bytes.
        albert_preprocessing: apply ALBERT's preprocessing and "9," split.
        lowercase: with `albert_preprocessing`, lower-case the text (uncased ALBERT).
        special_tokens: pieces matched as written in the text ("[MASK]"), as Hugging Face's
            tokenizers match their special tokens (`sentencepiece` does not); the text
            between them is tokenized part by part. Those not in the vocabulary are ignored.
        **kwargs: `keras.layers.Layer` arguments.

    Example:
    >>> from keras_bert.text import SentencePieceTokenizer
    >>> tokenizer = SentencePieceTokenizer("../shared/reference/variants/deberta_v3/spm.model")
    >>> ids = tokenizer(["The cat sat."])
    >>> tokenizer.id_to_token(ids).to_list()
    [[b'\\xe2\\x96\\x81The', b'\\xe2\\x96\\x81c', b'at', b'\\xe2\\x96\\x81sat', b'.']]
    >>> tokenizer.token_to_id("[CLS]"), tokenizer.vocabulary_size
    (1, 3000)
    >>> _, starts, ends = tokenizer.tokenize_with_offsets(["The cat sat."])
    >>> starts.to_list(), ends.to_list()
    ([[0, 4, 5, 8, 11]], [[3, 5, 7, 11, 12]])
    """

    def __init__(
        self,
        proto: str | os.PathLike | bytes,
        albert_preprocessing: bool = False,
        lowercase: bool = False,
        special_tokens: Sequence[str] = (),
        **kwargs,
    ):
        if lowercase and not albert_preprocessing:
            raise ConfigError("lowercase is part of ALBERT's preprocessing: set both or neither.")
        super().__init__(proto, **kwargs)
        self.albert_preprocessing = albert_preprocessing
        self.lowercase = lowercase
        self._sentencepiece = tf_text().FastSentencepieceTokenizer(self.proto)
        # The vocabulary and piece lookups, read once here with the (not exported) classic op.
        model = tf_text().SentencepieceTokenizer(self.proto)
        pieces = model.id_to_string(tf.range(self._sentencepiece.vocab_size()))
        self._set_vocabulary([piece.decode("utf-8") for piece in pieces.numpy()])
        self._split_pieces = self._digit_comma_splits(model) if albert_preprocessing else None
        self.special_tokens = [token for token in special_tokens if token in self._token_ids]
        self._special = SpecialTokens(
            {token: self._token_ids[token] for token in self.special_tokens}
        )
        surfaces = [piece.replace(WORD_BOUNDARY, "") for piece in self.vocabulary]
        self._surfaces = tf.constant(surfaces)
        self._surface_lengths = tf.constant([len(s.encode("utf-8")) for s in surfaces], tf.int64)
        self._separator_pattern = f"[{char_class(self._word_separators())}]+"

    def _digit_comma_splits(
        self, model: "tensorflow_text.SentencepieceTokenizer"
    ) -> tf.RaggedTensor | None:
        """Each id's pieces after the "9," split (`[id]` for most), or None if none splits.

        google-research/albert re-encodes such a piece without its comma and "▁" markers,
        removes the "▁" that encoding adds if the piece had none, and appends the comma.
        """
        splits = [[index] for index in range(len(self.vocabulary))]
        for index, piece in enumerate(self.vocabulary):
            if not _is_digit_comma(piece):
                continue
            ids = self._sentencepiece.tokenize(piece[:-1].replace(WORD_BOUNDARY, ""))
            pieces = [self.vocabulary[piece_id] for piece_id in ids.numpy()]
            if not piece.startswith(WORD_BOUNDARY) and pieces[0].startswith(WORD_BOUNDARY):
                pieces = pieces[1:] if pieces[0] == WORD_BOUNDARY else [pieces[0][1:], *pieces[1:]]
            # Pieces absent from the vocabulary get the unknown id, as `PieceToId` gives.
            splits[index] = model.string_to_id([*pieces, ","]).numpy().tolist()
        if all(len(split) == 1 for split in splits):
            return None
        return tf.ragged.constant(splits, dtype=tf.int32, row_splits_dtype=tf.int64)

    def _word_separators(self) -> list[tuple[int, int]]:
        """The whitespace (as Python's `str.split` knows it) that the model treats as a space.

        ALBERT's preprocessing turns all of it into spaces; otherwise a character is kept if
        "the<char>cat" tokenizes as "the cat" (`nmt_nfkc` removes \x0b, \x1c-\x1f and \x85).
        """
        characters = [
            code
            for first, last in python_unicode_tables.WHITESPACE_CHARS
            for code in range(first, last + 1)
        ]
        if not self.albert_preprocessing:
            probes = self._sentencepiece.tokenize([f"the{chr(code)}cat" for code in characters])
            spaced = self._sentencepiece.tokenize("the cat").numpy().tolist()
            characters = [
                code
                for code, ids in zip(characters, probes.to_list(), strict=True)
                if ids == spaced
            ]
        return [(code, code) for code in characters]

    def call(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Ragged int32 ids `[batch, (tokens)]` (int64 row splits) of a `[batch]` string tensor."""
        texts = replace_invalid_utf8(tf.convert_to_tensor(texts, dtype=tf.string))
        if not self.special_tokens:
            return self._tokenize(texts)
        parts = self._special.split(texts)
        ids = self._special.with_special_ids(parts.flat_values, self._tokenize(parts.flat_values))
        return parts.with_flat_values(ids).merge_dims(1, 2)

    def _tokenize(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """The ids of sanitised texts `[n]` without special tokens, `[n, (pieces)]`."""
        if self.albert_preprocessing:
            texts = albert_preprocess(texts, self.lowercase)
        ids = self._sentencepiece.tokenize(texts).with_row_splits_dtype(tf.int64)
        if self._split_pieces is not None:
            split = tf.gather(self._split_pieces, ids.flat_values)
            ids = ids.with_flat_values(split).merge_dims(1, 2)
        return ids

    def _words_with_offsets(self, texts: tf.Tensor) -> tuple[tf.RaggedTensor, ...]:
        """`(int32 ids [batch, (words), (pieces)], piece starts and ends like the ids, word
        starts and ends [batch, (words)])` of the words that have pieces."""
        texts = replace_invalid_utf8(tf.convert_to_tensor(texts, dtype=tf.string))
        # RegexSplitWithOffsets stops at a NUL; \x01 (no separator either) keeps the offsets.
        _, starts, ends = regex_split_with_offsets(
            tf.strings.regex_replace(texts, r"\x00", "\x01"), self._separator_pattern
        )
        rows = row_ids(starts.row_splits)
        starts, ends = starts.flat_values, ends.flat_values
        words = tf.strings.substr(tf.gather(texts, rows), starts, ends - starts)
        ids = self.call(words)
        # Drop the words without pieces (all their characters removed by normalization).
        has_pieces = ids.row_lengths() > 0
        ids, words, starts, ends = (
            tf.ragged.boolean_mask(values, has_pieces) for values in (ids, words, starts, ends)
        )
        row_lengths = tf.math.unsorted_segment_sum(
            tf.cast(has_pieces, tf.int64), rows, tf.size(texts, out_type=tf.int64)
        )
        spelled = tf.strings.lower(words) if self.lowercase else words
        pieces_spell_word = tf.equal(
            tf.strings.reduce_join(tf.gather(self._surfaces, ids), axis=-1), spelled
        )
        lengths = ids.with_flat_values(tf.gather(self._surface_lengths, ids.flat_values))
        exact_starts, exact_ends = lay_end_to_end(starts, lengths)
        word_of_piece = row_ids(ids.row_splits)
        exact = tf.gather(pieces_spell_word, word_of_piece)
        piece_spans = (
            ids.with_flat_values(
                tf.where(exact, exact_span.flat_values, tf.gather(whole, word_of_piece))
            )
            for exact_span, whole in ((exact_starts, starts), (exact_ends, ends))
        )
        as_texts = lambda values: tf.RaggedTensor.from_row_lengths(  # noqa: E731
            values, row_lengths, validate=False
        )
        return (
            as_texts(ids),
            *(as_texts(span) for span in piece_spans),
            as_texts(starts),
            as_texts(ends),
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "albert_preprocessing": self.albert_preprocessing,
                "lowercase": self.lowercase,
                "special_tokens": self.special_tokens,
            }
        )
        return config
