"""Moved to `keras_bert.decoding.bio_tags`, below the task models and the export that use it."""

from keras_bert.deprecation import moved_names

__getattr__ = moved_names(
    dict.fromkeys(("EntitySpan", "bio_spans", "parse_bio_tag"), "keras_bert.decoding.bio_tags"),
    __name__,
)
