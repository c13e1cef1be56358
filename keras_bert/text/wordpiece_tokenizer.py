"""`WordPieceTokenizer`: raw strings to BERT WordPiece ids inside the TensorFlow graph."""

import os
import shutil
import tempfile
import weakref
from collections.abc import Sequence

import keras
import tensorflow as tf

from keras_bert.text.normalization import split_words
from keras_bert.text.special_tokens import UNK_TOKEN
from keras_bert.text.text_ops import tf_text
from keras_bert.text.vocabulary import (
    check_vocabulary,
    infer_lowercase,
    load_vocabulary,
    save_vocabulary,
)

# `tokenizers`' WordPiece maps a word of more than 100 characters (not bytes) to [UNK].
MAX_CHARS_PER_WORD = 100
# FastWordpiece's own limit counts bytes; 4 bytes per character keeps it out of the way.
_MAX_BYTES_PER_WORD = 4 * MAX_CHARS_PER_WORD


def _cap_word_length(words: tf.Tensor) -> tf.Tensor:
    """Replaces words of more than `MAX_CHARS_PER_WORD` characters by [UNK]."""
    too_long = tf.strings.length(words, unit="UTF8_CHAR") > MAX_CHARS_PER_WORD
    return tf.where(too_long, UNK_TOKEN, words)


