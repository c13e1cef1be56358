"""Fine-tuning a token classifier (NER) and scoring its entities as CoNLL does."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_bert.data.token_classification import (
    TaggedSentences,
    encode_tags,
    tag_names_of,
    token_classification_dataset,
)
from keras_bert.finetuning.recipe import (
    FinetuningConfig,
    checkpoint_preprocessor,
    fit_task_model,
    save_run,
)
from keras_bert.metrics import entity_scores
from keras_bert.models import BertTokenClassifier
from keras_bert.models.token_classifier import IGNORED_LABEL


def _labelled_words(preprocessor, sentences: TaggedSentences) -> list[np.ndarray]:
    """Per sentence, which words carry a label: those with pieces that fit in the sequence."""
    # Each word tokenized as the training data tokenizes it (RoBERTa: with a leading space
    # after the first word).
    pieces = preprocessor.tokenizer.tokenize_split_words(
        tf.ragged.constant(sentences.words, dtype=tf.string)
    )
    budget = preprocessor.seq_length - 2
    labelled = []
    for counts in pieces.row_lengths(axis=2):
        counts = np.asarray(counts)
        first_piece = np.cumsum(counts) - counts
        labelled.append((counts > 0) & (first_piece < budget))
    return labelled


def predict_tags(
    model: BertTokenClassifier, preprocessor, sentences: TaggedSentences, batch_size: int = 64
) -> list[list[str]]:
    """A tag for every word; words without a piece inside the sequence get "O"."""
    # Any valid tag works as a placeholder: only the positions of first pieces are used.
    placeholder_ids = [[0] * len(words) for words in sentences.words]
    dataset = token_classification_dataset(sentences, preprocessor, placeholder_ids, batch_size)
    predicted_ids = []
    for inputs, labels in dataset:
        logits = np.asarray(model(inputs))
        labels = np.asarray(labels)
        for sentence_logits, sentence_labels in zip(logits, labels, strict=True):
            first_pieces = sentence_labels != IGNORED_LABEL
            predicted_ids.append(sentence_logits[first_pieces].argmax(-1))
    tags = []
    for labelled, word_ids in zip(
        _labelled_words(preprocessor, sentences), predicted_ids, strict=True
    ):
        sentence_tags = np.full(len(labelled), "O", dtype=object)
        sentence_tags[labelled] = [model.label_names[index] for index in word_ids]
        tags.append(sentence_tags.tolist())
    return tags


def evaluate_token_classifier(model, preprocessor, sentences: TaggedSentences) -> dict:
    """Entity-level precision, recall and F1 (exact type and span), overall and per type."""
    return entity_scores(sentences.tags, predict_tags(model, preprocessor, sentences))


def finetune_token_classifier(
    config: FinetuningConfig,
    train: TaggedSentences,
    evaluation: TaggedSentences | None = None,
    tag_names: list[str] | None = None,
) -> tuple[BertTokenClassifier, dict]:
    """Fine-tunes the checkpoint of `config` for tagging, evaluates entity F1, saves the model.

    Writes `<output_dir>/model.keras` and `<output_dir>/metrics.json`. Tags come from
    `tag_names` or from the training data ("O" first); evaluation tags outside them raise.
    """
    if config.max_train_examples:
        train = train.sample(config.max_train_examples, seed=config.seed)
    tag_names = tag_names or tag_names_of(train)
    if evaluation is not None:
        encode_tags(evaluation, tag_names)  # fail before training, not after
    preprocessor = checkpoint_preprocessor(config)
    train_dataset = token_classification_dataset(
        train,
        preprocessor,
        encode_tags(train, tag_names),
        config.batch_size,
        shuffle=True,
        seed=config.seed,
    )

    def build(encoder):
        return BertTokenClassifier(encoder, tag_names, dropout_rate=config.dropout_rate)

    model, summary = fit_task_model(build, config, train_dataset, len(train))
    if evaluation is not None:
        summary["evaluation"] = evaluate_token_classifier(model, preprocessor, evaluation)
    save_run(model, summary, config)
    return model, summary
