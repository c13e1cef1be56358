"""Runs planned by time: as many steps as fit a wall-clock budget on the machine at hand.

A recipe tuned on one CPU runs at another speed on the next (BENCHMARKS.md, section
Pretraining recipes, has the same recipe on two CPUs). Budget-training
work (Izsak et al. 2021, "How to Train BERT with an Academic Budget"; Geiping & Goldstein
2022, "Cramming") fixes the time and lets the step count follow. Here the run times its own
train step on its first batches before training (reading included), then plans the largest
whole number of checkpoint intervals that fits the budget (at most the configured
`total_steps`), so the learning-rate schedule still warms up and decays to 0 at the run's
last step. The plan is written to `time_budget.json` in the run's directory; a resumed run
keeps it, so an interrupted run ends where it would have.
"""

from __future__ import annotations

import itertools
import json
import logging
import statistics
import time
from typing import Any

import keras

from keras_bert.errors import ConfigError
from keras_bert.training.callbacks import write_text_atomically
from keras_bert.training.strategy import RunWorkers

logger = logging.getLogger(__name__)

PLAN_FILE = "time_budget.json"
# Steps run before timing (tracing, oneDNN's kernel cache, the input pipeline's buffers), then
# steps timed (the median): enough that batches prefetched during the first ones run out.
UNTIMED_STEPS = 3
TIMED_STEPS = 10


class _StepEnds(keras.callbacks.Callback):
    """Records when each training batch (each call, with several steps per execution) ends."""

    def __init__(self):
        super().__init__()
        self.times: list[float] = []

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter())


def seconds_per_step(model: keras.Model, train: Any, steps_per_execution: int = 1) -> float:
    """The median time of a compiled model's training step on the run's own data, reading
    included (`fit` on the first batches of `train`; with `steps_per_execution` steps per
    call, a call's time over its steps). The model's weights are put back afterwards; its
    optimizer has taken steps, so compile a fresh one before training."""
    weights = model.get_weights()
    step_ends = _StepEnds()
    steps = (UNTIMED_STEPS + TIMED_STEPS) * steps_per_execution
    model.fit(
        train, epochs=1, steps_per_epoch=steps, callbacks=[step_ends], verbose=0, shuffle=False
    )
    model.set_weights(weights)
    ends = step_ends.times[UNTIMED_STEPS - 1 :]
    if len(ends) < 2:
        raise ConfigError(
            f"The training data ran out after {len(step_ends.times)} batches while the time "
            f"budget timed {UNTIMED_STEPS + TIMED_STEPS}: give a repeating dataset, or "
            "total_steps instead of a time budget."
        )
    call_seconds = statistics.median(later - earlier for earlier, later in itertools.pairwise(ends))
    return call_seconds / steps_per_execution


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
    model: keras.Model,
    minutes: float,
    train: Any,
    steps_per_epoch: int,
    most: int,
    workers: RunWorkers,
    steps_per_execution: int = 1,
) -> int:
    """The run's total steps within `minutes` of training: the plan the run kept if it has one
    (a resumed run: `RunWorkers.kept`), else a new plan from the compiled `model`'s step timed
    on `train`, kept in `PLAN_FILE`. The workers of a `MultiWorkerMirroredStrategy` plan from
    the mean of their timings, so all train the same steps."""
    plan = workers.kept.get(PLAN_FILE)
    if plan is not None:
        logger.info("Time budget: keeping this run's plan of %d steps.", plan["total_steps"])
        return int(plan["total_steps"])
    local_seconds = seconds_per_step(model, train, steps_per_execution)
    [step_seconds] = workers.mean([local_seconds])
    total_steps = steps_within(minutes, step_seconds, steps_per_epoch, most)
    plan = {
        "time_budget_minutes": minutes,
        "seconds_per_step": step_seconds,
        "total_steps": total_steps,
        "configured_total_steps": most,
    }
    write_text_atomically(workers.worker_dir / PLAN_FILE, json.dumps(plan, indent=2) + "\n")
    logger.info(
        "Time budget: %.1f minutes at %.3f s a step: %d of the configured %d steps "
        "(about %.1f minutes).",
        minutes,
        step_seconds,
        total_steps,
        most,
        total_steps * step_seconds / 60,
    )
    return total_steps
