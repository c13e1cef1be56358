"""What a run asks of its strategy, answered once: XLA, this worker's place, the records kept."""

import json
import logging

import tensorflow as tf

from keras_bert.training.precision import resolve_precision
from keras_bert.training.strategy import jit_compile_supported, resolve_workers


def test_xla_with_bfloat16_on_cpu_is_allowed_with_a_warning(caplog):
    strategy = tf.distribute.get_strategy()
    assert jit_compile_supported(strategy, True) and not jit_compile_supported(strategy, False)
    with caplog.at_level(logging.WARNING, logger="keras_bert.training.precision"):
        assert resolve_precision("mixed_bfloat16", jit_compile=True).policy == "mixed_bfloat16"
    assert "XLA does not use oneDNN's bfloat16" in caplog.text
    caplog.clear()
    resolve_precision("float32", jit_compile=True)
    resolve_precision("mixed_bfloat16", jit_compile=False)
    assert not caplog.text


def test_a_record_is_kept_only_where_it_holds_what_the_run_asks(tmp_path):
    (tmp_path / "precision.json").write_text(json.dumps({"policy": "float32", "requested": "auto"}))
    (tmp_path / "time_budget.json").write_text(json.dumps({"total_steps": 20}))
    records = {"precision.json": {"requested": "float32"}, "time_budget.json": {}}
    workers = resolve_workers("default", None, tmp_path, records=records)
    # The precision was chosen under another setting: chosen anew; the plan stands.
    assert workers.kept == {"time_budget.json": {"total_steps": 20}}
    assert workers.worker_dir == tmp_path and workers.is_chief
    records["precision.json"] = {"requested": "auto"}
    kept = resolve_workers("default", None, tmp_path, records=records).kept
    assert kept["precision.json"] == {"policy": "float32", "requested": "auto"}
    # A run without records keeps nothing, and makes its directory.
    assert resolve_workers("default", None, tmp_path / "new", records=records).kept == {}
    assert (tmp_path / "new").is_dir()
