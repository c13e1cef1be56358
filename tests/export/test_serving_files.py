"""What TF Serving reads besides the graph: warm-up records, models.config, batching, CLI view."""

import collections
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow_serving.config import model_server_config_pb2

from keras_bert.export import docker_command
from keras_bert.export.server_config import BATCHING_PARAMETERS_FILE, MODEL_CONFIG_FILE
from keras_bert.export.warmup import read_warmup_requests
from pipelines.query_export import decoded
from tests.export.builders import TASKS
from tests.export.fresh_process import run_signatures


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_warmup_records_are_prediction_logs_that_the_model_answers(exported_base, task):
    export_dir = exported_base / task / "1"
    logs = read_warmup_requests(export_dir)
    # The example request and one per length bucket (tests/export/test_buckets.py), then the
    # same packed into ids.
    signatures = ["serving_default"] * 5 + ["serving_ids"] * 5
    assert [log.predict_log.request.model_spec.signature_name for log in logs] == signatures
    calls = []
    for log in logs:
        request = log.predict_log.request
        assert request.model_spec.name == task
        inputs = {
            name: decoded(tf.make_ndarray(proto).tolist()) for name, proto in request.inputs.items()
        }
        calls.append(
            {
                "export_dir": export_dir,
                "signature": request.model_spec.signature_name,
                "inputs": inputs,
            }
        )
    # Replayed as TensorFlow Serving replays them when it loads the version.
    for call, outputs in zip(calls, run_signatures(calls), strict=True):
        batch_size = len(next(iter(call["inputs"].values())))
        assert batch_size > 0
        assert all(len(value) == batch_size for value in outputs.values())
    assert (export_dir / "assets" / "vocab.txt").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_the_graph_holds_each_signature_and_the_model_once(exported_base, task):
    """The save traces the signatures itself: no second copy of the model's graph, traced
    before the save under another trace key, beside the one it saves."""
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString((exported_base / task / "1" / "saved_model.pb").read_bytes())
    names = [
        re.sub(r"_\d+$", "", function.signature.name)
        for function in saved_model.meta_graphs[0].graph_def.library.function
    ]
    traced = collections.Counter(name for name in names if name.startswith("__inference_serve"))
    model_calls = names.count("__inference_model_call")
    assert model_calls == 1 and len(traced) == 2 and set(traced.values()) == {1}, (
        model_calls,
        traced,
    )


@pytest.mark.slow
def test_models_config_lists_every_export(exported_base):
    config = text_format.Parse(
        (exported_base / MODEL_CONFIG_FILE).read_text(),
        model_server_config_pb2.ModelServerConfig(),
    )
    models = {model.name: model for model in config.model_config_list.config}
    assert sorted(models) == sorted(TASKS)
    for name, model in models.items():
        assert model.base_path == f"/models/{name}"
        assert model.model_platform == "tensorflow"
    batching = (exported_base / BATCHING_PARAMETERS_FILE).read_text()
    assert "max_batch_size { value: 32 }" in batching
    assert "pad_variable_length_inputs: true" in batching
    command = docker_command(exported_base)
    assert "tensorflow/serving:2.21.0" in command
    assert f"{exported_base.resolve()}:/models" in command
    assert "--model_config_file=/models/models.config" in command
    environment = "-e TF_ENABLE_ONEDNN_OPTS=1 -e TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1"
    assert f"{environment} tensorflow/serving" in command
    assert "xla" not in command  # no export here is XLA-compiled


@pytest.mark.slow
def test_saved_model_cli_lists_the_string_signatures(exported_base):
    cli = Path(sys.executable).parent / "saved_model_cli"
    cli = str(cli) if cli.exists() else shutil.which("saved_model_cli")
    result = subprocess.run(
        [cli, "show", "--all", "--dir", str(exported_base / "question_answerer" / "1")],
        capture_output=True,
        text=True,
        check=True,
    )
    text = result.stdout
    assert "signature_def['serving_default']" in text
    assert "signature_def['serving_ids']" in text
    for name in ("question", "context"):
        assert (
            f"inputs['{name}'] tensor_info:\n        dtype: DT_STRING\n        shape: (-1)" in text
        )
    for name in ("answer_text", "answer_score", "answer_start", "answer_end"):
        assert f"outputs['{name}']" in text
