"""Runs planned by time: as many steps as fit a wall-clock budget on the machine at hand.

A recipe tuned on one CPU runs at another speed on the next: the same pretraining step takes
2.5x longer on an Intel Xeon without AMX than on an AMD Zen 5 (BENCHMARKS.md). Budget-training
work (Izsak et al. 2021, "How to Train BERT with an Academic Budget"; Geiping & Goldstein
2022, "Cramming") fixes the time and lets the step count follow. Here the run times its own
train step on one batch of its shapes before training, then plans the largest whole number of
checkpoint intervals that fits the budget (at most the configured `total_steps`), so the
learning-rate schedule still warms up and decays to 0 at the run's last step. The plan is
written to `time_budget.json` in the run's directory; a resumed run keeps it, so an
interrupted run ends where it would have.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import statistics
import time
from pathlib import Path
from typing import Any

import keras

from keras_bert.errors import ConfigError

logger = logging.getLogger(__name__)

PLAN_FILE = "time_budget.json"
# Steps run before timing (tracing, oneDNN's kernel cache), then steps timed (the median).
UNTIMED_STEPS = 2
TIMED_STEPS = 5


@dataclasses.dataclass(frozen=True)
class TimeBudget:
    """Training minutes for a run, and a batch to time its step on.

    Args:
        minutes: wall-clock minutes of training steps (start-up, held-out evaluations and the
            final save come on top).
        batch: `(inputs, labels, sample_weights)` with the shapes of the run's batches.
    """

    minutes: float
    batch: tuple[Any, Any, Any]

    def __post_init__(self):
        if self.minutes <= 0:
            raise ConfigError(f"time_budget_minutes must be positive, got {self.minutes}.")


def seconds_per_step(model: keras.Model, batch: tuple[Any, Any, Any]) -> float:
    """The median time of a compiled model's training step on `batch`. The model's weights are
    put back afterwards; its optimizer has taken steps, so compile a fresh one before training.
    """
    weights = model.get_weights()
    inputs, labels, sample_weights = batch
    timings = []
    for step in range(UNTIMED_STEPS + TIMED_STEPS):
        start = time.perf_counter()
        model.train_on_batch(inputs, labels, sample_weight=sample_weights)
        if step >= UNTIMED_STEPS:
            timings.append(time.perf_counter() - start)
    model.set_weights(weights)
    return statistics.median(timings)


def steps_within(minutes: float, step_seconds: float, steps_per_epoch: int, most: int) -> int:
    """The most whole epochs' steps that fit `minutes` at `step_seconds` a step: at least one
    epoch, at most `most` steps.

    Example:
    >>> steps_within(27, step_seconds=1.63, steps_per_epoch=200, most=1600)
    800
    >>> steps_within(27, step_seconds=0.39, steps_per_epoch=250, most=3000)
    3000
    """
    epochs = int(minutes * 60 / step_seconds) // steps_per_epoch
    return min(max(epochs, 1) * steps_per_epoch, most)


def planned_total_steps(
    model: keras.Model, budget: TimeBudget, steps_per_epoch: int, most: int, run_dir: Path
) -> int:
    """The run's total steps under `budget`: the plan in `run_dir` if the run has one (a
    resumed run), else a new plan from the compiled `model`'s timed step, written there."""
    path = run_dir / PLAN_FILE
    if path.is_file():
        plan = json.loads(path.read_text("utf-8"))
        logger.info("Time budget: keeping this run's plan of %d steps.", plan["total_steps"])
        return int(plan["total_steps"])
    step_seconds = seconds_per_step(model, budget.batch)
    total_steps = steps_within(budget.minutes, step_seconds, steps_per_epoch, most)
    plan = {
        "time_budget_minutes": budget.minutes,
        "seconds_per_step": step_seconds,
        "total_steps": total_steps,
        "configured_total_steps": most,
    }
    temporary = path.with_name(f"{PLAN_FILE}.incomplete")
    temporary.write_text(json.dumps(plan, indent=2) + "\n", "utf-8")
    os.replace(temporary, path)
    logger.info(
        "Time budget: %.1f minutes at %.3f s a step: %d of the configured %d steps "
        "(about %.1f minutes).",
        budget.minutes,
        step_seconds,
        total_steps,
        most,
        total_steps * step_seconds / 60,
    )
    return total_steps
