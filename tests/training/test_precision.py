import json
import logging
from pathlib import Path

import keras
import pytest

from keras_bert.config import BertConfig
from keras_bert.cpu import has_bfloat16_units
from keras_bert.data.classification import read_classification_file
from keras_bert.errors import ConfigError
from keras_bert.finetuning.classification import finetune_classifier
from keras_bert.finetuning.recipe import FinetuningConfig
from keras_bert.pretraining import PretrainingConfig, run_pretraining
from keras_bert.training import precision
from keras_bert.training.precision import (
    BFLOAT16_MIN_SPEEDUP,
    PRECISION_FILE,
    PrecisionChoice,
    TrainStepShape,
    faster_cpu_policy,
    resolve_precision,
    resolve_run_precision,
)
from keras_bert.training.strategy import resolve_workers

TINY_STEP = TrainStepShape(2, 8, hidden_size=16, num_heads=2, intermediate_size=32)


@pytest.fixture
def cpu_with_bfloat16_units(monkeypatch):
    """This CPU as one with AMX: "auto" times its steps; `timed` holds the shapes it timed and
    `seconds` the timings it gets (float32's and bfloat16's, injected)."""
    timed = []

    def injected_seconds(shape, jit_compile=False):
        timed.append(shape)
        return dict(timed_seconds)

    timed_seconds = {}
    monkeypatch.setattr(precision, "has_bfloat16_units", lambda: True)
    monkeypatch.setattr(precision, "train_step_seconds", injected_seconds)
    return timed, timed_seconds


def test_bfloat16_is_chosen_only_where_its_step_is_clearly_faster():
    assert faster_cpu_policy(10e-3, 10e-3 / BFLOAT16_MIN_SPEEDUP) == "mixed_bfloat16"
    assert faster_cpu_policy(10e-3, 10e-3 / (BFLOAT16_MIN_SPEEDUP - 0.01)) == "float32"
    # An Intel Xeon whose AMX the VM hides: its bfloat16 step is slower.
    assert faster_cpu_policy(10e-3, 14e-3) == "float32"


def test_explicit_precisions_pass_through_untimed_and_unknown_ones_fail(monkeypatch):
    monkeypatch.setattr(precision, "train_step_seconds", pytest.fail)
    for policy in ("float32", "mixed_bfloat16", "mixed_float16"):
        assert resolve_precision(policy) == PrecisionChoice(policy, policy, "as set")
    with pytest.raises(ConfigError, match="auto"):
        resolve_precision("bfloat16")


def test_auto_on_a_cpu_without_bfloat16_units_is_float32_without_timing(monkeypatch, caplog):
    if has_bfloat16_units():
        pytest.skip("this CPU has bfloat16 units (AVX512_BF16 or AMX): auto times them")
    monkeypatch.setattr(precision, "train_step_seconds", pytest.fail)
    with caplog.at_level(logging.INFO, logger="keras_bert.training.precision"):
        choice = resolve_precision("auto", step_shape=TINY_STEP)
    assert choice == PrecisionChoice(
        "float32", "auto", "this CPU has no bfloat16 units (neither AVX512_BF16 nor AMX)"
    )
    assert "precision auto: float32, this CPU has no bfloat16 units" in caplog.text


@pytest.mark.parametrize(
    ("float32_seconds", "bfloat16_seconds", "policy"),
    [(0.2, 0.1, "mixed_bfloat16"), (0.2, 0.19, "float32"), (0.2, 0.3, "float32")],
)
def test_auto_on_a_cpu_with_bfloat16_units_times_the_runs_step(
    cpu_with_bfloat16_units, caplog, float32_seconds, bfloat16_seconds, policy
):
    timed, seconds = cpu_with_bfloat16_units
    seconds |= {"float32": float32_seconds, "mixed_bfloat16": bfloat16_seconds}
    shape = TrainStepShape.of(BertConfig.preset("mini"), batch_size=64, seq_length=128)
    with caplog.at_level(logging.INFO, logger="keras_bert.training.precision"):
        choice = resolve_precision("auto", step_shape=shape)
    assert timed == [shape]
    assert choice.policy == policy
    assert (choice.float32_step_ms, choice.bfloat16_step_ms) == (
        float32_seconds * 1e3,
        bfloat16_seconds * 1e3,
    )
    assert "batch 64 x 128 tokens, hidden size 256" in choice.reason
    assert f"{float32_seconds * 1e3:.1f} ms in float32" in caplog.text


def test_the_timed_steps_train_one_block_in_each_policy():
    seconds = precision.train_step_seconds(TINY_STEP, rounds=1)
    assert set(seconds) == {"float32", "mixed_bfloat16"}
    assert all(value > 0 for value in seconds.values())


@pytest.mark.slow
def test_a_finetuning_summary_records_what_auto_chose(
    cpu_with_bfloat16_units, tiny_checkpoint_dir, data_dir, tmp_path, restore_dtype_policy
):
    timed, seconds = cpu_with_bfloat16_units
    seconds |= {"float32": 0.2, "mixed_bfloat16": 0.1}
    train = read_classification_file(data_dir / "sentiment" / "movie_snippets.train.jsonl")
    config = FinetuningConfig(
        str(tiny_checkpoint_dir),
        str(tmp_path),
        seq_length=32,
        batch_size=8,
        epochs=1,
        max_train_examples=8,
        run={"precision": "auto"},
    )
    model, summary = finetune_classifier(config, train)
    # BERT-tiny's block at the run's batch and sequence length.
    assert timed == [TrainStepShape(8, 32, hidden_size=128, num_heads=2, intermediate_size=512)]
    assert model.encoder.blocks[0].compute_dtype == "bfloat16"
    recorded = json.loads((tmp_path / "metrics.json").read_text())["precision"]
    assert recorded == summary["precision"]
    assert recorded["policy"] == "mixed_bfloat16" and recorded["requested"] == "auto"
    assert (recorded["float32_step_ms"], recorded["bfloat16_step_ms"]) == (200.0, 100.0)


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
    policy = json.loads((Path(config.output_dir) / "precision.json").read_text())["policy"]
    assert policy in ("float32", "mixed_bfloat16")
    assert (
        history.model.encoder.blocks[0].compute_dtype
        == keras.mixed_precision.Policy(policy).compute_dtype
    )
    # The caller's policy is set back: what it builds next is float32 again.
    assert keras.mixed_precision.global_policy().name == "float32"


def _workers(run_dir, precision):
    """The workers of a run (re)started in `run_dir` with this precision setting."""
    records = {PRECISION_FILE: {"requested": precision}}
    return resolve_workers("default", None, run_dir, records=records)


def test_a_resumed_run_keeps_the_policy_auto_chose_when_it_started(
    cpu_with_bfloat16_units, tmp_path
):
    timed, seconds = cpu_with_bfloat16_units
    seconds |= {"float32": 0.2, "mixed_bfloat16": 0.1}
    started = resolve_run_precision("auto", _workers(tmp_path, "auto"), step_shape=TINY_STEP)
    # The resumed process times a close race the other way: it still trains as it started.
    seconds |= {"float32": 0.1, "mixed_bfloat16": 0.1}
    resumed = resolve_run_precision("auto", _workers(tmp_path, "auto"), step_shape=TINY_STEP)
    assert len(timed) == 1
    assert (started.policy, resumed.policy) == ("mixed_bfloat16", "mixed_bfloat16")
    assert resumed.reason == "as this run chose when it started"
    # Another setting is another choice.
    assert resolve_run_precision("float32", _workers(tmp_path, "float32")).policy == "float32"
    assert json.loads((tmp_path / PRECISION_FILE).read_text())["requested"] == "float32"
