"""One training run, whatever the model: strategy → precision → seed → model and optimizer in
its scope → XLA check → resumable callbacks → `fit` → `config.json`.

Fine-tuning (`keras_bert.finetuning.recipe`), pretraining (`keras_bert.pretraining.trainer`) and
distillation all train through `fit_resumable`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import keras
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.training.callbacks import TrainingTime, completed_epochs, training_callbacks
from keras_bert.training.optimization import build_optimizer, create_optimizer
from keras_bert.training.precision import (
    PrecisionChoice,
    TrainStepShape,
    check_precision,
    global_dtype_policy,
    resolve_run_precision,
)
from keras_bert.training.strategy import jit_compile_supported, resolve_strategy
from keras_bert.training.time_budget import planned_total_steps
from keras_bert.training.workarounds import enable_multi_worker_fit

logger = logging.getLogger(__name__)

# The policy a run chose (`PrecisionChoice`), in its output directory: a resumed run keeps it.
PRECISION_FILE = "precision.json"


@dataclasses.dataclass(frozen=True)
class RunSettings:
    """How a job trains, whatever it trains: optimizer and schedule, precision, distribution.

    Every job's config holds one as its `run` field, with the job's own learning rate and
    warm-up (`PretrainingConfig.run`, `FinetuningConfig.run`); flags and JSON configs reach
    its fields under their own names (`--learning-rate`, `{"run": {"learning_rate": ...}}`).

    Args:
        learning_rate: peak learning rate.
        warmup_fraction: share of the steps spent warming up; then linear decay to 0.
        weight_decay, optimizer, clip_global_norm, gradient_accumulation_steps: see
            `create_optimizer`.
        precision: "float32", "mixed_bfloat16", "mixed_float16" (with loss scaling), or
            "auto": the fastest on this machine (`resolve_precision`, at the start of `fit`;
            on a CPU without bfloat16 units, float32 without timing).
        jit_compile: compile train steps with XLA (falls back where unsupported).
        strategy, tpu: see `resolve_strategy`.
        steps_per_execution: train steps per `tf.function` call (large on TPUs).
        seed: seeds initialisation (and what the job's data derives from it).
        verbose: `fit` verbosity; "auto" is a progress bar on a terminal, a line per epoch in
            a log. On a job's command line, `--verbose` also shows TensorFlow's own log lines.
        backup_interval_seconds: back up (weights, optimizer state, epoch) at the first epoch
            end this long after the last backup, and when training ends; 0 backs up every
            epoch. Multi-worker runs back up every epoch (workers must resume at one epoch).

    Example:
    >>> settings = RunSettings(learning_rate=1e-4, warmup_fraction=0.01, optimizer="lamb")
    >>> type(settings.create_optimizer(total_steps=1000)).__name__
    'Lamb'
    """

    learning_rate: float
    warmup_fraction: float
    weight_decay: float = 0.01
    optimizer: str = "adamw"
    clip_global_norm: float | None = 1.0
    gradient_accumulation_steps: int | None = None
    precision: str = "float32"
    jit_compile: bool = False
    strategy: str = "default"
    tpu: str | None = None
    steps_per_execution: int = 1
    seed: int = 0
    verbose: int | str = "auto"
    backup_interval_seconds: float = 0.0

    # The fields that change how a run reports and backs up, not what it trains: a job
    # resumes a run under other values of them.
    NOT_TRAINING: ClassVar[tuple[str, ...]] = ("verbose", "backup_interval_seconds")

    def __post_init__(self):
        check_precision(self.precision)

    @classmethod
    def of(cls, values: RunSettings | Mapping[str, Any], defaults: RunSettings) -> RunSettings:
        """`values` as settings: a `RunSettings` as it is, a dict (from flags or JSON) over the
        job's `defaults`.

        Example:
        >>> defaults = RunSettings(learning_rate=5e-5, warmup_fraction=0.1)
        >>> RunSettings.of({"seed": 3}, defaults).seed, RunSettings.of(defaults, defaults).seed
        (3, 0)
        >>> RunSettings.of({"learning_rte": 0.1}, defaults)
        Traceback (most recent call last):
        ...
        keras_bert.errors.ConfigError: Unknown run settings: learning_rte.
        """
        if isinstance(values, RunSettings):
            return values
        unknown = sorted(set(values) - {field.name for field in dataclasses.fields(cls)})
        if unknown:
            raise ConfigError(f"Unknown run settings: {', '.join(unknown)}.")
        return dataclasses.replace(defaults, **values)

    def create_optimizer(self, total_steps: int) -> keras.optimizers.Optimizer:
        """The optimizer and schedule of these settings for a run of `total_steps` batches
        (loss-scaled under float16)."""
        accumulation = self.gradient_accumulation_steps or 1
        optimizer = create_optimizer(
            self.learning_rate,
            total_steps=max(total_steps // accumulation, 1),
            warmup_fraction=self.warmup_fraction,
            weight_decay=self.weight_decay,
            optimizer=self.optimizer,
            clip_global_norm=self.clip_global_norm,
            gradient_accumulation_steps=self.gradient_accumulation_steps,
        )
        if self.precision == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        return optimizer


# The settings' names: a job config's `run` field holds them (top-level keys of older configs).
RUN_FIELDS = tuple(field.name for field in dataclasses.fields(RunSettings))


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


def _worker_output_dir(output_dir: Path, strategy: tf.distribute.Strategy) -> Path:
    """The chief writes to `output_dir`; other workers to their own sub-folders (Keras writes
    files from every worker, and two writers of one file would clash)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or resolver.task_type in (None, "chief") or not resolver.cluster_spec():
        return output_dir
    if (
        resolver.task_type == "worker"
        and resolver.task_id == 0
        and ("chief" not in resolver.cluster_spec().as_dict())
    ):
        return output_dir
    return output_dir / "workers" / f"{resolver.task_type}_{resolver.task_id}"


def _fit_verbosity(verbose: int | str) -> int | str:
    import sys

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
    output_dir = Path(output_dir)
    strategy = resolve_strategy(settings.strategy, settings.tpu)
    worker_dir = _worker_output_dir(output_dir, strategy)
    worker_dir.mkdir(parents=True, exist_ok=True)
    is_chief = worker_dir == output_dir
    precision = resolve_run_precision(
        settings.precision, worker_dir / PRECISION_FILE, strategy, step_shape, settings.jit_compile
    )
    settings = dataclasses.replace(settings, precision=precision.policy)
    # Seeded after "auto" timed its steps (their models draw random numbers): a run that chose
    # a policy starts as a run given that policy does.
    keras.utils.set_random_seed(settings.seed)
    # Models built within train in the run's policy; the caller's later ones in its own.
    with global_dtype_policy(settings.precision):
        if is_chief:
            (output_dir / "config.json").write_text(
                json.dumps(run_config, indent=2, default=str) + "\n", "utf-8"
            )

        multi_worker = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
        initial_epoch = completed_epochs(worker_dir / "backup")
        train, validation = datasets(initial_epoch * steps_per_epoch)
        if callable(train):
            # A dataset function: each input pipeline (worker) makes its own share.
            train = strategy.distribute_datasets_from_function(train)

        def compile_model(model: keras.Model) -> None:
            model.compile(
                optimizer=settings.create_optimizer(total_steps),
                jit_compile=jit_compile_supported(
                    strategy, settings.jit_compile, settings.precision
                ),
                steps_per_execution=settings.steps_per_execution,
                **(compile_options or {}),
            )
            build_optimizer(model)

        with strategy.scope():
            model = build_model()
            compile_model(model)
            if multi_worker:
                enable_multi_worker_fit(model)
            if time_budget_minutes is not None:
                total_steps = planned_total_steps(
                    model,
                    time_budget_minutes,
                    train,
                    steps_per_epoch,
                    total_steps,
                    worker_dir,
                    steps_per_execution=settings.steps_per_execution,
                    strategy=strategy,
                )
                # A fresh optimizer (the timed steps moved the first one) with the planned schedule.
                compile_model(model)
        epochs = -(-total_steps // steps_per_epoch)
        if initial_epoch:
            logger.info("Resuming after epoch %d of %d.", initial_epoch, epochs)
        run_callbacks = training_callbacks(
            worker_dir,
            # Workers must resume at one epoch: multi-worker runs back up every epoch.
            backup_interval_seconds=0.0 if multi_worker else settings.backup_interval_seconds,
        )
        timer = next(callback for callback in run_callbacks if isinstance(callback, TrainingTime))
        started = time.perf_counter()
        history = model.fit(
            train,
            epochs=epochs,
            steps_per_epoch=min(steps_per_epoch, total_steps),
            validation_data=validation,
            callbacks=[*callbacks, *run_callbacks],
            verbose=_fit_verbosity(settings.verbose),
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
            is_chief=is_chief,
            precision=precision,
        )
