"""Local stand-ins for TensorFlow Serving that answer from a real SavedModel.

`RestServer` speaks the REST predict API (row and columnar formats, `{"b64": ...}` strings,
`{"error": ...}` with HTTP 400) and records every request body; `grpc_server` runs a
`PredictionServiceServicer` whose `Predict` calls the loaded signature. Both take exports
loaded as TF Serving loads them (`pipelines.query_export.SessionModel`).
"""

from __future__ import annotations

import base64
import json
import re
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

from pipelines.query_export import SessionModel

_PREDICT_PATH = re.compile(r"^/v1/models/(?P<name>[^/:]+)(/versions/(?P<version>\d+))?:predict$")


def _decode_strings(value):
    """JSON strings → UTF-8 bytes, `{"b64": ...}` → the bytes it encodes, as TF Serving does."""
    if isinstance(value, dict) and set(value) == {"b64"}:
        return base64.b64decode(value["b64"])
    if isinstance(value, dict):
        return {key: _decode_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_decode_strings(item) for item in value]
    return value.encode("utf-8") if isinstance(value, str) else value


def _json_output(value):
    """TF Serving's JSON of an output (or one row of it): numbers, and strings from UTF-8."""
    if isinstance(value, np.ndarray | np.generic):
        value = value.tolist()
    if isinstance(value, list):
        return [_json_output(item) for item in value]
    return value.decode("utf-8") if isinstance(value, bytes) else value


def call_signature(
    models: dict[str, SessionModel], name: str, signature_name: str, columns: dict
) -> dict:
    """Runs `models[name]`'s signature on a batch per input name; numpy outputs."""
    model = models[name]
    names = model.signatures[signature_name].inputs
    missing = set(names) - set(columns)
    if missing:
        raise ValueError(f"Missing inputs {sorted(missing)} for signature {signature_name}")
    return model.run({key: columns[key] for key in names}, signature_name)


class RestServer:
    """A REST server on 127.0.0.1 (free port); `bodies` and `paths` record the requests."""

    def __init__(self, models: dict):
        self.models = models
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                server.paths.append(self.path)
                try:
                    status, answer = 200, server.answer(self.path, body)
                except Exception as error:  # TF Serving reports any failure as {"error": ...}
                    status, answer = 400, {"error": str(error).splitlines()[0]}
                data = json.dumps(answer).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def answer(self, path: str, body: dict) -> dict:
        match = _PREDICT_PATH.match(path)
        if not match or match["name"] not in self.models:
            raise ValueError(f"Servable not found for request: {path}")
        signature_name = body.get("signature_name", "serving_default")
        if "instances" in body:
            rows = _decode_strings(body["instances"])
            columns = {key: [row[key] for row in rows] for key in rows[0]} if rows else {}
            outputs = call_signature(self.models, match["name"], signature_name, columns)
            batch_size = len(rows)
            return {
                "predictions": [
                    {key: _json_output(value[row]) for key, value in outputs.items()}
                    for row in range(batch_size)
                ]
            }
        columns = _decode_strings(body["inputs"])
        outputs = call_signature(self.models, match["name"], signature_name, columns)
        return {"outputs": {key: _json_output(value) for key, value in outputs.items()}}

    def __enter__(self) -> RestServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._http.shutdown()
        self._http.server_close()


class PredictServicer(prediction_service_pb2_grpc.PredictionServiceServicer):
    """`Predict` by calling the loaded SavedModel; records the requests."""

    def __init__(self, models: dict):
        self.models = models
        self.requests: list[predict_pb2.PredictRequest] = []

    def Predict(self, request, context):
        self.requests.append(request)
        name = request.model_spec.name
        if name not in self.models:
            context.abort(grpc.StatusCode.NOT_FOUND, f"Servable not found: {name}")
        columns = {key: tf.make_ndarray(proto) for key, proto in request.inputs.items()}
        try:
            outputs = call_signature(
                self.models, name, request.model_spec.signature_name or "serving_default", columns
            )
        except Exception as error:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error).splitlines()[0])
        response = predict_pb2.PredictResponse()
        response.model_spec.CopyFrom(request.model_spec)
        for key, value in outputs.items():
            response.outputs[key].CopyFrom(tf.make_tensor_proto(value))
        return response


class GrpcServer:
    """A gRPC `PredictionService` on 127.0.0.1 (free port) answering from `models`."""

    def __init__(self, models: dict):
        self.servicer = PredictServicer(models)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
            self.servicer, self._server
        )
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.target = f"127.0.0.1:{port}"

    def __enter__(self) -> GrpcServer:
        self._server.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._server.stop(grace=None)
