"""A SentencePiece model file (`ModelProto`): its bytes, checked, and its pieces and normalizer
settings, read from the protobuf wire format."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.errors import ConfigError


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
