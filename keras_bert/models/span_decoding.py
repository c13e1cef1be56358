"""Moved to `keras_bert.decoding.answers`, below the task models and the export that use it."""

from keras_bert.deprecation import moved_names

__getattr__ = moved_names(
    dict.fromkeys(("Answer", "decode_answers"), "keras_bert.decoding.answers"), __name__
)
