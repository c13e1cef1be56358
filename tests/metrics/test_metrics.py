import numpy as np
import pytest

from keras_bert.decoding.bio_tags import EntitySpan, bio_spans
from keras_bert.metrics import (
    classification_scores,
    entity_scores,
    regression_scores,
    squad_scores,
)
from keras_bert.metrics.squad import normalize_answer, token_f1


def test_classification_scores_count_per_class():
    scores = classification_scores([0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0])
    assert scores["accuracy"] == pytest.approx(4 / 6)
    # F1 per class: 0 → 2·1/(2+2)=0.5, 1 → 2·2/(3+2)=0.8, 2 → 2·1/(1+2)=2/3.
    assert scores["macro_f1"] == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)
    assert "f1" not in scores


def test_regression_scores_handle_ties():
    scores = regression_scores([1, 2, 2, 3], [10, 20, 30, 40])
    # Ranks [1, 2.5, 2.5, 4] against [1, 2, 3, 4].
    expected = np.corrcoef([1, 2.5, 2.5, 4], [1, 2, 3, 4])[0, 1]
    assert scores["spearman"] == pytest.approx(expected)
    assert regression_scores([1, 2, 3], [2, 4, 6])["pearson"] == pytest.approx(1.0)


def test_bio_spans_follow_conlleval():
    assert bio_spans(["O", "I-org", "I-org", "B-org", "I-per"]) == [
        EntitySpan("org", 1, 3),
        EntitySpan("org", 3, 4),
        EntitySpan("per", 4, 5),
    ]
    with pytest.raises(ValueError, match="'X-org' at position 1 is not a BIO tag"):
        bio_spans(["O", "X-org"])


def test_entity_scores_need_exact_type_and_span():
    truth = [["B-per", "I-per", "O", "B-loc", "O"], ["B-org", "O"]]
    predicted = [["B-per", "O", "O", "B-loc", "O"], ["B-org", "B-loc"]]
    scores = entity_scores(truth, predicted)
    # Correct: loc (seq 0), org (seq 1). Predicted 5 spans, 3 true spans.
    assert scores["precision"] == pytest.approx(2 / 4)
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert scores["per_type"]["per"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    with pytest.raises(ValueError, match="Sequence 0: 2 true tags but 1 predicted"):
        entity_scores([["O", "O"]], [["O"]])


def test_squad_normalisation_and_scores():
    assert normalize_answer("  An Apple, the PIE ") == "apple pie"
    assert token_f1("the quick brown fox", "quick fox jumps") == pytest.approx(2 / 3)
    scores = squad_scores(
        {"a": "Denver Broncos", "b": "in Paris", "c": ""},
        {"a": ["Denver Broncos", "Broncos"], "b": ["Paris, France"], "c": []},
    )
    # a: exact; b: F1 = 2·(1/2·1/2)/(1) = 0.5; c: unanswerable and predicted empty.
    assert scores == {
        "exact_match": pytest.approx(200 / 3),
        "f1": pytest.approx(250 / 3),
        "count": 3,
    }
