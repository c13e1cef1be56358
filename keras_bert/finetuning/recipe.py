"""What every fine-tuning run shares: its settings, the optimizer, callbacks and `model.fit`."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
from pathlib import Path

import keras
import tensorflow as tf

from keras_bert.checkpoints.location import CheckpointFiles, find_checkpoint
from keras_bert.errors import ConfigError, check_positive
from keras_bert.models import BertEncoder
from keras_bert.models.classifier import check_pooling
from keras_bert.training.precision import TrainStepShape
from keras_bert.training.recipes import FINETUNING_RUN
from keras_bert.training.run import fit_resumable
from keras_bert.training.settings import RunSettings

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class FinetuningConfig:
    """Settings of a fine-tuning run, with the BERT paper's defaults.

    Args:
        checkpoint: a directory or Hub id `BertEncoder.from_checkpoint` reads (Hugging Face or
            Google; the jobs default to the installed MiniLM-L6).
        output_dir: where the trained model, the backups for resuming and the logs go.
        seq_length: packed sequence length.
        batch_size: global batch size (split over replicas).
        epochs: passes over the training data.
        dropout_rate: dropout in the encoder and the head.
        max_train_examples: train on N examples drawn at random under `seed` (quick runs).
        length_bucketing: batch training texts of similar length (less padding, faster).
        classifier_pooling: what a sentence classifier reads, "first_token" (each family's
            own head) or "mean" (the mean of the sequence output; see `BertClassifier`).
        document_context: token classification: read each sentence with the text of its
            document around it (`tagging_windows`, the BERT paper's CoNLL-2003 setting) where
            the data marks documents (CoNLL's `-DOCSTART-`). Off by default: on a CoNLL-2003
            screen it scored 1.5 F1 points below sentences alone, at 3.6× the time
            (docs/benchmarks.md#recipes).
        embedding_rms: rescale the checkpoint's embedding tables to this root mean square
            before training (`BertEmbeddings.rescale`: the same encoder, faster-moving tables);
            e.g. 0.02 for a checkpoint whose tables pretraining grew (runs from scratch here
            write theirs at 0.02 already: `rescaled_embedding_tables`). Off by default.
        revision: the Hub branch, tag or commit when `checkpoint` is a Hub id.
        run: the `RunSettings` (or a dict of some of them, over `FINETUNING_RUN`): learning
            rate and warm-up, optimizer, precision, strategy; its `seed` also seeds the
            shuffling and the examples drawn by `max_train_examples`.

    Example:
    >>> config = FinetuningConfig("minilm", "runs/sst2", run={"learning_rate": 3e-5})
    >>> config.run.learning_rate, config.run.warmup_fraction, config.run.clip_global_norm
    (3e-05, 0.1, 1.0)
    """

    checkpoint: str
    output_dir: str
    seq_length: int = 128
    batch_size: int = 32
    epochs: float = 2
    dropout_rate: float = 0.1
    max_train_examples: int | None = None
    length_bucketing: bool = True
    classifier_pooling: str = "first_token"
    document_context: bool = False
    embedding_rms: float | None = None
    revision: str | None = None
    run: RunSettings = FINETUNING_RUN

    def __post_init__(self):
        self.run = RunSettings.of(self.run, FINETUNING_RUN)
        check_pooling(self.classifier_pooling, "classifier_pooling")
        check_positive(
            epochs=self.epochs,
            batch_size=self.batch_size,
            max_train_examples=self.max_train_examples,
            embedding_rms=self.embedding_rms,
        )
        if not 0 <= self.dropout_rate < 1:
            raise ConfigError(f"dropout_rate must be in [0, 1), got {self.dropout_rate!r}.")

    def steps_per_epoch(self, num_examples: int) -> int:
        return -(-num_examples // self.batch_size)


def find_run_checkpoint(config: FinetuningConfig, weights: bool = True) -> CheckpointFiles:
    """The files of the run's checkpoint, found (a Hub id: downloaded) once for the whole job:
    its preprocessor (`keras_bert.text.checkpoint_preprocessors`) and its encoder
    (`checkpoint_encoder`) read them."""
    return find_checkpoint(config.checkpoint, config.revision, weights)


def checkpoint_encoder(config: FinetuningConfig, checkpoint: CheckpointFiles) -> BertEncoder:
    """The encoder of the run's checkpoint (`find_run_checkpoint`) with the run's dropout; a
    `seq_length` beyond its learned (or rotary: ModernBERT's) positions is a `ConfigError`."""
    encoder = BertEncoder.from_checkpoint(
        checkpoint,
        dropout_rate=config.dropout_rate,
        attention_dropout_rate=config.dropout_rate,
    )
    if config.embedding_rms is not None:
        encoder.embeddings.rescale(config.embedding_rms)
    encoder.bert_config.check_seq_length(config.seq_length)
    return encoder


def fit_task_model(
    build_model,
    config: FinetuningConfig,
    train_dataset: tf.data.Dataset,
    num_train_examples: int,
    checkpoint: CheckpointFiles,
) -> tuple[keras.Model, dict]:
    """Builds (under the strategy), compiles and trains a task model; resumes if interrupted.

    Args:
        build_model: a function `encoder -> task model`, called in the strategy's scope with
            the encoder of `config.checkpoint`.
        config: the run's settings.
        train_dataset: batches of `(inputs, labels)`; the trainer repeats and limits it. An
            epoch is its `cardinality` where known (batches by length: every bucket's
            batches), else `ceil(num_train_examples / batch_size)` batches.
        num_train_examples: examples per epoch.
        checkpoint: the run's checkpoint, found once for the job (`find_run_checkpoint`).

    Returns:
        The trained model and a summary: training time, sequences per second, the precision
        trained in, final metrics.
    """
    return fit_model(
        lambda: build_model(checkpoint_encoder(config, checkpoint)),
        config,
        train_dataset,
        num_train_examples,
        TrainStepShape.of(checkpoint.config, config.batch_size, config.seq_length),
    )


def fit_model(
    build_model,
    config: FinetuningConfig,
    train_dataset: tf.data.Dataset,
    num_train_examples: int,
    step_shape: TrainStepShape | None = None,
) -> tuple[keras.Model, dict]:
    """`fit_task_model` for a model built without the checkpoint's encoder: `build_model`
    takes no argument (e.g. a `Distiller` of a trained teacher). `step_shape` is the train
    step `--precision auto` times (default: `TrainStepShape`'s encoder sizes at the run's batch
    and sequence length)."""
    known_batches = int(train_dataset.cardinality())  # < 0: infinite or unknown
    steps_per_epoch = (
        known_batches if known_batches > 0 else config.steps_per_epoch(num_train_examples)
    )
    total_steps = max(1, round(config.epochs * steps_per_epoch))

    def datasets(start_step: int):
        # The same batches in the same order as an uninterrupted run, from `start_step` on.
        remaining = total_steps - start_step
        return train_dataset.repeat().skip(start_step).take(remaining), None

    result = fit_resumable(
        build_model,
        config.run,
        datasets,
        # The examples an epoch holds: a run resumed on other training data stops (as on
        # other settings) instead of training on as a mix of the two.
        run_config={**dataclasses.asdict(config), "train_examples": num_train_examples},
        output_dir=config.output_dir,
        total_steps=total_steps,
        steps_per_epoch=steps_per_epoch,
        step_shape=step_shape or TrainStepShape(config.batch_size, config.seq_length),
    )
    summary = {
        # This process's seconds: a resumed run's earlier epochs were timed by the killed one.
        "train_seconds": round(result.train_seconds, 1),
        "resumed_after_epoch": result.initial_epoch,
        "train_steps": total_steps,
        # The examples this process trained on: a step holds `batch_size` of them on average
        # only where every batch is full.
        "sequences_per_second": round(
            (total_steps - result.initial_epoch * steps_per_epoch)
            * (num_train_examples / steps_per_epoch)
            / result.train_seconds,
            2,
        ),
        # Each epoch this process trained, in seconds: the first holds building the graph.
        "epoch_seconds": epoch_seconds(result.history.history.get("train_seconds", [])),
        "precision": result.precision.to_dict(),
        "history": {
            name: [float(v) for v in values] for name, values in result.history.history.items()
        },
    }
    return result.model, summary


def epoch_seconds(cumulative_seconds: list[float]) -> list[float]:
    """Each epoch's seconds, from the seconds since `fit` began at each epoch's end (the
    `train_seconds` `TrainingTime` logs).

    Example:
    >>> epoch_seconds([14.5, 20.0, 25.5])
    [14.5, 5.5, 5.5]
    """
    ends = [0.0, *map(float, cumulative_seconds)]
    return [round(end - start, 1) for start, end in itertools.pairwise(ends)]


def save_run(model: keras.Model, summary: dict, config: FinetuningConfig) -> None:
    """Writes `<output_dir>/model.keras` and `<output_dir>/metrics.json`."""
    model.save(Path(config.output_dir) / "model.keras")
    write_summary(summary, config)


def write_summary(summary: dict, config: FinetuningConfig) -> None:
    """Writes the run's summary (speed, precision, history, scores) as
    `<output_dir>/metrics.json`."""
    (Path(config.output_dir) / "metrics.json").write_text(json.dumps(summary, indent=2))
