"""GLUE's scores: each task's metrics by name, and the GLUE average. Plain Python and numpy: a
scorer needs no TensorFlow."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from keras_bert.metrics.classification import (
    classification_scores,
    matthews_correlation,
    regression_scores,
)

if TYPE_CHECKING:  # the task's reader imports TensorFlow (`keras_bert.data`)
    from keras_bert.data.glue import GlueTask


def glue_scores(task: GlueTask, labels: Sequence, outputs: np.ndarray) -> dict[str, float]:
    """The task's metrics (`task.metrics`: `accuracy`, `f1`, `mcc`, `pearson`, `spearman`) of a
    model's outputs against labels, as fractions (GLUE's server shows them times 100).

    Args:
        task: the GLUE task.
        labels: class names (`task.label_names`) or, for STS-B, scores.
        outputs: the model's logits `[examples, classes]`, or scores `[examples, 1]`.

    Example:
    >>> from keras_bert.data.glue import glue_task
    >>> labels = ["equivalent", "not_equivalent", "equivalent", "equivalent"]
    >>> logits = np.array([[0.1, 0.9], [0.8, 0.2], [0.7, 0.3], [0.0, 1.0]])
    >>> glue_scores(glue_task("mrpc"), labels, logits)
    {'f1': 0.8, 'accuracy': 0.75}
    """
    outputs = np.asarray(outputs)
    if task.is_regression:
        scores = regression_scores(np.asarray(labels, np.float64), outputs[:, 0])
    else:
        label_ids = np.array([task.label_names.index(label) for label in labels])
        predictions = outputs.argmax(-1)
        scores = classification_scores(label_ids, predictions, len(task.label_names))
        scores["mcc"] = matthews_correlation(label_ids, predictions)
    return {name: scores[name] for name in task.metrics}


def glue_task_score(scores: Mapping[str, float]) -> float:
    """A task's GLUE score: the mean of its metrics (MRPC: F1 and accuracy)."""
    return float(np.mean(list(scores.values())))


def glue_average(task_scores: Mapping[str, Mapping[str, float]]) -> float:
    """The GLUE score of several tasks: the unweighted mean of their task scores, MNLI's
    matched and mismatched accuracies first averaged into one, as GLUE's leaderboard does.

    Example:
    >>> round(glue_average({"rte": {"accuracy": 0.6}, "mrpc": {"f1": 0.9, "accuracy": 0.8}}), 4)
    0.725
    """
    per_task = {name: glue_task_score(scores) for name, scores in task_scores.items()}
    if "mnli_mismatched" in per_task and "mnli" in per_task:
        per_task["mnli"] = (per_task["mnli"] + per_task.pop("mnli_mismatched")) / 2
    return float(np.mean(list(per_task.values())))
