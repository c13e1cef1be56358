"""TensorFlow Serving's `PredictRequest` of named inputs: what `GrpcClient` sends and what an
export's warm-up file replays (`keras_bert.export.warmup`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import model_pb2, predict_pb2


def _as_array(value: object) -> np.ndarray:
    """A numpy array of `value`; text becomes UTF-8 bytes (TensorFlow's `tf.string`)."""
    array = np.asarray(value.numpy() if isinstance(value, tf.Tensor) else value)
    if array.dtype.kind == "U":
        array = np.vectorize(lambda text: text.encode("utf-8"), otypes=[object])(array)
    return array


def predict_request(
    model_name: str, signature_name: str, inputs: Mapping[str, object]
) -> predict_pb2.PredictRequest:
    """A `PredictRequest` with one `TensorProto` per named input (lists, arrays or tensors).

    Example:
    >>> request = predict_request("sentiment", "serving_default", {"text": ["Great fun."]})
    >>> request.model_spec.name, request.inputs["text"].string_val
    ('sentiment', [b'Great fun.'])
    """
    request = predict_pb2.PredictRequest(
        model_spec=model_pb2.ModelSpec(name=model_name, signature_name=signature_name)
    )
    for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(_as_array(value)))
    return request
