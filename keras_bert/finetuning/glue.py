"""Fine-tuning a GLUE task: train on its training split, score its dev splits with GLUE's
metrics, and write the GLUE server's files for its test splits."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from keras_bert.data.glue import (
    GlueSplit,
    glue_predictions_as_submitted,
    write_glue_submission,
)
from keras_bert.finetuning.classification import finetune_classifier, predict_classifier
from keras_bert.finetuning.recipe import FinetuningConfig, write_summary
from keras_bert.metrics.glue import glue_scores
from keras_bert.models import BertClassifier


def score_glue_split(model: BertClassifier, split: GlueSplit) -> dict[str, float]:
    """The task's metrics (`glue_scores`) of a fine-tuned classifier on a labelled split."""
    outputs = predict_classifier(model, model.preprocessor, split.examples)
    return glue_scores(split.task, split.examples.labels, outputs)


def write_glue_predictions(model: BertClassifier, split: GlueSplit, directory: str | Path) -> Path:
    """Writes the model's predictions of a test split as GLUE's server wants them
    (`<directory>/MRPC.tsv`; AX's split is predicted by MNLI's model)."""
    outputs = predict_classifier(model, model.preprocessor, split.examples)
    return write_glue_submission(
        Path(directory) / split.task.submission_files[split.split],
        split.examples.ids,
        glue_predictions_as_submitted(split.task, outputs),
    )


def finetune_glue_task(
    config: FinetuningConfig,
    train: GlueSplit,
    evaluations: Sequence[GlueSplit] = (),
    tests: Sequence[GlueSplit] = (),
    submission_dir: str | Path | None = None,
) -> tuple[BertClassifier, dict]:
    """Fine-tunes the checkpoint of `config` on a GLUE task and scores it as GLUE does.

    Args:
        config: the run's settings (`output_dir` gets `model.keras` and `metrics.json`).
        train: the task's training split.
        evaluations: labelled splits to score (`validation`; MNLI's matched and mismatched).
        tests: unlabelled splits to predict for GLUE's server (`test`; AX with MNLI's model).
        submission_dir: where the server's files go (default `<output_dir>/submission`).

    Returns:
        The classifier and its summary; `summary["evaluation"]` maps each evaluation split to
        its metrics by name (`accuracy`, `f1`, `mcc`, `pearson`, `spearman`), and
        `summary["submission"]` lists the files written.
    """
    task = train.task
    model, summary = finetune_classifier(
        config,
        train.examples,
        regression=task.is_regression,
        label_names=None if task.is_regression else list(task.label_names),
    )
    summary["train_examples"] = min(len(train), config.max_train_examples or len(train))
    summary["evaluation"] = {split.split: score_glue_split(model, split) for split in evaluations}
    submission_dir = Path(submission_dir or Path(config.output_dir) / "submission")
    summary["submission"] = [
        str(write_glue_predictions(model, split, submission_dir)) for split in tests
    ]
    write_summary(summary, config)
    return model, summary
