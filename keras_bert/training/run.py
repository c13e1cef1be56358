"""One training run, whatever the model: its workers (strategy, chief, XLA, what a resumed run
kept; a resumed run's settings checked against those it started with) → precision → seed →
`config.json` → model and optimizer in the strategy's scope → the time budget's steps →
resumable callbacks → `fit`. Each is decided once, here, and read after.

Fine-tuning (`keras_bert.finetuning.recipe`), pretraining (`keras_bert.pretraining.trainer`) and
distillation all train through `fit_resumable`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.training.callbacks import TrainingTime, completed_epochs, training_callbacks
from keras_bert.training.optimization import build_optimizer
from keras_bert.training.precision import (
    PRECISION_FILE,
    PrecisionChoice,
    TrainStepShape,
    run_precision,
)
from keras_bert.training.resumed_runs import check_resumed_settings
from keras_bert.training.settings import RunSettings
from keras_bert.training.strategy import resolve_workers
from keras_bert.training.time_budget import PLAN_FILE, planned_total_steps
from keras_bert.training.workarounds import enable_multi_worker_fit

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class RunResult:
    """What `fit_resumable` returns: the trained model, its history, the timing and the
    precision it trained in.

    `train_seconds` runs from `fit`'s call to its last epoch's end: the backups between epochs
    count, the one written as `fit` returns (saving what was trained) does not; a resumed run
    that had no epoch left counts all of `fit`."""

    model: keras.Model
    history: keras.callbacks.History
    train_seconds: float
    initial_epoch: int
    is_chief: bool
    precision: PrecisionChoice


def _fit_verbosity(verbose: int | str) -> int | str:
    if verbose != "auto":
        return verbose
    # A progress bar on a terminal; one line per epoch in a log file.
    return 1 if sys.stdout.isatty() else 2


def fit_resumable(
    build_model: Callable[[], keras.Model],
    settings: RunSettings,
    datasets: Callable[[int], tuple[tf.data.Dataset, tf.data.Dataset | None]],
    run_config: dict[str, Any],
    *,
    output_dir: str | Path,
    total_steps: int,
    steps_per_epoch: int,
    compile_options: dict[str, Any] | None = None,
    callbacks: Sequence[keras.callbacks.Callback] = (),
    time_budget_minutes: float | None = None,
    step_shape: TrainStepShape | None = None,
) -> RunResult:
    """Builds, compiles and trains a model with `model.fit`; resumes an interrupted run.

    A run killed at any point restarts, with the same `output_dir`, from its last finished
    epoch (weights, optimizer state and epoch from `backup/`), and ends at exactly
    `total_steps` (or the steps `time_budget_minutes` planned).

    Args:
        build_model: makes the model; called in the strategy's scope.
        settings: the job's `RunSettings`.
        datasets: `start_step -> (train, validation or None)`; `train` yields batches from
            `start_step` on (the step a resumed run continues at), at least to the run's end;
            it is a dataset, or a function `tf.distribute.InputContext -> dataset` of global
            batches' per-replica shares (`distribute_datasets_from_function`).
        run_config: written to `output_dir/config.json` (the chief's), as JSON.
        output_dir: `backup/`, `logs/`, `metrics.csv`, `config.json` and `precision.json` go here
            (other workers of a multi-worker run write theirs under `workers/`).
        total_steps: batches of the whole run.
        steps_per_epoch: batches between backups (a killed run resumes at an epoch boundary;
            a shorter last epoch is cut by the data's `take`).
        compile_options: more `compile` arguments (loss, metrics).
        callbacks: called before the backup and log callbacks, so what they add to an epoch's
            logs is recorded.
        time_budget_minutes: train as many whole epochs as fit these minutes here, at most
            `total_steps` (see `keras_bert.training.time_budget`).
        step_shape: the run's batch, sequence length and encoder sizes, whose train step
            `precision="auto"` times on a CPU with bfloat16 units (default: `TrainStepShape()`).

    Returns:
        A `RunResult`.
    """
    if total_steps < 1 or steps_per_epoch < 1:
        raise ConfigError(
            f"total_steps ({total_steps}) and steps_per_epoch ({steps_per_epoch}) must be positive."
        )
    verbosity = _fit_verbosity(settings.verbose)
    output_dir = Path(output_dir)
    workers = resolve_workers(
        settings.strategy,
        settings.tpu,
        output_dir,
        settings.jit_compile,
        # What a resumed run keeps of its start (where every worker kept it): the policy chosen
        # under this precision setting, and the time budget's plan.
        records={PRECISION_FILE: {"requested": settings.precision}, PLAN_FILE: {}},
    )
    initial_epoch = completed_epochs(workers.worker_dir / "backup")
    if initial_epoch:
        check_resumed_settings(output_dir / "config.json", run_config, initial_epoch)
    # Models built within train in the run's policy; the caller's later ones in its own.
    with run_precision(settings.precision, workers, step_shape) as precision:
        settings = dataclasses.replace(settings, precision=precision.policy)
        # Seeded after "auto" timed its steps (their models draw random numbers): a run that
        # chose a policy starts as a run given that policy does.
        keras.utils.set_random_seed(settings.seed)
        if workers.is_chief:
            (output_dir / "config.json").write_text(
                json.dumps(run_config, indent=2, default=str) + "\n", "utf-8"
            )
        train, validation = datasets(initial_epoch * steps_per_epoch)
        if callable(train):
            # A dataset function: each input pipeline (worker) makes its own share.
            train = workers.strategy.distribute_datasets_from_function(train)

        def compile_model(model: keras.Model) -> None:
            model.compile(
                optimizer=settings.create_optimizer(total_steps),
                jit_compile=workers.jit_compile,
                steps_per_execution=settings.steps_per_execution,
                **(compile_options or {}),
            )
            build_optimizer(model)

        with workers.strategy.scope():
            model = build_model()
            compile_model(model)
            if workers.multi_worker:
                enable_multi_worker_fit(model)
            if time_budget_minutes is not None:
                total_steps = planned_total_steps(
                    model,
                    time_budget_minutes,
                    train,
                    steps_per_epoch,
                    total_steps,
                    workers,
                    steps_per_execution=settings.steps_per_execution,
                )
                # A fresh optimizer (the timed steps moved the first one) with the planned schedule.
                compile_model(model)
        epochs = -(-total_steps // steps_per_epoch)
        if initial_epoch:
            logger.info("Resuming after epoch %d of %d.", initial_epoch, epochs)
        # Workers must resume at one epoch: multi-worker runs back up every epoch.
        backup_interval = 0.0 if workers.multi_worker else settings.backup_interval_seconds
        run_callbacks = training_callbacks(
            workers.worker_dir, backup_interval_seconds=backup_interval
        )
        timer = next(callback for callback in run_callbacks if isinstance(callback, TrainingTime))
        started = time.perf_counter()
        history = model.fit(
            train,
            epochs=epochs,
            steps_per_epoch=min(steps_per_epoch, total_steps),
            validation_data=validation,
            callbacks=[*callbacks, *run_callbacks],
            verbose=verbosity,
            shuffle=False,  # `train` is a tf.data pipeline that shuffles itself
        )
        # Training ends with its last epoch: the backup `fit` writes as it returns saves what
        # was trained, as the job's model file does (backups between epochs count).
        trained_until = timer.last_epoch_end or time.perf_counter()
        return RunResult(
            model,
            history,
            trained_until - started,
            initial_epoch,
            is_chief=workers.is_chief,
            precision=precision,
        )
