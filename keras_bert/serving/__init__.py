"""Clients of TensorFlow Serving for keras_bert exports: REST (urllib) and gRPC."""

from keras_bert.serving.client import (
    GrpcClient,
    RestClient,
    ServingError,
    columnar_request,
    row_request,
)

__all__ = ["GrpcClient", "RestClient", "ServingError", "columnar_request", "row_request"]
