"""Moved to `keras_bert.decoding` (`entities`, `answers`), below the task models and the export
that use it."""

from keras_bert.deprecation import moved_names

__getattr__ = moved_names(
    {
        **dict.fromkeys(
            ("BEGIN", "INSIDE", "OUTSIDE", "BioTagTable", "bio_entities"),
            "keras_bert.decoding.entities",
        ),
        **dict.fromkeys(("MASKED_LOGIT", "best_answer_spans"), "keras_bert.decoding.answers"),
    },
    __name__,
)
