"""`SentencePieceTokenizer`: raw strings to SentencePiece ids (ALBERT, DeBERTa-v3) in the graph."""

import base64
import os

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.errors import ConfigError
from keras_bert.text.albert_preprocessing import albert_preprocess
from keras_bert.text.normalization import replace_invalid_utf8

WORD_BOUNDARY = "\u2581"  # "▁", SentencePiece's marker of a preceding space


def read_sentencepiece_model(proto: str | os.PathLike | bytes) -> bytes:
    """The serialized `ModelProto` of a `.model` file path (or the bytes themselves), checked.

    Raises:
        FileNotFoundError: there is no such file.
        ConfigError: the bytes are not a SentencePiece model.
    """
    if isinstance(proto, (str, os.PathLike)):
        path = os.fspath(proto)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"SentencePiece model file not found: {path!r}")
        with open(path, "rb") as file:
            proto, source = file.read(), repr(path)
    else:
        proto, source = bytes(proto), "the given bytes"
    try:
        tf_text.SentencepieceTokenizer(proto).vocab_size()
    except (tf.errors.InternalError, tf.errors.InvalidArgumentError) as error:
        raise ConfigError(
            f"{source} is not a SentencePiece model ({error.message.splitlines()[0]})"
        ) from None
    return proto


def _is_digit_comma(piece: str) -> bool:
    """google-research/albert's test for a piece to re-split: "9," -> "9" ","."""
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


@keras.saving.register_keras_serializable(package="keras_bert")
class SentencePieceTokenizer(keras.layers.Layer):
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

    Args:
        proto: the `.model` file (path) or its bytes.
        albert_preprocessing: apply ALBERT's preprocessing and "9," split.
        lowercase: with `albert_preprocessing`, lower-case the text (uncased ALBERT).
        **kwargs: `keras.layers.Layer` arguments.

    Example:
    >>> from keras_bert.text import SentencePieceTokenizer
    >>> tokenizer = SentencePieceTokenizer("../shared/reference/variants/deberta_v3/spm.model")
    >>> ids = tokenizer(["The cat sat."])
    >>> tokenizer.id_to_token(ids).to_list()
    [[b'\\xe2\\x96\\x81The', b'\\xe2\\x96\\x81c', b'at', b'\\xe2\\x96\\x81sat', b'.']]
    >>> tokenizer.token_to_id("[CLS]"), tokenizer.vocabulary_size
    (1, 3000)
    """

    def __init__(
        self,
        proto: str | os.PathLike | bytes,
        albert_preprocessing: bool = False,
        lowercase: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if lowercase and not albert_preprocessing:
            raise ConfigError("lowercase is part of ALBERT's preprocessing: set both or neither.")
        self.proto = read_sentencepiece_model(proto)
        self.albert_preprocessing = albert_preprocessing
        self.lowercase = lowercase
        self._sentencepiece = tf_text.FastSentencepieceTokenizer(self.proto)
        # The vocabulary and piece lookups, read once here with the (not exported) classic op.
        model = tf_text.SentencepieceTokenizer(self.proto)
        pieces = model.id_to_string(tf.range(self._sentencepiece.vocab_size()))
        self.vocabulary = [piece.decode("utf-8") for piece in pieces.numpy()]
        self._token_ids = {token: index for index, token in enumerate(self.vocabulary)}
        self._pieces = tf.constant(self.vocabulary)
        self._split_pieces = self._digit_comma_splits(model) if albert_preprocessing else None
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def _digit_comma_splits(self, model: tf_text.SentencepieceTokenizer) -> tf.RaggedTensor | None:
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

    def token_to_id(self, token: str) -> int:
        """The id of piece `token` (`ValueError` if absent)."""
        if token not in self._token_ids:
            raise ValueError(f"{token!r} is not a piece of this SentencePiece model")
        return self._token_ids[token]

    @property
    def vocabulary_size(self) -> int:
        return len(self.vocabulary)

    def call(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Ragged int32 ids `[batch, (tokens)]` (int64 row splits) of a `[batch]` string tensor."""
        texts = tf.convert_to_tensor(texts, dtype=tf.string)
        if self.albert_preprocessing:
            texts = albert_preprocess(texts, self.lowercase)
        else:
            texts = replace_invalid_utf8(texts)
        ids = self._sentencepiece.tokenize(texts).with_row_splits_dtype(tf.int64)
        if self._split_pieces is not None:
            split = tf.gather(self._split_pieces, ids.flat_values)
            ids = ids.with_flat_values(split).merge_dims(1, 2)
        return ids

    def id_to_token(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """Maps ids (dense or ragged, any int dtype) to their pieces."""
        return tf.ragged.map_flat_values(lambda values: tf.gather(self._pieces, values), ids)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "proto": base64.b64encode(self.proto).decode("ascii"),
                "albert_preprocessing": self.albert_preprocessing,
                "lowercase": self.lowercase,
            }
        )
        return config

    @classmethod
    def from_config(cls, config: dict) -> "SentencePieceTokenizer":
        return cls(**{**config, "proto": base64.b64decode(config["proto"])})
