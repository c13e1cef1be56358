"""Fine-tuning a token classifier (NER) and scoring its entities as CoNLL does."""

from __future__ import annotations

import logging

import numpy as np

from keras_bert.data.document_windows import windows_tags
from keras_bert.data.token_classification import (
    TaggedSentences,
    encode_tags,
    tag_names_of,
    tagging_windows,
    token_classification_dataset,
    unknown_tags,
    windows_dataset,
)
from keras_bert.finetuning.recipe import (
    FinetuningConfig,
    find_run_checkpoint,
    fit_task_model,
    save_run,
)
from keras_bert.metrics import entity_scores
from keras_bert.models import BertTokenClassifier
from keras_bert.models.token_classifier import IGNORED_LABEL, word_tags
from keras_bert.text.checkpoint_preprocessors import checkpoint_preprocessor

logger = logging.getLogger(__name__)


def predict_tags_in_context(
    model: BertTokenClassifier, preprocessor, sentences: TaggedSentences, batch_size: int = 64
) -> list[list[str]]:
    """A tag for every word (`word_tags`), each sentence read inside its document
    (`tagging_windows`)."""
    windows = tagging_windows(sentences, preprocessor)
    dataset = windows_dataset(windows, preprocessor.packer.pad_id, batch_size)
    predicted_ids = []
    for inputs, labels in dataset:
        logits = model.predict_on_batch(inputs)
        for window_logits, window_labels in zip(logits, np.asarray(labels), strict=True):
            predicted_ids.append(window_logits[window_labels != IGNORED_LABEL].argmax(-1))
    lengths = [len(words) for words in sentences.words]
    return windows_tags(windows, predicted_ids, lengths, model.label_names)


def uses_document_context(config: FinetuningConfig, sentences: TaggedSentences) -> bool:
    return config.document_context and sentences.documents is not None


def evaluate_token_classifier(
    model, preprocessor, sentences: TaggedSentences, document_context: bool = False
) -> dict:
    """Entity-level precision, recall and F1 (exact type and span), overall and per type;
    with `document_context`, each sentence tagged inside its document."""
    tags = (
        predict_tags_in_context(model, preprocessor, sentences)
        if document_context
        else word_tags(model, preprocessor, sentences.words)
    )
    return entity_scores(sentences.tags, tags)


def tag_log_priors(tag_ids: list[list[int]], num_tags: int) -> np.ndarray:
    """The log of each tag's share of the training words (add-one smoothed).

    Example:
    >>> np.exp(tag_log_priors([[0, 0, 1], [0]], num_tags=3)).round(3).tolist()
    [0.571, 0.286, 0.143]
    """
    counts = np.bincount(np.concatenate(tag_ids), minlength=num_tags) + 1.0
    return np.log(counts / counts.sum())


def finetune_token_classifier(
    config: FinetuningConfig,
    train: TaggedSentences,
    evaluation: TaggedSentences | None = None,
    tag_names: list[str] | None = None,
) -> tuple[BertTokenClassifier, dict]:
    """Fine-tunes the checkpoint of `config` for tagging, evaluates entity F1, saves the model.

    Writes `<output_dir>/model.keras` (carrying its preprocessor) and
    `<output_dir>/metrics.json`. Tags come from
    `tag_names` or from the training data (`tag_names_of`); evaluation tags outside them are
    scored as entities the model cannot find, with a warning that names them. Where the data
    marks documents and `config.document_context` is on, each sentence is trained on and
    tagged inside its document (`tagging_windows`); a sample drawn by `max_train_examples`
    then keeps the rest of its documents as context.
    """
    in_context = uses_document_context(config, train)
    scored = None
    if config.max_train_examples and in_context:
        scored = train.drawn_flags(config.max_train_examples, seed=config.run.seed)
    elif config.max_train_examples:
        train = train.sample(config.max_train_examples, seed=config.run.seed)
    tag_names = tag_names or tag_names_of(train)
    if evaluation is not None and (unseen := unknown_tags(evaluation, tag_names)):
        # Scored as they are: the entities they mark count as missed (as conlleval counts them).
        logger.warning(
            "Evaluation tags not in training, scored as entities the model cannot find: %s.",
            ", ".join(f"{tag} ({count} words)" for tag, count in sorted(unseen.items())),
        )
    checkpoint = find_run_checkpoint(config)
    preprocessor = checkpoint_preprocessor(checkpoint, config.seq_length)
    train_tag_ids = encode_tags(train, tag_names)
    if in_context:
        windows = tagging_windows(train, preprocessor, train_tag_ids, scored)
        num_examples = len(windows)
        train_dataset = windows_dataset(
            windows, preprocessor.packer.pad_id, config.batch_size, True, config.run.seed
        )
    else:
        num_examples = len(train)
        train_dataset = token_classification_dataset(
            train,
            preprocessor,
            train_tag_ids,
            config.batch_size,
            shuffle=True,
            seed=config.run.seed,
            length_bucketing=config.length_bucketing,
        )

    def build(encoder):
        model = BertTokenClassifier(
            encoder, tag_names, dropout_rate=config.dropout_rate, preprocessor=preprocessor
        )
        # The head starts predicting the tags' frequencies ("O" for nine words in ten): at
        # BERT's rates its bias would take thousands of steps to learn them, and the encoder
        # would spend its first steps pushing every word towards "O" instead.
        head = model.get_layer("token_logits")
        head.bias.assign(tag_log_priors(train_tag_ids, len(tag_names)).astype("float32"))
        return model

    model, summary = fit_task_model(build, config, train_dataset, num_examples, checkpoint)
    if in_context:
        # A window holds several sentences: speed counts the sentences trained, as without.
        sentences = sum(scored) if scored is not None else len(train)
        summary["sequences_per_second"] = round(
            summary["sequences_per_second"] * sentences / num_examples, 2
        )
    if evaluation is not None:
        summary["evaluation"] = evaluate_token_classifier(
            model, preprocessor, evaluation, uses_document_context(config, evaluation)
        )
    save_run(model, summary, config)
    return model, summary
