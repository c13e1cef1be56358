"""Distiller: trains a student task model from a frozen teacher with `model.fit`."""

from __future__ import annotations

import dataclasses
from typing import Any

import keras
import tensorflow as tf

from keras_bert.config import ConfigError
from keras_bert.distillation.features import MASKED_LM_OUTPUT, task_features, task_logits
from keras_bert.distillation.losses import (
    attention_score_loss,
    hard_target_loss,
    hidden_cosine_loss,
    hidden_mse_loss,
    soft_target_loss,
)
from keras_bert.distillation.student import layer_map
from keras_bert.errors import check_positive
from keras_bert.models.task import BertTask
from keras_bert.models.token_classifier import IGNORED_LABEL, MaskedTokenAccuracy


@dataclasses.dataclass(frozen=True)
class DistillationLosses:
    """The weight of each distillation loss (0 leaves it out) and the temperature.

    Args:
        temperature: softens teacher and student distributions for the soft targets.
        soft_targets: KL divergence from the teacher's distribution (times temperature**2).
        hard_targets: cross-entropy with the true labels (unlabeled text has none).
        hidden_cosine: DistilBERT's `1 - cos` between the last hidden states.
        hidden_mse: TinyBERT's MSE between the embeddings and every mapped layer's hidden
            states (summed over layers; through a learned projection when widths differ).
        attention_scores: TinyBERT's MSE between the mapped layers' attention scores (summed
            over layers; padding excluded; the student needs the teacher's head count).

    Example:
    >>> DistillationLosses(hidden_mse=1.0).active
    ('soft_targets', 'hard_targets', 'hidden_mse')
    """

    temperature: float = 2.0
    soft_targets: float = 1.0
    hard_targets: float = 1.0
    hidden_cosine: float = 0.0
    hidden_mse: float = 0.0
    attention_scores: float = 0.0

    def __post_init__(self) -> None:
        check_positive(temperature=self.temperature)
        weights = {name: getattr(self, name) for name in self.weight_names()}
        negative = {name: weight for name, weight in weights.items() if weight < 0}
        if negative:
            raise ConfigError(f"Loss weights must not be negative, got {negative}.")
        if not self.active:
            raise ConfigError("Every loss weight is 0: give at least one loss a weight.")

    @classmethod
    def weight_names(cls) -> tuple[str, ...]:
        return tuple(field.name for field in dataclasses.fields(cls) if field.name != "temperature")

    @property
    def active(self) -> tuple[str, ...]:
        """The names of the losses with a weight above 0."""
        return tuple(name for name in self.weight_names() if getattr(self, name) > 0)


