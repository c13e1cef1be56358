"""Entity-level precision, recall and F1, counted as the CoNLL evaluation script counts them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from keras_bert.decoding.bio_tags import bio_spans


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def entity_scores(
    true_tags: Sequence[Sequence[str]], predicted_tags: Sequence[Sequence[str]]
) -> dict[str, object]:
    """Micro precision/recall/F1 over exact entity matches (type and span), per type, and the
    share of words tagged right (`accuracy`), as conlleval reports them (as fractions). Tags
    may be IOB1 or IOB2: entities are read as conlleval reads them (`bio_spans`).

    Example:
    >>> scores = entity_scores([["B-per", "I-per", "O", "B-loc"]], [["B-per", "I-per", "O", "O"]])
    >>> scores["precision"], scores["recall"], round(scores["f1"], 4)
    (1.0, 0.5, 0.6667)
    """
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"{len(true_tags)} true sequences but {len(predicted_tags)} predicted.")
    true_counts, predicted_counts, correct_counts = Counter(), Counter(), Counter()
    right_tags = total_tags = 0
    for index, (truth, prediction) in enumerate(zip(true_tags, predicted_tags, strict=True)):
        if len(truth) != len(prediction):
            raise ValueError(
                f"Sequence {index}: {len(truth)} true tags but {len(prediction)} predicted."
            )
        true_spans, predicted_spans = set(bio_spans(truth)), set(bio_spans(prediction))
        right_tags += sum(map(str.__eq__, truth, prediction))
        total_tags += len(truth)
        true_counts.update(span.label for span in true_spans)
        predicted_counts.update(span.label for span in predicted_spans)
        correct_counts.update(span.label for span in true_spans & predicted_spans)

    def scores(correct: int, predicted: int, actual: int) -> dict[str, float]:
        precision, recall = _ratio(correct, predicted), _ratio(correct, actual)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"precision": precision, "recall": recall, "f1": f1}

    per_type = {
        label: scores(correct_counts[label], predicted_counts[label], true_counts[label])
        for label in sorted(true_counts | predicted_counts)
    }
    total = scores(
        sum(correct_counts.values()), sum(predicted_counts.values()), sum(true_counts.values())
    )
    return {**total, "accuracy": _ratio(right_tags, total_tags), "per_type": per_type}
