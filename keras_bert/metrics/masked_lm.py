"""Masked-LM evaluation that copying cannot hide: accuracy where the input shows `[MASK]`.

Of BERT's predicted positions 10% keep their token, so a model that copies its input scores
about 0.1 without having learnt anything; `accuracy_at_mask` counts only the positions whose
input was replaced by `[MASK]`. Every run is scored the same way, whatever it trained with:
each document's sentences packed as single segments of `seq_length` (documents of one
sentence included), BERT's masking (15%, 80/10/10) under a fixed seed.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf

from keras_bert.data.masking import MaskingConfig
from keras_bert.data.pretraining import PretrainingDataConfig
from keras_bert.data.streaming import StreamingConfig, pretraining_dataset
from keras_bert.data.tokenized_documents import TokenizedDocument
from keras_bert.text.special_tokens import MASK_TOKEN

# BERT's masking rate; the evaluation masks this share of every sequence's real tokens.
EVALUATION_MASKING_RATE = 0.15


def masked_lm_evaluation_dataset(
    documents: Sequence[TokenizedDocument],
    vocabulary: Sequence[str],
    seq_length: int = 128,
    seed: int = 0,
    batch_size: int = 64,
) -> tf.data.Dataset:
    """One pass over `documents`: single-segment sequences masked as BERT masks, seeded.

    Args:
        documents: tokenized documents (see `tokenize_documents`).
        vocabulary: the WordPiece tokens.
        seq_length: packed sequence length.
        seed: the seed of the masks; the same seed gives the same batches.
        batch_size: sequences per batch (the last batch may be smaller).
    """
    config = PretrainingDataConfig(
        seq_length=seq_length,
        next_sentence_prediction=False,
        cross_documents=False,
        short_seq_prob=0.0,
        masking=MaskingConfig(
            masked_lm_prob=EVALUATION_MASKING_RATE,
            max_predictions_per_seq=max(1, round(EVALUATION_MASKING_RATE * seq_length)),
        ),
    )
    # Documents and sequences in order: the same batches whatever TensorFlow's global seed.
    in_order = StreamingConfig(document_shuffle_buffer=1, instance_shuffle_buffer=1)
    return pretraining_dataset(
        documents,
        vocabulary,
        batch_size,
        config,
        seed,
        num_epochs=1,
        drop_remainder=False,
        streaming=in_order,
    )


def masked_lm_of(model: keras.Model) -> keras.Model:
    """The model that predicts a pretraining model's masks: itself (`BertPretrainer`,
    `BertMaskedLM`), or its generator (`ElectraPretrainer`: the discriminator predicts no
    tokens)."""
    return getattr(model, "generator", model)


def evaluate_masked_lm(
    model: keras.Model, dataset: tf.data.Dataset, vocabulary: Sequence[str]
) -> dict[str, float]:
    """Scores a masked LM on batches of pretraining features.

    Args:
        model: takes the encoder inputs plus `masked_lm_positions` and returns
            `{"masked_lm": logits}` (`BertPretrainer`, `BertMaskedLM`).
        dataset: batches of pretraining features (see `masked_lm_evaluation_dataset`).
        vocabulary: the WordPiece tokens (for the `[MASK]` id).

    Returns:
        `accuracy_at_mask` (positions whose input is `[MASK]`), `accuracy` (all predicted
        positions), `loss` (their mean cross-entropy) and `predictions` (how many).

    Example:
    >>> from keras_bert import BertConfig
    >>> from keras_bert.models.pretrainer import BertPretrainer
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(20)]
    >>> documents = [[np.arange(5, 25, dtype="int32")]]
    >>> dataset = masked_lm_evaluation_dataset(documents, vocabulary, seq_length=16)
    >>> model = BertPretrainer(BertConfig.preset("tiny", vocab_size=25))
    >>> scores = evaluate_masked_lm(model, dataset, vocabulary)
    >>> sorted(scores), scores["predictions"]
    (['accuracy', 'accuracy_at_mask', 'loss', 'predictions'], 2)
    """
    mask_id = list(vocabulary).index(MASK_TOKEN)
    correct = correct_at_mask = at_mask = count = 0
    loss_sum = 0.0
    for features in dataset:
        inputs = {
            name: features[name]
            for name in ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")
        }
        logits = np.asarray(model(inputs, training=False)["masked_lm"], np.float32)
        labels = features["masked_lm_ids"].numpy()
        real = features["masked_lm_weights"].numpy() > 0
        shown = np.take_along_axis(
            features["input_word_ids"].numpy(), features["masked_lm_positions"].numpy(), axis=1
        )
        hits = (logits.argmax(-1) == labels) & real
        is_mask = real & (shown == mask_id)
        log_normalizer = logits.max(-1) + np.log(
            np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)
        )
        label_logits = np.take_along_axis(logits, labels[..., None], axis=-1)[..., 0]
        loss_sum += float(((log_normalizer - label_logits) * real).sum())
        correct += int(hits.sum())
        correct_at_mask += int((hits & is_mask).sum())
        at_mask += int(is_mask.sum())
        count += int(real.sum())
    return {
        "accuracy_at_mask": correct_at_mask / max(at_mask, 1),
        "accuracy": correct / max(count, 1),
        "loss": loss_sum / max(count, 1),
        "predictions": count,
    }


def bigram_baseline(
    training_documents: Sequence[TokenizedDocument],
    dataset: tf.data.Dataset,
    vocabulary: Sequence[str],
) -> float:
    """The `accuracy_at_mask` of a guess without a model: each token at `[MASK]` guessed as the
    commonest successor, in `training_documents`, of its true left neighbour (`[CLS]` before a
    document's first token; the commonest token after an unseen one). A masked LM that uses
    context should beat it; one that guesses frequent tokens stays below it.

    Args:
        training_documents: tokenized documents the successor counts come from.
        dataset: the evaluation batches (see `masked_lm_evaluation_dataset`).
        vocabulary: the WordPiece tokens.

    Example:
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]
    >>> documents = [[np.array([5, 6] * 30, "int32")]]
    >>> dataset = masked_lm_evaluation_dataset(documents, vocabulary, seq_length=64)
    >>> bigram_baseline(documents, dataset, vocabulary)
    1.0
    """
    index = {token: position for position, token in enumerate(vocabulary)}
    successors = collections.defaultdict(collections.Counter)
    for document in training_documents:
        ids = [index["[CLS]"], *np.concatenate(document).tolist()]
        for left, token in zip(ids[:-1], ids[1:], strict=True):
            successors[left][token] += 1
    totals = collections.Counter()
    for counts in successors.values():
        totals.update(counts)
    fallback = totals.most_common(1)[0][0]
    guess = {left: counts.most_common(1)[0][0] for left, counts in successors.items()}
    hits = at_mask = 0
    for features in dataset:
        positions = features["masked_lm_positions"].numpy()
        labels = features["masked_lm_ids"].numpy()
        shown = features["input_word_ids"].numpy()
        original = shown.copy()
        np.put_along_axis(original, positions, labels, axis=1)
        lefts = np.take_along_axis(original, np.maximum(positions - 1, 0), axis=1)
        is_mask = (features["masked_lm_weights"].numpy() > 0) & (
            np.take_along_axis(shown, positions, axis=1) == index[MASK_TOKEN]
        )
        for left, label in zip(lefts[is_mask].tolist(), labels[is_mask].tolist(), strict=True):
            hits += guess.get(left, fallback) == label
            at_mask += 1
    return hits / max(at_mask, 1)


class MaskedLMEvaluation(keras.callbacks.Callback):
    """Adds `evaluate_masked_lm`'s scores on held-out features to every epoch's logs, as
    `heldout_accuracy_at_mask`, `heldout_accuracy` and `heldout_loss` (so `CSVLogger` and
    `TensorBoard`, placed after it, record them): of the model's masked LM, or of its
    `generator` (`ElectraPretrainer`'s).

    Args:
        dataset: held-out batches (see `masked_lm_evaluation_dataset`).
        vocabulary: the WordPiece tokens.
    """

    def __init__(self, dataset: tf.data.Dataset, vocabulary: Sequence[str]):
        super().__init__()
        self.dataset = dataset.cache()
        self.vocabulary = list(vocabulary)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is None:
            return
        scores = evaluate_masked_lm(masked_lm_of(self.model), self.dataset, self.vocabulary)
        for name in ("accuracy_at_mask", "accuracy", "loss"):
            logs[f"heldout_{name}"] = scores[name]