@keras.saving.register_keras_serializable(package="keras_bert")
class Distiller(keras.Model):
    """A frozen teacher and a student task model of the same task, trained with `fit`.

    Fit it on batches of `(inputs, labels)` as the student's task takes them; labels equal to
    `IGNORED_LABEL` (-100), e.g. all of unlabeled text, take no part in the hard-target loss.
    Masked LMs (`BertMaskedLM`, `BertPretrainer`: general distillation) take
    `masked_lm_positions` among the inputs and the masked tokens' ids as labels, -100 where a
    prediction slot is padding (see `masked_lm_distillation_batches`); their soft targets count
    the real predictions only.
    Student layer `i` learns from teacher layer `layer_map(L_t, L_s)[i]` in the layer-wise
    losses. The loss is the weighted sum of `losses`; `fit` also reports every weighted
    component and the student's `accuracy` on labelled positions. After training, save
    `distiller.student`: an ordinary task model.

    Args:
        teacher: a trained `BertClassifier`, `BertTokenClassifier` or masked LM; it is frozen.
        student: a model of the same class and labels (see `initialize_student`).
        losses: a `DistillationLosses` (or its dict form).

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> from keras_bert.distillation import initialize_student
    >>> from keras_bert.models import BertClassifier
    >>> teacher = BertClassifier(BertEncoder(BertConfig.preset("tiny", vocab_size=100)), 2)
    >>> distiller = Distiller(teacher, initialize_student(teacher, num_layers=1),
    ...                       DistillationLosses(hidden_mse=1.0, attention_scores=1.0))
    >>> distiller.compile(optimizer="adam")
    >>> inputs = {"input_word_ids": np.array([[2, 7, 9, 3]] * 4),
    ...           "input_mask": np.ones((4, 4), "int32"),
    ...           "input_type_ids": np.zeros((4, 4), "int32")}
    >>> history = distiller.fit(inputs, np.array([0, 1, 1, -100]), epochs=1, verbose=0)
    >>> sorted(history.history)  # doctest: +NORMALIZE_WHITESPACE
    ['accuracy', 'attention_scores', 'hard_targets', 'hidden_mse', 'loss', 'soft_targets']
    """

    def __init__(
        self,
        teacher: BertTask,
        student: BertTask,
        losses: DistillationLosses | dict[str, Any] | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(losses, dict):
            losses = DistillationLosses(**losses)
        losses = losses or DistillationLosses()
        _check_compatible(teacher, student, losses)
        teacher.trainable = False
        self.teacher = teacher
        self.student = student
        self.losses_config = losses
        self.teacher_features = task_features(teacher)
        self.student_features = task_features(student)
        outputs = student.output
        self.predicts_masked_tokens = isinstance(outputs, dict) and MASKED_LM_OUTPUT in outputs
        teacher_config = teacher.encoder.bert_config
        student_config = student.encoder.bert_config
        self.layer_map = layer_map(teacher_config.num_layers, student_config.num_layers)
        # TinyBERT's W_e and W_h: a projection of the embeddings ("layer_0") and of each
        # block ("layer_1" ...) that a loss compares at another width.
        self.projections = {}
        if student_config.hidden_size != teacher_config.hidden_size:
            projected = range(student_config.num_layers + 1) if losses.hidden_mse else []
            if losses.hidden_cosine:
                projected = sorted({*projected, student_config.num_layers})
            self.projections = {
                f"layer_{index}": keras.layers.Dense(
                    teacher_config.hidden_size, name=f"hidden_projection_{index}"
                )
                for index in projected
            }
        self.loss_trackers = {name: keras.metrics.Mean(name=name) for name in losses.active}
        self.accuracy = MaskedTokenAccuracy(name="accuracy")
        for projection in self.projections.values():
            projection.build((None, None, student_config.hidden_size))
        self.built = True  # every part is built: backups can be restored before `fit`

    @property
    def trainable_weights(self) -> list[keras.Variable]:
        projections = [
            weight for layer in self.projections.values() for weight in layer.trainable_weights
        ]
        return self.student.trainable_weights + projections

    @property
    def trainable_variables(self) -> list[keras.Variable]:
        return self.trainable_weights

    def call(self, inputs, training=None):
        return {
            "teacher": self.teacher_features(inputs, training=False),
            "student": self.student_features(inputs, training=training),
        }

    def _project(self, layer_index: int, hidden_states):
        """Student hidden states at the teacher's width (layer 0: the embeddings)."""
        if not self.projections:
            return hidden_states
        return self.projections[f"layer_{layer_index}"](hidden_states)

    def _soft_target_mask(self, labels, logits, input_mask):
        """Which distributions the soft targets compare: all (one per sequence), the real
        tokens (token classification) or the real predictions (masked LM)."""
        if len(logits.shape) != 3:
            return None
        if self.predicts_masked_tokens:
            return keras.ops.cast(keras.ops.not_equal(labels, IGNORED_LABEL), "float32")
        return input_mask

    def weighted_losses(self, inputs, labels, outputs) -> dict[str, tf.Tensor]:
        """Each active loss, times its weight, by name."""
        teacher, student = outputs["teacher"], outputs["student"]
        mask = keras.ops.cast(inputs["input_mask"], "float32")
        weights = self.losses_config
        losses = {}
        if weights.soft_targets:
            losses["soft_targets"] = soft_target_loss(
                teacher["logits"],
                student["logits"],
                weights.temperature,
                self._soft_target_mask(labels, student["logits"], mask),
            )
        if weights.hard_targets:
            losses["hard_targets"] = hard_target_loss(labels, student["logits"])
        if weights.hidden_cosine:
            last = len(self.layer_map)
            losses["hidden_cosine"] = hidden_cosine_loss(
                teacher["sequence_output"],
                self._project(last, student["sequence_output"]),
                mask,
            )
        if weights.hidden_mse:
            pairs = [(teacher["embedding_output"], student["embedding_output"])] + [
                (teacher["hidden_states"][source], target)
                for source, target in zip(self.layer_map, student["hidden_states"], strict=True)
            ]
            losses["hidden_mse"] = sum(
                hidden_mse_loss(source, self._project(index, target), mask)
                for index, (source, target) in enumerate(pairs)
            )
        if weights.attention_scores:
            losses["attention_scores"] = sum(
                attention_score_loss(teacher["attention_scores"][source], target, mask)
                for source, target in zip(self.layer_map, student["attention_scores"], strict=True)
            )
        return {name: getattr(weights, name) * value for name, value in losses.items()}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        losses = self.weighted_losses(x, y, y_pred)
        for name, value in losses.items():
            self.loss_trackers[name].update_state(value)
        # Keras sums gradients over replicas: each replica contributes its share.
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        return keras.ops.sum(keras.ops.stack(list(losses.values()))) / replicas

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        self.accuracy.update_state(y, y_pred["student"]["logits"])
        return {metric.name: metric.result() for metric in self.metrics}

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "trainable": self.trainable,
            "teacher": keras.layers.serialize(self.teacher),
            "student": keras.layers.serialize(self.student),
            "losses": dataclasses.asdict(self.losses_config),
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Distiller:
        config = dict(config)
        for key in ("teacher", "student"):
            config[key] = keras.layers.deserialize(config[key])
        return cls(**config)


def _check_compatible(teacher: BertTask, student: BertTask, losses: DistillationLosses) -> None:
    if type(teacher) is not type(student):
        raise ConfigError(
            f"The student ({type(student).__name__}) must be a {type(teacher).__name__} like "
            "its teacher."
        )
    teacher_classes = task_logits(teacher.output).shape[-1]
    student_classes = task_logits(student.output).shape[-1]
    if teacher_classes != student_classes:
        raise ConfigError(
            f"The student predicts {student_classes} classes, the teacher {teacher_classes}."
        )
    teacher_heads = teacher.encoder.bert_config.num_heads
    student_heads = student.encoder.bert_config.num_heads
    if losses.attention_scores and teacher_heads != student_heads:
        raise ConfigError(
            f"The attention-score loss compares head by head: the student has {student_heads} "
            f"heads, the teacher {teacher_heads}."
        )