@keras.saving.register_keras_serializable(package="keras_bert")
class WordPieceTokenizer(keras.layers.Layer):
    """Tokenizes raw strings into BERT WordPiece ids, exactly as Hugging Face `tokenizers` does.

    Normalisation and pre-tokenisation follow `BertNormalizer` + `BertPreTokenizer` (see
    `keras_bert.text.normalization`); special tokens written in the text ("the [MASK] sat") are
    single tokens. WordPiece is greedy longest-match-first with "##" continuations; a word with
    an unmatched part, or of more than 100 characters, becomes [UNK]. Everything is TensorFlow
    ops (tensorflow-text's `RegexSplitWithOffsets`, `NormalizeUTF8`, `FastWordpieceTokenizer`),
    so it runs in `tf.data` and in SavedModels served by TensorFlow Serving.

    Offsets are byte offsets into the UTF-8 input (into its sanitised form if it is not valid
    UTF-8: each invalid sequence becomes the 3 bytes of U+FFFD, see `normalization`). A word
    whose normalisation only lowercases ASCII letters gives each piece its exact span; any other
    word (accents, removed control characters, non-ASCII case) gives each of its pieces the span
    of the whole raw word.

    The vocabulary file is a tracked `tf.saved_model.Asset`: a SavedModel of this layer holds
    `assets/vocab.txt`, read back by the id-to-token table of `id_to_token`.

    Args:
        vocabulary: path of a `vocab.txt`, or the list of tokens (the id is the index).
        lowercase: uncased normalisation (NFD, strip accents, lowercase), as for uncased BERT;
            None for the vocabulary's casing: uncased unless it holds uppercase word pieces.
        **kwargs: `keras.layers.Layer` arguments (`name`, ...).

    Example:
    >>> from keras_bert.text import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer(
    ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "."]
    ... )
    >>> tokenizer(["The cats sat."]).to_list()
    [[5, 6, 8, 7, 9]]
    >>> ids, starts, ends = tokenizer.tokenize_with_offsets(["The cats sat."])
    >>> starts.to_list(), ends.to_list()
    ([[0, 4, 7, 9, 12]], [[3, 7, 8, 12, 13]])
    >>> tokenizer.id_to_token(ids).to_list()
    [[b'the', b'cat', b'##s', b'sat', b'.']]
    """

    def __init__(
        self,
        vocabulary: str | os.PathLike | Sequence[str],
        lowercase: bool | None = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        scratch = None
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary_path = os.fspath(vocabulary)
            self.vocabulary = load_vocabulary(vocabulary_path)
        else:
            self.vocabulary = list(vocabulary)
            check_vocabulary(self.vocabulary)
            # An Asset needs a file; SavedModel export copies it to `assets/vocab.txt`. The file
            # lives as long as the Asset that names it (or the process).
            scratch = tempfile.mkdtemp(prefix="keras_bert_vocab_")
            vocabulary_path = os.path.join(scratch, "vocab.txt")
            save_vocabulary(self.vocabulary, vocabulary_path)
        self.lowercase = infer_lowercase(self.vocabulary) if lowercase is None else lowercase
        self.vocabulary_asset = tf.saved_model.Asset(vocabulary_path)
        if scratch is not None:
            weakref.finalize(self.vocabulary_asset, shutil.rmtree, scratch, ignore_errors=True)
        self._id_to_token_table = tf.lookup.StaticHashTable(
            tf.lookup.TextFileInitializer(
                self.vocabulary_asset,
                key_dtype=tf.int64,
                key_index=tf.lookup.TextFileIndex.LINE_NUMBER,
                value_dtype=tf.string,
                value_index=tf.lookup.TextFileIndex.WHOLE_LINE,
            ),
            default_value=UNK_TOKEN,
        )
        self._wordpiece = tf_text().FastWordpieceTokenizer(
            vocab=self.vocabulary,
            suffix_indicator="##",
            max_bytes_per_word=_MAX_BYTES_PER_WORD,
            token_out_type=tf.int32,
            unknown_token=UNK_TOKEN,
            no_pretokenization=True,
        )
        # A preprocessing layer: string inputs, no weights, nothing to build.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def token_to_id(self, token: str) -> int:
        """The id of `token` in the vocabulary (`ValueError` if absent)."""
        return self.vocabulary.index(token)

    @property
    def vocabulary_size(self) -> int:
        return len(self.vocabulary)

    def tokenize_with_offsets(
        self, texts: tf.Tensor
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """Tokenizes a `[batch]` string tensor.

        Returns:
            `(ids, starts, ends)`: int32 ids and int64 byte offsets `[start, end)` into each
            input, all ragged `[batch, (tokens)]`.
        """
        words, raw_words, word_starts, word_ends = split_words(texts, self.lowercase)
        flat_words = _cap_word_length(words.flat_values)
        ids, piece_starts, piece_ends = self._wordpiece.tokenize_with_offsets(flat_words)
        # Piece offsets index the normalised word; they are raw offsets only if the normaliser
        # changed nothing but ASCII case (lowercase of the raw word equals the normalised one).
        raw_words = raw_words.flat_values
        aligned = tf.equal(flat_words, tf.strings.lower(raw_words) if self.lowercase else raw_words)
        word_starts = word_starts.flat_values[:, tf.newaxis]
        word_ends = word_ends.flat_values[:, tf.newaxis]
        aligned = aligned[:, tf.newaxis]
        starts = tf.where(aligned, word_starts + piece_starts, word_starts)
        ends = tf.where(aligned, word_starts + piece_ends, word_ends)
        return tuple(
            words.with_flat_values(values).merge_dims(1, 2) for values in (ids, starts, ends)
        )

    def tokenize_words_with_offsets(
        self, texts: tf.Tensor
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """Tokenizes a `[batch]` string tensor, keeping the pre-tokenized words.

        Words are those of the pre-tokenizer (split on whitespace, punctuation and CJK
        characters); every word has at least one piece. `ids.merge_dims(1, 2)` equals `call`.

        Returns:
            `(ids, word_starts, word_ends)`: int32 ids ragged `[batch, (words), (pieces)]`, and
            each word's int64 byte span `[start, end)` in the raw input, ragged
            `[batch, (words)]`.
        """
        words, _, word_starts, word_ends = split_words(texts, self.lowercase)
        ids = self._wordpiece.tokenize(_cap_word_length(words.flat_values))
        return words.with_flat_values(ids), word_starts, word_ends

    def call(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Ragged int32 ids `[batch, (tokens)]` of a `[batch]` string tensor."""
        return self.tokenize_words_with_offsets(texts)[0].merge_dims(1, 2)

    def tokenize_split_words(self, words: tf.RaggedTensor) -> tf.RaggedTensor:
        """Ids of pre-split words `[batch, (words)]` → int32 `[batch, (words), (pieces)]`, each
        word tokenized alone."""
        return words.with_flat_values(self(words.flat_values))

    def id_to_token(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """Maps ids (dense or ragged, any int dtype) to their token strings."""
        return tf.ragged.map_flat_values(
            lambda values: self._id_to_token_table.lookup(tf.cast(values, tf.int64)), ids
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"vocabulary": self.vocabulary, "lowercase": self.lowercase})
        return config
