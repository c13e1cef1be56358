"""BertTask: the shared base of models that put a task head on a `BertEncoder`."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import keras
import tensorflow as tf

from keras_bert.checkpoints.variables import head_dense_variables, layer_norm_variables
from keras_bert.errors import ConfigError
from keras_bert.families import ClassifierHead, family
from keras_bert.layers.layer_normalization import FastLayerNormalization
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.functional_config import functional_base_config, set_dtype_policy
from keras_bert.models.input_checks import check_preprocessor, checked_inputs
from keras_bert.models.text_inputs import (
    check_text_input,
    holds_text,
    preprocessed,
    text_dataset,
)
from keras_bert.training.optimization import build_optimizer

if TYPE_CHECKING:
    from keras_bert.checkpoints import Checkpoint, CheckpointFiles

logger = logging.getLogger(__name__)


def recipe_optimizer(total_steps: int | None = None) -> keras.optimizers.Optimizer:
    """The fine-tuning recipe's optimizer (`keras_bert.training.recipes.FINETUNING_RUN`), its
    warm-up and linear decay spread over `total_steps` (None: its peak rate throughout)."""
    from keras_bert.training import create_optimizer
    from keras_bert.training.recipes import FINETUNING_RUN

    if total_steps:
        return FINETUNING_RUN.create_optimizer(total_steps)
    return create_optimizer(FINETUNING_RUN.learning_rate)


def head_dense(
    encoder: BertEncoder,
    units: int,
    name: str,
    activation: str | None = None,
    use_bias: bool = True,
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
        use_bias=use_bias,
        kernel_initializer=keras.initializers.RandomNormal(
            stddev=encoder.bert_config.initializer_range
        ),
        dtype="float32",
        name=name,
    )


class PredictionHead(NamedTuple):
    """A family's transform before a task's output layer (`ClassifierHead`): a dense layer
    with its activation (`pre_classifier`), and for ModernBERT a LayerNorm after it."""

    dense: keras.layers.Dense
    layer_norm: keras.layers.LayerNormalization | None

    def __call__(self, features):
        features = self.dense(features)
        return features if self.layer_norm is None else self.layer_norm(features)


def prediction_head(encoder: BertEncoder, head: ClassifierHead, name: str) -> PredictionHead:
    """The layers of `head`'s transform (it has an activation) on `encoder`, in float32 as
    `head_dense`'s; biases as the encoder's dense layers and LayerNorms have them."""
    config = encoder.bert_config
    dense = head_dense(encoder, config.hidden_size, name, head.activation, config.dense_bias)
    layer_norm = None
    if head.layer_norm_module is not None:
        layer_norm = FastLayerNormalization(
            epsilon=config.layer_norm_epsilon,
            center=config.layer_norm_bias,
            dtype="float32",
            name=f"{name}_layer_norm",
        )
    return PredictionHead(dense, layer_norm)


def prediction_head_variables(model: keras.Model, head: ClassifierHead, name: str) -> dict:
    """The canonical names (`head`'s modules) of the variables of the transform that
    `prediction_head` named `name` in `model`."""
    variables = head_dense_variables(head.dense_module, model.get_layer(name))
    if head.layer_norm_module is not None:
        module = head.layer_norm_module.replace(".", "/")
        variables |= layer_norm_variables(module, model.get_layer(f"{name}_layer_norm"))
    return variables


# The name of the prediction head that token-level tasks put on every token (ModernBERT's).
TOKEN_TRANSFORM = "token_transform"


def token_transform(encoder: BertEncoder) -> PredictionHead | None:
    """The prediction head a family's token classifier and question answerer put on every
    token (`ClassifierHead.shared_by_tasks`: ModernBERT's), or None."""
    head = family(encoder.bert_config.model_type).classifier_head
    return prediction_head(encoder, head, TOKEN_TRANSFORM) if head.shared_by_tasks else None


def token_transform_variables(model: keras.Model) -> dict[str, keras.Variable]:
    """The canonical names of the variables of a task's `token_transform` ({} without one)."""
    head = family(model.encoder.bert_config.model_type).classifier_head
    if not head.shared_by_tasks:
        return {}
    return prediction_head_variables(model, head, TOKEN_TRANSFORM)


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
    A model not compiled when `fit` is first called gets the fine-tuning recipe's optimizer
    (`FinetuningConfig`'s defaults: AdamW at 5e-5, 10% warm-up, then linear decay to 0 at the
    end of the `fit`) and its task's loss and metrics.

    A task carries its `preprocessor` (as keras-hub's tasks do; `from_checkpoint` gives it the
    checkpoint's): `fit`, `evaluate` and `predict` then take raw texts, pairs of them and
    `tf.data` datasets of strings (see `keras_bert.models.text_inputs`), tokenized in the input
    pipeline, not in the model's graph (`BertClassifier.fit` batches texts by length, as the
    fine-tuning jobs do). Packed ids work with or without one. It is saved and reloaded with
    the model (`.keras`), and exported with it (`keras_bert.export`).
    """

    # Whether the head reads `pooled_output`. Heads on the sequence output leave the pooler out
    # of `trainable_weights`: it gets no gradient (Keras would warn), and is still saved.
    uses_pooled_output = True
    # The task of transformers' architectures whose head is this task's
    # (`keras_bert.checkpoints.task_heads`: "ForSequenceClassification", ...); None for none.
    architecture_task: str | None = None

    def __init__(
        self,
        encoder: BertEncoder,
        outputs,
        inputs=None,
        preprocessor: keras.layers.Layer | None = None,
        **kwargs,
    ):
        inputs = encoder.input if inputs is None else inputs
        dtype = kwargs.pop("dtype", None) or encoder.dtype_policy
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        set_dtype_policy(self, dtype)
        self.encoder = encoder
        self.preprocessor = preprocessor

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike | CheckpointFiles,
        seq_length: int | None = None,
        revision: str | None = None,
        **kwargs: Any,
    ) -> BertTask:
        """The task on a checkpoint's encoder, carrying the checkpoint's preprocessor: a model
        that `fit`s, `evaluate`s and `predict`s raw text. Its head is new, or the checkpoint's
        where that is transformers' model of the task (`pretrained`; e.g. what
        `keras_bert.save_checkpoint` wrote).

        Args:
            path: a checkpoint directory of any family, or a Hub id (`keras_bert.load_encoder`),
                found once for the encoder and the preprocessor.
            seq_length: length of the packed inputs (default 128, or the most tokens the
                model reads where that is less).
            revision: the Hub branch, tag or commit of a Hub id.
            **kwargs: the task's own arguments (`num_classes`, `label_names`, ...); those of a
                checkpoint's head come from its config when left out.
        """
        from keras_bert.checkpoints import find_checkpoint
        from keras_bert.text.checkpoint_preprocessors import checkpoint_preprocessor

        checkpoint = find_checkpoint(path, revision)
        model = cls.pretrained(checkpoint, None, **kwargs)
        model.preprocessor = checkpoint_preprocessor(checkpoint, seq_length)
        return model

    @classmethod
    def pretrained(
        cls, path: str | os.PathLike | CheckpointFiles, revision: str | None, **kwargs: Any
    ) -> BertTask:
        """The task on the checkpoint's encoder (`from_checkpoint` without the preprocessor).

        A checkpoint of transformers' model of this task (its `architectures`, e.g.
        `RobertaForSequenceClassification`) gives its head too, with the head's arguments of its
        config (`num_classes`, `label_names` from its `id2label`) unless `kwargs` give some of
        them; any other checkpoint gives a new head.
        """
        from keras_bert.checkpoints import find_checkpoint
        from keras_bert.checkpoints.task_heads import architecture_task

        files = find_checkpoint(path, revision)
        checkpoint = files.read()
        encoder = BertEncoder.from_checkpoint(checkpoint)
        holds_head = cls.architecture_task is not None and (
            architecture_task(files.config_values) == cls.architecture_task
        )
        kwargs = {**cls.config_arguments(files.config_values), **kwargs}
        if not holds_head:
            return cls(encoder, **kwargs)
        head_arguments = cls.head_arguments(files.config_values)
        if not head_arguments.keys() & kwargs.keys():
            kwargs = {**head_arguments, **kwargs}
        model = cls(encoder, **kwargs)
        model.restore_head(checkpoint)
        return model

    @classmethod
    def head_arguments(cls, config_values: Mapping[str, Any]) -> dict[str, Any]:
        """The head's constructor arguments that a checkpoint's `config.json` gives."""
        return {}

    @classmethod
    def config_arguments(cls, config_values: Mapping[str, Any]) -> dict[str, Any]:
        """Constructor arguments that a checkpoint's `config.json` gives whatever head it
        holds (ModernBERT's `classifier_pooling`); what the caller gives comes first."""
        return {}

    def head_config(self) -> dict[str, Any]:
        """The `config.json` entries of transformers' model of this task beyond the encoder's
        (`id2label`, ...): what `head_arguments` reads back."""
        return {}

    def head_variables(self) -> dict[str, keras.Variable]:
        """The head's variables under the canonical names of transformers' head of this task
        (its module paths: `classifier/out_proj/kernel`, `cls/predictions/...`).

        Raises:
            ConfigError: transformers has no model with this head.
        """
        raise ConfigError(f"transformers has no model with the head of a {type(self).__name__}.")

    def restore_head(self, checkpoint: Checkpoint) -> None:
        """Restores the head from the tensors of a checkpoint of transformers' model of this task.
        A head other than the checkpoint's (other classes, another pooling) stays new, with a
        warning; a checkpoint that lacks some of its head's tensors is a `CheckpointError`."""
        from keras_bert.checkpoints.variables import restore_variables

        try:
            variables = self.head_variables()
        except ConfigError as error:
            logger.warning("%s: its head is not read: %s", checkpoint.source, error)
            return
        other_shapes = [
            name
            for name, variable in variables.items()
            if name in checkpoint.tensors
            and tuple(checkpoint.tensors[name].shape) != tuple(variable.shape)
        ]
        if other_shapes:
            logger.warning(
                "%s: its head (%s) has other shapes than this %s's: the head starts anew.",
                checkpoint.source,
                ", ".join(other_shapes),
                type(self).__name__,
            )
            return
        scopes = tuple({f"{name.split('/')[0]}/" for name in variables})
        restore_variables(variables, checkpoint, scope=scopes)

    def require_preprocessor(self, what: str) -> keras.layers.Layer:
        """The carried preprocessor; a `ConfigError` saying that `what` needs one if none, or
        that its packed rows do not fit the model (`check_preprocessor`)."""
        if self.preprocessor is None:
            raise ConfigError(
                f"{type(self).__name__} {self.name!r} carries no preprocessor, which {what} "
                "needs: build it with from_checkpoint or pass preprocessor=."
            )
        check_preprocessor(self.preprocessor, self.encoder.bert_config)
        return self.preprocessor

    def _check_text_input(self, x) -> None:
        """Raises a `DataError` for texts in memory that no task reads (`check_text_input`);
        warns of texts longer than the preprocessor packs (texts in memory only: a `tf.data`
        dataset is read once, by the model)."""
        check_text_input(x)
        if holds_text(x) and not isinstance(x, tf.data.Dataset):
            self.require_preprocessor("text input").warn_of_cut_texts(x)

    def checked_labels(self, y):
        """The labels of texts in memory as the task's loss reads them (as given here; a
        classifier maps class names to ids and checks them)."""
        return y

    def _model_inputs(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        """`(x, y, sample_weight, batch_size)` for Keras: text becomes a preprocessed dataset;
        packed ids are checked against the encoder (`checked_inputs`)."""
        if not holds_text(x):
            return checked_inputs(x, self.encoder.bert_config), y, sample_weight, batch_size
        preprocessor = self.require_preprocessor("text input")
        if y is not None and not isinstance(x, tf.data.Dataset):
            y = self.checked_labels(y)
        dataset = text_dataset(x, y, sample_weight, batch_size, shuffle)
        return preprocessed(dataset, preprocessor), None, None, None

    def _fit_inputs(self, x, y, sample_weight, batch_size, shuffle):
        """`_model_inputs` of the texts `fit` trains on; a task batches them its own way."""
        return self._model_inputs(x, y, sample_weight, batch_size, shuffle)

    def fit(
        self,
        x=None,
        y=None,
        batch_size=None,
        epochs=1,
        verbose="auto",
        callbacks=None,
        validation_split=0.0,
        validation_data=None,
        shuffle=True,
        class_weight=None,
        sample_weight=None,
        **kwargs,
    ):
        self._check_text_input(x)
        if isinstance(validation_data, tf.data.Dataset):
            if holds_text(validation_data):
                validation_data = self._model_inputs(validation_data)[0]
        elif validation_data is not None and holds_text(validation_data[0]):
            check_text_input(validation_data[0])
            validation_data = self._model_inputs(*validation_data, batch_size=batch_size)[0]
        if holds_text(x):  # shuffled in the text pipeline, as Keras shuffles arrays
            in_memory = not isinstance(x, tf.data.Dataset)
            x, y, sample_weight, batch_size = self._fit_inputs(
                x, y, sample_weight, batch_size, shuffle and in_memory
            )
            shuffle = False
            batches = int(x.cardinality())  # < 0: infinite or unknown
            if in_memory and batches > 0 and kwargs.get("steps_per_epoch") is None:
                # Epochs as passes of one stream, as the fine-tuning jobs feed `fit`: Keras would
                # start each epoch on an iterator of its own, one reshuffle further on than the
                # job's (it makes the next one as an epoch ends).
                kwargs["steps_per_epoch"] = batches
                x = x.repeat()
        else:
            x = checked_inputs(x, self.encoder.bert_config)
        if not self.compiled:
            self._compile_for_fit(x, batch_size, epochs, kwargs.get("steps_per_epoch"))
        build_optimizer(self)
        return super().fit(
            x=x,
            y=y,
            batch_size=batch_size,
            epochs=epochs,
            verbose=verbose,
            callbacks=callbacks,
            validation_split=validation_split,
            validation_data=validation_data,
            shuffle=shuffle,
            class_weight=class_weight,
            sample_weight=sample_weight,
            **kwargs,
        )

    def _compile_for_fit(self, x, batch_size, epochs, steps_per_epoch) -> None:
        """Compiles with the recipe's optimizer, its schedule over the steps of this `fit`."""
        if steps_per_epoch is None and isinstance(x, tf.data.Dataset):
            batches = int(x.cardinality())
            steps_per_epoch = batches if batches > 0 else None
        elif steps_per_epoch is None and x is not None:
            examples = len(next(iter(x.values())) if isinstance(x, dict) else x)
            steps_per_epoch = -(-examples // (batch_size or 32))
        total_steps = steps_per_epoch * epochs if steps_per_epoch else None
        with self.distribute_strategy.scope():
            self.compile(optimizer=recipe_optimizer(total_steps))

    def evaluate(
        self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, **kwargs
    ):
        self._check_text_input(x)
        x, y, sample_weight, batch_size = self._model_inputs(x, y, sample_weight, batch_size)
        return super().evaluate(
            x=x, y=y, batch_size=batch_size, verbose=verbose, sample_weight=sample_weight, **kwargs
        )

    def predict(self, x, batch_size=None, **kwargs):
        self._check_text_input(x)
        x, _, _, batch_size = self._model_inputs(x, batch_size=batch_size)
        if isinstance(x, tf.data.Dataset):
            self._trace_predict_for_any_shape([x.element_spec])
        return super().predict(x=x, batch_size=batch_size, **kwargs)

    def predict_on_batch(self, x):
        x = checked_inputs(x, self.encoder.bert_config)
        self._trace_predict_for_any_shape([(x,)])
        return super().predict_on_batch(x)

    def _trace_predict_for_any_shape(self, data) -> None:
        """Traces Keras' predict function once for `data` (the structure Keras passes it: a
        list of batches, as values or specs) at any batch size and length.

        Keras calls that function with each batch's tensors, so batches of varying length
        (padded to each batch's longest, or bucketed) and a shorter last batch trace it three
        times, from the most specific shape to the most general: MiniLM-L6 predicted CoLA's
        1,043 dev sentences in 5.0 s, and in 2.9 s traced once. Skipped where Keras feeds it
        otherwise (eager, several steps per execution, several replicas).
        """
        if (
            self.run_eagerly
            or self.steps_per_execution != 1
            or self.distribute_strategy.num_replicas_in_sync != 1
        ):
            return

        def any_shape(value):
            spec = value if isinstance(value, tf.TypeSpec) else tf.type_spec_from_value(value)
            if not isinstance(spec, tf.TensorSpec) or spec.shape.rank is None:
                return spec
            return tf.TensorSpec([None] * spec.shape.rank, spec.dtype)

        self.make_predict_function()
        self.predict_function.get_concrete_function(tf.nest.map_structure(any_shape, data))

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
            optimizer = recipe_optimizer()
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
        config = {
            **functional_base_config(self),
            "encoder": keras.layers.serialize(self.encoder),
        }
        if self.preprocessor is not None:
            config["preprocessor"] = keras.layers.serialize(self.preprocessor)
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]):
        config = dict(config)
        config["encoder"] = keras.layers.deserialize(config["encoder"])
        if config.get("preprocessor") is not None:
            config["preprocessor"] = keras.layers.deserialize(config["preprocessor"])
        return cls(**config)
