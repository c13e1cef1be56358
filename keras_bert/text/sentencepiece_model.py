"""A SentencePiece model file (`ModelProto`): its bytes, checked, and its pieces and normalizer
settings, read from the protobuf wire format; the base of the layers that tokenize with one."""

from __future__ import annotations

import base64
import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.text.text_ops import tf_text


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
        tf_text().SentencepieceTokenizer(proto).vocab_size()
    except (tf.errors.InternalError, tf.errors.InvalidArgumentError):
        raise ConfigError(
            f"{source} is not a SentencePiece model (its bytes are no sentencepiece ModelProto): "
            "replace it with the tokenizer's own .model file."
        ) from None
    return proto


@dataclasses.dataclass(frozen=True)
class SentencePieceProto:
    """A SentencePiece model's `(piece, score, type)` per id, its unknown piece's id and its
    normalizer's rules (`precompiled_charsmap`) and settings."""

    pieces: list[tuple[str, float, int]]
    unk_id: int
    precompiled_charsmap: bytes
    add_dummy_prefix: bool
    remove_extra_whitespaces: bool


def _protobuf_fields(data: bytes):
    """(field number, wire type, value) of a serialized protobuf message, in order."""
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, position = _varint(data, position)
        elif wire_type == 1:
            value, position = data[position : position + 8], position + 8
        elif wire_type == 2:
            length, position = _varint(data, position)
            value, position = data[position : position + length], position + length
        elif wire_type == 5:
            value, position = data[position : position + 4], position + 4
        else:
            raise ConfigError(f"Unreadable SentencePiece model (protobuf wire type {wire_type}).")
        yield number, wire_type, value


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, position


# sentencepiece_model.proto: ModelProto.pieces = 1, .normalizer_spec = 3; SentencePiece.piece
# = 1, .score = 2, .type = 3 (2: UNKNOWN); NormalizerSpec.precompiled_charsmap = 2,
# .add_dummy_prefix = 3, .remove_extra_whitespaces = 4 (both default true).
_UNKNOWN_TYPE = 2


def read_sentencepiece_proto(proto: bytes) -> SentencePieceProto:
    """The pieces and normalizer settings of a serialized SentencePiece `ModelProto`, read from
    the protobuf wire format (the `sentencepiece` package's generated module needs a newer
    protobuf runtime than TensorFlow's)."""
    pieces, charsmap, settings = [], b"", {3: True, 4: True}
    for number, _, value in _protobuf_fields(proto):
        if number == 1:
            piece, score, kind = "", 0.0, 1
            for field, _, field_value in _protobuf_fields(value):
                if field == 1:
                    piece = field_value.decode("utf-8")
                elif field == 2:
                    score = float(np.frombuffer(field_value, "<f4")[0])
                elif field == 3:
                    kind = field_value
            pieces.append((piece, score, kind))
        elif number == 3:
            for field, _, field_value in _protobuf_fields(value):
                if field == 2:
                    charsmap = field_value
                elif field in settings:
                    settings[field] = bool(field_value)
    unknown = [index for index, (_, _, kind) in enumerate(pieces) if kind == _UNKNOWN_TYPE]
    return SentencePieceProto(
        pieces, unknown[0] if unknown else 0, charsmap, settings[3], settings[4]
    )


class SentencePieceModelLayer(keras.layers.Layer):
    """The base of the tokenizer layers that read a SentencePiece model file
    (`SentencePieceTokenizer`, `UnigramTokenizer`): the model's bytes, checked and saved in
    the layer's config, its vocabulary (set by the subclass), the lookups over it and the
    views of its words' offsets (from the subclass's `_words_with_offsets`: ids and their
    byte spans ragged `[batch, (words), (pieces)]`, the words' spans `[batch, (words)]`).

    Args:
        proto: the `.model` file (path) or its bytes.
        **kwargs: `keras.layers.Layer` arguments.
    """

    def __init__(self, proto: str | os.PathLike | bytes, **kwargs):
        super().__init__(**kwargs)
        self.proto = read_sentencepiece_model(proto)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def _set_vocabulary(self, vocabulary: list[str]) -> None:
        """The token of each id."""
        self.vocabulary = vocabulary
        self._token_ids = {token: index for index, token in enumerate(vocabulary)}
        self._pieces = tf.constant(vocabulary)

    def token_to_id(self, token: str) -> int:
        """The id of piece `token` (`ValueError` if absent)."""
        if token not in self._token_ids:
            raise ValueError(f"{token!r} is not a piece of this SentencePiece model")
        return self._token_ids[token]

    @property
    def vocabulary_size(self) -> int:
        return len(self.vocabulary)

    def _words_with_offsets(self, texts: tf.Tensor) -> tuple[tf.RaggedTensor, ...]:
        raise NotImplementedError

    def tokenize_with_offsets(
        self, texts: tf.Tensor
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """Tokenizes a `[batch]` string tensor (see the subclass's docstring for the spans).

        Returns:
            `(ids, starts, ends)`: int32 ids (those of `call`) and int64 byte offsets
            `[start, end)` into each (sanitised) input, all ragged `[batch, (tokens)]`.
        """
        ids, starts, ends, _, _ = self._words_with_offsets(texts)
        return tuple(values.merge_dims(1, 2) for values in (ids, starts, ends))

    def tokenize_words_with_offsets(
        self, texts: tf.Tensor
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """Tokenizes a `[batch]` string tensor, keeping its words (the subclass says which:
        whitespace-separated ones, words without pieces left out). `ids.merge_dims(1, 2)`
        equals `call`.

        Returns:
            `(ids, word_starts, word_ends)`: int32 ids ragged `[batch, (words), (pieces)]`, and
            each word's int64 byte span `[start, end)` in the (sanitised) input, ragged
            `[batch, (words)]`.
        """
        ids, _, _, word_starts, word_ends = self._words_with_offsets(texts)
        return ids, word_starts, word_ends

    def tokenize_split_words(self, words: tf.RaggedTensor) -> tf.RaggedTensor:
        """Ids of pre-split words `[batch, (words)]` → int32 `[batch, (words), (pieces)]`, each
        word tokenized alone (as Hugging Face's `is_split_into_words=True`)."""
        return words.with_flat_values(self.call(words.flat_values))

    def id_to_token(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """Maps ids (dense or ragged, any int dtype) to their pieces."""
        return tf.ragged.map_flat_values(lambda values: tf.gather(self._pieces, values), ids)

    def get_config(self) -> dict:
        return {**super().get_config(), "proto": base64.b64encode(self.proto).decode("ascii")}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**{**config, "proto": base64.b64decode(config["proto"])})
