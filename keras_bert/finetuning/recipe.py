"""What every fine-tuning run shares: its settings, the optimizer, callbacks and `model.fit`."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path

import keras
import tensorflow as tf

from keras_bert.models import BertEncoder
from keras_bert.text import BertPreprocessor
from keras_bert.training import (
    create_optimizer,
    jit_compile_supported,
    resolve_strategy,
    training_callbacks,
)

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class FinetuningConfig:
    """Settings of a fine-tuning run, with the BERT paper's defaults.

    Args:
        checkpoint: a directory `BertEncoder.from_checkpoint` reads (Hugging Face or Google).
        output_dir: where the trained model, the backups for resuming and the logs go.
        seq_length: packed sequence length.
        batch_size: global batch size (split over replicas).
        epochs: passes over the training data.
        learning_rate: peak AdamW learning rate (2e-5 ... 5e-5).
        warmup_fraction: share of steps spent warming up; then linear decay to 0.
        weight_decay: AdamW decoupled weight decay (not on biases and LayerNorm).
        dropout_rate: dropout in the encoder and the head.
        seed: seeds shuffling and initialisation.
        strategy: "default", "mirrored", "multi_worker_mirrored" or "tpu".
        jit_compile: compile train steps with XLA (falls back where unsupported).
        max_train_examples: train on N examples drawn at random under `seed` (quick runs).
        length_bucketing: batch training texts of similar length (less padding, faster).
    """

    checkpoint: str
    output_dir: str
    seq_length: int = 128
    batch_size: int = 32
    epochs: float = 2
    learning_rate: float = 5e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    dropout_rate: float = 0.1
    seed: int = 0
    strategy: str = "default"
    jit_compile: bool = False
    max_train_examples: int | None = None
    length_bucketing: bool = True

    def steps_per_epoch(self, num_examples: int) -> int:
        return -(-num_examples // self.batch_size)


def load_preprocessor(config: FinetuningConfig, **kwargs) -> BertPreprocessor:
    return BertPreprocessor.from_checkpoint(
        config.checkpoint, seq_length=config.seq_length, **kwargs
    )


def load_encoder(config: FinetuningConfig) -> BertEncoder:
    return BertEncoder.from_checkpoint(
        config.checkpoint,
        dropout_rate=config.dropout_rate,
        attention_dropout_rate=config.dropout_rate,
    )


def fit_task_model(
    build_model,
    config: FinetuningConfig,
    train_dataset: tf.data.Dataset,
    num_train_examples: int,
) -> tuple[keras.Model, dict]:
    """Builds (under the strategy), compiles and trains a task model; resumes if interrupted.

    Args:
        build_model: a function `encoder -> task model`, called in the strategy's scope with
            the encoder of `config.checkpoint`.
        config: the run's settings.
        train_dataset: batches of `(inputs, labels)`; the trainer repeats and limits it.
        num_train_examples: examples per epoch, for the step count of the schedule.

    Returns:
        The trained model and a summary: training time, sequences per second, final metrics.
    """
    return fit_model(
        lambda: build_model(load_encoder(config)), config, train_dataset, num_train_examples
    )


def fit_model(
    build_model,
    config: FinetuningConfig,
    train_dataset: tf.data.Dataset,
    num_train_examples: int,
) -> tuple[keras.Model, dict]:
    """`fit_task_model` for a model built without the checkpoint's encoder: `build_model`
    takes no argument (e.g. a `Distiller` of a trained teacher)."""
    keras.utils.set_random_seed(config.seed)
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    strategy = resolve_strategy(config.strategy)
    steps_per_epoch = config.steps_per_epoch(num_train_examples)
    total_steps = max(1, round(config.epochs * steps_per_epoch))
    # Whole epochs for Keras; a fractional last epoch is cut by steps_per_epoch.
    epochs = -(-total_steps // steps_per_epoch)
    with strategy.scope():
        model = build_model()
        model.compile(
            optimizer=create_optimizer(
                config.learning_rate,
                total_steps,
                warmup_fraction=config.warmup_fraction,
                weight_decay=config.weight_decay,
            ),
            jit_compile=jit_compile_supported(strategy, config.jit_compile),
        )
    # A killed run restarts from its last finished epoch.
    callbacks = training_callbacks(output_dir)
    started = time.perf_counter()
    history = model.fit(
        train_dataset.repeat().take(total_steps),
        epochs=epochs,
        steps_per_epoch=min(steps_per_epoch, total_steps),
        callbacks=callbacks,
        shuffle=False,  # the dataset shuffles itself, deterministically under the seed
        verbose=2 if _is_batch_job() else 1,
    )
    seconds = time.perf_counter() - started
    summary = {
        "train_seconds": round(seconds, 1),
        "train_steps": total_steps,
        "sequences_per_second": round(total_steps * config.batch_size / seconds, 2),
        "history": {name: [float(v) for v in values] for name, values in history.history.items()},
    }
    (output_dir / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2))
    return model, summary


def save_run(model: keras.Model, summary: dict, config: FinetuningConfig) -> None:
    """Writes `<output_dir>/model.keras` and `<output_dir>/metrics.json`."""
    output_dir = Path(config.output_dir)
    model.save(output_dir / "model.keras")
    (output_dir / "metrics.json").write_text(json.dumps(summary, indent=2))


def _is_batch_job() -> bool:
    """Whether output goes to a log rather than a terminal (one line per epoch then)."""
    import sys

    return not sys.stdout.isatty()
