"""The benchmarks' metrics against their references: scikit-learn and SciPy for GLUE's, the
rules of conlleval and of SQuAD's official script on constructed cases."""

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sklearn_metrics

from keras_bert.data.glue import glue_task, read_glue_split
from keras_bert.data.squad import read_squad
from keras_bert.metrics import entity_scores, regression_scores, squad_scores
from keras_bert.metrics.classification import classification_scores, matthews_correlation
from keras_bert.metrics.glue import glue_average, glue_scores


@pytest.mark.parametrize("num_classes", [2, 3])
def test_classification_metrics_equal_scikit_learn(num_classes):
    rng = np.random.default_rng(num_classes)
    for _ in range(20):
        labels = rng.integers(0, num_classes, 200)
        predictions = np.where(rng.random(200) < 0.6, labels, rng.integers(0, num_classes, 200))
        expected = sklearn_metrics.matthews_corrcoef(labels, predictions)
        assert matthews_correlation(labels, predictions) == pytest.approx(expected, abs=1e-12)
        scores = classification_scores(labels, predictions, num_classes)
        assert scores["accuracy"] == sklearn_metrics.accuracy_score(labels, predictions)
        macro = sklearn_metrics.f1_score(labels, predictions, average="macro")
        assert scores["macro_f1"] == pytest.approx(macro)
        if num_classes == 2:
            assert scores["f1"] == pytest.approx(sklearn_metrics.f1_score(labels, predictions))


def test_matthews_correlation_where_undefined():
    # One class predicted everywhere: scikit-learn's 0, not a division by zero.
    assert matthews_correlation([0, 1, 1], [1, 1, 1]) == 0.0
    assert sklearn_metrics.matthews_corrcoef([0, 1, 1], [1, 1, 1]) == 0.0


def test_correlations_equal_scipy():
    rng = np.random.default_rng(0)
    targets = rng.integers(0, 11, 300) / 2  # STS-B's half points: many ties
    predictions = targets + rng.normal(0, 1.0, 300)
    predictions[:50] = np.round(predictions[:50])  # ties among predictions too
    scores = regression_scores(targets, predictions)
    assert scores["pearson"] == pytest.approx(stats.pearsonr(targets, predictions)[0])
    assert scores["spearman"] == pytest.approx(stats.spearmanr(targets, predictions)[0])


def test_glue_scores_on_real_labels(data_dir):
    glue_dir = data_dir / "benchmarks" / "glue"
    rng = np.random.default_rng(1)
    for name in ("cola", "mrpc", "rte", "stsb"):
        task = glue_task(name)
        labels = read_glue_split(glue_dir, name, "validation").examples.labels
        outputs = rng.normal(size=(len(labels), 1 if task.is_regression else 2))
        scores = glue_scores(task, labels, outputs)
        assert list(scores) == list(task.metrics)
        if task.is_regression:
            assert scores["spearman"] == pytest.approx(stats.spearmanr(labels, outputs[:, 0])[0])
            continue
        truth = [task.label_names.index(label) for label in labels]
        predicted = outputs.argmax(-1)
        reference = {
            "mcc": sklearn_metrics.matthews_corrcoef(truth, predicted),
            "accuracy": sklearn_metrics.accuracy_score(truth, predicted),
            "f1": sklearn_metrics.f1_score(truth, predicted),
        }
        assert scores == pytest.approx({metric: reference[metric] for metric in task.metrics})
    average = glue_average({"mnli": {"accuracy": 0.8}, "mnli_mismatched": {"accuracy": 0.7},
                            "stsb": {"pearson": 0.9, "spearman": 0.8}})  # fmt: skip
    assert average == pytest.approx((0.75 + 0.85) / 2)


def test_conlleval_counting():
    """conlleval's chunks: an entity starts at B-, at an I- after O or after another type; the
    same tags in IOB1 and IOB2 give the same counts."""
    truth_iob1 = [["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "O", "I-ORG"]]
    truth_iob2 = [["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "O", "B-ORG"]]
    predicted = [["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O", "I-MISC"]]
    # Truth: PER[0,2), LOC[3,4), LOC[4,5), ORG[6,7). Predicted: PER[0,2), LOC[3,5), MISC[6,7).
    for truth in (truth_iob1, truth_iob2):
        scores = entity_scores(truth, predicted)
        assert scores["precision"] == pytest.approx(1 / 3)
        assert scores["recall"] == pytest.approx(1 / 4)
        assert scores["f1"] == pytest.approx(2 / 7)
        assert scores["per_type"]["PER"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
        assert scores["per_type"]["LOC"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
        assert scores["per_type"]["MISC"]["precision"] == 0.0  # guessed only: counted too
    # conlleval's accuracy counts tags: 5 of 7 equal against IOB2 truth, 4 against IOB1.
    assert entity_scores(truth_iob2, predicted)["accuracy"] == pytest.approx(5 / 7)
    # An entity never crosses a sentence boundary.
    split = entity_scores([["B-PER"], ["I-PER"]], [["B-PER"], ["I-PER"]])
    assert split["recall"] == 1.0 and sum(1 for _ in split["per_type"]) == 1


def test_squad_official_rules():
    truths = {"q1": ["Denver Broncos", "The Denver Broncos!"], "q2": ["Saint Bernadette"],
              "q3": ["1889"], "q4": ["the"]}  # fmt: skip
    predictions = {"q1": "denver  broncos", "q2": "Bernadette Soubirous", "q4": "an"}
    scores = squad_scores(predictions, truths)
    # q1 exact after normalisation; q2 F1 2·(1/2·1/2)/1 = 0.5; q3 not predicted: 0;
    # q4 both normalise to nothing: exact match, but v1.1's F1 counts no common token: 0.
    assert scores == {"exact_match": 50.0, "f1": pytest.approx(100 * 1.5 / 4), "count": 4}
    v2 = squad_scores(predictions, truths, version="2.0")
    # v2.0 drops gold answers that normalise to nothing: q4's truth is "", matched by "an".
    assert v2 == {"exact_match": 50.0, "f1": pytest.approx(100 * 2.5 / 4), "count": 4}
    with pytest.raises(ValueError, match="SQuAD version"):
        squad_scores(predictions, truths, version="3")


def test_a_question_without_a_prediction_scores_zero_as_squads_script_scores_it(data_dir):
    """One dev question's gold answers include "." (nothing once normalised): an empty
    prediction matches it exactly, a missing one scores 0, as v1.1's script scores it."""
    examples = read_squad(data_dir / "benchmarks" / "squad" / "squad-v1.1-dev.json")
    question = next(example for example in examples if example.id == "57340d124776f419006617bf")
    assert "." in question.answers
    answers = {question.id: question.answers, "other": ["1889"]}
    assert squad_scores({question.id: "", "other": "1889"}, answers)["exact_match"] == 100.0
    for version in ("1.1", "2.0"):
        scores = squad_scores({"other": "1889"}, answers, version)
        assert scores == {"exact_match": 50.0, "f1": 50.0, "count": 2}
