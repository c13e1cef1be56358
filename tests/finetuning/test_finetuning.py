"""End-to-end fine-tuning of the real MiniLM checkpoint on a few batches of real data."""

import dataclasses
import json

import keras
import numpy as np
import pytest

from keras_bert import load_preprocessor
from keras_bert.data.classification import encode_labels, read_classification_file
from keras_bert.data.squad import read_squad
from keras_bert.data.token_classification import (
    TaggedSentences,
    encode_tags,
    read_conll,
    read_tagged_jsonl,
    tagging_windows,
)
from keras_bert.errors import ConfigError, DataError
from keras_bert.finetuning.classification import finetune_classifier
from keras_bert.finetuning.question_answering import finetune_question_answerer
from keras_bert.finetuning.recipe import FinetuningConfig, checkpoint_encoder, find_run_checkpoint
from keras_bert.finetuning.token_classification import (
    finetune_token_classifier,
    predict_tags_in_context,
    tag_log_priors,
)
from keras_bert.metrics import entity_scores
from keras_bert.models import BertClassifier

pytestmark = pytest.mark.slow


def config(checkpoint_dir, tmp_path, **changes):
    settings = {"seq_length": 32, "batch_size": 8, "epochs": 1, "run": {"learning_rate": 1e-4}}
    return FinetuningConfig(str(checkpoint_dir), str(tmp_path), **{**settings, **changes})


def assert_accuracy_is_the_models(model, checkpoint, examples, accuracy, seq_length=32):
    """`accuracy` is the model's on `examples`, recomputed here in one batch (within one
    example: a near tie may flip between batch layouts)."""
    preprocessor = load_preprocessor(checkpoint, seq_length=seq_length)
    predicted = np.argmax(model(preprocessor(examples.texts)), axis=-1)
    labels = [model.label_names.index(label) for label in examples.labels]
    assert abs(accuracy - np.mean(predicted == labels)) <= 1 / len(examples)


def test_sentiment_classifier(minilm_dir, data_dir, tmp_path):
    train = read_classification_file(data_dir / "sentiment" / "movie_snippets.train.jsonl")
    dev = read_classification_file(data_dir / "sentiment" / "movie_snippets.dev.jsonl").sample(48)
    model, summary = finetune_classifier(
        config(minilm_dir, tmp_path, max_train_examples=32), train, dev
    )
    # One pass over the 32 snippets in batches of similar length: 7 batches, not 32 / 8 = 4
    # (each 8-token bucket ends in a smaller batch). Every snippet trained on once.
    assert summary["train_steps"] == 7
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["evaluation"] == summary["evaluation"]
    restored = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(restored, BertClassifier) and restored.label_names == ["neg", "pos"]
    assert restored.compiled
    assert_accuracy_is_the_models(restored, minilm_dir, dev, summary["evaluation"]["accuracy"])


def test_fit_on_strings_trains_step_for_step_as_the_classifier_job(
    tiny_checkpoint_dir, data_dir, tmp_path
):
    train = read_classification_file(data_dir / "sentiment" / "movie_snippets.train.jsonl")
    train = train.sample(40, seed=3)
    dev = read_classification_file(data_dir / "sentiment" / "movie_snippets.dev.jsonl").sample(32)
    job_config = FinetuningConfig(
        str(tiny_checkpoint_dir),
        str(tmp_path),
        seq_length=32,
        batch_size=8,
        run={"seed": 5, "verbose": 0},
    )
    job, summary = finetune_classifier(job_config, train)

    def fit_on_strings(seed: int) -> BertClassifier:
        """The README's path: seeded, from the checkpoint, `fit` uncompiled on the texts."""
        keras.utils.set_random_seed(seed)
        classifier = BertClassifier.from_checkpoint(
            tiny_checkpoint_dir, num_classes=2, label_names=job.label_names, seq_length=32
        )
        labels = encode_labels(train.labels, job.label_names)
        classifier.fit(train.texts, labels, batch_size=8, epochs=2, verbose=0)
        return classifier

    fitted = fit_on_strings(5)
    # The job's steps (2 epochs of every bucket's batches) on the same batches, with the same
    # head, dropout and schedule: the same weights.
    assert int(fitted.optimizer.iterations) == summary["train_steps"] == 2 * 7
    pairs = zip(fitted.trainable_weights, job.trainable_weights, strict=True)
    for fitted_weight, job_weight in pairs:
        np.testing.assert_array_equal(fitted_weight.numpy(), job_weight.numpy())
    fitted_logits = fitted.predict(dev.texts, verbose=0)
    np.testing.assert_array_equal(fitted_logits, job.predict(dev.texts, verbose=0))
    # Seeded otherwise, the batches and draws differ: another model.
    assert np.abs(fit_on_strings(6).predict(dev.texts, verbose=0) - fitted_logits).max() > 1e-3


