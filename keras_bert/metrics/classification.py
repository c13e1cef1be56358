"""Accuracy, F1 and Matthews correlation for classification; Pearson and Spearman correlation
for regression."""

from __future__ import annotations

import numpy as np


def classification_scores(labels, predictions, num_classes: int | None = None) -> dict[str, float]:
    """Accuracy, macro-averaged F1 and, for two classes, F1 of class 1.

    Example:
    >>> classification_scores([0, 1, 1, 0], [0, 1, 0, 0])
    {'accuracy': 0.75, 'macro_f1': 0.7333333333333334, 'f1': 0.6666666666666666}
    """
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    if labels.shape != predictions.shape or labels.ndim != 1 or labels.size == 0:
        raise ValueError("labels and predictions must be non-empty 1-D arrays of equal length.")
    num_classes = num_classes or int(max(labels.max(), predictions.max())) + 1
    f1_per_class = []
    for label in range(num_classes):
        true_positives = np.sum((predictions == label) & (labels == label))
        predicted, actual = np.sum(predictions == label), np.sum(labels == label)
        denominator = predicted + actual
        f1_per_class.append(2 * true_positives / denominator if denominator else 0.0)
    scores = {
        "accuracy": float(np.mean(labels == predictions)),
        "macro_f1": float(np.mean(f1_per_class)),
    }
    if num_classes == 2:
        scores["f1"] = float(f1_per_class[1])
    return scores


def matthews_correlation(labels, predictions) -> float:
    """Matthews correlation coefficient (CoLA's metric), for any number of classes: Gorodkin's
    R_K from the confusion matrix, as scikit-learn computes it (0 where it is undefined).

    Example:
    >>> round(matthews_correlation([1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 1]), 4)
    0.3333
    """
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    if labels.shape != predictions.shape or labels.ndim != 1 or labels.size == 0:
        raise ValueError("labels and predictions must be non-empty 1-D arrays of equal length.")
    classes, indices = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    confusion = np.zeros((len(classes), len(classes)), np.float64)
    np.add.at(confusion, (indices[: labels.size], indices[labels.size :]), 1)
    true_counts, predicted_counts = confusion.sum(axis=1), confusion.sum(axis=0)
    correct, total = np.trace(confusion), confusion.sum()
    covariance = correct * total - true_counts @ predicted_counts
    variances = (total**2 - predicted_counts @ predicted_counts) * (
        total**2 - true_counts @ true_counts
    )
    return float(covariance / np.sqrt(variances)) if variances else 0.0


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks starting at 1, ties sharing their mean rank (as Spearman's rho needs)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), np.float64)
    sorted_values = values[order]
    start = 0
    for end in range(1, len(values) + 1):
        if end == len(values) or sorted_values[end] != sorted_values[start]:
            ranks[order[start:end]] = (start + end + 1) / 2
            start = end
    return ranks


def regression_scores(targets, predictions) -> dict[str, float]:
    """Pearson and Spearman correlation and mean squared error (STS-B's metrics).

    Example:
    >>> scores = regression_scores([1.0, 2.0, 3.0, 4.0], [1.1, 1.9, 3.5, 3.0])
    >>> round(scores["pearson"], 4), round(scores["spearman"], 4)
    (0.8716, 0.8)
    """
    targets = np.asarray(targets, np.float64)
    predictions = np.asarray(predictions, np.float64)
    if targets.shape != predictions.shape or targets.ndim != 1 or targets.size < 2:
        raise ValueError("targets and predictions must be 1-D arrays of equal length >= 2.")
    return {
        "pearson": float(np.corrcoef(targets, predictions)[0, 1]),
        "spearman": float(np.corrcoef(_ranks(targets), _ranks(predictions))[0, 1]),
        "mse": float(np.mean((targets - predictions) ** 2)),
    }
