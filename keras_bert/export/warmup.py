"""TensorFlow Serving warm-up requests: `assets.extra/tf_serving_warmup_requests`.

When a version loads, TensorFlow Serving replays the `PredictionLog` records of this TFRecord
file before marking the version available, so the first real request does not pay for graph
initialisation (vocabulary tables, kernel selection). At most 1000 records are read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from keras_bert.serving.predict_request import predict_request

WARMUP_FILE = Path("assets.extra") / "tf_serving_warmup_requests"


def warmup_log(
    model_name: str, signature_name: str, inputs: Mapping[str, object]
) -> prediction_log_pb2.PredictionLog:
    """A `PredictionLog` holding the `PredictRequest` of `inputs`."""
    request = predict_request(model_name, signature_name, inputs)
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=request)
    )


def write_warmup_requests(
    export_dir: str | os.PathLike, logs: Iterable[prediction_log_pb2.PredictionLog]
) -> Path:
    """Writes `logs` to `<export_dir>/assets.extra/tf_serving_warmup_requests`."""
    path = Path(export_dir) / WARMUP_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for log in logs:
            writer.write(log.SerializeToString())
    return path


def read_warmup_requests(export_dir: str | os.PathLike) -> list[prediction_log_pb2.PredictionLog]:
    """The `PredictionLog` records of an export's warm-up file."""
    path = Path(export_dir) / WARMUP_FILE
    return [
        prediction_log_pb2.PredictionLog.FromString(record.numpy())
        for record in tf.data.TFRecordDataset(str(path))
    ]
