import logging

import keras
import pytest
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.pretraining import PretrainingConfig, run_pretraining
from keras_bert.training.precision import (
    BFLOAT16_MIN_SPEEDUP,
    cpu_matmul_seconds,
    faster_cpu_policy,
    resolve_precision,
)


def test_bfloat16_is_chosen_only_where_its_matmul_is_clearly_faster():
    assert faster_cpu_policy(10e-3, 10e-3 / BFLOAT16_MIN_SPEEDUP) == "mixed_bfloat16"
    assert faster_cpu_policy(10e-3, 10e-3 / (BFLOAT16_MIN_SPEEDUP - 0.01)) == "float32"
    # A CPU without bfloat16 units (or oneDNN off) emulates it: far slower.
    assert faster_cpu_policy(10e-3, 60e-3) == "float32"


def test_explicit_precisions_pass_through_and_unknown_ones_fail():
    for precision in ("float32", "mixed_bfloat16", "mixed_float16"):
        assert resolve_precision(precision) == precision
    with pytest.raises(ConfigError, match="auto"):
        resolve_precision("bfloat16")


def test_auto_on_this_cpu_times_both_types_and_says_so(caplog):
    assert cpu_matmul_seconds(tf.float32, repeats=2) > 0
    with caplog.at_level(logging.INFO, logger="keras_bert.training.precision"):
        policy = resolve_precision("auto")
    assert policy in ("float32", "mixed_bfloat16")
    assert f"precision auto: {policy}" in caplog.text and "ms in bfloat16" in caplog.text


def test_a_run_with_auto_precision_trains_in_the_resolved_policy(
    small_config, restore_dtype_policy
):
    config = PretrainingConfig(
        **{
            **small_config,
            "run": {**small_config["run"], "precision": "auto"},
            "total_steps": 2,
            "steps_per_checkpoint": 2,
        }
    )
    history = run_pretraining(config)
    policy = keras.mixed_precision.global_policy().name
    assert policy in ("float32", "mixed_bfloat16")
    assert (
        history.model.encoder.blocks[0].compute_dtype
        == keras.mixed_precision.Policy(policy).compute_dtype
    )
