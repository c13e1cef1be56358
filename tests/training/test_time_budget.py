import json
import warnings
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.pretraining import PretrainingConfig, run_pretraining
from keras_bert.training.time_budget import PLAN_FILE, seconds_per_step, steps_within
from pipelines.pretrain import pretraining_config


def test_the_plan_is_whole_epochs_within_the_budget_and_the_configured_steps():
    # 27 minutes at 1.63 s a step is 993 steps: 4 epochs of 200 fit, a fifth would not.
    assert steps_within(27, 1.63, steps_per_epoch=200, most=10_000) == 800
    assert steps_within(27, 1.60, steps_per_epoch=200, most=10_000) == 1000
    assert steps_within(27, 0.1, steps_per_epoch=200, most=1600) == 1600
    # A budget shorter than one epoch still trains one.
    assert steps_within(0.01, 1.0, steps_per_epoch=200, most=1600) == 200


def test_timing_puts_the_weights_back_and_counts_steps_per_execution():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse", steps_per_execution=2)
    before = [weight.copy() for weight in model.get_weights()]
    data = tf.data.Dataset.from_tensors((tf.ones((8, 4)), tf.zeros((8, 2)))).repeat()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert seconds_per_step(model, data, steps_per_execution=2) > 0
    # A tf.data pipeline shuffles itself; Keras warns when `fit` is asked to as well.
    assert not [warning for warning in caught if "shuffle" in str(warning.message)]
    # 13 calls of 2 steps each.
    assert int(model.optimizer.iterations.numpy()) == 26
    for weight, original in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(weight, original)


def test_data_that_runs_out_during_the_timing_is_a_clear_error():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    data = tf.data.Dataset.from_tensors((tf.ones((8, 4)), tf.zeros((8, 2)))).repeat(2)
    with pytest.raises(ConfigError, match="ran out after 2 batches"):
        seconds_per_step(model, data)


def test_the_budget_must_be_positive(small_config):
    with pytest.raises(ConfigError, match="positive"):
        PretrainingConfig(**{**small_config, "time_budget_minutes": 0})


def _run(small_config, minutes):
    return run_pretraining(
        PretrainingConfig(
            **{
                **small_config,
                "total_steps": 8,
                "steps_per_checkpoint": 4,
                "time_budget_minutes": minutes,
            }
        )
    )


def _plan(small_config) -> dict:
    return json.loads((Path(small_config["output_dir"]) / PLAN_FILE).read_text("utf-8"))


def test_a_short_budget_trains_fewer_steps_and_decays_to_zero_at_the_last(small_config):
    # Far less than one step: the plan falls back to one checkpoint interval.
    history = _run(small_config, minutes=1e-6)
    plan = _plan(small_config)
    assert plan["total_steps"] == 4 and plan["configured_total_steps"] == 8
    assert plan["seconds_per_step"] > 0
    optimizer = history.model.optimizer
    # The timed steps did not count: a fresh optimizer trained the 4 planned steps.
    assert int(optimizer.iterations.numpy()) == 4
    # The schedule was planned for 4 steps: after them the rate is 0 (it would be half the
    # peak at step 4 of 8).
    assert float(optimizer.learning_rate) == 0.0

    # A resumed (here: finished) run keeps its plan, whatever the budget now.
    _run(small_config, minutes=60)
    assert _plan(small_config) == plan


def test_a_long_budget_trains_the_configured_steps(small_config):
    history = _run(small_config, minutes=60)
    assert _plan(small_config)["total_steps"] == 8
    assert int(history.model.optimizer.iterations.numpy()) == 8


def test_time_budget_is_a_flag():
    config = pretraining_config(
        ["--output-dir", "o", "--input-files", "a", "--vocabulary-file", "v"]
        + ["--time-budget-minutes", "27.5"]
    )
    assert config.time_budget_minutes == 27.5
