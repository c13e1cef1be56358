"""Clients of TensorFlow Serving's REST and gRPC Predict APIs, without new dependencies.

REST request bodies are exactly those of TF Serving's documented API
(https://www.tensorflow.org/tfx/serving/api_rest):

- row format: `{"signature_name": ..., "instances": [{"text": "..."}, ...]}`, answered by
  `{"predictions": [{output: value, ...}, ...]}` (one object per row);
- columnar format: `{"signature_name": ..., "inputs": {"text": ["...", ...]}}`, answered by
  `{"outputs": {output: [...], ...}}`.

Strings travel as JSON strings; `bytes` that are not UTF-8 are sent as `{"b64": ...}`, which
TF Serving decodes into the raw bytes. gRPC uses `PredictionServiceStub` from
`tensorflow_serving.apis` (with `grpcio`, both dependencies of `tensorflow-serving-api`).
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

DEFAULT_SIGNATURE = "serving_default"


class ServingError(RuntimeError):
    """TF Serving answered with an error (the server's message is kept)."""


def _json_value(value: Any) -> Any:
    """A JSON value of TF Serving's REST encoding for `value` (nested lists, bytes, arrays)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def model_url(base_url: str, model_name: str, version: int | None = None) -> str:
    """`<base_url>/v1/models/<name>[/versions/<version>]`."""
    url = f"{base_url.rstrip('/')}/v1/models/{model_name}"
    return url if version is None else f"{url}/versions/{version}"


def row_request(
    instances: Sequence[Mapping[str, Any]], signature_name: str = DEFAULT_SIGNATURE
) -> dict:
    """The REST body of a row-format ("instances") predict request."""
    return {
        "signature_name": signature_name,
        "instances": [
            {name: _json_value(value) for name, value in instance.items()} for instance in instances
        ],
    }


def columnar_request(inputs: Mapping[str, Any], signature_name: str = DEFAULT_SIGNATURE) -> dict:
    """The REST body of a columnar-format ("inputs") predict request."""
    return {
        "signature_name": signature_name,
        "inputs": {name: _json_value(value) for name, value in inputs.items()},
    }


class RestClient:
    """Calls a model on TF Serving's REST API (port 8501 by default).

    Args:
        model_name: the model's name in `models.config`.
        base_url: the server, e.g. "http://localhost:8501".
        version: a fixed version, or None for the latest.
        timeout: seconds per request.

    Example (with a server running):
        client = RestClient("sentiment")
        client.predict([{"text": "A gripping film."}])[0]["label"]
    """

    def __init__(
        self,
        model_name: str,
        base_url: str = "http://localhost:8501",
        version: int | None = None,
        timeout: float = 30.0,
    ):
        self.model_name = model_name
        self.base_url = base_url
        self.version = version
        self.timeout = timeout

    @property
    def url(self) -> str:
        return model_url(self.base_url, self.model_name, self.version)

    def _post(self, body: dict) -> dict:
        request = urllib.request.Request(
            f"{self.url}:predict",
            data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            message = error.read().decode("utf-8", errors="replace")
            try:
                message = json.loads(message)["error"]
            except (ValueError, KeyError, TypeError):
                pass
            raise ServingError(f"{self.url} answered HTTP {error.code}: {message}") from None
        if "error" in answer:
            raise ServingError(f"{self.url}: {answer['error']}")
        return answer

    def predict(
        self, instances: Sequence[Mapping[str, Any]], signature_name: str = DEFAULT_SIGNATURE
    ) -> list:
        """Row format: one dict of inputs per example in, one dict of outputs per example out.

        (TF Serving returns a bare value per row when the signature has a single output.)
        """
        return self._post(row_request(instances, signature_name))["predictions"]

    def predict_columns(
        self, inputs: Mapping[str, Any], signature_name: str = DEFAULT_SIGNATURE
    ) -> dict | list:
        """Columnar format: a batch per input name in, a batch per output name out."""
        return self._post(columnar_request(inputs, signature_name))["outputs"]


class GrpcClient:
    """Calls a model through TF Serving's gRPC `PredictionService` (port 8500 by default).

    Inputs are numpy-convertible values (text as `str` or `bytes`); outputs come back as numpy
    arrays (strings as `bytes`).

    Args:
        model_name: the model's name in `models.config`.
        target: "host:port" of the server.
        version: a fixed version, or None for the latest.
        timeout: seconds per request.
    """

    def __init__(
        self,
        model_name: str,
        target: str = "localhost:8500",
        version: int | None = None,
        timeout: float = 30.0,
    ):
        import grpc
        from tensorflow_serving.apis import prediction_service_pb2_grpc

        self.model_name = model_name
        self.version = version
        self.timeout = timeout
        self._channel = grpc.insecure_channel(target)
        self._stub = prediction_service_pb2_grpc.PredictionServiceStub(self._channel)

    def request(self, inputs: Mapping[str, Any], signature_name: str = DEFAULT_SIGNATURE):
        """The `PredictRequest` of `inputs`."""
        from keras_bert.serving.predict_request import predict_request

        request = predict_request(self.model_name, signature_name, inputs)
        if self.version is not None:
            request.model_spec.version.value = self.version
        return request

    def predict(
        self, inputs: Mapping[str, Any], signature_name: str = DEFAULT_SIGNATURE
    ) -> dict[str, np.ndarray]:
        """Runs `signature_name` on `inputs` (a batch per input name)."""
        import grpc
        import tensorflow as tf

        try:
            response = self._stub.Predict(
                self.request(inputs, signature_name), timeout=self.timeout
            )
        except grpc.RpcError as error:
            raise ServingError(f"{error.code().name}: {error.details()}") from None
        return {name: tf.make_ndarray(proto) for name, proto in response.outputs.items()}

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> GrpcClient:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
