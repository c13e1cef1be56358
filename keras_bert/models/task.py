"""BertTask: the shared base of models that put a task head on a `BertEncoder`."""

from __future__ import annotations

from typing import Any

import keras

from keras_bert.errors import ConfigError
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.functional_config import functional_base_config, set_dtype_policy

# The fine-tuning recipe of the BERT paper: AdamW at 2e-5 ... 5e-5.
DEFAULT_LEARNING_RATE = 5e-5


def head_dense(
    encoder: BertEncoder, units: int, name: str, activation: str | None = None
) -> keras.layers.Dense:
    """A task head's dense layer, computed in float32 (so that logits stay float32 under mixed
    precision).

    Its kernel is drawn from a normal distribution of the encoder's `initializer_range`, as
    Hugging Face initialises new heads, not truncated at two standard deviations as the
    encoder's weights: fine-tuning at BERT's rates moves a head's weights by less than that
    range (about 0.01 over 340 steps at 5e-5), so the head stays close to its draw, and on
    WNUT-16 the truncated draw (standard deviation 0.88 × the range, no tails) scored 7 points
    of entity F1 below the normal one with everything else equal (BENCHMARKS.md).
    """
    return keras.layers.Dense(
        units,
        activation=activation,
        kernel_initializer=keras.initializers.RandomNormal(
            stddev=encoder.bert_config.initializer_range
        ),
        dtype="float32",
        name=name,
    )


def require_pooler(encoder: BertEncoder, owner: str) -> None:
    """Raises a `ConfigError` when a head that reads `pooled_output` gets an encoder without
    BERT's pooler (DistilBERT's)."""
    if encoder.pooler is None:
        raise ConfigError(
            f"{owner} reads the pooled [CLS] output, and this "
            f"{encoder.bert_config.model_type} encoder has no pooler."
        )


class BertTask(keras.Model):
    """A functional model made of a `BertEncoder` and a head, with fine-tuning defaults.

    Subclasses build `outputs` from the encoder's outputs in their `__init__`, pass them (and
    `inputs` if they take more than the encoder's) to `super().__init__`, and define
    `default_loss` / `default_metrics` or their own `compile`.
    `compile()` without arguments uses AdamW (5e-5, weight decay 0.01 except on biases and
    LayerNorm); pass `keras_bert.training.create_optimizer(...)` for warm-up and linear decay.
    """

    # Whether the head reads `pooled_output`. Heads on the sequence output leave the pooler out
    # of `trainable_weights`: it gets no gradient (Keras would warn), and is still saved.
    uses_pooled_output = True

    def __init__(self, encoder: BertEncoder, outputs, inputs=None, **kwargs):
        inputs = encoder.input if inputs is None else inputs
        dtype = kwargs.pop("dtype", None) or encoder.dtype_policy
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        set_dtype_policy(self, dtype)
        self.encoder = encoder

    @property
    def trainable_weights(self) -> list[keras.Variable]:
        weights = super().trainable_weights
        if self.uses_pooled_output or self.encoder.pooler is None:
            return weights
        pooler = {id(weight) for weight in self.encoder.pooler.weights}
        return [weight for weight in weights if id(weight) not in pooler]

    @property
    def trainable_variables(self) -> list[keras.Variable]:
        return self.trainable_weights

    def default_loss(self):
        raise NotImplementedError

    def default_metrics(self):
        raise NotImplementedError

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs) -> None:
        if optimizer == "auto":
            from keras_bert.training import create_optimizer

            optimizer = create_optimizer(DEFAULT_LEARNING_RATE)
        super().compile(
            optimizer=optimizer,
            loss=self.default_loss() if loss == "auto" else loss,
            metrics=self.default_metrics() if metrics == "auto" else metrics,
            **kwargs,
        )

    def compile_from_config(self, config: dict[str, Any]) -> None:
        """Compiles a model loaded from `.keras` as it was compiled when saved."""
        # Registers the optimizer and schedule classes the saved compile config names.
        import keras_bert.training  # noqa: F401

        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def get_config(self) -> dict[str, Any]:
        return {
            **functional_base_config(self),
            "encoder": keras.layers.serialize(self.encoder),
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]):
        config = dict(config)
        config["encoder"] = keras.layers.deserialize(config["encoder"])
        return cls(**config)
