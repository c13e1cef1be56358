"""The serving clients against local servers that answer from the exported SavedModels."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.serving import GrpcClient, RestClient, ServingError
from pipelines.query_export import SessionModel
from tests.serving.fake_servers import GrpcServer, RestServer

TEXTS = ["Barack Obama visited Paris.", "Zoë est à Montréal 🥰", ""]
NON_UTF8 = b"caf\xe9 Paris"


@pytest.fixture(scope="module")
def models(exported_base):
    models = {
        name: SessionModel(str(exported_base / name / "1"))
        for name in ("classifier", "token_classifier", "question_answerer", "encoder")
    }
    yield models
    for model in models.values():
        model.close()


def _in_process(models, name, signature="serving_default", **inputs):
    return models[name].run(inputs, signature)


def _as_text(array: np.ndarray) -> list:
    return np.vectorize(lambda item: item.decode("utf-8"), otypes=[object])(array).tolist()


@pytest.mark.slow
def test_rest_row_format_body_and_answer(models):
    with RestServer(models) as server:
        client = RestClient("classifier", base_url=server.url)
        predictions = client.predict([{"text": text} for text in TEXTS])
    assert server.paths == ["/v1/models/classifier:predict"]
    assert server.bodies == [
        {
            "signature_name": "serving_default",
            "instances": [
                {"text": "Barack Obama visited Paris."},
                {"text": "Zoë est à Montréal 🥰"},
                {"text": ""},
            ],
        }
    ]
    expected = _in_process(models, "classifier", text=TEXTS)
    assert [row["label"] for row in predictions] == _as_text(expected["label"])
    np.testing.assert_allclose(
        [row["probabilities"] for row in predictions], expected["probabilities"], rtol=1e-6
    )


@pytest.mark.slow
def test_rest_columnar_format_with_version_and_bytes(models):
    texts = [*TEXTS, NON_UTF8]
    with RestServer(models) as server:
        client = RestClient("token_classifier", base_url=server.url, version=1)
        outputs = client.predict_columns({"text": texts})
    assert server.paths == ["/v1/models/token_classifier/versions/1:predict"]
    assert server.bodies == [
        {
            "signature_name": "serving_default",
            "inputs": {"text": [*TEXTS, {"b64": "Y2Fm6SBQYXJpcw=="}]},
        }
    ]
    expected = _in_process(models, "token_classifier", text=texts)
    assert outputs["num_entities"] == expected["num_entities"].tolist()
    assert outputs["entity_texts"] == _as_text(expected["entity_texts"])
    assert outputs["entity_starts"] == expected["entity_starts"].tolist()


@pytest.mark.slow
def test_rest_ids_signature_and_errors(models):
    ids = {
        "input_word_ids": [[101, 7592, 102, 0]],
        "input_mask": [[1, 1, 1, 0]],
        "input_type_ids": [[0, 0, 0, 0]],
    }
    with RestServer(models) as server:
        client = RestClient("encoder", base_url=server.url)
        outputs = client.predict_columns(ids, signature_name="serving_ids")
        with pytest.raises(ServingError, match="HTTP 400: Missing inputs"):
            client.predict_columns({"input_word_ids": [[101, 102]]}, signature_name="serving_ids")
        with pytest.raises(ServingError, match="Servable not found"):
            RestClient("no_such_model", base_url=server.url).predict([{"text": "a"}])
    assert server.bodies[0] == {"signature_name": "serving_ids", "inputs": ids}
    expected = _in_process(models, "encoder", "serving_ids", **ids)
    np.testing.assert_allclose(outputs["pooled_output"], expected["pooled_output"], rtol=1e-6)


@pytest.mark.slow
def test_grpc_predict_through_prediction_service(models):
    questions = ["Who visited Paris?", "Où?"]
    contexts = ["Barack Obama visited Paris.", "Zoë est à Montréal 🥰"]
    with GrpcServer(models) as server, GrpcClient("question_answerer", server.target) as client:
        outputs = client.predict({"question": questions, "context": contexts})
        with pytest.raises(ServingError, match="INVALID_ARGUMENT: Missing inputs"):
            client.predict({"question": questions})
        with pytest.raises(ServingError, match="NOT_FOUND"):
            GrpcClient("no_such_model", server.target).predict({"text": ["a"]})
    request = server.servicer.requests[0]
    assert request.model_spec.name == "question_answerer"
    assert request.model_spec.signature_name == "serving_default"
    assert tf.make_ndarray(request.inputs["context"]).tolist() == [
        text.encode("utf-8") for text in contexts
    ]
    expected = _in_process(models, "question_answerer", question=questions, context=contexts)
    assert sorted(outputs) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(outputs[name], value)
