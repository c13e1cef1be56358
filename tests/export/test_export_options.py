"""Opt-in export options: XLA-compiled model calls and bfloat16 compute with its agreement check."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tensorflow.core.protobuf import saved_model_pb2

from keras_bert.export import (
    AgreementTolerance,
    ClassifierServing,
    EncoderServing,
    PrecisionAgreementError,
    check_serving_ops,
    export_for_serving,
)
from keras_bert.export.exporter import AGREEMENT_FILE
from tests.export.fresh_process import run_signatures

TEXTS = ["A gripping, beautifully acted film.", "Dull.", "Straße ΟΔΟΣ 中文 🥰 naïve café, Zoë!"]


def _xla_functions(export_dir) -> list[str]:
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString((export_dir / "saved_model.pb").read_bytes())
    library = [f for graph in saved_model.meta_graphs for f in graph.graph_def.library.function]
    return [f.signature.name for f in library if f.attr["_XlaMustCompile"].b]


def _served(export_dir, reference_dir) -> tuple[dict, dict]:
    """`serving_default` outputs on TEXTS of two exports, in a fresh process."""
    inputs = {"text": TEXTS}
    calls = [
        {"export_dir": path, "signature": "serving_default", "dtype": "string", "inputs": inputs}
        for path in (export_dir, reference_dir)
    ]
    return tuple(run_signatures(calls))


@pytest.mark.slow
def test_xla_export_is_op_checked_and_answers_like_the_default(
    tmp_path, serving_modules, exported_base
):
    float32 = serving_modules["classifier"]
    module = ClassifierServing(float32.model, float32.preprocessor, jit_compile=True)
    export_dir = export_for_serving(module, tmp_path, "xla")
    assert _xla_functions(export_dir)  # the model call; TF Serving needs the XLA flag for it
    assert {"FastWordpieceTokenizeWithOffsets", "MatMul"} <= check_serving_ops(export_dir)
    xla, default = _served(export_dir, exported_base / "classifier" / "1")
    np.testing.assert_allclose(xla["probabilities"], default["probabilities"], atol=1e-5)
    assert xla["label"] == default["label"]


@pytest.mark.slow
def test_bfloat16_export_agrees_with_float32_and_records_it(
    tmp_path, serving_modules, exported_base
):
    float32 = serving_modules["classifier"]
    module = ClassifierServing(float32.model, float32.preprocessor, precision="bfloat16")
    held_out = [{"text": TEXTS}]
    export_dir = export_for_serving(
        module, tmp_path, "bf16", float32_module=float32, agreement_requests=held_out
    )
    agreement = json.loads((export_dir / AGREEMENT_FILE).read_text())
    # The example request, 2 bucket requests and the 3 held-out texts: a label each.
    assert agreement["precision"] == "bfloat16"
    assert agreement["labels"] == 2 + 2 + len(TEXTS)
    assert agreement["label_agreement"] == 1.0
    assert 0 < agreement["max_probability_difference"] < 0.01
    assert _xla_functions(export_dir) == []
    check_serving_ops(export_dir)
    bfloat16, default = _served(export_dir, exported_base / "classifier" / "1")
    assert bfloat16["label"] == default["label"]
    difference = np.abs(np.array(bfloat16["probabilities"]) - default["probabilities"]).max()
    assert 0 < difference <= agreement["max_probability_difference"] + 0.01


def test_bfloat16_export_outside_tolerance_is_refused(tmp_path, serving_modules):
    float32 = serving_modules["classifier"]
    module = ClassifierServing(float32.model, float32.preprocessor, precision="bfloat16")
    exact = AgreementTolerance(min_label_agreement=1.0, max_probability_difference=0.0)
    with pytest.raises(PrecisionAgreementError, match=r"max probability difference 0\.0"):
        export_for_serving(module, tmp_path, "bf16", float32_module=float32, tolerance=exact)
    with pytest.raises(ValueError, match="needs its float32 serving module"):
        export_for_serving(module, tmp_path, "bf16")
    assert not (tmp_path / "bf16").exists() or list((tmp_path / "bf16").iterdir()) == []


def test_bfloat16_encoder_has_no_labels_to_check(tmp_path, serving_modules):
    float32 = serving_modules["encoder"]
    module = EncoderServing(float32.model, float32.preprocessor, precision="bfloat16")
    with pytest.raises(ValueError, match="EncoderServing outputs hold no labels"):
        export_for_serving(module, tmp_path, "bf16", float32_module=float32)


def test_unknown_precision_is_named(serving_modules):
    float32 = serving_modules["classifier"]
    with pytest.raises(ValueError, match=r"got 'float16'"):
        ClassifierServing(float32.model, float32.preprocessor, precision="float16")