def test_unseen_evaluation_labels_fail_before_training(tiny_checkpoint_dir, data_dir, tmp_path):
    train = read_classification_file(data_dir / "sentiment" / "movie_snippets.train.jsonl")
    dev = read_classification_file(data_dir / "sentiment" / "movie_snippets.dev.jsonl")
    dev.labels[0] = "neutral"
    with pytest.raises(DataError, match="'neutral'"):
        finetune_classifier(config(tiny_checkpoint_dir, tmp_path), train, dev)
    assert not (tmp_path / "model.keras").exists()
    # Training labels of one class made a one-output model: a regressor, trained to a constant.
    positive = dataclasses.replace(train, labels=["pos"] * len(train))
    with pytest.raises(DataError, match=r"labels hold one class \('pos'\): a classifier needs"):
        finetune_classifier(config(tiny_checkpoint_dir, tmp_path), positive)
    assert not (tmp_path / "config.json").exists()


def test_embedding_rms_rescales_the_tables_not_the_encoders_outputs(tiny_checkpoint_dir, tmp_path):
    inputs = {
        "input_word_ids": np.array([[101, 2023, 3185, 2001, 102, 0]]),
        "input_mask": np.array([[1, 1, 1, 1, 1, 0]]),
        "input_type_ids": np.zeros((1, 6), "int32"),
    }
    outputs = {}
    for rms in (None, 0.01):
        run = config(tiny_checkpoint_dir, tmp_path, embedding_rms=rms)
        encoder = checkpoint_encoder(run, find_run_checkpoint(run))
        table = encoder.embeddings.token_embedding.embeddings.numpy()
        outputs[rms] = encoder(inputs)["sequence_output"].numpy()
    assert np.sqrt(np.mean(table**2)) == pytest.approx(0.01, rel=1e-5)
    np.testing.assert_allclose(outputs[0.01], outputs[None], atol=1e-4)
    with pytest.raises(ConfigError, match="embedding_rms must be positive"):
        config(tiny_checkpoint_dir, tmp_path, embedding_rms=0.0)


