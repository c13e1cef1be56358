"""Tiny task models on the real MiniLM vocabulary, their serving modules and exports.

Built once per test session (exports take seconds each) and shared by tests/export and
tests/serving.
"""

from __future__ import annotations

import functools
from pathlib import Path

import keras

from keras_bert import BertConfig, BertEncoder
from keras_bert.export import (
    ClassifierServing,
    EncoderServing,
    MaskedLMServing,
    QuestionAnswererServing,
    TokenClassifierServing,
    export_for_serving,
    write_server_config,
)
from keras_bert.models import BertClassifier, BertQuestionAnswerer, BertTokenClassifier
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.text import BertPreprocessor

SEQ_LENGTH = 32
NER_LABELS = ["O", "B-person", "I-person", "B-location", "I-location"]
SENTIMENT_LABELS = ["negative", "positive", "neutral"]
TASKS = ("classifier", "token_classifier", "question_answerer", "encoder", "masked_lm")


@functools.cache
def serving_modules(vocabulary_path: str, **options) -> dict:
    """One serving module per task, all on one randomly initialised tiny encoder (seeded: the
    same weights on every call); `options` (`buckets`, `jit_compile`, `precision`) go to every
    module."""
    keras.utils.set_random_seed(1234)
    preprocessor = BertPreprocessor(vocabulary_path, seq_length=SEQ_LENGTH)
    vocab_size = len(preprocessor.tokenizer.vocabulary)
    encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=vocab_size))
    # Every model before any serving module: a bfloat16 module rebuilds (initialises) a copy.
    classifier = BertClassifier(encoder, 3, label_names=SENTIMENT_LABELS)
    token_classifier = BertTokenClassifier(encoder, label_names=NER_LABELS)
    question_answerer = BertQuestionAnswerer(encoder)
    pretrainer = BertPretrainer(encoder)
    return {
        "classifier": ClassifierServing(classifier, preprocessor, **options),
        "token_classifier": TokenClassifierServing(
            token_classifier, preprocessor, max_entities=8, **options
        ),
        "question_answerer": QuestionAnswererServing(
            question_answerer, preprocessor, max_question_length=8, **options
        ),
        "encoder": EncoderServing(encoder, preprocessor, **options),
        "masked_lm": MaskedLMServing(pretrainer, preprocessor, top_k=3, max_masks=2, **options),
    }


def exported_base(vocabulary_path: str, directory: Path) -> Path:
    """A TF Serving base directory in `directory` with version 1 of every task and the server
    config."""
    base_dir = directory / "saved_models"
    for name, module in serving_modules(vocabulary_path).items():
        export_for_serving(module, base_dir, name)
    write_server_config(base_dir)
    return base_dir


def onnx_exported_base(vocabulary_path: str, directory: Path) -> Path:
    """A base directory in `directory` with version 1 of every task as an ONNX export
    (float32)."""
    from keras_bert.export.onnx import export_onnx

    base_dir = directory / "saved_models"
    for name, module in serving_modules(vocabulary_path).items():
        export_onnx(module, base_dir, name)
    return base_dir
