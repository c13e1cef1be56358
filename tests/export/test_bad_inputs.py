"""Hostile input through the exported string signatures: defined outputs or a clear error."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from tests.export.builders import TASKS

LONG_TEXT = " ".join(f"word{index % 97} Paris." for index in range(10_000))
INVALID_UTF8 = b"caf\xe9 \xff\xfe Paris \xc3"
HOSTILE_TEXTS = ["", "   \t\n", LONG_TEXT, INVALID_UTF8, "\x00[MASK]\x00", "🥰" * 300]


@pytest.fixture(scope="session")  # loading five exports takes a minute: once per session
def loaded(exported_base):
    return {task: tf.saved_model.load(str(exported_base / task / "1")) for task in TASKS}


def _call(loaded, task, texts):
    signature = loaded[task].signatures["serving_default"]
    texts = tf.constant(texts, tf.string)
    if task == "question_answerer":
        return signature(question=texts, context=texts)
    return signature(text=texts)


def _numeric_outputs_finite(outputs):
    for name, value in outputs.items():
        if value.dtype.is_floating:
            assert np.all(np.isfinite(value.numpy())), name


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_hostile_texts_give_defined_outputs(loaded, task):
    outputs = _call(loaded, task, HOSTILE_TEXTS)
    for name, value in outputs.items():
        assert value.shape[0] == len(HOSTILE_TEXTS), name
    _numeric_outputs_finite(outputs)
    if task == "token_classifier":
        lengths = [
            len(bytes(text, "utf-8") if isinstance(text, str) else text) for text in HOSTILE_TEXTS
        ]
        for row, length in enumerate(lengths):
            count = outputs["num_entities"][row]
            ends = outputs["entity_ends"][row][:count].numpy()
            assert np.all(ends <= length)
        assert outputs["num_entities"][0] == 0  # "" has no words
    if task == "question_answerer":
        assert outputs["answer_text"][0] == b"" and outputs["answer_start"][0] == -1
        # An answer in the invalid-UTF-8 context is valid UTF-8 (U+FFFD for the bad bytes).
        outputs["answer_text"][3].numpy().decode("utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_batch_of_zero_gives_empty_outputs(loaded, task):
    outputs = _call(loaded, task, [])
    assert outputs
    for name, value in outputs.items():
        assert value.shape[0] == 0, name


@pytest.mark.slow
def test_wrong_shapes_and_types_are_clear_errors(loaded):
    signature = loaded["classifier"].signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be a string tensor"):
        signature(text=tf.constant([1, 2]))
    with pytest.raises(TypeError):
        signature(texts=tf.constant(["misnamed input"]))
    qa = loaded["question_answerer"].signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError):
        qa(question=tf.constant(["one", "two"]), context=tf.constant(["only one context"]))