def test_killed_run_resumes_from_its_last_epoch(tiny_checkpoint_dir, data_dir, tmp_path):
    train = read_classification_file(data_dir / "sentiment" / "movie_snippets.train.jsonl")
    settings = config(
        tiny_checkpoint_dir,
        tmp_path,
        max_train_examples=16,
        epochs=3,
        run={"learning_rate": 1e-4, "backup_interval_seconds": 0},
    )

    class Interrupt(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 2:
                raise KeyboardInterrupt

    original_fit = keras.Model.fit

    def interrupted_fit(self, *args, callbacks=(), **kwargs):
        return original_fit(self, *args, callbacks=[*callbacks, Interrupt()], **kwargs)

    keras.Model.fit = interrupted_fit
    try:
        with pytest.raises(KeyboardInterrupt):
            finetune_classifier(settings, train)
    finally:
        keras.Model.fit = original_fit
    # Resumed at another learning rate, it would train on as a mix of two runs: refused, and
    # the run's record kept. Where and how it runs may change.
    recorded = (tmp_path / "config.json").read_text()
    faster = dataclasses.replace(
        settings, run=dataclasses.replace(settings.run, learning_rate=2e-4)
    )
    with pytest.raises(ConfigError, match=r"backed up after epoch 2 .*run.learning_rate: 0.0001"):
        finetune_classifier(faster, train)
    with pytest.raises(ConfigError, match=r"train_examples: 16 → 12"):
        finetune_classifier(settings, train.sample(12))  # other training data
    assert (tmp_path / "config.json").read_text() == recorded
    settings = dataclasses.replace(settings, run=dataclasses.replace(settings.run, verbose=0))
    _, summary = finetune_classifier(settings, train)
    # Epochs 1 and 2 were done before the interruption; only epoch 3 runs again.
    assert len(summary["history"]["loss"]) == 1
    assert summary["resumed_after_epoch"] == 2


def test_ner_tagger(tiny_checkpoint_dir, data_dir, tmp_path):
    train = read_tagged_jsonl(data_dir / "ner" / "wnut16.train.jsonl")
    model, summary = finetune_token_classifier(
        config(tiny_checkpoint_dir, tmp_path, seq_length=48, epochs=0.02), train, train.sample(16)
    )
    scores = summary["evaluation"]
    assert set(scores) == {"precision", "recall", "f1", "accuracy", "per_type"}
    # The head started at the tags' log frequencies; two steps at 1e-4 barely move it.
    priors = tag_log_priors(encode_tags(train, model.label_names), len(model.label_names))
    bias = model.get_layer("token_logits").bias.numpy()
    np.testing.assert_allclose(bias, priors, atol=1e-3)
    assert bias.argmax() == model.label_names.index("O") and bias.max() > -0.2


def test_ner_tagger_reads_sentences_in_their_documents(tiny_checkpoint_dir, data_dir, tmp_path):
    conll = read_conll(data_dir / "benchmarks" / "conll2003" / "eng.testa")
    documents = TaggedSentences(conll.words[:120], conll.tags[:120], conll.documents[:120])
    settings = config(
        tiny_checkpoint_dir, tmp_path, seq_length=64, max_train_examples=60, document_context=True
    )
    model, summary = finetune_token_classifier(settings, documents, documents)
    # 60 drawn sentences trained inside their documents: fewer windows than sentences.
    windows = tagging_windows(
        documents, model.preprocessor, scored=documents.drawn_flags(60, settings.run.seed)
    )
    assert summary["train_steps"] == -(-len(windows) // settings.batch_size) < 60 / 8
    # The scores are the model's tags read in context.
    in_context = predict_tags_in_context(model, model.preprocessor, documents)
    assert summary["evaluation"] == entity_scores(documents.tags, in_context)


def test_question_answering(tiny_checkpoint_dir, data_dir, tmp_path):
    examples = read_squad(data_dir / "qa" / "squad_v1_sample.json")
    _, summary = finetune_question_answerer(
        config(tiny_checkpoint_dir, tmp_path, seq_length=96, epochs=1),
        examples,
        examples,
        doc_stride=48,
        max_query_length=24,
    )
    assert summary["evaluation"]["count"] == 5


@pytest.mark.parametrize("family", ["roberta", "albert", "deberta_v3", "electra/discriminator"])
def test_family_checkpoints_fine_tune_through_the_recipes(
    family, reference_dir, data_dir, tmp_path
):
    """The recipes (and so the pipelines) take the family's tokenizer, packing and encoder."""
    checkpoint = reference_dir / "variants" / family
    sentiment = data_dir / "sentiment" / "movie_snippets.train.jsonl"
    train = read_classification_file(sentiment).sample(16)
    model, summary = finetune_classifier(config(checkpoint, tmp_path / "classifier"), train, train)
    assert_accuracy_is_the_models(model, checkpoint, train, summary["evaluation"]["accuracy"])
    tweets = read_tagged_jsonl(data_dir / "ner" / "wnut16.train.jsonl").sample(16)
    _, summary = finetune_token_classifier(config(checkpoint, tmp_path / "ner"), tweets, tweets)
    assert set(summary["evaluation"]) == {"precision", "recall", "f1", "accuracy", "per_type"}
    examples = read_squad(data_dir / "qa" / "squad_v1_sample.json")
    _, summary = finetune_question_answerer(
        config(checkpoint, tmp_path / "qa", seq_length=64),
        examples,
        examples,
        doc_stride=48,
        max_query_length=24,
    )
    assert summary["evaluation"]["count"] == 5
    # RoBERTa's 66 positions hold 64 tokens (its positions start after the padding id).
    if family == "roberta":
        with pytest.raises(ConfigError, match="longer than the 64 tokens"):
            finetune_classifier(config(checkpoint, tmp_path / "long", seq_length=96), train)


@pytest.mark.parametrize("family, positions", [("roberta", 64), ("modernbert", 1024)])
def test_a_seq_length_past_the_positions_is_refused(family, positions, reference_dir, tmp_path):
    checkpoint = str(reference_dir / "variants" / family)
    too_long = FinetuningConfig(checkpoint, str(tmp_path), seq_length=positions + 1)
    with pytest.raises(ConfigError, match=f"longer than the {positions} tokens"):
        checkpoint_encoder(too_long, find_run_checkpoint(too_long))
    config = FinetuningConfig(checkpoint, str(tmp_path), seq_length=positions)
    assert checkpoint_encoder(config, find_run_checkpoint(config)).bert_config.model_type == family
