"""The token classifier and the question answerer of each kind of tokenizer: `model.fit` on real
data, export, and raw strings answered in a process with only TensorFlow and tensorflow-text, as
the same model computes them through the Python data pipelines.

What these two heads serve past the encoder is the tokenizer's offsets (entities and answers are
character spans of the text): one family of each tokenizer, byte-level BPE with and without token
types, SentencePiece lowercased, and the unigram model with its normalizer. WordPiece's are the
session's tiny BERT exports (tests/export/test_signatures.py); every family's encoder graph is
tests/export/test_family_export.py's."""

import functools

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.data.squad import build_question_windows, read_squad
from keras_bert.data.token_classification import (
    TaggedSentences,
    encode_tags,
    read_tagged_jsonl,
    tag_names_of,
    token_classification_dataset,
)
from keras_bert.decoding.bio_tags import bio_spans
from keras_bert.export import QuestionAnswererServing, TokenClassifierServing, export_for_serving
from keras_bert.models.token_classifier import IGNORED_LABEL
from tests.export.fresh_process import run_signatures

SEQ_LENGTH = 48
MAX_QUESTION_LENGTH = 16
MAX_ANSWER_LENGTH = 12
MAX_ENTITIES = 16
ENTITY_OUTPUTS = ("entity_labels", "entity_starts", "entity_ends", "entity_texts")
# One family of each tokenizer (the module's docstring).
TOKENIZER_FAMILIES = ("roberta", "modernbert", "albert", "xlm_roberta")


