"""From start/end logits over passage windows to answer text (n-best, SQuAD v2 null answers)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np


@dataclasses.dataclass
class Answer:
    """The predicted answer of one question: text, character span, score (start + end logit).

    `text` is empty for "no answer" (SQuAD v2); `null_score` is the `[CLS]` score it was
    compared with.
    """

    text: str
    start: int
    end: int
    score: float
    null_score: float


def decode_answers(
    examples: Sequence,
    windows,
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    n_best: int = 20,
    max_answer_length: int = 30,
    null_score_threshold: float | None = None,
) -> list[Answer]:
    """Picks the best span of every example over all its windows.

    A candidate starts and ends on passage tokens, ends at or after its start, is at most
    `max_answer_length` tokens long, and starts where its window gives the start token the most
    context. Candidates come from the `n_best` highest start and end logits of each window.

    Args:
        examples: the `QuestionExample`s the windows were built from.
        windows: their `QuestionWindows`.
        start_logits, end_logits: model outputs `[windows, seq]`.
        n_best: start and end candidates per window.
        max_answer_length: longest answer, in tokens.
        null_score_threshold: None for SQuAD v1 (always answer). Otherwise predict no answer
            when the best `[CLS]` score exceeds the best span score by more than this.
    """
    best: dict[int, Answer] = {}
    null_scores: dict[int, float] = {}
    for window in range(len(windows)):
        example = int(windows.example_index[window])
        starts, ends = start_logits[window], end_logits[window]
        null_scores[example] = min(null_scores.get(example, np.inf), float(starts[0] + ends[0]))
        char_starts, char_ends = windows.char_starts[window], windows.char_ends[window]
        for start in np.argsort(-starts)[:n_best]:
            if char_starts[start] < 0 or not windows.max_context[window, start]:
                continue
            for end in np.argsort(-ends)[:n_best]:
                if char_ends[end] < 0 or not 0 <= end - start < max_answer_length:
                    continue
                score = float(starts[start] + ends[end])
                if example not in best or score > best[example].score:
                    context = examples[example].context
                    span = int(char_starts[start]), int(char_ends[end])
                    best[example] = Answer(context[span[0] : span[1]], *span, score, 0.0)
    answers = []
    for example in range(len(examples)):
        null_score = null_scores.get(example, 0.0)
        answer = best.get(example) or Answer("", -1, -1, -np.inf, null_score)
        answer.null_score = null_score
        if null_score_threshold is not None and null_score - answer.score > null_score_threshold:
            answer = Answer("", -1, -1, answer.score, null_score)
        answers.append(answer)
    return answers
