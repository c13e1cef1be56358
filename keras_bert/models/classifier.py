"""BertClassifier: sequence classification (or regression) on the first token, with each
family's own head."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_bert.checkpoints.task_heads import SEQUENCE_CLASSIFICATION, label_config, label_names
from keras_bert.checkpoints.variables import head_dense_variables
from keras_bert.data.classification import (
    ClassificationExamples,
    classification_dataset,
    encode_labels,
)
from keras_bert.errors import ConfigError, DataError, check_ids
from keras_bert.families import ClassifierHead, family
from keras_bert.layers.padding_skip import TrailingPaddingTrim, real_tokens_only
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.task import (
    BertTask,
    head_dense,
    prediction_head,
    prediction_head_variables,
    require_pooler,
)
from keras_bert.models.text_inputs import DEFAULT_BATCH_SIZE

POOLINGS = ("first_token", "mean")


def check_pooling(pooling: str, name: str = "pooling") -> None:
    """Raises a `ConfigError` (a `ValueError`) naming `name` unless `pooling` is in `POOLINGS`."""
    if pooling not in POOLINGS:
        raise ConfigError(f"{name} must be one of {', '.join(POOLINGS)}, got {pooling!r}.")


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedMeanPooling(keras.layers.Layer):
    """The mean of `[batch, sequence, hidden]` vectors over the positions where `mask` is 1.

    Example:
    >>> import numpy as np
    >>> vectors = np.array([[[1.0, 2.0], [3.0, 4.0], [9.0, 9.0]]])
    >>> MaskedMeanPooling()(vectors, np.array([[1, 1, 0]])).numpy().tolist()
    [[2.0, 3.0]]
    """

    def call(self, vectors, mask):
        weights = keras.ops.expand_dims(keras.ops.cast(mask, vectors.dtype), -1)
        total = keras.ops.sum(vectors * weights, axis=1)
        return total / keras.ops.maximum(keras.ops.sum(weights, axis=1), 1.0)


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(BertTask):
    """Classifies single sentences or sentence pairs from the first token, as each family does.

    BERT and ALBERT read their pooler's output (dropout → dense); RoBERTa reads the first token
    through dropout → dense → tanh → dropout → dense, DistilBERT through dense → ReLU →
    dropout → dense (`pre_classifier`), DeBERTa through its context pooler, dense → GELU →
    dropout → dense, as transformers' heads do. Outputs logits
    `[batch, num_classes]`. With `num_classes=1` it is a regressor (STS-B style):
    the output is the predicted score and the default loss is mean squared error.

    With `pooling="mean"` every family reads the mean of the sequence output over the tokens
    of the input mask instead (dropout → dense), as Sentence-BERT and MiniLM's sentence models
    pool: the head then sees every token, whatever the first token learned to attend to.

    ModernBERT's head reads either (its `classifier_pooling`, "cls" or "mean", which
    `from_checkpoint` follows): the first token or the mean through dense → GELU → LayerNorm
    (no biases), then dropout → dense, as transformers' `ModernBertForSequenceClassification`.
    In its local layers the first token sees a window only; the mean sees every token.

    `fit` on texts held in memory (a list, or a pair of lists, with a label each) trains on
    the batches `pipelines.finetune_classifier` trains on (`classification_dataset` with
    `length_bucketing`): texts of similar length together, each batch cut to its longest text,
    shuffled under Keras' global seed, and an epoch is every bucket's batches (a few more than
    `len(texts) / batch_size`; the recipe's schedule spans them all). With `sample_weight`, or
    a `tf.data.Dataset`, the batches are the ones given.

    Batches of encoder inputs padded past their longest row (TFRecords written at a fixed
    `seq_length`, as TensorFlow Model Garden's are) lose the columns no row uses before the
    encoder (`keras_bert.layers.TrailingPaddingTrim`), and the blocks of a training,
    evaluation or prediction step compute the real tokens alone (`real_tokens_only`: the
    padding shorter rows still have costs only its share of attention's scores): the same
    logits and gradients, for the real tokens' cost. Under XLA (`jit_compile=True`,
    `TPUStrategy`) shapes stay fixed.

    `from_checkpoint` of a transformers sequence classifier (`*ForSequenceClassification`)
    reads its head, classes (`id2label`) and regression (`problem_type`) too.

    Args:
        encoder: the `BertEncoder` to fine-tune.
        num_classes: number of classes (1 for regression); default: one per label name.
        label_names: optional names of the classes, carried into exported models.
        dropout_rate: dropout on the pooled output.
        pooling: "first_token" (each family's own head, above) or "mean".

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100))
    >>> classifier = BertClassifier(encoder, num_classes=2, label_names=["neg", "pos"])
    >>> inputs = {
    ...     "input_word_ids": np.array([[2, 7, 9, 3]]),
    ...     "input_mask": np.ones((1, 4), "int32"),
    ...     "input_type_ids": np.zeros((1, 4), "int32"),
    ... }
    >>> tuple(classifier(inputs).shape)
    (1, 2)
    >>> tuple(BertClassifier(encoder, num_classes=3, pooling="mean")(inputs).shape)
    (1, 3)
    >>> BertClassifier(encoder, label_names=["neg", "neutral", "pos"]).num_classes
    3
    """

    def __init__(
        self,
        encoder: BertEncoder,
        num_classes: int | None = None,
        label_names: Sequence[str] | None = None,
        dropout_rate: float = 0.1,
        pooling: str = "first_token",
        **kwargs,
    ):
        check_pooling(pooling)
        if num_classes is None and label_names is None:
            raise ConfigError(
                "A classifier needs its classes: num_classes (1 for regression) or label_names."
            )
        if num_classes is None:
            num_classes = len(label_names)
        if num_classes < 1:
            raise ValueError(f"num_classes must be at least 1, got {num_classes}.")
        if label_names is not None and len(label_names) != num_classes:
            raise ValueError(f"{len(label_names)} label_names given for {num_classes} classes.")
        # Layers
        dropout = keras.layers.Dropout(dropout_rate, name="classifier_dropout")
        head = head_dense(encoder, num_classes, name="logits")

        # The family's own head on the first token, or none (BERT's pooler, or mean pooling);
        # a head that every task shares (ModernBERT's) is on the mean too.
        family_head = family(encoder.bert_config.model_type).classifier_head
        uses_family_head = pooling == "first_token" or family_head.shared_by_tasks
        pooled_head = family_head if uses_family_head else ClassifierHead()
        pre_classifier = None
        if pooled_head.activation is not None:
            pre_classifier = prediction_head(encoder, pooled_head, "pre_classifier")

        # Functional model: the heads read one vector a row, so padding no row has is cut.
        inputs = TrailingPaddingTrim(name="padding_trim")(encoder.input)
        encoder_outputs = encoder(inputs)
        if pooling == "mean":
            # In float32: a bfloat16 sum over hundreds of tokens would keep ~3 digits.
            pooled = MaskedMeanPooling(name="mean_pooling", dtype="float32")(
                encoder_outputs["sequence_output"], inputs["input_mask"]
            )
        elif pre_classifier is None:
            require_pooler(encoder, "BertClassifier")
            pooled = encoder_outputs["pooled_output"]
        else:
            pooled = encoder_outputs["first_token_output"]
            if pooled_head.dropout_before_dense:
                pooled = dropout(pooled)
        if pre_classifier is not None:
            pooled = pre_classifier(pooled)
        logits = head(dropout(pooled))
        super().__init__(encoder, logits, **kwargs)
        self.uses_pooled_output = pooling == "first_token" and pre_classifier is None

        # Config
        self.num_classes = num_classes
        self.label_names = list(label_names) if label_names is not None else None
        self.dropout_rate = dropout_rate
        self.pooling = pooling

    architecture_task = SEQUENCE_CLASSIFICATION

    @property
    def is_regression(self) -> bool:
        return self.num_classes == 1

    # The loss and the logits read one vector a row, never a padded position's: the blocks
    # compute the real tokens alone in training, evaluation and prediction.
    def train_step(self, data):
        with real_tokens_only():
            return super().train_step(data)

    def test_step(self, data):
        with real_tokens_only():
            return super().test_step(data)

    def predict_step(self, data):
        with real_tokens_only():
            return super().predict_step(data)

    def _fit_inputs(self, x, y, sample_weight, batch_size, shuffle):
        if isinstance(x, tf.data.Dataset) or y is None or sample_weight is not None:
            return super()._fit_inputs(x, y, sample_weight, batch_size, shuffle)
        texts, *pairs = x if isinstance(x, tuple) else (x,)
        batches = classification_dataset(
            ClassificationExamples(texts, None, *pairs),
            self.require_preprocessor("text input"),
            self.checked_labels(y),
            batch_size or DEFAULT_BATCH_SIZE,
            shuffle=shuffle,
            seed=None,
            length_bucketing=True,
        )
        return batches, None, None, None

    def checked_labels(self, y):
        """Class ids of labels given as ids or as `label_names` (regression targets as given).

        Raises:
            DataError: class names without `label_names`, or a name not among them; a class id
                outside `[0, num_classes)`; a label with a fraction; one-hot rows; names as
                regression targets.

        Example:
        >>> from keras_bert import BertConfig, BertEncoder
        >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100))
        >>> BertClassifier(encoder, 2, label_names=["neg", "pos"]).checked_labels(["pos", "neg"])
        array([1, 0], dtype=int32)
        >>> BertClassifier(encoder, 2).checked_labels([0, 2])
        Traceback (most recent call last):
        ...
        keras_bert.errors.DataError: Class id 2 is not one of this classifier's 2 classes (0-1).
        >>> BertClassifier(encoder, 2).checked_labels([0.0, 0.5])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        keras_bert.errors.DataError: Label 0.5 is not a class id: ...
        """
        values = np.asarray(y)
        if values.dtype.kind in "USO":
            names = [value.decode() if isinstance(value, bytes) else value for value in values.flat]
            if not all(isinstance(name, str) for name in names):
                return y  # neither names nor a numeric array: Keras' own checks apply
            names = [str(name) for name in names]  # NumPy's strings print as np.str_(...)
            if self.is_regression:
                raise DataError(f"Regression targets are numbers; got {names[0]!r}.")
            if self.label_names is None:
                raise DataError(
                    f"Labels are class names ({names[0]!r}, ...) and this classifier has no "
                    "label_names: build it with label_names=[...] in class order, or pass ids."
                )
            return encode_labels(names, self.label_names)
        if self.is_regression or values.dtype.kind not in "iuf":
            return y
        classes = self.num_classes
        if values.ndim == 2 and values.shape[1] == classes:
            raise DataError(
                f"Labels are rows of {classes} values (one-hot or probabilities); this "
                "classifier takes a class id a text: pass np.argmax(labels, axis=-1)."
            )
        if values.ndim != 1:
            return y
        fractions = values[values != np.round(values)]
        if fractions.size:
            raise DataError(
                f"Label {float(fractions[0])} is not a class id: a classifier takes whole class "
                "ids (or its label_names). For a score a text, build a regressor (num_classes=1)."
            )
        check_ids(values, classes, "Class id", f"this classifier's {classes} classes")
        return y

    @classmethod
    def head_arguments(cls, config_values: Mapping[str, Any]) -> dict[str, Any]:
        """`num_classes` and `label_names` of a `config.json`'s `id2label` (1 class and no names
        for `problem_type: regression`)."""
        if config_values.get("problem_type") == "regression":
            return {"num_classes": 1}
        names = label_names(config_values)
        return {} if names is None else {"num_classes": len(names), "label_names": names}

    @classmethod
    def config_arguments(cls, config_values: Mapping[str, Any]) -> dict[str, Any]:
        """`pooling="mean"` where the family's config names mean pooling (ModernBERT's
        `classifier_pooling: mean`, as ModernBERT-base's config does), head or no head."""
        field = family(config_values.get("model_type", "bert")).classifier_head.pooling_field
        if field is not None and config_values.get(field) == "mean":
            return {"pooling": "mean"}
        return {}

    def head_config(self) -> dict[str, Any]:
        """The `config.json` entries of transformers' classifier of these classes: `id2label`,
        `label2id` (`LABEL_<i>` without names) and `problem_type`; and its pooling where the
        family names it (ModernBERT's `classifier_pooling`)."""
        field = family(self.encoder.bert_config.model_type).classifier_head.pooling_field
        pooling = {} if field is None else {field: "mean" if self.pooling == "mean" else "cls"}
        if self.is_regression:
            return {"problem_type": "regression", **label_config(["LABEL_0"]), **pooling}
        names = self.label_names or [f"LABEL_{index}" for index in range(self.num_classes)]
        return {"problem_type": "single_label_classification", **label_config(names), **pooling}

    def head_variables(self) -> dict[str, keras.Variable]:
        head = family(self.encoder.bert_config.model_type).classifier_head
        if self.pooling != "first_token" and head.pooling_field is None:
            raise ConfigError(
                f"transformers' sequence classifiers read the first token, not the {self.pooling} "
                "of the sequence output (pooling='first_token' is the head they have)."
            )
        variables = head_dense_variables(head.output_module, self.get_layer("logits"))
        if head.dense_module is not None:
            variables |= prediction_head_variables(self, head, "pre_classifier")
        return variables

    def default_loss(self):
        if self.is_regression:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        if self.is_regression:
            return [keras.metrics.MeanAbsoluteError(name="mean_absolute_error")]
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "num_classes": self.num_classes,
            "label_names": self.label_names,
            "dropout_rate": self.dropout_rate,
            "pooling": self.pooling,
        }