def _fit(model, dataset) -> None:
    keras.utils.set_random_seed(0)
    model.compile(optimizer=keras.optimizers.Adam(1e-4))
    history = model.fit(dataset, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def _call(version, inputs: dict[str, list[str]]) -> dict:
    """A `serving_default` call for `run_signatures`."""
    return {
        "export_dir": version,
        "signature": "serving_default",
        "inputs": inputs,
    }


def _byte_spans(words: list[str]) -> list[tuple[int, int]]:
    """The byte span of each word in the words joined by spaces."""
    starts = np.cumsum([0] + [len(word.encode()) + 1 for word in words])
    return [
        (int(start), int(start) + len(word.encode()))
        for start, word in zip(starts, words, strict=False)
    ]


def _expected_entities(model, preprocessor, sentences, tag_names) -> list[list[tuple]]:
    """(label, char start, char end) of each sentence's entities, from the model's tags at the
    first piece of each word of the training pipeline, the words joined by spaces."""
    tag_ids = [[0] * len(words) for words in sentences.words]
    dataset = token_classification_dataset(sentences, preprocessor, tag_ids, len(sentences))
    inputs, labels = next(iter(dataset))
    predicted = np.argmax(model(inputs), axis=-1)
    entities = []
    for row, words in enumerate(sentences.words):
        first_pieces = np.flatnonzero(labels[row].numpy() != IGNORED_LABEL)
        tags = [tag_names[tag] for tag in predicted[row, first_pieces]]
        starts = np.cumsum([0] + [len(word) + 1 for word in words])
        entities.append(
            [
                (span.label, int(starts[span.start]), int(starts[span.end] - 1))
                for span in bio_spans(tags)
            ]
        )
    return entities


def _token_classifier(checkpoint, preprocessor, data_dir, export_dir):
    """A token classifier fine-tuned on tweets, its export, and served requests with the
    entities that the training pipeline's tags give."""
    sentences = read_tagged_jsonl(data_dir / "ner" / "wnut16.train.jsonl").sample(32)
    tag_names = tag_names_of(sentences)
    model = keras_bert.BertTokenClassifier(
        keras_bert.load_encoder(checkpoint), label_names=tag_names
    )
    tag_ids = encode_tags(sentences, tag_names)
    _fit(model, token_classification_dataset(sentences, preprocessor, tag_ids, 8))
    module = TokenClassifierServing(model, preprocessor, max_entities=MAX_ENTITIES)
    version = export_for_serving(module, export_dir, "token_classifier")

    # Served: sentences whose words are the tokenizer's words (none split, none merged).
    texts = [" ".join(words) for words in sentences.words]
    _, word_starts, word_ends = preprocessor.tokenizer.tokenize_words_with_offsets(
        tf.constant(texts)
    )
    same_words = [
        index
        for index, (words, starts, ends) in enumerate(
            zip(sentences.words, word_starts.to_list(), word_ends.to_list(), strict=True)
        )
        if list(zip(starts, ends, strict=True)) == _byte_spans(words)
    ][:8]
    assert len(same_words) >= 4
    served = TaggedSentences(
        [sentences.words[index] for index in same_words],
        [sentences.tags[index] for index in same_words],
    )
    texts = [" ".join(words) for words in served.words]
    return _call(version, {"text": texts}), (
        texts,
        _expected_entities(model, preprocessor, served, tag_names),
    )


def _expected_answers(model, preprocessor, examples) -> list[tuple[str, int, int]]:
    """(text, char start, char end) of the best span of each question's first window, as the
    Python windows (`build_question_windows`) and a brute-force search give it."""
    windows = build_question_windows(
        examples,
        preprocessor.tokenizer,
        SEQ_LENGTH,
        doc_stride=SEQ_LENGTH,
        max_query_length=MAX_QUESTION_LENGTH,
        packer=preprocessor.packer,
    )
    outputs = model(windows.inputs)
    answers = []
    for index, example in enumerate(examples):
        window = int(np.flatnonzero(windows.example_index == index)[0])
        context = np.flatnonzero(windows.char_starts[window] >= 0)
        p_start = tf.nn.softmax(np.asarray(outputs["start_logits"])[window, context]).numpy()
        p_end = tf.nn.softmax(np.asarray(outputs["end_logits"])[window, context]).numpy()
        scores = np.triu(np.outer(p_start, p_end)) - np.triu(
            np.ones([len(context)] * 2), MAX_ANSWER_LENGTH
        )
        first, last = np.unravel_index(np.argmax(scores), scores.shape)
        start = int(windows.char_starts[window, context[first]])
        end = int(windows.char_ends[window, context[last]])
        answers.append((example.context[start:end], start, end))
    return answers


def _question_answerer(checkpoint, preprocessor, data_dir, export_dir):
    """A question answerer fine-tuned on the SQuAD sample, its export, and the questions with
    the answers that the Python windows give."""
    examples = read_squad(data_dir / "qa" / "squad_v1_sample.json")
    windows = build_question_windows(
        examples,
        preprocessor.tokenizer,
        SEQ_LENGTH,
        doc_stride=12,
        max_query_length=MAX_QUESTION_LENGTH,
        for_training=True,
        packer=preprocessor.packer,
    )
    assert (windows.start_positions > 0).sum() >= len(examples)  # every answer is found
    model = keras_bert.BertQuestionAnswerer(keras_bert.load_encoder(checkpoint))
    _fit(model, windows.dataset(8, shuffle=True))
    module = QuestionAnswererServing(
        model,
        preprocessor,
        max_question_length=MAX_QUESTION_LENGTH,
        max_answer_length=MAX_ANSWER_LENGTH,
    )
    version = export_for_serving(module, export_dir, "question_answerer")
    inputs = {
        "question": [example.question for example in examples],
        "context": [example.context for example in examples],
    }
    return _call(version, inputs), _expected_answers(model, preprocessor, examples)


@pytest.fixture(scope="module")
def served_by_family(reference_dir, data_dir, tmp_path_factory):
    """A family's two tasks fine-tuned, exported and served, once per family (whatever order
    the tests of two families run in)."""

    @functools.cache
    def served(family: str) -> dict:
        checkpoint = reference_dir / "variants" / family
        preprocessor = keras_bert.load_preprocessor(checkpoint, seq_length=SEQ_LENGTH)
        export_dir = tmp_path_factory.mktemp(family.replace("/", "_"))
        tasks = {
            "token_classifier": _token_classifier(checkpoint, preprocessor, data_dir, export_dir),
            "question_answerer": _question_answerer(checkpoint, preprocessor, data_dir, export_dir),
        }
        outputs = run_signatures([call for call, _ in tasks.values()])
        return {
            task: (task_outputs, expected)
            for (task, (_, expected)), task_outputs in zip(tasks.items(), outputs, strict=True)
        }

    return served


@pytest.fixture(params=TOKENIZER_FAMILIES)
def served(request, served_by_family) -> dict:
    """Per task: (what the fresh process served, what the Python pipelines expect)."""
    return served_by_family(request.param)


@pytest.mark.slow
def test_token_classifier_fine_tunes_and_serves_raw_strings(served):
    outputs, (texts, expected) = served["token_classifier"]
    assert sum(map(len, expected)) > 0  # a model a few steps from random tags words
    for row, (text, entities) in enumerate(zip(texts, expected, strict=True)):
        count = outputs["num_entities"][row]
        found = [outputs[name][row][:count] for name in ENTITY_OUTPUTS]
        assert list(zip(*found[:3], strict=True)) == entities[:MAX_ENTITIES], text
        for start, end, entity_text in zip(*found[1:], strict=True):
            assert text[start:end] == entity_text


@pytest.mark.slow
def test_question_answerer_fine_tunes_and_serves_raw_strings(served):
    outputs, expected = served["question_answerer"]
    answers = ("answer_text", "answer_start", "answer_end")
    assert list(zip(*(outputs[name] for name in answers), strict=True)) == expected
