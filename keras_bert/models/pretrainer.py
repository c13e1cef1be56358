"""BertPretrainer: the encoder with BERT's masked-LM and next-sentence heads, and their losses."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import keras

from keras_bert.checkpoints.task_heads import PRETRAINING
from keras_bert.config import BertConfig
from keras_bert.errors import ConfigError
from keras_bert.families import family
from keras_bert.layers.next_sentence_head import NextSentenceHead
from keras_bert.layers.span_boundary_head import SpanBoundaryHead
from keras_bert.models.encoder import INPUT_NAMES, BertEncoder, encoder_inputs
from keras_bert.models.masked_lm import (
    MASKED_LM_SCOPE,
    masked_lm_head_variables,
    tied_masked_lm_head,
)
from keras_bert.models.masked_lm_objective import MaskedLMAccuracy, MaskedLMLoss
from keras_bert.models.pretraining_task import PretrainingTask
from keras_bert.models.task import require_pooler

if TYPE_CHECKING:
    from keras_bert.checkpoints import Checkpoint, CheckpointFiles

logger = logging.getLogger(__name__)

NEXT_SENTENCE_SCOPE = "cls/seq_relationship/"


def pretraining_losses() -> dict[str, keras.losses.Loss]:
    """Masked-LM cross-entropy averaged over real predictions (the `masked_lm_weights` given as
    sample weights), and next-sentence cross-entropy averaged over the batch."""
    return {
        "masked_lm": MaskedLMLoss(),
        "next_sentence": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, name="next_sentence_loss"
        ),
    }


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPretrainer(PretrainingTask):
    """A `BertEncoder` with the masked-LM head (tied decoder) and the next-sentence head.

    Inputs: the encoder's `input_word_ids`, `input_mask`, `input_type_ids`, and
    `masked_lm_positions` `[batch, predictions]`. Outputs: `masked_lm` logits
    `[batch, predictions, vocabulary]` (at the masked positions only) and `next_sentence`
    logits `[batch, 2]`, both float32. `compile()` defaults to BERT's losses and metrics, and
    BERT's pretraining rate (`PretrainingTask`); train on
    `keras_bert.data.pretraining_dataset(...).map(split_features)`.

    With `span_boundary_objective=True` (SpanBERT) a `SpanBoundaryHead` adds a third output,
    `span_boundary` logits `[batch, predictions, vocabulary]`, whose cross-entropy against the
    masked-LM targets (and weights) is added to the loss; it needs no labels of its own.

    Args:
        encoder: a `BertEncoder`, or a `BertConfig` (or its dict) to build one.
        span_boundary_objective: add SpanBERT's span-boundary head and loss.

    Example:
    >>> import numpy as np
    >>> model = BertPretrainer(BertConfig.preset("tiny", vocab_size=100))
    >>> outputs = model({
    ...     "input_word_ids": np.array([[2, 7, 4, 3]]),
    ...     "input_mask": np.array([[1, 1, 1, 1]]),
    ...     "input_type_ids": np.array([[0, 0, 0, 0]]),
    ...     "masked_lm_positions": np.array([[2, 0]]),
    ... })
    >>> tuple(outputs["masked_lm"].shape), tuple(outputs["next_sentence"].shape)
    ((1, 2, 100), (1, 2))
    """

    architecture_task = PRETRAINING

    def __init__(
        self,
        encoder: BertEncoder | BertConfig | dict[str, Any],
        span_boundary_objective: bool = False,
        **kwargs,
    ):
        dtype = kwargs.pop("dtype", None)
        if not isinstance(encoder, BertEncoder):
            config = BertConfig.from_dict(encoder) if isinstance(encoder, dict) else encoder
            encoder = BertEncoder(config, dtype=dtype, name="encoder")
        config = encoder.bert_config

        # Layers
        masked_lm_head = tied_masked_lm_head(encoder, dtype=dtype)
        next_sentence_head = NextSentenceHead(
            initializer_range=config.initializer_range, dtype=dtype, name="next_sentence_head"
        )

        span_boundary_head = None
        if span_boundary_objective:
            span_boundary_head = SpanBoundaryHead(
                encoder.token_embedding,
                hidden_activation=config.hidden_activation,
                layer_norm_epsilon=config.layer_norm_epsilon,
                initializer_range=config.initializer_range,
                dtype=dtype,
                name="span_boundary_head",
            )

        # Functional model
        inputs = encoder_inputs()
        positions = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        inputs["masked_lm_positions"] = positions
        require_pooler(encoder, "BertPretrainer (its next-sentence head)")
        encoder_outputs = encoder({name: inputs[name] for name in INPUT_NAMES})
        sequence_output = encoder_outputs["sequence_output"]
        outputs = {
            "masked_lm": masked_lm_head(sequence_output, positions),
            "next_sentence": next_sentence_head(encoder_outputs["pooled_output"]),
        }
        if span_boundary_head is not None:
            outputs["span_boundary"] = span_boundary_head(sequence_output, positions)
        super().__init__(encoder, outputs, inputs=inputs, **kwargs)

        # Config
        self.masked_lm_head = masked_lm_head
        self.next_sentence_head = next_sentence_head
        self.span_boundary_head = span_boundary_head
        self.span_boundary_objective = span_boundary_objective

    def default_loss(self) -> dict[str, keras.losses.Loss]:
        """BERT's pretraining losses (`pretraining_losses`), SpanBERT's span-boundary loss with
        its head."""
        loss = pretraining_losses()
        if self.span_boundary_objective:
            loss["span_boundary"] = MaskedLMLoss(name="span_boundary_loss")
        return loss

    def default_weighted_metrics(self, loss_weights: Any) -> dict[str, list]:
        """`masked_lm_accuracy` (over real predictions) and `next_sentence_accuracy` (unless
        `loss_weights` gives the next-sentence loss no weight: without sentence pairs it has
        nothing to score)."""
        weighted_metrics = {"masked_lm": [MaskedLMAccuracy(name="accuracy")]}
        if not isinstance(loss_weights, dict) or loss_weights.get("next_sentence", 1.0):
            weighted_metrics["next_sentence"] = [
                keras.metrics.SparseCategoricalAccuracy(name="accuracy")
            ]
        return weighted_metrics

    def training_targets(self, x, y, y_pred, sample_weight):
        """The span-boundary output learns the masked-LM targets, with their weights."""
        if self.span_boundary_objective and isinstance(y, dict) and "span_boundary" not in y:
            y = {**y, "span_boundary": y["masked_lm"]}
            sample_weight = {**sample_weight, "span_boundary": sample_weight["masked_lm"]}
        return y, y_pred, sample_weight

    def head_variables(self) -> dict[str, keras.Variable]:
        model_type = self.bert_config.model_type
        if self.span_boundary_objective:
            raise ConfigError(
                "transformers has no model with SpanBERT's span-boundary head; publish the "
                "masked LM alone (task='masked_lm')."
            )
        if not family(model_type).pretraining_model:
            raise ConfigError(
                f"transformers has no {model_type} model with a next-sentence head (only BERT's "
                "and ALBERT's *ForPreTraining); publish the masked LM alone (task='masked_lm')."
            )
        return _all_head_variables(self)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "span_boundary_objective": self.span_boundary_objective}

    @classmethod
    def from_checkpoint(
        cls,
        path: str | Path | CheckpointFiles,
        dtype: str | None = None,
        vocabulary_file: str | Path | None = None,
        span_boundary_objective: bool = False,
        revision: str | None = None,
        **config_changes: Any,
    ) -> BertPretrainer:
        """A pretrainer with the weights of a Google or Hugging Face checkpoint (a directory or
        a Hub id at `revision`, as `BertEncoder.from_checkpoint` reads).

        The encoder must be complete. The heads (`cls/predictions/...`,
        `cls/seq_relationship/...`) are restored when the checkpoint has them, each checked
        name by name and shape by shape; a checkpoint without a head (e.g. a sentence-embedding
        model) leaves that head freshly initialised, with a log message. A `vocabulary_file`
        other than the checkpoint's moves the model onto it (`transfer_vocabulary`): pieces
        both hold keep their embeddings, new pieces start fresh. A span-boundary head starts
        fresh.
        """
        checkpoint = read_pretraining_checkpoint(path, vocabulary_file, revision)
        encoder = pretraining_encoder(checkpoint, dtype, **config_changes)
        model = cls(encoder, span_boundary_objective=span_boundary_objective, dtype=dtype)
        restore_pretraining_heads(pretraining_head_variables(model), checkpoint)
        return model


def read_pretraining_checkpoint(
    path: str | Path | CheckpointFiles,
    vocabulary_file: str | Path | None = None,
    revision: str | None = None,
) -> Checkpoint:
    """A checkpoint to continue pretraining from (a directory or a Hub id at `revision`), read;
    on a `vocabulary_file` other than its own it is moved onto it (`transfer_vocabulary`:
    pieces both hold keep their embeddings, new pieces start fresh)."""
    from keras_bert.checkpoints import checkpoint_vocabulary_file, find_checkpoint
    from keras_bert.checkpoints.vocabulary_transfer import transfer_vocabulary
    from keras_bert.text import load_vocabulary

    files = find_checkpoint(path, revision)
    checkpoint = files.read()
    if vocabulary_file is not None:
        old_vocabulary = load_vocabulary(checkpoint_vocabulary_file(files))
        new_vocabulary = load_vocabulary(vocabulary_file)
        if new_vocabulary != old_vocabulary:
            checkpoint = transfer_vocabulary(checkpoint, old_vocabulary, new_vocabulary)
    return checkpoint


def pretraining_encoder(
    checkpoint: Checkpoint, dtype: str | None = None, **config_changes: Any
) -> BertEncoder:
    """The checkpoint's encoder, complete, with `config_changes` that keep its weights'
    shapes (`dropout_rate`, ...), named as pretrainers name theirs."""
    from keras_bert.checkpoints import restore_encoder_weights

    config = checkpoint.config.replace(**config_changes)
    encoder = BertEncoder(config, dtype=dtype, name="encoder")
    restore_encoder_weights(encoder, checkpoint)
    return encoder


def restore_pretraining_heads(
    heads: dict[str, dict[str, keras.Variable]], checkpoint: Checkpoint
) -> None:
    """Restores each head (its scope → its variables) that the checkpoint holds, checked name
    by name and shape by shape; a head it lacks keeps its random weights, with a log message."""
    from keras_bert.checkpoints.variables import restore_variables

    for scope, variables in heads.items():
        if any(name.startswith(scope) for name in checkpoint.tensors):
            restore_variables(variables, checkpoint, scope=scope)
        else:
            logger.info(
                "%s has no %s head: it starts from random weights.", checkpoint.source, scope
            )


def pretraining_head_variables(model: BertPretrainer) -> dict[str, dict[str, keras.Variable]]:
    """Canonical (Google TF1) names of the head variables, grouped by head scope."""
    next_sentence = model.next_sentence_head
    return {
        MASKED_LM_SCOPE: masked_lm_head_variables(model.masked_lm_head),
        NEXT_SENTENCE_SCOPE: {
            "cls/seq_relationship/output_weights": next_sentence.output_weights,
            "cls/seq_relationship/output_bias": next_sentence.output_bias,
        },
    }


def _all_head_variables(model: BertPretrainer) -> dict[str, keras.Variable]:
    return {
        name: variable
        for head_variables in pretraining_head_variables(model).values()
        for name, variable in head_variables.items()
    }


def pretrainer_variables(model: BertPretrainer) -> dict[str, keras.Variable]:
    """Canonical name → variable for every weight of a `BertPretrainer` (encoder and heads),
    e.g. to write a Google checkpoint with `save_google_checkpoint`."""
    from keras_bert.checkpoints import encoder_variables

    return encoder_variables(model.encoder) | _all_head_variables(model)
