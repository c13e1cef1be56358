"""Task decoding in NumPy for `OnnxModel`: the same answers as the SavedModel's signatures
compute in the graph (`keras_bert.decoding`), from
the ONNX model's outputs and the tokenizer's character offsets.

Nothing here imports TensorFlow.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# As `keras_bert.decoding.answers.MASKED_LOGIT`: stands in for -inf in masked logits.
MASKED_LOGIT = -1e9


def softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in float32.

    Example:
    >>> softmax(np.array([[0.0, 0.0]])).tolist()
    [[0.5, 0.5]]
    """
    logits = np.asarray(logits, np.float32)
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    logits = np.asarray(logits, np.float32)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def best_answer_span(
    start_logits: np.ndarray, end_logits: np.ndarray, is_context: np.ndarray, max_answer_length: int
) -> tuple[int, int, float]:
    """One row's context span maximising `p_start * p_end` (softmaxes over the context
    positions), at most `max_answer_length` tokens long, as
    `keras_bert.decoding.answers.best_answer_spans`: `(first, last, score)`, score 0 without
    context; ties go to the earliest start, then the earliest end.

    Example:
    >>> best_answer_span(np.array([0.0, 3.0, 1.0, 0.0]), np.array([0.0, 0.0, 0.0, 3.0]),
    ...                  np.array([False, True, True, True]), max_answer_length=2)[:2]
    (2, 3)
    """
    length = len(start_logits)
    starts = log_softmax(np.where(is_context, start_logits, MASKED_LOGIT))
    ends = log_softmax(np.where(is_context, end_logits, MASKED_LOGIT))
    scores = starts[:, None] + ends[None, :]
    offsets = np.arange(length)[None, :] - np.arange(length)[:, None]
    allowed = (
        (offsets >= 0) & (offsets < max_answer_length) & is_context[:, None] & is_context[None, :]
    )
    scores = np.where(allowed, scores, -np.inf)
    best = int(np.argmax(scores))
    if not is_context.any():
        return best // length, best % length, 0.0
    return best // length, best % length, float(np.exp(scores.flat[best]))


def parse_bio_tag(tag: str) -> tuple[str, str]:
    """("B"/"I"/"O", entity type) of a BIO tag, as the CoNLL script reads it ("O": no type)."""
    if tag == "O":
        return "O", ""
    prefix, _, type_name = tag.partition("-")
    return prefix, type_name


def bio_entities(
    word_tags: Sequence[int], word_scores: Sequence[float], tag_names: Sequence[str]
) -> list[tuple[int, int, str, float]]:
    """The entities of one text's words (first word, last word, type, mean score), read as the
    CoNLL script reads BIO tags (`keras_bert.decoding.entities.bio_entities`): `I-x` continues an
    entity only right after `B-x` or `I-x`; otherwise it starts one.

    Example:
    >>> bio_entities([1, 2, 0, 2], [0.75, 0.25, 1.0, 0.5], ["O", "B-x", "I-x"])
    [(0, 1, 'x', 0.5), (3, 3, 'x', 0.5)]
    """
    parsed = [parse_bio_tag(tag_names[tag]) for tag in word_tags]
    entities: list[list] = []
    previous = ("O", "")
    for index, ((prefix, type_name), score) in enumerate(zip(parsed, word_scores, strict=True)):
        if prefix == "O":
            previous = (prefix, type_name)
            continue
        continues = prefix == "I" and previous[0] != "O" and previous[1] == type_name
        if continues:
            entities[-1][1] = index
            entities[-1][3].append(float(score))
        else:
            entities.append([index, index, type_name, [float(score)]])
        previous = (prefix, type_name)
    return [
        (first, last, type_name, float(np.mean(np.array(scores, np.float32))))
        for first, last, type_name, scores in entities
    ]


def truncated_lengths(
    length_a: int, length_b: int, budget: int, truncation: str
) -> tuple[int, int]:
    """How many tokens of segments A and B fit in `budget`, as
    `keras_bert.text.packing.truncated_lengths` computes them.

    Example:
    >>> truncated_lengths(10, 3, 8, "longest_first"), truncated_lengths(10, 3, 8, "waterfall")
    ((5, 3), (8, 0))
    """
    if truncation == "waterfall":
        kept_a = min(length_a, budget)
    else:
        half_a = (budget + 1) // 2
        if truncation == "longest_first_hf" and not length_a > length_b:
            half_a = budget // 2
        kept_a = min(length_a, max(budget - length_b, half_a))
    return kept_a, min(length_b, budget - kept_a)
