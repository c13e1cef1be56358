"""Texts given as Python lists (or NumPy arrays), checked before they become string tensors:
each fault is a one-line `DataError` that names the text at fault, where TensorFlow's
conversion would fail inside a layer, or read a list of numbers as something else."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from keras_bert.errors import DataError


def check_segments(segments: Sequence[Any], allow_empty: bool = True) -> None:
    """Raises a `DataError` for the segments of a batch (one, or a pair's two) that hold a text
    that is not a string (None, a number, a list), a NumPy array of texts that is not one row
    `[batch]`, no texts when not `allow_empty`, or lists of different lengths. Tensors, scalars
    and other values pass as they are.

    Example:
    >>> check_segments([["A premise."], ["A hypothesis."]])
    >>> check_segments([["A wonderful film", None]])
    Traceback (most recent call last):
    ...
    keras_bert.errors.DataError: Text 1 is None (NoneType), not a string: every text is a str \
(or UTF-8 bytes); for packed ids pass a dict of input_word_ids, input_mask, input_type_ids.
    """
    lengths = []
    for segment in segments:
        if not isinstance(segment, list | np.ndarray):
            continue
        if isinstance(segment, np.ndarray) and segment.ndim != 1:
            raise DataError(
                f"Texts are one list [batch]; this array's shape is {segment.shape}: ravel() it."
            )
        if len(segment) == 0 and not allow_empty:
            raise DataError("No texts: the list is empty.")
        for index, text in enumerate(segment):
            if not isinstance(text, str | bytes):
                raise DataError(
                    f"Text {index} is {text!r:.40} ({type(text).__name__}), not a string: "
                    "every text is a str (or UTF-8 bytes); for packed ids pass a dict of "
                    "input_word_ids, input_mask, input_type_ids."
                )
        lengths.append(len(segment))
    if len(set(lengths)) > 1:
        raise DataError(
            f"A pair's two lists differ in length: {lengths[0]} texts and {lengths[1]}."
        )
