"""Task models that carry their preprocessor: raw text in `fit`, `evaluate`, `predict`, in a
`.keras` round trip, under `MirroredStrategy`, and decoded answers (entities, spans, masks).

On the family's tiny DistilBERT checkpoint (hidden 64, 2 layers, with its masked-LM head)."""

from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data.classification import ClassificationExamples, packed_lengths
from keras_bert.data.token_classification import IGNORED_LABEL
from keras_bert.errors import ConfigError, DataError
from keras_bert.export import serving_module
from keras_bert.finetuning.classification import predict_classifier
from keras_bert.models import (
    BertClassifier,
    BertMaskedLM,
    BertQuestionAnswerer,
    BertTokenClassifier,
)
from keras_bert.training.optimization import WarmupLinearDecay

# Slow: every test compiles Keras train or predict functions (or traces a serving graph with
# the tokenizer) for a checkpoint's model; together about a minute on two cores.
pytestmark = pytest.mark.slow

CHECKPOINT = Path(__file__).resolve().parents[2] / ".." / "shared/reference/variants/distilbert"
SEQ_LENGTH = 16
TEXTS = ["A wonderful, moving film.", "Dull and far too long.", "Great fun.", "Awful."] * 2
LABELS = np.array([1, 0, 1, 0] * 2)


@pytest.fixture(scope="module")
def trained_classifier() -> tuple[BertClassifier, dict]:
    """A classifier from the checkpoint, fitted on strings without compiling first."""
    keras.utils.set_random_seed(0)
    classifier = BertClassifier.from_checkpoint(CHECKPOINT, num_classes=2, seq_length=SEQ_LENGTH)
    initial_logits = classifier.predict(TEXTS, verbose=0)
    history = classifier.fit(
        TEXTS, LABELS, batch_size=3, epochs=2, validation_data=(TEXTS[:4], LABELS[:4]), verbose=0
    )
    return classifier, {"history": history.history, "initial_logits": initial_logits}


def test_fit_on_strings_compiles_with_the_recipe_and_trains(trained_classifier):
    classifier, fitted = trained_classifier
    assert len(fitted["history"]["loss"]) == len(fitted["history"]["val_accuracy"]) == 2
    schedule = classifier.optimizer.get_config()["learning_rate"]
    assert schedule["class_name"] == WarmupLinearDecay.__name__
    # Batches by length, as the classifier job's: 4 texts of 9-10 tokens and 4 of 5 make two
    # buckets of 2 batches of 3 (or fewer), 4 batches an epoch (random batches: 3).
    lengths = packed_lengths(ClassificationExamples(TEXTS, None), classifier.preprocessor)
    assert sorted(lengths.tolist()) == [5, 5, 5, 5, 9, 9, 10, 10]
    assert schedule["config"]["total_steps"] == 8  # 2 epochs
    assert int(classifier.optimizer.iterations) == 8
    assert float(classifier.optimizer.learning_rate) == 0.0  # decayed to 0 at the end
    assert not np.allclose(classifier.predict(TEXTS, verbose=0), fitted["initial_logits"])


def test_predict_and_evaluate_on_strings_equal_the_same_on_ids(trained_classifier):
    classifier, _ = trained_classifier
    ids = classifier.preprocessor(TEXTS)
    np.testing.assert_allclose(
        classifier.predict(TEXTS, verbose=0), classifier(ids), rtol=1e-5, atol=1e-6
    )
    on_text = classifier.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)
    on_ids = classifier.evaluate(ids, LABELS, verbose=0, return_dict=True)
    assert on_text == pytest.approx(on_ids, rel=1e-5)


