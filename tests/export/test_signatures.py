"""Every export, loaded in a fresh process with only TensorFlow, equals the Keras model."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.decoding.bio_tags import bio_spans
from tests.export.builders import NER_LABELS, SENTIMENT_LABELS, SEQ_LENGTH
from tests.export.fresh_process import run_signatures

TEXTS = [
    "Barack Obama visited Paris in June with Angela Merkel.",
    "Straße ΟΔΟΣ 中文 🥰 naïve café, Zoë!",
    "",
    "The [MASK] sat on the mat. A [MASK] day [MASK].",
    # Longer than the window: words past it get no label, masks past it are not filled.
    " ".join(["Long text about Lisbon and Porto."] * 12),
]
QUESTIONS = ["Who visited Paris?", "Où est Zoë?", "What?", "", "A very long question " * 10]
CONTEXTS = [
    "Barack Obama visited Paris in June with Angela Merkel.",
    "Zoë est à Montréal, près du café 🥰.",
    "",
    "Only a context, no question.",
    "The answer is somewhere in this context. " * 10,
]
ATOL = 2e-5


def _softmax(logits: np.ndarray) -> np.ndarray:
    exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exp / exp.sum(axis=-1, keepdims=True)


def _char_offset(text: str, byte_offset: int) -> int:
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8"))


@pytest.fixture(scope="module")
def served(exported_base):
    """Outputs of every signature of every export, computed in one fresh process."""
    calls = {
        "classifier": {"text": TEXTS},
        "token_classifier": {"text": TEXTS},
        "question_answerer": {"question": QUESTIONS, "context": CONTEXTS},
        "encoder": {"text": TEXTS},
        "masked_lm": {"text": TEXTS},
    }
    requests = [
        {
            "export_dir": exported_base / task / "1",
            "signature": "serving_default",
            "inputs": inputs,
        }
        for task, inputs in calls.items()
    ]
    ids_inputs = _ids_inputs()
    requests += [
        {
            "export_dir": exported_base / task / "1",
            "signature": "serving_ids",
            "inputs": ids_inputs,
        }
        for task in calls
    ]
    results = run_signatures(requests)
    return {
        (request["export_dir"].parent.name, request["signature"]): result
        for request, result in zip(requests, results, strict=True)
    }


def _ids_inputs() -> dict[str, list]:
    rng = np.random.default_rng(0)
    word_ids = rng.integers(1000, 30000, size=(3, 12))
    word_ids[:, 0], word_ids[:, -1], word_ids[1, 5] = 101, 102, 103  # [CLS], [SEP], [MASK]
    mask = np.ones_like(word_ids)
    mask[2, 8:] = 0
    types = np.zeros_like(word_ids)
    types[0, 6:] = 1
    return {
        "input_word_ids": word_ids.tolist(),
        "input_mask": mask.tolist(),
        "input_type_ids": types.tolist(),
    }


def _padded_as_batching_pads(inputs: dict[str, list], width: int) -> dict[str, list]:
    """`inputs` padded to `width` columns as TF Serving's batching pads a request that shares
    a batch with a wider one (`pad_variable_length_inputs`): with each tensor's first element."""
    return {
        name: [row + [rows[0][0]] * (width - len(row)) for row in rows]
        for name, rows in inputs.items()
    }


@pytest.mark.slow
def test_serving_ids_answers_alike_when_batching_pads_the_request(exported_base):
    ids = _ids_inputs()
    padded = _padded_as_batching_pads(ids, 20)
    assert padded["input_word_ids"][0][12:] == [101] * 8 and padded["input_mask"][2][12] == 1
    calls = [
        {"export_dir": exported_base / task / "1", "signature": "serving_ids", "inputs": inputs}
        for task in ("classifier", "encoder")
        for inputs in (ids, padded)
    ]
    classifier, classifier_padded, encoder, encoder_padded = run_signatures(calls)
    np.testing.assert_allclose(classifier_padded["logits"], classifier["logits"], atol=ATOL)
    np.testing.assert_allclose(
        np.array(encoder_padded["sequence_output"])[:, :12], encoder["sequence_output"], atol=ATOL
    )


