"""A student for a teacher: which teacher layers it starts from, which it learns from, and its
initialisation (DistilBERT: a subset of the teacher's layers; TinyBERT: a narrower model)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from keras_bert.config import ConfigError
from keras_bert.layers import TransformerEncoderBlock
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.task import BertTask


def spread_layers(teacher_layers: int, student_layers: int) -> list[int]:
    """`student_layers` teacher layer indices spread evenly from the first to the last, as
    DistilBERT chose its 6 of BERT-Base's 12.

    Example:
    >>> spread_layers(12, 6)
    [0, 2, 4, 7, 9, 11]
    >>> spread_layers(6, 3), spread_layers(6, 2)
    ([0, 3, 5], [0, 5])
    """
    _check_layer_counts(teacher_layers, student_layers)
    if student_layers == 1:
        return [teacher_layers - 1]
    positions = np.arange(student_layers) * (teacher_layers - 1) / (student_layers - 1)
    return [int(index) for index in np.floor(positions + 0.5)]


def layer_map(teacher_layers: int, student_layers: int) -> list[int]:
    """The teacher layer each student layer learns from in the layer-wise losses: TinyBERT's
    `g(m) = m * k` with `k = teacher_layers / student_layers` (layers counted from 1), here as
    0-based indices; the embeddings map to the embeddings.

    Example:
    >>> layer_map(12, 4)
    [2, 5, 8, 11]
    >>> layer_map(6, 3), layer_map(6, 4)
    ([1, 3, 5], [1, 2, 4, 5])
    """
    _check_layer_counts(teacher_layers, student_layers)
    ratio = teacher_layers / student_layers
    return [int(np.floor((index + 1) * ratio + 0.5)) - 1 for index in range(student_layers)]


def _check_layer_counts(teacher_layers: int, student_layers: int) -> None:
    if not 1 <= student_layers <= teacher_layers:
        raise ConfigError(
            f"A student needs 1 to {teacher_layers} layers (the teacher's), got {student_layers}."
        )


def initialize_student(
    teacher: BertTask,
    num_layers: int,
    hidden_size: int | None = None,
    teacher_layers: Sequence[int] | None = None,
) -> BertTask:
    """A student of the teacher's task class with `num_layers` blocks.

    At the teacher's width the student starts as a copy of the teacher's embeddings, pooler,
    head and the blocks `teacher_layers` (default `spread_layers`). With another
    `hidden_size` it is a fresh, randomly initialised model with the teacher's head count and
    vocabulary, and a feed-forward layer scaled like the width (TinyBERT's students).

    Args:
        teacher: a trained `BertClassifier` or `BertTokenClassifier`.
        num_layers: the student's Transformer blocks.
        hidden_size: the student's width (default: the teacher's).
        teacher_layers: which teacher blocks to copy, one per student block, in order.

    Example:
    >>> from keras_bert import BertConfig, BertEncoder
    >>> from keras_bert.models import BertClassifier
    >>> teacher = BertClassifier(BertEncoder(BertConfig.preset("tiny", vocab_size=100)), 2)
    >>> student = initialize_student(teacher, num_layers=1)
    >>> student.encoder.bert_config.num_layers, type(student).__name__
    (1, 'BertClassifier')
    """
    teacher_config = teacher.encoder.bert_config
    hidden_size = hidden_size or teacher_config.hidden_size
    copies_teacher = hidden_size == teacher_config.hidden_size
    if teacher_layers is None:
        teacher_layers = spread_layers(teacher_config.num_layers, num_layers)
    elif not copies_teacher:
        raise ConfigError(
            f"Cannot copy teacher layers {list(teacher_layers)} into a student of width "
            f"{hidden_size} (the teacher's is {teacher_config.hidden_size})."
        )
    if len(teacher_layers) != num_layers or not all(
        0 <= index < teacher_config.num_layers for index in teacher_layers
    ):
        raise ConfigError(
            f"teacher_layers must name {num_layers} of the teacher's blocks "
            f"0 ... {teacher_config.num_layers - 1}, got {list(teacher_layers)}."
        )
    config = teacher_config.replace(
        num_layers=num_layers,
        hidden_size=hidden_size,
        intermediate_size=teacher_config.intermediate_size
        * hidden_size
        // teacher_config.hidden_size,
    )
    task_config = teacher.get_config()
    for key in ("encoder", "name"):
        task_config.pop(key)
    student = type(teacher)(BertEncoder(config, dtype=teacher.encoder.dtype_policy), **task_config)
    if copies_teacher:
        _copy_weights(teacher, student, teacher_layers)
    return student


def _copy_weights(teacher: BertTask, student: BertTask, teacher_layers: Sequence[int]) -> None:
    source, target = teacher.encoder, student.encoder
    # The encoder's layers outside its blocks (embeddings, and the pooler, final LayerNorm or
    # DeBERTa's relative embeddings where the family has them), found by name.
    pairs = [
        (layer, target.get_layer(layer.name))
        for layer in source.layers
        if layer.weights and not isinstance(layer, TransformerEncoderBlock)
    ]
    pairs += [
        (source.blocks[index], block)
        for index, block in zip(teacher_layers, target.blocks, strict=True)
    ]
    # The head: every layer of the task model outside the encoder, found by name.
    pairs += [
        (layer, student.get_layer(layer.name))
        for layer in teacher.layers
        if layer is not source and layer.weights
    ]
    for teacher_layer, student_layer in pairs:
        student_layer.set_weights(teacher_layer.get_weights())
