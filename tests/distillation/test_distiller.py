"""The Distiller: features read from the models' own layers, losses wired through the layer
map, a frozen teacher, and attention scores from the self-attention layer."""

import math

import keras
import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder, load_encoder
from keras_bert.config import ConfigError
from keras_bert.distillation import (
    DistillationLosses,
    Distiller,
    initialize_student,
    task_features,
)
from keras_bert.distillation.losses import attention_score_loss, hidden_mse_loss
from keras_bert.layers import TransformerEncoderBlock
from keras_bert.models import BertClassifier, BertTokenClassifier
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.models.token_classifier import IGNORED_LABEL
from tests.distillation.test_student import INPUTS, tiny_encoder


def test_block_returns_attention_scores_of_queries_and_keys():
    block = TransformerEncoderBlock(hidden_size=8, num_heads=2, intermediate_size=16)
    hidden_states = np.random.default_rng(0).normal(size=(1, 3, 8)).astype("float32")
    mask = np.array([[1, 1, 0]])
    output, scores = block(hidden_states, mask, return_attention_scores=True)
    np.testing.assert_allclose(output, block(hidden_states, mask), atol=1e-6)
    attention = block.attention
    query = np.asarray(attention.query(hidden_states)).reshape(1, 3, 2, 4)
    key = np.asarray(attention.key(hidden_states)).reshape(1, 3, 2, 4)
    expected = np.einsum("bqnh,bknh->bnqk", query, key) / math.sqrt(4)
    np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("task_class", [BertClassifier, BertTokenClassifier])
def test_task_features_are_the_models_own_outputs(task_class):
    arguments = {"num_classes": 2} if task_class is BertClassifier else {"label_names": "OBI"}
    model = task_class(tiny_encoder(num_layers=2), **arguments)
    features = task_features(model)(INPUTS)
    np.testing.assert_allclose(features["logits"], model(INPUTS), atol=1e-6)
    encoder_outputs = BertEncoder(model.encoder.bert_config, output_all_layers=True)
    encoder_outputs.set_weights(model.encoder.get_weights())
    expected = encoder_outputs(INPUTS)
    for name in ("embedding_output", "sequence_output"):
        np.testing.assert_allclose(features[name], expected[name], atol=1e-6)
    for actual, wanted in zip(features["hidden_states"], expected["encoder_outputs"], strict=True):
        np.testing.assert_allclose(actual, wanted, atol=1e-6)
    assert [tuple(scores.shape) for scores in features["attention_scores"]] == [(2, 2, 6, 6)] * 2
    assert {id(weight) for weight in task_features(model).weights} == {
        id(weight) for weight in model.weights
    }


def test_layer_wise_losses_follow_the_layer_map():
    teacher = BertClassifier(tiny_encoder(num_layers=4), 2)
    student = initialize_student(teacher, num_layers=2, hidden_size=64)
    losses = DistillationLosses(hidden_mse=2.0, attention_scores=0.5)
    distiller = Distiller(teacher, student, losses)
    assert distiller.layer_map == [1, 3]
    outputs = distiller(INPUTS)
    labels = np.array([1, IGNORED_LABEL])
    weighted = distiller.weighted_losses(INPUTS, labels, outputs)
    assert set(weighted) == {"soft_targets", "hard_targets", "hidden_mse", "attention_scores"}
    teacher_features, student_features = outputs["teacher"], outputs["student"]
    mask = INPUTS["input_mask"]
    expected_attention = sum(
        attention_score_loss(teacher_features["attention_scores"][source], scores, mask)
        for source, scores in zip([1, 3], student_features["attention_scores"], strict=True)
    )
    np.testing.assert_allclose(weighted["attention_scores"], 0.5 * expected_attention, 1e-5)
    projections = list(distiller.projections.values())
    assert [layer.kernel.shape for layer in projections] == [(64, 128)] * 3
    expected_hidden = hidden_mse_loss(
        teacher_features["embedding_output"],
        projections[0](student_features["embedding_output"]),
        mask,
    ) + sum(
        hidden_mse_loss(teacher_features["hidden_states"][source], projection(hidden), mask)
        for source, projection, hidden in zip(
            [1, 3], projections[1:], student_features["hidden_states"], strict=True
        )
    )
    np.testing.assert_allclose(weighted["hidden_mse"], 2.0 * expected_hidden, 1e-5)


