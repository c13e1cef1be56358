"""Clients of TensorFlow Serving for keras_bert exports (REST via urllib, gRPC), and
`OnnxModel`, which serves an ONNX export with ONNX Runtime and `tokenizers` (no TensorFlow)."""

from keras_bert.serving.client import (
    GrpcClient,
    RestClient,
    ServingError,
    columnar_request,
    row_request,
)
from keras_bert.serving.onnx_model import OnnxModel

__all__ = [
    "GrpcClient",
    "OnnxModel",
    "RestClient",
    "ServingError",
    "columnar_request",
    "row_request",
]
