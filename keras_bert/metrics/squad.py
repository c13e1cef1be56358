"""SQuAD exact match and F1, with the official answer normalisation."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation and the articles a/an/the, collapse whitespace.

    Example:
    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = "".join(character for character in text.lower() if character not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, truth: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(truth))


def token_f1(prediction: str, truth: str) -> float:
    predicted_tokens = normalize_answer(prediction).split()
    true_tokens = normalize_answer(truth).split()
    if not predicted_tokens or not true_tokens:
        # SQuAD v2: an empty answer is right only where the truth is empty too.
        return float(predicted_tokens == true_tokens)
    common = sum((Counter(predicted_tokens) & Counter(true_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted_tokens), common / len(true_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_scores(
    predictions: Mapping[str, str], answers: Mapping[str, Sequence[str]]
) -> dict[str, float]:
    """Exact match and F1 in percent, each question scored against its best ground truth.

    `answers` maps question ids to their accepted answers (empty for unanswerable SQuAD v2
    questions, where only the empty prediction is right).

    Example:
    >>> squad_scores({"q1": "the Eiffel Tower", "q2": "1889"}, {"q1": ["Eiffel Tower"],
    ...                                                          "q2": ["in 1887"]})
    {'exact_match': 50.0, 'f1': 50.0, 'count': 2}
    """
    if not answers:
        raise ValueError("No questions to score.")
    exact_total = f1_total = 0.0
    for question_id, truths in answers.items():
        prediction = predictions.get(question_id, "")
        truths = list(truths) or [""]
        exact_total += max(exact_match(prediction, truth) for truth in truths)
        f1_total += max(token_f1(prediction, truth) for truth in truths)
    count = len(answers)
    return {"exact_match": 100 * exact_total / count, "f1": 100 * f1_total / count, "count": count}