def _log_softmax(logits):
    shifted = logits - logits.max(-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def test_masked_lm_soft_and_hard_targets_count_the_real_predictions_only():
    """General distillation: a pretrainer student of a pretrainer teacher compares the
    masked-LM distributions at the prediction slots whose label is not IGNORED_LABEL, against
    a numpy KL divergence and cross-entropy; the next-sentence head is not distilled."""
    teacher = BertPretrainer(tiny_encoder(num_layers=2))
    student = initialize_student(teacher, num_layers=1, hidden_size=64)  # random: far apart
    distiller = Distiller(teacher, student, DistillationLosses(temperature=2.0))
    assert distiller.predicts_masked_tokens
    inputs = {**INPUTS, "masked_lm_positions": np.array([[1, 3, 0], [2, 0, 0]])}
    labels = np.array([[17, 9, IGNORED_LABEL], [5, IGNORED_LABEL, IGNORED_LABEL]])
    weighted = distiller.weighted_losses(inputs, labels, distiller(inputs))
    teacher_logits = np.asarray(teacher(inputs)["masked_lm"], "float64")
    student_logits = np.asarray(student(inputs)["masked_lm"], "float64")
    real = labels != IGNORED_LABEL
    teacher_log_p, student_log_p = (
        _log_softmax(teacher_logits / 2),
        _log_softmax(student_logits / 2),
    )
    divergence = (np.exp(teacher_log_p) * (teacher_log_p - student_log_p)).sum(-1)
    np.testing.assert_allclose(weighted["soft_targets"], divergence[real].mean() * 4, rtol=1e-4)
    log_p = _log_softmax(student_logits)
    cross_entropy = -np.take_along_axis(log_p, np.where(real, labels, 0)[..., None], -1)[..., 0]
    np.testing.assert_allclose(weighted["hard_targets"], cross_entropy[real].mean(), rtol=1e-4)


def test_fit_trains_student_and_projections_not_teacher():
    teacher = BertTokenClassifier(tiny_encoder(num_layers=2), ["O", "B-x", "I-x"])
    student = initialize_student(teacher, num_layers=1, hidden_size=64)
    distiller = Distiller(teacher, student, DistillationLosses(hidden_cosine=1.0))
    teacher_before = [weight.numpy().copy() for weight in teacher.weights]
    student_before = [weight.numpy().copy() for weight in student.trainable_weights]
    # The cosine loss compares the last layer only: one projection.
    assert list(distiller.projections) == ["layer_1"]
    assert len(distiller.trainable_weights) == len(student_before) + 2
    distiller.compile(optimizer=keras.optimizers.Adam(1e-3))
    labels = np.where(INPUTS["input_mask"] == 1, 1, IGNORED_LABEL)
    history = distiller.fit(INPUTS, labels, epochs=2, batch_size=2, verbose=0)
    assert set(history.history) == {
        "loss", "soft_targets", "hard_targets", "hidden_cosine", "accuracy",
    }  # fmt: skip
    for before, weight in zip(teacher_before, teacher.weights, strict=True):
        np.testing.assert_array_equal(weight.numpy(), before)
    changed = [
        not np.array_equal(weight.numpy(), before)
        for before, weight in zip(student_before, student.trainable_weights, strict=True)
    ]
    assert all(changed)


def test_incompatible_students_and_settings_are_refused():
    teacher = BertClassifier(tiny_encoder(num_layers=2), 2)
    with pytest.raises(ConfigError, match="must be a BertClassifier"):
        Distiller(teacher, BertTokenClassifier(tiny_encoder(num_layers=1), ["O", "B"]))
    with pytest.raises(ConfigError, match="predicts 3 classes"):
        Distiller(teacher, BertClassifier(tiny_encoder(num_layers=1), 3))
    four_heads = BertEncoder(BertConfig.preset("tiny", vocab_size=100, num_heads=4))
    with pytest.raises(ConfigError, match="student has 4 heads, the teacher 2"):
        Distiller(teacher, BertClassifier(four_heads, 2), DistillationLosses(attention_scores=1.0))
    with pytest.raises(ConfigError, match="Every loss weight is 0"):
        DistillationLosses(soft_targets=0, hard_targets=0)
    with pytest.raises(ConfigError, match="temperature must be positive, got 0"):
        DistillationLosses(temperature=0)


def test_distiller_config_and_weights_round_trip(tmp_path):
    teacher = BertClassifier(tiny_encoder(num_layers=2), 2)
    student = initialize_student(teacher, num_layers=1, hidden_size=64)
    distiller = Distiller(teacher, student, DistillationLosses(hidden_mse=1.0, temperature=3.0))
    distiller.save_weights(tmp_path / "distiller.weights.h5")
    restored = Distiller.from_config(distiller.get_config())
    assert restored.losses_config == distiller.losses_config and restored.layer_map == [1]
    restored.load_weights(tmp_path / "distiller.weights.h5")
    labels = np.array([0, 1])
    expected = distiller.weighted_losses(INPUTS, labels, distiller(INPUTS))
    actual = restored.weighted_losses(INPUTS, labels, restored(INPUTS))
    for name, value in expected.items():
        np.testing.assert_allclose(actual[name], value, rtol=1e-6)


@pytest.mark.parametrize("family", ["distilbert", "deberta_v3"])
def test_family_teachers_without_a_pooler_distill(family, reference_dir):
    """DistilBERT and DeBERTa-v3 classifiers (no pooled output; DeBERTa's blocks also take its
    relative embeddings) give their features and train a student of fewer layers."""
    teacher = BertClassifier(load_encoder(reference_dir / "variants" / family), num_classes=2)
    inputs = {**INPUTS, "input_word_ids": INPUTS["input_word_ids"] % 100 + 5}
    features = task_features(teacher)(inputs)
    np.testing.assert_allclose(features["logits"], teacher(inputs), atol=1e-5)
    assert "pooled_output" not in features and len(features["attention_scores"]) == 2
    student = initialize_student(teacher, num_layers=1)
    distiller = Distiller(
        teacher, student, DistillationLosses(hidden_mse=1.0, attention_scores=1.0)
    )
    distiller.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = distiller.fit(inputs, np.array([0, 1]), epochs=2, batch_size=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
