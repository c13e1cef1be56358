"""Fine-tuning a sentence (pair) classifier or regressor, and evaluating it."""

from __future__ import annotations

import keras
import numpy as np

from keras_bert.data.classification import (
    ClassificationExamples,
    classification_dataset,
    encode_labels,
)
from keras_bert.errors import DataError
from keras_bert.finetuning.recipe import (
    FinetuningConfig,
    find_run_checkpoint,
    fit_task_model,
    save_run,
)
from keras_bert.metrics import classification_scores, regression_scores
from keras_bert.models import BertClassifier
from keras_bert.text.checkpoint_preprocessors import checkpoint_preprocessor


def predict_classifier(
    model: BertClassifier, preprocessor, examples: ClassificationExamples, batch_size: int = 64
) -> np.ndarray:
    """Logits (or regression scores) for every example, in order, computed by Keras' compiled
    `predict` (one traced function, not the model called eagerly per batch)."""
    dummy_labels = np.zeros(len(examples), np.float32)
    dataset = classification_dataset(examples, preprocessor, dummy_labels, batch_size)
    return model.predict(dataset, verbose=0)


def evaluate_classifier(
    model: BertClassifier, preprocessor, examples: ClassificationExamples
) -> dict[str, float]:
    """Accuracy and F1 (classification) or Pearson/Spearman (regression) on labelled examples."""
    outputs = predict_classifier(model, preprocessor, examples)
    if model.is_regression:
        return regression_scores(examples.labels, outputs[:, 0])
    labels = encode_labels(examples.labels, model.label_names)
    return classification_scores(labels, outputs.argmax(-1), num_classes=model.num_classes)


def finetune_classifier(
    config: FinetuningConfig,
    train: ClassificationExamples,
    evaluation: ClassificationExamples | None = None,
    regression: bool = False,
    label_names: list[str] | None = None,
) -> tuple[BertClassifier, dict]:
    """Fine-tunes the checkpoint of `config` on `train`, evaluates on `evaluation`, saves.

    Writes `<output_dir>/model.keras` (carrying its preprocessor: it takes text) and
    `<output_dir>/metrics.json`. Class names come from
    `label_names` or, sorted, from the training labels; evaluation labels outside them raise,
    as training labels of one class do.

    Returns:
        The trained classifier and a summary (speed, training history, evaluation scores).
    """
    checkpoint = find_run_checkpoint(config)
    preprocessor = checkpoint_preprocessor(checkpoint, config.seq_length)
    if config.max_train_examples:
        train = train.sample(config.max_train_examples, seed=config.run.seed)
    if regression:
        label_names, targets = None, np.asarray(train.labels, np.float32)
    else:
        label_names = label_names or sorted(set(train.labels))
        if len(label_names) < 2:
            # One output would make a regressor of it, trained to a constant.
            raise DataError(
                f"The training labels hold one class ({', '.join(map(repr, label_names))}): a "
                "classifier needs two or more. For a score a text, train a regressor "
                "(--regression, float labels)."
            )
        targets = encode_labels(train.labels, label_names)
    if evaluation is not None and not regression:
        encode_labels(evaluation.labels, label_names)  # fail before training, not after
    # Shuffled under Keras' global seed, as `BertClassifier.fit` shuffles texts: with Keras
    # seeded as this run is, `from_checkpoint` and `fit` train step for step as this job does.
    keras.utils.set_random_seed(config.run.seed)
    train_dataset = classification_dataset(
        train,
        preprocessor,
        targets,
        config.batch_size,
        shuffle=True,
        seed=None,
        length_bucketing=config.length_bucketing,
    )

    def build(encoder):
        return BertClassifier(
            encoder,
            num_classes=1 if regression else len(label_names),
            label_names=label_names,
            dropout_rate=config.dropout_rate,
            pooling=config.classifier_pooling,
            preprocessor=preprocessor,
        )

    model, summary = fit_task_model(build, config, train_dataset, len(train), checkpoint)
    if evaluation is not None:
        summary["evaluation"] = evaluate_classifier(model, preprocessor, evaluation)
    save_run(model, summary, config)
    return model, summary
