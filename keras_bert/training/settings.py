"""How a job trains, whatever it trains: the settings every job's config holds as its `run`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

import keras

from keras_bert.errors import ConfigError, check_not_negative, check_positive
from keras_bert.training.optimization import create_optimizer
from keras_bert.training.precision import check_precision


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

    # The fields that change where and how a run trains, reports and backs up, not what it
    # trains: a job resumes a run under other values of them (`resumed_runs`). Not precision:
    # a finished GLUE task trained in float32 is not the one asked for in bfloat16.
    NOT_TRAINING: ClassVar[tuple[str, ...]] = (
        "jit_compile",
        "strategy",
        "tpu",
        "steps_per_execution",
        "verbose",
        "backup_interval_seconds",
    )

    def __post_init__(self):
        check_precision(self.precision)
        check_positive(steps_per_execution=self.steps_per_execution)
        if not 0 <= self.warmup_fraction <= 1:
            raise ConfigError(f"warmup_fraction must be in [0, 1], got {self.warmup_fraction!r}.")
        check_not_negative(
            learning_rate=self.learning_rate,
            weight_decay=self.weight_decay,
            backup_interval_seconds=self.backup_interval_seconds,
        )

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
