"""BertReplacedTokenDetector: the encoder with ELECTRA's replaced-token head (the discriminator)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import keras

from keras_bert.checkpoints.task_heads import PRETRAINING
from keras_bert.errors import ConfigError
from keras_bert.families import family
from keras_bert.layers.replaced_token_head import ReplacedTokenHead
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.replaced_token_objective import ReplacedTokenAccuracy, ReplacedTokenLoss
from keras_bert.models.task import BertTask

if TYPE_CHECKING:
    from keras_bert.checkpoints import CheckpointFiles

REPLACED_TOKEN_SCOPE = "cls/discriminator_predictions/"


def replaced_token_head_variables(head: ReplacedTokenHead) -> dict[str, keras.Variable]:
    """Canonical names of a replaced-token head's variables (transformers'
    `discriminator_predictions` under `cls/`)."""
    return {
        f"{REPLACED_TOKEN_SCOPE}dense/kernel": head.dense.kernel,
        f"{REPLACED_TOKEN_SCOPE}dense/bias": head.dense.bias,
        f"{REPLACED_TOKEN_SCOPE}dense_prediction/kernel": head.prediction.kernel,
        f"{REPLACED_TOKEN_SCOPE}dense_prediction/bias": head.prediction.bias,
    }


@keras.saving.register_keras_serializable(package="keras_bert")
class BertReplacedTokenDetector(BertTask):
    """A `BertEncoder` with ELECTRA's replaced-token head: the discriminator of ELECTRA's
    pretraining (transformers' `ElectraForPreTraining`).

    Called on the encoder inputs it returns float32 logits `[batch, sequence]`, one per
    position, positive where the token looks replaced by a generator's sample. `compile()`
    defaults to the sigmoid cross-entropy per token (`ReplacedTokenLoss`) and the share of
    tokens classified right, both averaged over the sample weights given (the `input_mask`:
    ELECTRA scores every real token). `predict` takes texts where the model carries its
    preprocessor.

    Args:
        encoder: the `BertEncoder` (the discriminator's).

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> config = BertConfig.preset("tiny", vocab_size=100, model_type="electra", pooler=False)
    >>> detector = BertReplacedTokenDetector(BertEncoder(config))
    >>> logits = detector({
    ...     "input_word_ids": np.array([[2, 7, 9, 3]]),
    ...     "input_mask": np.array([[1, 1, 1, 1]]),
    ...     "input_type_ids": np.array([[0, 0, 0, 0]]),
    ... })
    >>> tuple(logits.shape)
    (1, 4)
    """

    uses_pooled_output = False
    architecture_task = PRETRAINING

    def __init__(self, encoder: BertEncoder, **kwargs):
        dtype = kwargs.pop("dtype", None)
        config = encoder.bert_config
        # Layers
        replaced_token_head = ReplacedTokenHead(
            config.hidden_size,
            hidden_activation=config.hidden_activation,
            initializer_range=config.initializer_range,
            dtype=dtype,
            name="replaced_token_head",
        )

        # Functional model
        sequence_output = encoder(encoder.input)["sequence_output"]
        logits = replaced_token_head(sequence_output)
        super().__init__(encoder, logits, dtype=dtype, **kwargs)

        # Config
        self.replaced_token_head = replaced_token_head

    @classmethod
    def pretrained(
        cls, path: str | os.PathLike | CheckpointFiles, revision: str | None, **kwargs: Any
    ) -> BertReplacedTokenDetector:
        """The checkpoint's encoder and replaced-token head
        (`keras_bert.load_replaced_token_detector`), read once for both; `kwargs` are
        `BertEncoder.from_checkpoint`'s overrides.

        Raises:
            ConfigError: the checkpoint has no replaced-token head (a generator's, BERT's).
        """
        from keras_bert.checkpoints import find_checkpoint
        from keras_bert.checkpoints.variables import restore_variables

        files = find_checkpoint(path, revision)
        checkpoint = files.read()
        if not any(name.startswith(REPLACED_TOKEN_SCOPE) for name in checkpoint.tensors):
            raise ConfigError(
                f"{files.name} has no replaced-token head ({REPLACED_TOKEN_SCOPE}...): it is "
                "not an ELECTRA discriminator."
            )
        encoder = BertEncoder.from_checkpoint(checkpoint, **kwargs)
        model = cls(encoder, dtype=kwargs.get("dtype"))
        restore_variables(
            replaced_token_head_variables(model.replaced_token_head),
            checkpoint,
            REPLACED_TOKEN_SCOPE,
        )
        return model

    def head_variables(self) -> dict[str, keras.Variable]:
        model_type = self.encoder.bert_config.model_type
        if not family(model_type).replaced_token_detection:
            raise ConfigError(
                f"transformers has no {model_type} model with a replaced-token head (ELECTRA's "
                "ElectraForPreTraining has it): publish an electra encoder's detector, or the "
                "encoder alone (task='encoder')."
            )
        return replaced_token_head_variables(self.replaced_token_head)

    def default_loss(self):
        return ReplacedTokenLoss()

    def default_metrics(self):
        return None

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs) -> None:
        kwargs.setdefault("weighted_metrics", [ReplacedTokenAccuracy()])
        super().compile(optimizer, loss, metrics, **kwargs)