@pytest.mark.slow
def test_classifier_matches_keras(served, serving_modules):
    module = serving_modules["classifier"]
    logits = module.model(module.preprocessor(tf.constant(TEXTS))).numpy()
    outputs = served["classifier", "serving_default"]
    np.testing.assert_allclose(outputs["probabilities"], _softmax(logits), atol=ATOL)
    np.testing.assert_allclose(outputs["logits"], logits, atol=ATOL)
    assert outputs["label"] == [SENTIMENT_LABELS[index] for index in logits.argmax(-1)]
    assert outputs["label_id"] == logits.argmax(-1).tolist()
    assert outputs["label_names"] == [SENTIMENT_LABELS] * len(TEXTS)
    ids = {name: tf.constant(value) for name, value in _ids_inputs().items()}
    np.testing.assert_allclose(
        served["classifier", "serving_ids"]["logits"], module.model(ids), atol=ATOL
    )


@pytest.mark.slow
def test_encoder_matches_keras(served, serving_modules):
    module = serving_modules["encoder"]
    inputs = module.preprocessor(tf.constant(TEXTS))
    outputs = module.model(inputs)
    sequence_output = outputs["sequence_output"].numpy()
    mask = inputs["input_mask"].numpy()[:, :, None]
    served_outputs = served["encoder", "serving_default"]
    np.testing.assert_allclose(served_outputs["pooled_output"], outputs["pooled_output"], atol=ATOL)
    np.testing.assert_allclose(served_outputs["cls_embedding"], sequence_output[:, 0], atol=ATOL)
    np.testing.assert_allclose(
        served_outputs["mean_embedding"],
        (sequence_output * mask).sum(1) / mask.sum(1),
        atol=ATOL,
    )
    ids = {name: tf.constant(value) for name, value in _ids_inputs().items()}
    np.testing.assert_allclose(
        served["encoder", "serving_ids"]["sequence_output"],
        module.model(ids)["sequence_output"],
        atol=ATOL,
    )


def _reference_entities(module, text: str) -> list[tuple[str, str, int, int, float]]:
    """Entities by the Python route: Keras logits, first pieces, `bio_spans`, str offsets."""
    pieces, starts, ends = module.tokenizer.tokenize_words_with_offsets(tf.constant([text]))
    logits = module.model(module.preprocessor(tf.constant([text]))).numpy()[0]
    probabilities = _softmax(logits)
    tags, word_probabilities, position = [], [], 1
    for word_pieces in pieces.to_list()[0]:
        if position > SEQ_LENGTH - 2:
            break
        tags.append(NER_LABELS[logits[position].argmax()])
        word_probabilities.append(probabilities[position].max())
        position += len(word_pieces)
    starts, ends = starts.to_list()[0], ends.to_list()[0]
    entities = []
    for span in bio_spans(tags):
        start = _char_offset(text, starts[span.start])
        end = _char_offset(text, ends[span.end - 1])
        score = float(np.mean(word_probabilities[span.start : span.end]))
        entities.append((span.label, text[start:end], start, end, score))
    return entities


@pytest.mark.slow
def test_token_classifier_entities_match_python_decoding(served, serving_modules):
    module = serving_modules["token_classifier"]
    outputs = served["token_classifier", "serving_default"]
    found_any = False
    for row, text in enumerate(TEXTS):
        expected = _reference_entities(module, text)[: module.max_entities]
        count = outputs["num_entities"][row]
        assert count == len(expected)
        found_any |= count > 0
        served_entities = list(
            zip(
                outputs["entity_labels"][row][:count],
                outputs["entity_texts"][row][:count],
                outputs["entity_starts"][row][:count],
                outputs["entity_ends"][row][:count],
                strict=True,
            )
        )
        assert served_entities == [entity[:4] for entity in expected]
        np.testing.assert_allclose(
            outputs["entity_scores"][row][:count], [entity[4] for entity in expected], atol=ATOL
        )
        padding = module.max_entities - count
        assert outputs["entity_labels"][row][count:] == [""] * padding
        assert outputs["entity_starts"][row][count:] == [-1] * padding
    assert found_any


