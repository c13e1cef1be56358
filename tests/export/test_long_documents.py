"""ModernBERT on long documents, end to end: a classifier, a token classifier and a question
answerer of 1,024 positions (the tiny checkpoint's) take Wikipedia articles longer than that as
raw strings, in `fit` and `predict`, in their SavedModels (loaded as TF Serving loads them, in a
fresh process) and in their ONNX exports, and answer as the Keras models do; inputs they cannot
read are one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.errors import ConfigError, DataError
from keras_bert.export import (
    ClassifierServing,
    QuestionAnswererServing,
    TokenClassifierServing,
    export_for_serving,
)
from keras_bert.export.onnx import export_onnx
from keras_bert.serving import OnnxModel
from keras_bert.text import TextPreprocessor
from tests.export.fresh_process import run_signatures

SEQ_LENGTH = 1024  # the checkpoint's positions
TAGS = ["O", "B-place", "I-place"]
QUESTIONS = ["What is the article about?", "Where did it happen?", "Who was it?"]


@pytest.fixture(scope="module")
def checkpoint(reference_dir):
    return reference_dir / "variants" / "modernbert"


@pytest.fixture(scope="module")
def documents(data_dir, checkpoint) -> list[str]:
    """Three Wikipedia articles of more than 1,100 tokens each."""
    text = (data_dir / "pretraining" / "wikipedia_sample.txt").read_text("utf-8")
    articles = [" ".join(article.split("\n")) for article in text.split("\n\n") if article.strip()]
    tokenizer = keras_bert.load_preprocessor(checkpoint).tokenizer
    lengths = tokenizer(tf.constant(articles[:20])).row_lengths().numpy()
    long_articles = [
        article for article, length in zip(articles, lengths, strict=False) if length > 1100
    ]
    assert len(long_articles) >= 3
    return long_articles[:3]


@pytest.fixture(scope="module")
def exported(checkpoint, documents, tmp_path_factory):
    """The three models (the classifier fit one epoch on the documents as strings), their
    serving modules, and each exported as a SavedModel and as ONNX."""
    classifier = keras_bert.BertClassifier.from_checkpoint(
        checkpoint, num_classes=2, label_names=["neg", "pos"], seq_length=SEQ_LENGTH
    )
    history = classifier.fit(documents, np.array([0, 1, 0]), epochs=1, batch_size=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    token_classifier = keras_bert.BertTokenClassifier.from_checkpoint(
        checkpoint, label_names=TAGS, seq_length=SEQ_LENGTH
    )
    question_answerer = keras_bert.BertQuestionAnswerer.from_checkpoint(
        checkpoint, seq_length=SEQ_LENGTH
    )
    buckets = {"buckets": (256, SEQ_LENGTH)}  # two warm-up lengths, not 28
    modules = {
        "classifier": ClassifierServing(classifier, classifier.preprocessor, **buckets),
        "token_classifier": TokenClassifierServing(
            token_classifier, token_classifier.preprocessor, max_entities=64, **buckets
        ),
        "question_answerer": QuestionAnswererServing(
            question_answerer, question_answerer.preprocessor, max_question_length=16, **buckets
        ),
    }
    base = tmp_path_factory.mktemp("long_documents")
    requests = [_request(name, documents) for name in modules]
    versions = {
        name: {
            "saved_model": export_for_serving(module, base / "saved_model", name),
            "onnx": export_onnx(module, base / "onnx", name, agreement_requests=[request]),
        }
        for (name, module), request in zip(modules.items(), requests, strict=True)
    }
    models = {
        "classifier": classifier,
        "token_classifier": token_classifier,
        "question_answerer": question_answerer,
    }
    return models, modules, versions


def _request(task: str, documents: list[str]) -> dict[str, list[str]]:
    if task == "question_answerer":
        return {"question": QUESTIONS, "context": documents}
    return {"text": documents}


def _served(versions, task: str, documents: list[str]) -> dict:
    call = {
        "export_dir": versions[task]["saved_model"],
        "signature": "serving_default",
        "inputs": _request(task, documents),
    }
    return run_signatures([call])[0]


@pytest.mark.slow
def test_the_documents_fill_every_position(exported, documents):
    _, modules, _ = exported
    packed = modules["classifier"].preprocessor(documents)
    assert packed["input_mask"].numpy().sum(axis=1).tolist() == [SEQ_LENGTH] * 3


@pytest.mark.slow
def test_classifier_answers_long_documents_as_keras_does(exported, documents):
    models, _, versions = exported
    expected = tf.nn.softmax(models["classifier"].predict(documents, verbose=0)).numpy()
    served = _served(versions, "classifier", documents)
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-4)
    onnx = OnnxModel(versions["classifier"]["onnx"]).predict(documents)
    np.testing.assert_allclose(onnx["probabilities"], expected, atol=1e-4)


@pytest.mark.slow
def test_token_classifier_finds_the_entities_keras_finds(exported, documents):
    models, _, versions = exported
    expected = models["token_classifier"].predict_entities(documents, max_entities=64)
    assert any(entities for entities in expected)  # a random head tags some words
    for outputs in (
        _served(versions, "token_classifier", documents),
        OnnxModel(versions["token_classifier"]["onnx"]).predict(documents),
    ):
        for row, entities in enumerate(expected):
            count = int(outputs["num_entities"][row])
            found = [
                (str(label), int(start), int(end))
                for label, start, end in zip(
                    outputs["entity_labels"][row][:count],
                    outputs["entity_starts"][row][:count],
                    outputs["entity_ends"][row][:count],
                    strict=True,
                )
            ]
            assert found == [(e["label"], e["start"], e["end"]) for e in entities]


@pytest.mark.slow
def test_token_logits_at_all_1024_positions_equal_keras(exported, documents):
    models, modules, versions = exported
    packed = {name: value.numpy() for name, value in modules["token_classifier"].pack_texts(
        tf.constant(documents)).items()}  # fmt: skip
    expected = models["token_classifier"].predict(packed, verbose=0)
    call = {"export_dir": versions["token_classifier"]["saved_model"], "signature": "serving_ids"}
    (served,) = run_signatures([call | {"inputs": {k: v.tolist() for k, v in packed.items()}}])
    np.testing.assert_allclose(served["logits"], expected, atol=1e-4)
    onnx = OnnxModel(versions["token_classifier"]["onnx"]).run(packed)
    np.testing.assert_allclose(onnx["logits"], expected, atol=1e-4)


@pytest.mark.slow
def test_question_answerer_answers_in_long_contexts_as_keras_does(exported, documents):
    models, _, versions = exported
    expected = models["question_answerer"].answer(QUESTIONS, documents)
    for outputs in (
        _served(versions, "question_answerer", documents),
        OnnxModel(versions["question_answerer"]["onnx"]).predict(QUESTIONS, documents),
    ):
        answers = list(zip(outputs["answer_start"], outputs["answer_end"], strict=True))
        assert [(int(start), int(end)) for start, end in answers] == [
            (answer["start"], answer["end"]) for answer in expected
        ]
        np.testing.assert_allclose(
            outputs["answer_score"], [answer["score"] for answer in expected], atol=1e-4
        )


@pytest.mark.slow
def test_ids_past_the_positions_and_token_types_are_one_line_errors(exported, checkpoint):
    models, _, versions = exported
    classifier = models["classifier"]
    longest = np.ones((1, SEQ_LENGTH + 1), "int32")
    with pytest.raises(DataError, match="holds 1025 ids per row; this modernbert model reads at"):
        classifier.predict({"input_word_ids": longest, "input_mask": longest}, verbose=0)
    ids = np.ones((1, 8), "int32")
    with pytest.raises(DataError, match="no token types: send input_type_ids of zeros") as error:
        classifier.predict(
            {"input_word_ids": ids, "input_mask": ids, "input_type_ids": ids}, verbose=0
        )
    assert "\n" not in str(error.value)
    # Without them, zeros.
    without_types = classifier.predict({"input_word_ids": ids, "input_mask": ids}, verbose=0)
    zeros = classifier.predict(
        {"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids}, verbose=0
    )
    np.testing.assert_array_equal(without_types, zeros)
    onnx = OnnxModel(versions["classifier"]["onnx"])
    with pytest.raises(ValueError, match="modernbert export has no token types"):
        onnx.run({"input_word_ids": ids, "input_mask": ids, "input_type_ids": ids})
    with pytest.raises(ValueError, match="the model reads at most 1024"):
        onnx.run({"input_word_ids": longest, "input_mask": longest})
    typed_ids = {name: ids.tolist() for name in ("input_word_ids", "input_mask", "input_type_ids")}
    call = {"export_dir": versions["classifier"]["saved_model"], "signature": "serving_ids"}
    with pytest.raises(RuntimeError, match="has no token types: send input_type_ids of zeros"):
        run_signatures([call | {"inputs": typed_ids}])
    too_many = "seq_length 2048 is longer than the 1024 tokens this modernbert model reads"
    with pytest.raises(ConfigError, match=too_many):
        keras_bert.load_preprocessor(checkpoint, seq_length=2 * SEQ_LENGTH)
    tokenizer = classifier.preprocessor.tokenizer
    with pytest.raises(ConfigError, match=too_many):
        ClassifierServing(classifier, TextPreprocessor(tokenizer, seq_length=2 * SEQ_LENGTH))
    paired = TextPreprocessor(tokenizer, seq_length=64, second_type_id=1)
    with pytest.raises(ConfigError, match="types a pair's second text 1"):
        ClassifierServing(classifier, paired, text_pairs=True)