def test_pairs_are_packed_as_two_segments(trained_classifier):
    classifier, _ = trained_classifier
    premises, hypotheses = ["It rained all day."] * 2, ["The ground is wet.", "It was sunny."]
    pair_logits = classifier.predict((premises, hypotheses), verbose=0)
    expected = classifier(classifier.preprocessor((premises, hypotheses)))
    np.testing.assert_allclose(pair_logits, expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(pair_logits, classifier.predict(premises, verbose=0))


def test_a_dataset_of_strings_and_one_of_ids(trained_classifier):
    classifier, _ = trained_classifier
    texts = tf.data.Dataset.from_tensor_slices(TEXTS).batch(3)
    ids = tf.data.Dataset.from_tensor_slices(dict(classifier.preprocessor(TEXTS))).batch(3)
    np.testing.assert_allclose(
        classifier.predict(texts, verbose=0),
        classifier.predict(ids, verbose=0),
        rtol=1e-5,
        atol=1e-6,
    )


def test_keras_round_trip_answers_the_same_strings(trained_classifier, tmp_path):
    classifier, _ = trained_classifier
    classifier.save(tmp_path / "sentiment.keras")
    reloaded = keras.saving.load_model(tmp_path / "sentiment.keras")
    assert type(reloaded.preprocessor) is type(classifier.preprocessor)
    assert reloaded.preprocessor.seq_length == SEQ_LENGTH
    np.testing.assert_allclose(
        reloaded.predict(TEXTS, verbose=0), classifier.predict(TEXTS, verbose=0), atol=1e-6
    )


def test_the_export_takes_the_carried_preprocessor(trained_classifier):
    classifier, _ = trained_classifier
    module = serving_module(classifier)
    assert module.preprocessor is classifier.preprocessor
    outputs = module.serve_text(tf.constant(TEXTS[:2]))
    np.testing.assert_allclose(
        outputs["logits"], classifier.predict(TEXTS[:2], verbose=0), rtol=1e-5, atol=1e-6
    )


def test_predicting_1000_sentences_runs_one_compiled_function(trained_classifier):
    classifier, _ = trained_classifier
    examples = ClassificationExamples(
        texts=[
            f"Sentence number {index}, {'good' if index % 2 else 'bad'}." for index in range(1000)
        ],
        labels=["0"] * 1000,
    )
    classifier.predict_function = None  # trace afresh
    logits = predict_classifier(classifier, classifier.preprocessor, examples)
    assert logits.shape == (1000, 2)
    # 16 batches of 64 (the last of 40), each padded to its longest sentence: one trace for any
    # batch size and width (Keras alone traces the first shape, then relaxes the width, then
    # the batch size: 3), where calling the model per batch ran all 16 eagerly, op by op.
    assert classifier.predict_function.experimental_get_tracing_count() == 1
    # A second `predict` reuses it.
    predict_classifier(classifier, classifier.preprocessor, examples)
    assert classifier.predict_function.experimental_get_tracing_count() == 1


def test_text_without_a_preprocessor_is_an_error_naming_it():
    classifier = BertClassifier.from_checkpoint(CHECKPOINT, num_classes=2, seq_length=SEQ_LENGTH)
    classifier.preprocessor = None
    with pytest.raises(ConfigError, match="carries no preprocessor"):
        classifier.predict(["A film."], verbose=0)


def test_labels_as_class_names_are_their_ids():
    classifier = BertClassifier.from_checkpoint(
        CHECKPOINT, num_classes=2, label_names=["neg", "pos"], seq_length=SEQ_LENGTH
    )
    classifier.compile()
    names = np.array(["neg", "pos"])[LABELS]
    on_names = classifier.evaluate(TEXTS, names, verbose=0, return_dict=True)
    assert on_names == classifier.evaluate(TEXTS, LABELS, verbose=0, return_dict=True)
    with pytest.raises(DataError, match="Labels not seen in training: 'great'"):
        classifier.fit(TEXTS[:2], ["pos", "great"], verbose=0)


@pytest.mark.parametrize(
    ("texts", "labels", "message"),
    [
        ("A film.", None, r"One text \('A film.'\) where a list of texts goes"),
        ([], None, "No texts"),
        (["A film.", None], None, "Text 1 is None"),
        ([3, 4], None, r"Text 0 is 3 \(int\)"),
        ((["a", "b"], ["c"]), None, "differ in length: 2 texts and 1"),
        (np.array([["a"], ["b"]]), None, r"shape is \(2, 1\)"),
        (TEXTS[:2], ["pos", "neg"], "no label_names"),
        (TEXTS[:2], [0, 2], "Class id 2 is not one of this classifier's 2 classes"),
        # Before: scores trained silently as their whole parts; one-hot rows failed in Keras' loss.
        (TEXTS[:2], [0.5, 1.0], "Label 0.5 is not a class id.*build a regressor"),
        (TEXTS[:2], np.eye(2), r"rows of 2 values \(one-hot or probabilities\).*np.argmax"),
    ],
)
def test_texts_or_labels_no_task_reads_are_one_line_errors(
    trained_classifier, texts, labels, message
):
    classifier, _ = trained_classifier
    with pytest.raises(DataError, match=message):
        if labels is None:
            classifier.predict(texts, verbose=0)
        else:
            classifier.fit(texts, labels, verbose=0)


def test_decoding_helpers_check_their_texts_and_answer_no_texts_with_none():
    reader = BertQuestionAnswerer.from_checkpoint(CHECKPOINT, seq_length=32)
    assert reader.answer([], []) == []
    with pytest.raises(DataError, match="One text"):
        reader.answer("Who?", "Ada wrote it.")
    with pytest.raises(DataError, match="differ in length"):
        reader.answer(["Who?", "Where?"], ["Ada wrote it."])
    tagger = BertTokenClassifier.from_checkpoint(
        CHECKPOINT, label_names=["O", "B-place", "I-place"], seq_length=SEQ_LENGTH
    )
    assert tagger.predict_entities([]) == []
    with pytest.raises(DataError, match="One text"):
        tagger.predict_entities("Paris")  # not one entity a character
    with pytest.raises(DataError, match=rf"one per packed token, \[texts, {SEQ_LENGTH}\]"):
        tagger.fit(["Paris is big"], [[1, 0, 0]])  # a tag a word


def test_a_tf_data_pipeline_of_strings_fits_under_mirrored_strategy():
    strategy = tf.distribute.MirroredStrategy(["CPU:0"])
    with strategy.scope():
        classifier = BertClassifier.from_checkpoint(
            CHECKPOINT, num_classes=2, seq_length=SEQ_LENGTH
        )
    dataset = tf.data.Dataset.from_tensor_slices((TEXTS, LABELS)).shuffle(8, seed=0).batch(4)
    history = classifier.fit(dataset, epochs=1, verbose=0)
    assert classifier.distribute_strategy is strategy
    assert int(classifier.optimizer.iterations.numpy()) == 2
    assert np.isfinite(history.history["loss"][0])


def test_token_classifier_returns_entities_with_character_offsets():
    keras.utils.set_random_seed(0)
    tagger = BertTokenClassifier.from_checkpoint(
        CHECKPOINT, label_names=["O", "B-place", "I-place"], seq_length=SEQ_LENGTH
    )
    # A head that tags every word B-place: each word is an entity of its own.
    head = tagger.get_layer("token_logits")
    head.kernel.assign(np.zeros(head.kernel.shape, "float32"))
    head.bias.assign(np.array([0.0, 5.0, 0.0], "float32"))
    texts = ["Zürich and Paris.", "north"]
    entities = tagger.predict_entities(texts)
    assert [[entity["text"] for entity in row] for row in entities] == [
        ["Zürich", "and", "Paris", "."],
        ["north"],
    ]
    for text, row in zip(texts, entities, strict=True):
        for entity in row:
            assert text[entity["start"] : entity["end"]] == entity["text"]
            assert entity["label"] == "place"
            assert entity["score"] == pytest.approx(np.exp(5) / (np.exp(5) + 2), rel=1e-4)


def test_token_classifier_fits_words_and_their_tags_as_the_ner_job_batches_them():
    keras.utils.set_random_seed(0)
    tagger = BertTokenClassifier.from_checkpoint(
        CHECKPOINT, label_names=["O", "B-place", "I-place"], seq_length=SEQ_LENGTH
    )
    words = [["Zürich", "is", "big"], ["New", "York", "too"], ["north"]] * 2
    tags = [["B-place", "O", "O"], ["B-place", "I-place", "O"], ["O"]] * 2
    history = tagger.fit(
        words, tags, batch_size=2, epochs=2, validation_data=(words, tags), verbose=0
    )
    assert int(tagger.optimizer.iterations) == 6  # 3 length groups, 2 epochs
    assert np.all(np.isfinite(history.history["val_loss"]))
    ids = [[["O", "B-place", "I-place"].index(tag) for tag in row] for row in tags]
    on_names = tagger.evaluate(words, tags, verbose=0, return_dict=True)
    assert on_names == tagger.evaluate(words, ids, verbose=0, return_dict=True)
    inputs, labels = next(iter(tagger.tagged_batches(words[1:2], tags[1:2])))
    assert labels.numpy().tolist()[0][:4] == [IGNORED_LABEL, 1, 2, 0]  # [CLS], first pieces
    with pytest.raises(DataError, match="Sentence 0 has 3 words and 2 tags"):
        tagger.fit([["a", "b", "c"]], [["O", "O"]])
    with pytest.raises(DataError, match="a pair \\(words, tags\\), without sample weights"):
        tagger.fit(words, tags, validation_data=(words, tags, np.ones(len(words))))
    with pytest.raises(DataError, match="Tags not seen in training: 'B-person'"):
        tagger.evaluate([["Ada"]], [["B-person"]])
    # A tag a word back: the logits of the sentence's text at each word's first piece (here
    # each word is one piece, at positions 1-3).
    logits = tagger.predict(["New York too"], verbose=0)[0]
    expected = [tagger.label_names[index] for index in logits[1:4].argmax(-1)]
    assert tagger.predict_tags([["New", "York", "too"], ["north"]])[0] == expected
    assert tagger.predict_tags([]) == []
    with pytest.raises(DataError, match="for a tag a word .* call predict_tags"):
        tagger.predict(words)
    with pytest.raises(DataError, match="One text .* predict_entities takes texts"):
        tagger.predict_tags("New York too")


def test_predicting_batches_of_other_sizes_and_widths_traces_once():
    tagger = BertTokenClassifier.from_checkpoint(
        CHECKPOINT, label_names=["O", "B-place", "I-place"], seq_length=SEQ_LENGTH
    )
    for batch_size, width in [(4, 7), (4, 12), (3, 5)]:
        ids = {
            "input_word_ids": np.full((batch_size, width), 1000, "int32"),
            "input_mask": np.ones((batch_size, width), "int32"),
            "input_type_ids": np.zeros((batch_size, width), "int32"),
        }
        assert tagger.predict_on_batch(ids).shape == (batch_size, width, 3)
    assert tagger.predict_function.experimental_get_tracing_count() == 1


def test_question_answerer_returns_the_answer_text_and_its_span():
    keras.utils.set_random_seed(0)
    reader = BertQuestionAnswerer.from_checkpoint(CHECKPOINT, seq_length=32)
    questions, contexts = ["Where?", "Who?"], ["It is in Paris today.", "Ada Lovelace wrote it."]
    answers = reader.answer(questions, contexts)
    for context, answer in zip(contexts, answers, strict=True):
        assert answer["text"] and context[answer["start"] : answer["end"]] == answer["text"]
        assert 0 < answer["score"] <= 1
    logits = reader.predict((questions, contexts), verbose=0)
    assert logits["start_logits"].shape == (2, 32)


def test_masked_lm_fills_the_mask_of_a_string():
    model = BertMaskedLM.from_checkpoint(CHECKPOINT, seq_length=SEQ_LENGTH)
    fillers = model.fill_mask(["the [MASK] sat on the [MASK].", "no mask"], top_k=3)
    assert [len(masks) for masks in fillers] == [2, 0]
    ids = model.preprocessor(["the [MASK] sat on the [MASK]."])
    mask_positions = np.flatnonzero(ids["input_word_ids"][0] == 4)  # [MASK] is id 4
    positions = tf.constant(mask_positions[np.newaxis], tf.int32)
    logits = model({**ids, "masked_lm_positions": positions})["masked_lm"][0]
    vocabulary = model.preprocessor.tokenizer.vocabulary
    for mask, top in enumerate(fillers[0]):
        expected = np.argsort(-np.asarray(logits[mask]))[:3]
        assert [token for token, _ in top] == [vocabulary[index] for index in expected]
        probabilities = [probability for _, probability in top]
        assert probabilities == sorted(probabilities, reverse=True)


def test_masked_lm_fits_and_evaluates_on_strings_masked_in_the_input_pipeline():
    keras.utils.set_random_seed(0)
    model = BertMaskedLM.from_checkpoint(CHECKPOINT, seq_length=SEQ_LENGTH)
    before = [np.array(weight) for weight in model.encoder.trainable_weights]
    history = model.fit(TEXTS, batch_size=4, epochs=2, verbose=0)
    assert int(model.optimizer.iterations) == 4  # 2 epochs of 8 texts in batches of 4
    assert np.all(np.isfinite(history.history["loss"]))
    assert not all(
        np.allclose(old, new)
        for old, new in zip(before, model.encoder.trainable_weights, strict=True)
    )
    dataset = tf.data.Dataset.from_tensor_slices(TEXTS).batch(4)
    results = model.evaluate(dataset, verbose=0, return_dict=True)
    assert set(results) == {"loss", "accuracy"} and 0.0 <= results["accuracy"] <= 1.0
    # Masks are drawn anew on each pass: the same texts give another loss.
    assert results["loss"] != model.evaluate(dataset, verbose=0, return_dict=True)["loss"]
    with pytest.raises(ConfigError, match="fill_mask"):
        model.predict(TEXTS, verbose=0)
    assert model.fill_mask([]) == []