def _reference_answer(module, question: str, context: str) -> tuple[str, float, int, int]:
    """The best span by brute force over the Keras logits."""
    context_ids, starts, ends = module.tokenizer.tokenize_with_offsets(tf.constant([context]))
    inputs = module.pack(tf.constant([question]), context_ids)
    outputs = module.model(inputs)
    types = inputs["input_type_ids"].numpy()[0]
    mask = inputs["input_mask"].numpy()[0]
    context_positions = [p for p in range(SEQ_LENGTH) if types[p] == 1 and mask[p] == 1][:-1]
    if not context_positions:
        return "", 0.0, -1, -1
    start_p = _softmax(outputs["start_logits"].numpy()[0][context_positions])
    end_p = _softmax(outputs["end_logits"].numpy()[0][context_positions])
    score, first, last = max(
        (start_p[i] * end_p[j], i, j)
        for i in range(len(context_positions))
        for j in range(i, min(i + module.max_answer_length, len(context_positions)))
    )
    start = _char_offset(context, starts.to_list()[0][first])
    end = _char_offset(context, ends.to_list()[0][last])
    return context[start:end], float(score), start, end


@pytest.mark.slow
def test_question_answerer_matches_brute_force(served, serving_modules):
    module = serving_modules["question_answerer"]
    outputs = served["question_answerer", "serving_default"]
    for row, (question, context) in enumerate(zip(QUESTIONS, CONTEXTS, strict=True)):
        text, score, start, end = _reference_answer(module, question, context)
        assert outputs["answer_text"][row] == text
        assert (outputs["answer_start"][row], outputs["answer_end"][row]) == (start, end)
        np.testing.assert_allclose(outputs["answer_score"][row], score, atol=ATOL)
    assert outputs["answer_start"][2] == -1  # empty context
    start_logits = module.model({k: tf.constant(v) for k, v in _ids_inputs().items()})
    np.testing.assert_allclose(
        served["question_answerer", "serving_ids"]["start_logits"],
        start_logits["start_logits"],
        atol=ATOL,
    )


def _reference_fillers(module, inputs: dict) -> tuple[list, list, list]:
    word_ids = inputs["input_word_ids"].numpy()
    tokens, probabilities, counts = [], [], []
    for row in range(len(word_ids)):
        positions = np.flatnonzero(word_ids[row] == module.mask_id)[: module.max_masks]
        counts.append(len(positions))
        padded = np.zeros([1, module.max_masks], np.int32)
        padded[0, : len(positions)] = positions
        row_inputs = {name: value[row : row + 1] for name, value in inputs.items()}
        row_inputs["masked_lm_positions"] = tf.constant(padded)
        logits = module.model(row_inputs)["masked_lm"]
        logits = logits.numpy()[0]
        row_tokens, row_probabilities = [], []
        for slot in range(module.max_masks):
            if slot >= len(positions):
                row_tokens.append([""] * module.top_k)
                row_probabilities.append([0.0] * module.top_k)
                continue
            slot_probabilities = _softmax(logits[slot])
            top = np.argsort(-slot_probabilities, kind="stable")[: module.top_k]
            row_tokens.append([module.tokenizer.vocabulary[index] for index in top])
            row_probabilities.append(slot_probabilities[top].tolist())
        tokens.append(row_tokens)
        probabilities.append(row_probabilities)
    return tokens, probabilities, counts


@pytest.mark.slow
def test_masked_lm_top_k_matches_keras(served, serving_modules):
    module = serving_modules["masked_lm"]
    for signature, inputs in [
        ("serving_default", module.preprocessor(tf.constant(TEXTS))),
        ("serving_ids", {name: tf.constant(value) for name, value in _ids_inputs().items()}),
    ]:
        outputs = served["masked_lm", signature]
        tokens, probabilities, counts = _reference_fillers(module, inputs)
        assert outputs["num_masks"] == counts
        assert outputs["top_tokens"] == tokens
        np.testing.assert_allclose(outputs["top_probabilities"], probabilities, atol=ATOL)
    assert served["masked_lm", "serving_default"]["num_masks"] == [0, 0, 0, 2, 0]
