"""Hostile input through the exported string signatures and through `OnnxModel`: defined
outputs or a clear error of our own, never one from inside a dependency. (That both answer the
same hostile texts alike: tests/export/test_onnx_export.py,
`test_runtime_answers_as_the_savedmodel`.)"""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.serving import OnnxModel
from pipelines.query_export import SessionModel
from tests.export.builders import TASKS

LONG_TEXT = " ".join(f"word{index % 97} Paris." for index in range(10_000))
INVALID_UTF8 = b"caf\xe9 \xff\xfe Paris \xc3"
HOSTILE_TEXTS = [
    "",
    "   \t\n",
    LONG_TEXT,
    INVALID_UTF8,
    "\x00[MASK]\x00",
    "🥰" * 300,
    "[CLS] [SEP] [PAD] [UNK] <s> </s> <pad>",  # special tokens written as text
    "cafe\u0301 \u200b\ufeff שלום",  # a combining accent, zero-width characters, right to left
]


@pytest.fixture(scope="module")
def loaded(exported_base):
    """Every export, loaded as TF Serving loads it."""
    models = {task: SessionModel(str(exported_base / task / "1")) for task in TASKS}
    yield models
    for model in models.values():
        model.close()


def _call(loaded, task, texts):
    texts = np.array(texts, dtype=object)
    if task == "question_answerer":
        return loaded[task].run({"question": texts, "context": texts})
    return loaded[task].run({"text": texts})


def _numeric_outputs_finite(outputs):
    for name, value in outputs.items():
        if np.issubdtype(value.dtype, np.floating):
            assert np.all(np.isfinite(value)), name


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
            ends = outputs["entity_ends"][row][:count]
            assert np.all(ends <= length)
        assert outputs["num_entities"][0] == 0  # "" has no words
    if task == "question_answerer":
        assert outputs["answer_text"][0] == b"" and outputs["answer_start"][0] == -1
        # An answer in the invalid-UTF-8 context is valid UTF-8 (U+FFFD for the bad bytes).
        outputs["answer_text"][3].decode("utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_batch_of_zero_gives_empty_outputs(loaded, task):
    outputs = _call(loaded, task, [])
    assert outputs
    for name, value in outputs.items():
        assert value.shape[0] == 0, name


@pytest.mark.slow
def test_wrong_shapes_and_types_are_clear_errors(exported_base, loaded):
    signature = tf.saved_model.load(str(exported_base / "classifier" / "1")).signatures[
        "serving_default"
    ]
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be a string tensor"):
        signature(text=tf.constant([1, 2]))
    with pytest.raises(TypeError):
        signature(texts=tf.constant(["misnamed input"]))
    with pytest.raises(tf.errors.InvalidArgumentError):
        loaded["question_answerer"].run({"question": ["one", "two"], "context": ["only one"]})


@pytest.fixture(scope="module")
def onnx_models(onnx_exported_base):
    return {task: OnnxModel(onnx_exported_base / task / "1") for task in TASKS}


def _assert_same(ours: dict, expected: dict):
    assert set(ours) == set(expected)
    for name, value in expected.items():
        if value.dtype == object:
            np.testing.assert_array_equal(ours[name], value, err_msg=name)
        else:
            np.testing.assert_allclose(ours[name], value, atol=1e-6, err_msg=name)


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_onnx_runtime_reads_a_bare_string_as_one_text(onnx_models, task):
    model = onnx_models[task]
    if task == "question_answerer":
        _assert_same(model.predict("Who?", b"Paris."), model.predict(["Who?"], ["Paris."]))
    else:
        _assert_same(model.predict("Paris in [MASK]."), model.predict(["Paris in [MASK]."]))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("inputs", "refused"),
    [
        ([123], "item 0 is a int (123)"),
        (["fine", None], "item 1 is a NoneType (None)"),
        ([b"fine", "fine", 1.5], "item 2 is a float (1.5)"),
        (["fine", ("a", "b")], "item 1 is a tuple"),
        ([("a", "b"), "c"], "item 1 is a str ('c'), not a (text, text_pair) pair"),
        ([("a", 7)], "pair 0 is a int (7)"),
        (42, "Texts come as a list"),
    ],
)
def test_onnx_runtime_names_the_input_that_is_not_text(onnx_models, inputs, refused):
    with pytest.raises(TypeError, match=re.escape(refused)):
        onnx_models["token_classifier"].predict(inputs)


@pytest.mark.slow
def test_onnx_runtime_takes_pairs_only_where_the_model_reads_them(onnx_models):
    with pytest.raises(ValueError, match="classifier export takes single texts, not pairs"):
        onnx_models["classifier"].predict([("A text.", "Its pair.")])
    with pytest.raises(ValueError, match="encoder export takes single texts, not pairs"):
        onnx_models["encoder"].predict(["A text."], ["Its pair."])
    with pytest.raises(ValueError, match=r"takes \(question, context\) pairs"):
        onnx_models["question_answerer"].predict(["A question without a context?"])
    with pytest.raises(ValueError, match="2 texts and 1 second texts"):
        onnx_models["question_answerer"].predict(["One?", "Two?"], ["One context."])


@pytest.mark.slow
def test_ids_the_model_cannot_read_never_reach_onnx_runtime(onnx_models):
    model = onnx_models["encoder"]
    rows = model.pack([[5] * 4])
    assert model.run(rows)  # well-formed ids run
    too_long = np.ones((1, model.longest_input + 1), np.int32)
    with pytest.raises(ValueError, match=f"reads at most {model.longest_input}"):
        model.run({name: too_long for name in rows})
    vocab_size = model.metadata["vocab_size"]
    for name, bad_id in [("input_word_ids", vocab_size), ("input_word_ids", -1), ("input_mask", 2)]:
        with pytest.raises(ValueError, match=f"{name} holds ids outside 0"):
            model.run(rows | {name: np.full_like(rows[name], bad_id)})
    with pytest.raises(ValueError, match=r"must be \[batch, sequence\] integers"):
        model.run(rows | {"input_word_ids": rows["input_word_ids"].astype(np.float32)})


def test_onnx_runtime_names_what_a_directory_holds_instead_of_an_export(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no keras_bert ONNX export: no keras_bert"):
        OnnxModel(tmp_path)
    (tmp_path / "saved_model.pb").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match=r"holds a SavedModel \(load it as TF Serving"):
        OnnxModel(tmp_path)
