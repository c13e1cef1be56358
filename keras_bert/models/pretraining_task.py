"""PretrainingTask: what the pretraining models share (BERT's `BertPretrainer`, ELECTRA's
`ElectraPretrainer`): their compile defaults, and targets they make from their own outputs."""

from __future__ import annotations

from typing import Any

import keras

from keras_bert.config import BertConfig
from keras_bert.models.task import BertTask

# The BERT paper's pretraining learning rate.
PRETRAINING_LEARNING_RATE = 1e-4


class PretrainingTask(BertTask):
    """The base of the pretraining models.

    `compile()` defaults to `create_optimizer` at BERT's pretraining rate, 1e-4 (AdamW with
    decoupled weight decay, clipping at global norm 1, as `BertTask.compile` does at 5e-5),
    and to the model's `default_loss`, `default_loss_weights` and
    `default_weighted_metrics`. Where an output learns targets the data does not hold (the
    masked-LM targets again, labels the model draws), `training_targets` adds them to the
    data's before the losses and metrics see them.
    """

    @property
    def bert_config(self) -> BertConfig:
        """The encoder's config."""
        return self.encoder.bert_config

    def default_loss_weights(self) -> dict[str, float] | None:
        """The weight of each output's loss where `compile` is given none (None: 1 each)."""
        return None

    def default_weighted_metrics(self, loss_weights: Any) -> dict[str, list]:
        """The metrics, weighted as the losses are, of a model compiled with `loss_weights`."""
        raise NotImplementedError

    def training_targets(self, x, y, y_pred, sample_weight):
        """`(y, y_pred, sample_weight)` as the losses and metrics read them; the data's own."""
        return y, y_pred, sample_weight

    def compile(
        self,
        optimizer: str | keras.optimizers.Optimizer = "auto",
        loss: Any = "auto",
        metrics: Any = None,
        weighted_metrics: Any = "auto",
        **kwargs,
    ):
        """`keras.Model.compile` with the model's pretraining defaults (see the class)."""
        if optimizer == "auto":
            from keras_bert.training import create_optimizer

            optimizer = create_optimizer(PRETRAINING_LEARNING_RATE)
        if kwargs.get("loss_weights") is None:
            kwargs["loss_weights"] = self.default_loss_weights()
        if weighted_metrics == "auto":
            weighted_metrics = self.default_weighted_metrics(kwargs["loss_weights"])
        super().compile(
            optimizer=optimizer,
            loss=self.default_loss() if loss == "auto" else loss,
            metrics=metrics,
            weighted_metrics=weighted_metrics,
            **kwargs,
        )

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        y, y_pred, sample_weight = self.training_targets(x, y, y_pred, sample_weight)
        return super().compute_loss(x, y, y_pred, sample_weight, training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        y, y_pred, sample_weight = self.training_targets(x, y, y_pred, sample_weight)
        return super().compute_metrics(x, y, y_pred, sample_weight)
