"""Raw text in a task model's `fit`, `evaluate` and `predict`: its preprocessor mapped over the
input pipeline (`tf.data`), so the tokenizer runs on the host and the model on the accelerator.

Texts are a list or array of strings `[batch]`; pairs a tuple of two of them
(`(premises, hypotheses)`, `(questions, contexts)`). A `tf.data.Dataset` yields batches of
texts, `(texts, labels)` or `(texts, labels, sample_weights)`; a dataset of unlabelled pairs
yields `((premises, hypotheses),)`. Packed ids (a dict of int tensors) pass through untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_bert.data.prefetching import prefetched
from keras_bert.errors import DataError
from keras_bert.text.text_lists import check_segments

DEFAULT_BATCH_SIZE = 32


def holds_text(inputs: Any) -> bool:
    """Whether `inputs` (texts, a pair of them, or a dataset's element spec) hold strings.

    Example:
    >>> holds_text(["A wonderful film"]), holds_text((["a"], ["b"])), holds_text({"ids": [1]})
    (True, True, False)
    """
    if isinstance(inputs, tf.data.Dataset):
        inputs = inputs.element_spec
    if isinstance(inputs, tf.TensorSpec | tf.RaggedTensorSpec):
        return inputs.dtype == tf.string
    if isinstance(inputs, dict):
        return any(holds_text(value) for value in inputs.values())
    if isinstance(inputs, tuple):
        return any(holds_text(value) for value in inputs)
    if isinstance(inputs, str | bytes):
        return True
    if isinstance(inputs, tf.Tensor):
        return inputs.dtype == tf.string
    if isinstance(inputs, list | np.ndarray):
        return len(inputs) > 0 and isinstance(np.asarray(inputs).flat[0], str | bytes)
    return False


def check_text_input(x: Any, allow_empty: bool = False) -> None:
    """Raises a `DataError` for texts in memory that no task reads: one string where a list of
    them goes, a tuple that is not a pair, or segments that `check_segments` refuses (no texts
    at all unless `allow_empty`). Datasets, tensors and packed ids pass unchecked.

    Example:
    >>> check_text_input((["a premise"], ["a hypothesis"]))
    >>> check_text_input("A wonderful film")
    Traceback (most recent call last):
    ...
    keras_bert.errors.DataError: One text ('A wonderful film') where a list of texts goes: \
pass [text].
    """
    if isinstance(x, tuple) and len(x) != 2:
        raise DataError(f"A pair of texts is a tuple of two lists; this tuple holds {len(x)}.")
    segments = x if isinstance(x, tuple) else (x,)
    for segment in segments:
        if isinstance(segment, str | bytes):
            raise DataError(f"One text ({segment[:40]!r}) where a list of texts goes: pass [text].")
    check_segments(segments, allow_empty)


def text_dataset(
    x: Any,
    y: Any = None,
    sample_weight: Any = None,
    batch_size: int | None = None,
    shuffle: bool = False,
) -> tf.data.Dataset:
    """Batches of `(x, y, sample_weight)` sliced from texts (or pairs) and their labels,
    shuffled anew each epoch if `shuffle` (as `fit` shuffles arrays).

    Example:
    >>> dataset = text_dataset(["good", "bad", "fine"], [1, 0, 1], batch_size=2)
    >>> [labels.numpy().tolist() for _, labels in dataset]
    [[1, 0], [1]]
    """
    if isinstance(x, tf.data.Dataset):
        if y is not None or sample_weight is not None or batch_size is not None:
            raise ValueError("A tf.data.Dataset holds its labels and batches: pass no y, ...")
        return x
    if isinstance(x, tuple):  # a pair: two segments, not two elements of a structure
        x = tuple(np.asarray(segment, dtype=object) for segment in x)
    elif not isinstance(x, tf.Tensor):
        x = np.asarray(x, dtype=object)
    elements = keras.utils.pack_x_y_sample_weight(x, y, sample_weight)
    dataset = tf.data.Dataset.from_tensor_slices(elements)
    if shuffle:
        dataset = dataset.shuffle(int(dataset.cardinality()), reshuffle_each_iteration=True)
    return dataset.batch(batch_size or DEFAULT_BATCH_SIZE)


def preprocessed(dataset: tf.data.Dataset, preprocessor: keras.layers.Layer) -> tf.data.Dataset:
    """`dataset` with `preprocessor` applied to the inputs of its batches, in the input pipeline.

    Example:
    >>> from keras_bert.text import BertPreprocessor
    >>> preprocessor = BertPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "good"], seq_length=4)
    >>> inputs, labels = next(iter(preprocessed(text_dataset(["good"], [1]), preprocessor)))
    >>> inputs["input_word_ids"].numpy().tolist(), labels.numpy().tolist()
    ([[2, 4, 3, 0]], [1])
    """

    def preprocess(*batch):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)
        return keras.utils.pack_x_y_sample_weight(preprocessor(x), y, sample_weight)

    return prefetched(dataset.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE))


def in_batches(
    function: Callable[..., dict[str, tf.Tensor]], texts: Sequence[Sequence[str]], batch_size: int
) -> dict[str, np.ndarray]:
    """`function`'s outputs on `texts` (one list per argument, checked by `check_text_input`;
    empty lists give outputs of no rows) in batches, joined along rows; `function` is traced
    once, for string batches `[batch]`.

    Example:
    >>> outputs = in_batches(lambda text: {"length": tf.strings.length(text)}, [["ab", "c"]], 1)
    >>> outputs["length"].tolist()
    [2, 1]
    """
    check_text_input(texts[0] if len(texts) == 1 else tuple(texts), allow_empty=True)
    function = tf.function(
        function, input_signature=[tf.TensorSpec([None], tf.string)] * len(texts)
    )
    batches = []
    for start in range(0, len(texts[0]) or 1, batch_size):
        arguments = [
            tf.constant(list(column[start : start + batch_size]), tf.string) for column in texts
        ]
        batches.append({name: value.numpy() for name, value in function(*arguments).items()})
    return {name: np.concatenate([batch[name] for batch in batches]) for name in batches[0]}
