"""`quantize_int8` on a two-matmul classifier built by hand, dynamic and static: all int8 when it
stays close to float32, else the node whose int8 moves probabilities most goes back to float32,
and no more; what the search chose stands or falls on the held-out inputs; and it prints
nothing."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from keras_bert.export.onnx.quantization import (
    INT8_MODES,
    MAX_RELATIVE_ERROR,
    MIN_LABEL_AGREEMENT,
    quantize_int8,
)
from keras_bert.export.precision import PrecisionAgreementError

ROWS = 256


def _classifier() -> onnx.ModelProto:
    """features [batch, 4] -> "first" MatMul -> "second" MatMul -> logits [batch, 2]. "first"
    passes features 1-3 through and all but drops feature 0."""
    first = np.diag([1e-3, 1.0, 1.0, 1.0]).astype(np.float32)
    second = np.array([[0.0, 0.0], [1.0, -1.0], [-0.5, 1.0], [0.3, 0.2]], np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["features", "first_kernel"], ["hidden"], name="first"),
            helper.make_node("MatMul", ["hidden", "second_kernel"], ["logits"], name="second"),
        ],
        "classifier",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2])],
        [
            numpy_helper.from_array(first, "first_kernel"),
            numpy_helper.from_array(second, "second_kernel"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _batches(outlier: float) -> list[dict]:
    """One batch of features in [-1, 1]; feature 0 is `outlier` (one int8 step of an
    activation scale set by it is outlier / 255)."""
    features = np.random.default_rng(0).uniform(-1, 1, (ROWS, 4)).astype(np.float32)
    features[:, 0] = outlier
    return [{"features": features, "input_mask": np.ones((ROWS, 1), np.int32)}]


def _op_counts(model: onnx.ModelProto) -> Counter:
    return Counter(node.op_type for node in model.graph.node)


@pytest.mark.parametrize("mode", INT8_MODES)
def test_all_int8_when_within_tolerance(mode):
    batches = _batches(outlier=1.0)
    model, agreement = quantize_int8(_classifier(), batches, batches, mode)
    if mode == "dynamic":
        assert _op_counts(model)["MatMulInteger"] == 2 and _op_counts(model)["MatMul"] == 0
    else:  # each weight and activation through QuantizeLinear / DequantizeLinear
        assert _op_counts(model)["DequantizeLinear"] == 4
    assert agreement.mode == mode and agreement.labels == ROWS
    assert agreement.int8_nodes == 2 and agreement.float32_nodes == []
    assert agreement.sensitivity == {} and agreement.tried == []
    assert agreement.label_agreement >= MIN_LABEL_AGREEMENT
    assert agreement.search_relative_error <= MAX_RELATIVE_ERROR


@pytest.mark.parametrize("mode", INT8_MODES)
def test_the_most_sensitive_node_goes_back_to_float32(mode):
    # An outlier of 1000 makes the first node's activation step ~4: features 1-3 round to 0, so
    # do both logits: every label is class 0 (half agree) and the error is 100%.
    batches = _batches(outlier=1000.0)
    model, agreement = quantize_int8(_classifier(), batches, batches, mode)
    assert agreement.float32_nodes == ["first"] and agreement.int8_nodes == 1
    assert agreement.tried == [(0.5, 1.0)]
    assert agreement.sensitivity["first"] == 1.0
    assert agreement.sensitivity["second"] == agreement.search_relative_error <= MAX_RELATIVE_ERROR
    assert agreement.label_agreement >= MIN_LABEL_AGREEMENT
    first = next(node for node in model.graph.node if node.name == "first")
    assert first.op_type == "MatMul" and first.input[0] == "features"  # float32, untouched


def test_the_held_out_inputs_accept_or_refuse_what_the_search_chose():
    # Chosen on inputs without the outlier (all int8), refused on held-out ones with it.
    with pytest.raises(PrecisionAgreementError, match="0.5000 of 256 held-out labels"):
        quantize_int8(_classifier(), _batches(1.0), _batches(1000.0))


def test_quantizing_prints_nothing(capfd, caplog):
    batches = _batches(outlier=1.0)
    for mode in INT8_MODES:
        quantize_int8(_classifier(), batches, batches, mode)
    assert caplog.records == []
    assert capfd.readouterr() == ("", "")
