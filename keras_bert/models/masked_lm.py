"""BertMaskedLM: the encoder with BERT's masked-LM head only (no next-sentence head)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import keras
import tensorflow as tf

from keras_bert.checkpoints.task_heads import MASKED_LM
from keras_bert.checkpoints.variables import head_dense_variables, layer_norm_variables
from keras_bert.data.masking import MaskingConfig, TokenMasker
from keras_bert.data.prefetching import prefetched
from keras_bert.decoding.buckets import length_buckets, trim_to_bucket
from keras_bert.decoding.mask_fillers import mask_fillers, mask_token_of
from keras_bert.errors import ConfigError
from keras_bert.families import family
from keras_bert.layers.masked_lm_head import MaskedLMHead
from keras_bert.models.encoder import INPUT_NAMES, BertEncoder, encoder_inputs
from keras_bert.models.masked_lm_objective import MaskedLMAccuracy, MaskedLMLoss
from keras_bert.models.task import BertTask
from keras_bert.models.text_inputs import DEFAULT_BATCH_SIZE, holds_text, in_batches

if TYPE_CHECKING:
    from keras_bert.checkpoints import CheckpointFiles

MASKED_LM_SCOPE = "cls/predictions/"


def tied_masked_lm_head(
    encoder: BertEncoder,
    hidden_activation: str | None = None,
    layer_norm_epsilon: float | None = None,
    dtype: Any = None,
) -> MaskedLMHead:
    """The masked-LM head tied to `encoder`'s token embeddings; its activation (the family's
    head's, else the encoder's) and LayerNorm epsilon (the encoder's) unless given."""
    config = encoder.bert_config
    if hidden_activation is None:
        hidden_activation = (
            family(config.model_type).masked_lm_activation or config.hidden_activation
        )
    if layer_norm_epsilon is None:
        layer_norm_epsilon = config.layer_norm_epsilon
    return MaskedLMHead(
        encoder.token_embedding,
        hidden_activation=hidden_activation,
        layer_norm_epsilon=layer_norm_epsilon,
        initializer_range=config.initializer_range,
        use_bias=config.dense_bias,
        layer_norm_bias=config.layer_norm_bias,
        dtype=dtype,
        name="masked_lm_head",
    )


def masked_lm_head_variables(head: MaskedLMHead) -> dict[str, keras.Variable]:
    """Canonical (Google TF1) names of a masked-LM head's own variables (ModernBERT's transform
    has no biases)."""
    return {
        **head_dense_variables("cls.predictions.transform.dense", head.dense),
        **layer_norm_variables("cls/predictions/transform/LayerNorm", head.layer_norm),
        "cls/predictions/output_bias": head.output_bias,
    }


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMaskedLM(BertTask):
    """A `BertEncoder` with the masked-LM head (decoder tied to the token embeddings).

    What Hugging Face's `BertForMaskedLM` and keras-hub's `BertMaskedLM` are: `BertPretrainer`
    without the next-sentence head. Inputs: the encoder's `input_word_ids`, `input_mask`,
    `input_type_ids`, and `masked_lm_positions` `[batch, predictions]`. Output:
    `{"masked_lm": logits}`, float32 `[batch, predictions, vocabulary]`. `compile()` defaults
    to the masked-LM loss and accuracy averaged over the `masked_lm_weights` given as sample
    weights.

    With its preprocessor, `fit` and `evaluate` take unlabelled texts (or a `tf.data` dataset
    of them): each batch is packed and masked in the input pipeline as BERT masks
    (`MaskingConfig`'s defaults: 15% of the real tokens, 80% of them `[MASK]`, 10% a random
    token), with new masks on every pass (dynamic masking, as RoBERTa). This needs a
    vocabulary with BERT's `[CLS]`, `[SEP]`, `[PAD]` and `[MASK]` tokens.

    Args:
        encoder: the `BertEncoder`.
        head_activation: the head's transform activation; default the encoder's
            `hidden_activation` (BERT's head; ELECTRA's generator head is always "gelu").
            keras-hub's head computes exact "gelu" on an encoder with "gelu_approximate".
        head_layer_norm_epsilon: the head's LayerNorm epsilon; default the encoder's
            (keras-hub's head uses 1e-5).

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> model = BertMaskedLM(BertEncoder(BertConfig.preset("tiny", vocab_size=100)))
    >>> outputs = model({
    ...     "input_word_ids": np.array([[2, 7, 4, 3]]),
    ...     "input_mask": np.array([[1, 1, 1, 1]]),
    ...     "input_type_ids": np.array([[0, 0, 0, 0]]),
    ...     "masked_lm_positions": np.array([[2]]),
    ... })
    >>> tuple(outputs["masked_lm"].shape)
    (1, 1, 100)
    """

    uses_pooled_output = False
    architecture_task = MASKED_LM

    def __init__(
        self,
        encoder: BertEncoder,
        head_activation: str | None = None,
        head_layer_norm_epsilon: float | None = None,
        **kwargs,
    ):
        dtype = kwargs.pop("dtype", None)
        # Layers
        masked_lm_head = tied_masked_lm_head(
            encoder, head_activation, head_layer_norm_epsilon, dtype=dtype
        )

        # Functional model
        inputs = encoder_inputs()
        inputs["masked_lm_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="masked_lm_positions"
        )
        sequence_output = encoder({name: inputs[name] for name in INPUT_NAMES})["sequence_output"]
        outputs = {"masked_lm": masked_lm_head(sequence_output, inputs["masked_lm_positions"])}
        super().__init__(encoder, outputs, inputs=inputs, **kwargs)

        # Config
        self.masked_lm_head = masked_lm_head
        self.head_activation = head_activation
        self.head_layer_norm_epsilon = head_layer_norm_epsilon

    @classmethod
    def pretrained(
        cls, path: str | os.PathLike | CheckpointFiles, revision: str | None, **kwargs: Any
    ) -> BertMaskedLM:
        """The checkpoint's encoder and masked-LM head (`keras_bert.load_masked_lm`), read
        once for both; `kwargs` are `BertEncoder.from_checkpoint`'s overrides."""
        from keras_bert.checkpoints import find_checkpoint
        from keras_bert.checkpoints.variables import restore_variables

        files = find_checkpoint(path, revision)
        checkpoint = files.read()
        if not any(name.startswith(MASKED_LM_SCOPE) for name in checkpoint.tensors):
            raise ConfigError(f"{files.name} has no masked-LM head ({MASKED_LM_SCOPE}...).")
        encoder = BertEncoder.from_checkpoint(checkpoint, **kwargs)
        model = cls(encoder, dtype=kwargs.get("dtype"))
        restore_variables(
            masked_lm_head_variables(model.masked_lm_head), checkpoint, MASKED_LM_SCOPE
        )
        return model

    def head_variables(self) -> dict[str, keras.Variable]:
        config = self.encoder.bert_config
        family_activation = family(config.model_type).masked_lm_activation
        own_settings = {
            "activation": (self.head_activation, family_activation or config.hidden_activation),
            "LayerNorm epsilon": (self.head_layer_norm_epsilon, config.layer_norm_epsilon),
        }
        for setting, (value, encoder_value) in own_settings.items():
            if value not in (None, encoder_value):
                raise ConfigError(
                    f"transformers' masked-LM heads take the encoder's {setting} "
                    f"({encoder_value!r}); this head's is {value!r} (keras-hub's head)."
                )
        return masked_lm_head_variables(self.masked_lm_head)

    def fill_mask(
        self,
        texts: Sequence[str],
        top_k: int = 5,
        max_masks: int = 4,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> list[list[list[tuple[str, float]]]]:
        """The `top_k` likeliest tokens, with their probabilities, at each mask token of every
        text (`[MASK]`, RoBERTa's `<mask>`; the first `max_masks` of a text), as the export's
        `MaskedLMServing` computes them (`keras_bert.decoding.mask_fillers`). Needs the
        preprocessor.
        """
        preprocessor = self.require_preprocessor("fill_mask")
        tokenizer = preprocessor.tokenizer
        mask_id = tokenizer.token_to_id(mask_token_of(tokenizer))
        buckets = length_buckets(preprocessor.seq_length)

        def decode(text):
            inputs = trim_to_bucket(preprocessor(text), buckets)
            return mask_fillers(inputs, self, tokenizer, mask_id, top_k, max_masks)

        outputs = in_batches(decode, [texts], batch_size)
        return [
            [
                [
                    (token.decode(), float(probability))
                    for token, probability in zip(
                        outputs["top_tokens"][row, mask],
                        outputs["top_probabilities"][row, mask],
                        strict=True,
                    )
                ]
                for mask in range(outputs["num_masks"][row])
            ]
            for row in range(len(texts))
        ]

    def _model_inputs(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        """Unlabelled text becomes masked batches: `(inputs, targets, weights)` of the
        masked-LM objective, drawn anew on each pass under Keras' global seed."""
        if not holds_text(x) or y is not None:
            return super()._model_inputs(x, y, sample_weight, batch_size, shuffle)
        batches = super()._model_inputs(x, batch_size=batch_size, shuffle=shuffle)[0]
        masker = TokenMasker(self.preprocessor.tokenizer.vocabulary, MaskingConfig())

        def mask(batch, seed):
            inputs = keras.utils.unpack_x_y_sample_weight(batch)[0]
            features = masker(inputs["input_word_ids"], inputs["input_mask"], seed)
            inputs = {
                **inputs,
                "input_word_ids": features["input_word_ids"],
                "masked_lm_positions": features["masked_lm_positions"],
            }
            targets = {"masked_lm": features["masked_lm_ids"]}
            return inputs, targets, {"masked_lm": features["masked_lm_weights"]}

        seeds = tf.data.Dataset.random(rerandomize_each_iteration=True).batch(2)
        masked = tf.data.Dataset.zip(batches, seeds).map(mask, num_parallel_calls=tf.data.AUTOTUNE)
        return prefetched(masked), None, None, None

    def predict(self, x, batch_size=None, **kwargs):
        if holds_text(x):
            raise ConfigError(
                "BertMaskedLM.predict takes packed ids with masked_lm_positions; for the tokens "
                "at the [MASK]s of texts call fill_mask."
            )
        return super().predict(x, batch_size=batch_size, **kwargs)

    def default_loss(self):
        return {"masked_lm": MaskedLMLoss()}

    def default_metrics(self):
        return None

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs) -> None:
        kwargs.setdefault("weighted_metrics", {"masked_lm": [MaskedLMAccuracy(name="accuracy")]})
        super().compile(optimizer, loss, metrics, **kwargs)

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "head_activation": self.head_activation,
            "head_layer_norm_epsilon": self.head_layer_norm_epsilon,
        }
