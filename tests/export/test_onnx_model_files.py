"""ONNX exports above protobuf's 2 GB: the weights in external data, served as any other; the
size limit lowered so that a tiny model takes that path."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_bert.export.onnx import export_onnx, model_files, prepare_onnx
from keras_bert.serving import OnnxModel

LIMIT = 64 * 1024  # bytes of weights kept inline; the tiny classifier has megabytes


def test_a_model_above_the_limit_is_written_and_served_with_external_data(
    serving_modules, tmp_path, monkeypatch
):
    monkeypatch.setattr(model_files, "MAX_INLINE_WEIGHT_BYTES", LIMIT)
    module = serving_modules["classifier"]
    version = export_onnx(module, tmp_path, "large")  # its checks run on the large model too
    assert sorted(path.name for path in version.iterdir()) == [
        "keras_bert.json",
        "model.onnx",
        "model.onnx.data",
        "tokenizer.json",
    ]
    assert (
        (version / "model.onnx").stat().st_size
        < LIMIT
        < (version / "model.onnx.data").stat().st_size
    )
    texts = ["A gripping film.", "", "Dull, long and loud."]
    expected = module.serve_text(tf.constant(texts))["logits"].numpy()
    np.testing.assert_allclose(OnnxModel(version).predict(texts)["logits"], expected, atol=1e-5)


def test_writing_a_model_with_external_data_keeps_its_weights_in_memory(
    serving_modules, tmp_path, monkeypatch
):
    monkeypatch.setattr(model_files, "MAX_INLINE_WEIGHT_BYTES", LIMIT)
    export = prepare_onnx(serving_modules["classifier"])
    parameters = model_files.parameter_count(export.model)
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        export.write(tmp_path / name)
    assert model_files.parameter_count(export.model) == parameters
    first, second = (
        (tmp_path / name / "model.onnx.data").read_bytes() for name in ("first", "second")
    )
    assert first == second
