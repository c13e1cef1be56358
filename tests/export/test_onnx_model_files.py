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


def test_xlm_roberta_large_takes_external_data_and_base_does_not():
    """XLM-R large's 560M float32 weights (2.2 GB) pass protobuf's limit, base's 278M do not;
    the tests above lower the limit to take that path with small models."""
    from keras_bert import BertConfig

    sizes = {"model_type": "xlm-roberta", "vocab_size": 250_002, "max_position_embeddings": 514,
             "type_vocab_size": 1, "position_offset": 2, "pooler": False}  # fmt: skip
    base, large = (BertConfig.preset(name, **sizes) for name in ("base", "large"))
    assert 4 * base.num_parameters() < model_files.MAX_INLINE_WEIGHT_BYTES
    assert 4 * large.num_parameters() > model_files.MAX_INLINE_WEIGHT_BYTES


def test_an_xlm_roberta_export_above_the_limit_serves_strings_as_the_savedmodel(
    reference_dir, tmp_path, monkeypatch
):
    import keras_bert
    from keras_bert.export import ClassifierServing

    monkeypatch.setattr(model_files, "MAX_INLINE_WEIGHT_BYTES", LIMIT)
    checkpoint = reference_dir / "variants" / "xlm_roberta"
    classifier = keras_bert.BertClassifier.from_checkpoint(checkpoint, num_classes=3)
    module = ClassifierServing(classifier, classifier.preprocessor)
    version = export_onnx(module, tmp_path, "xlm_roberta")
    assert (version / "model.onnx.data").stat().st_size > 4002 * 64 * 4  # the table at least
    texts = ["Guten Morgen!", "上海是一座国际化的大都市。", "", "Le chat <mask>."]
    expected = module.serve_text(tf.constant(texts))["logits"].numpy()
    np.testing.assert_allclose(OnnxModel(version).predict(texts)["logits"], expected, atol=1e-5)
