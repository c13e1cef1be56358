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


def token_f1(prediction: str, truth: str, version: str = "1.1") -> float:
    """F1 of the normalised tokens, as the official script of SQuAD `version` counts it: where
    either side has no token, v1.1 gives 0 and v2.0 gives 1 if both are empty (an
    unanswerable question rightly left unanswered)."""
    predicted_tokens = normalize_answer(prediction).split()
    true_tokens = normalize_answer(truth).split()
    if version != "1.1" and (not predicted_tokens or not true_tokens):
        return float(predicted_tokens == true_tokens)
    common = sum((Counter(predicted_tokens) & Counter(true_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted_tokens), common / len(true_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_scores(
    predictions: Mapping[str, str],
    answers: Mapping[str, Sequence[str]],
    version: str | None = None,
) -> dict[str, float]:
    """Exact match and F1 in percent, each question scored against its best ground truth, as
    SQuAD's official evaluation script of `version` ("1.1" or "2.0") scores them; by default
    v2.0's where some question has no answer, else v1.1's.

    `answers` maps question ids to their accepted answers (empty for unanswerable SQuAD v2
    questions, where only the empty prediction is right; v2.0 also drops gold answers that
    normalise to nothing, as its script does). A question without a prediction scores 0, as
    v1.1's script scores it, whatever its answers: not as an empty prediction, which matches a
    gold answer that normalises to nothing (one dev question's answer is ".").

    Example:
    >>> squad_scores({"q1": "the Eiffel Tower", "q2": "1889"}, {"q1": ["Eiffel Tower"],
    ...                                                          "q2": ["in 1887"]})
    {'exact_match': 50.0, 'f1': 50.0, 'count': 2}
    """
    if not answers:
        raise ValueError("No questions to score.")
    if version is None:
        version = "2.0" if any(not truths for truths in answers.values()) else "1.1"
    if version not in ("1.1", "2.0"):
        raise ValueError(f"SQuAD version must be '1.1' or '2.0', got {version!r}.")
    exact_total = f1_total = 0.0
    for question_id, truths in answers.items():
        if question_id not in predictions:
            continue
        prediction = predictions[question_id]
        truths = list(truths)
        if version == "2.0":
            truths = [truth for truth in truths if normalize_answer(truth)]
        truths = truths or [""]
        exact_total += max(exact_match(prediction, truth) for truth in truths)
        f1_total += max(token_f1(prediction, truth, version) for truth in truths)
    count = len(answers)
    return {"exact_match": 100 * exact_total / count, "f1": 100 * f1_total / count, "count": count}
