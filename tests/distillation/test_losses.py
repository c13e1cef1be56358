"""Each distillation loss against a direct numpy computation, padding included."""

import numpy as np
import pytest

from keras_bert.distillation.losses import (
    attention_score_loss,
    hard_target_loss,
    hidden_cosine_loss,
    hidden_mse_loss,
    soft_target_loss,
)
from keras_bert.models.token_classifier import IGNORED_LABEL

RNG = np.random.default_rng(0)
# Two sequences of 5 positions; the second has 2 padded positions.
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.float32)


def log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def kl_divergence(teacher_logits, student_logits, temperature):
    """KL(teacher || student) at `temperature` over the last axis."""
    teacher_log_probabilities = log_softmax(teacher_logits / temperature)
    student_log_probabilities = log_softmax(student_logits / temperature)
    return np.sum(
        np.exp(teacher_log_probabilities) * (teacher_log_probabilities - student_log_probabilities),
        axis=-1,
    )


@pytest.mark.parametrize("temperature", [1.0, 2.0, 4.0])
def test_soft_target_loss_is_kl_divergence_times_squared_temperature(temperature):
    teacher, student = RNG.normal(size=(2, 4, 3)) * 3
    expected = np.mean(kl_divergence(teacher, student, temperature)) * temperature**2
    np.testing.assert_allclose(soft_target_loss(teacher, student, temperature), expected, rtol=1e-5)
    assert float(soft_target_loss(teacher, teacher, temperature)) == pytest.approx(0, abs=1e-6)


def test_soft_target_loss_per_token_skips_padding():
    teacher = RNG.normal(size=(2, 5, 7)).astype(np.float32)
    student = RNG.normal(size=(2, 5, 7)).astype(np.float32)
    expected = (kl_divergence(teacher, student, 2.0) * MASK).sum() / MASK.sum() * 4
    np.testing.assert_allclose(soft_target_loss(teacher, student, 2.0, MASK), expected, rtol=1e-5)
    student[1, 3:] += 100.0  # padded positions do not count
    np.testing.assert_allclose(soft_target_loss(teacher, student, 2.0, MASK), expected, rtol=1e-5)


def test_hard_target_loss_averages_cross_entropy_over_labelled_positions():
    logits = RNG.normal(size=(2, 5, 4)).astype(np.float32)
    labels = np.array([[IGNORED_LABEL, 2, 0, 3, IGNORED_LABEL], [IGNORED_LABEL, 1] + [-100] * 3])
    log_probabilities = log_softmax(logits)
    labelled = np.argwhere(labels != IGNORED_LABEL)
    expected = -np.mean([log_probabilities[b, p, labels[b, p]] for b, p in labelled])
    np.testing.assert_allclose(hard_target_loss(labels, logits), expected, rtol=1e-5)
    sentence_logits = logits[:, 0]  # one example per row, the last one unlabeled
    sentence_labels = np.array([2, IGNORED_LABEL])
    expected = -log_softmax(sentence_logits)[0, 2]
    np.testing.assert_allclose(hard_target_loss(sentence_labels, sentence_logits), expected, 1e-5)
    assert float(hard_target_loss(np.full(3, IGNORED_LABEL), logits[0, :3])) == 0.0


def test_hidden_cosine_loss():
    teacher = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    student = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    cosine = (teacher * student).sum(-1) / (
        np.linalg.norm(teacher, axis=-1) * np.linalg.norm(student, axis=-1)
    )
    expected = ((1 - cosine) * MASK).sum() / MASK.sum()
    np.testing.assert_allclose(hidden_cosine_loss(teacher, student, MASK), expected, rtol=1e-5)
    assert float(hidden_cosine_loss(teacher, 3 * teacher, MASK)) == pytest.approx(0, abs=1e-6)


def test_hidden_mse_loss():
    teacher = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    student = RNG.normal(size=(2, 5, 8)).astype(np.float32)
    squared = ((teacher - student) ** 2).mean(-1)
    expected = (squared * MASK).sum() / MASK.sum()
    np.testing.assert_allclose(hidden_mse_loss(teacher, student, MASK), expected, rtol=1e-5)


def test_attention_score_loss_excludes_padded_queries_and_keys():
    teacher = RNG.normal(size=(2, 3, 5, 5)).astype(np.float32) * 4
    student = RNG.normal(size=(2, 3, 5, 5)).astype(np.float32) * 4
    squared = (teacher - student) ** 2
    expected = np.mean(np.concatenate([squared[0].ravel(), squared[1][:, :3, :3].ravel()]))
    np.testing.assert_allclose(attention_score_loss(teacher, student, MASK), expected, rtol=1e-5)
    student[1, :, 3:, :] = 1e4  # padded queries
    student[1, :, :, 4] = -1e4  # a padded key
    np.testing.assert_allclose(attention_score_loss(teacher, student, MASK), expected, rtol=1e-5)
