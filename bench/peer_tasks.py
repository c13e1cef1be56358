"""The field's benchmarks as Hugging Face's example scripts run them, on keras_bert's readers.

transformers 5.23's `examples/pytorch/text-classification/run_glue.py`,
`token-classification/run_ner.py` and `question-answering/run_qa.py` (+ `utils_qa.py`), with
their README's settings and `Trainer`'s defaults (`bench.peer_trainer`): the model from the
local checkpoint directory (`Auto*.from_pretrained`, offline), the fast tokenizer, the same
features and post-processing. The examples come from keras_bert's readers and the predictions
are scored by `keras_bert.metrics`, so both sides read the same examples and are scored alike.

- run_glue: lr 2e-5, batch 32, 3 epochs, `max_seq_length` 128 with `pad_to_max_length=True`
  (every sequence padded to 128, `default_data_collator`; `pad_to_max_length=False` pads each
  batch to its longest with `DataCollatorWithPadding`); `num_labels=1` (MSE) for STS-B.
- run_ner: lr 5e-5, batch 32, 3 epochs; the label list sorted from the training tags; the first
  piece of each word labelled, -100 elsewhere (`label_all_tokens=False`); no `max_seq_length`
  (the tokenizer's 512); batches padded to their longest (`DataCollatorForTokenClassification`).
- run_qa: lr 3e-5, batch 12, 2 epochs, windows of 384 with a stride of 128 padded to 384,
  `prepare_train_features` / `prepare_validation_features` on the fast tokenizer's offsets, and
  `postprocess_qa_predictions` (n-best 20, answers of at most 30 tokens; SQuAD v1.1).
"""

from __future__ import annotations

import collections
import dataclasses
import os
from collections.abc import Sequence

import numpy as np

from bench.peer_trainer import (
    TORCH_THREADS,
    TrainerRecipe,
    predict_like_trainer,
    train_like_trainer,
)

# The README of each example script (`--learning_rate`, `--per_device_train_batch_size`,
# `--num_train_epochs`).
RUN_GLUE = TrainerRecipe(learning_rate=2e-5, batch_size=32, epochs=3)
RUN_NER = TrainerRecipe(learning_rate=5e-5, batch_size=32, epochs=3)
RUN_QA = TrainerRecipe(learning_rate=3e-5, batch_size=12, epochs=2)
GLUE_MAX_SEQ_LENGTH = 128
QA_MAX_SEQ_LENGTH = 384
QA_DOC_STRIDE = 128
QA_N_BEST_SIZE = 20
QA_MAX_ANSWER_LENGTH = 30
# What `Trainer` keeps of a feature (its `_remove_unused_columns`): the model's inputs.
MODEL_INPUTS = ("input_ids", "token_type_ids", "attention_mask")


@dataclasses.dataclass
class PeerRun:
    """A Hugging Face run's training loop (`TrainingRun`) and its scores by split name."""

    train_seconds: float
    train_sequences: int
    epoch_losses: list[float]
    epoch_seconds: list[float]
    evaluation: dict


def start_run(seed: int):
    """Offline, on `TORCH_THREADS` threads, seeded as the scripts seed before loading the model;
    returns the checkpoint directory."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    import transformers

    from pipelines.common import default_checkpoint

    torch.set_num_threads(TORCH_THREADS)
    transformers.set_seed(seed)
    return default_checkpoint()


def model_inputs(features: Sequence[dict], labels: Sequence[str] = ()) -> list[dict]:
    """The features as `Trainer` hands them to the collator: the model's inputs and labels."""
    keep = (*MODEL_INPUTS, *labels)
    return [{name: feature[name] for name in keep if name in feature} for feature in features]


def stacked(batches: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(batches, axis=0)


# --- run_glue -------------------------------------------------------------------------------


def glue_features(tokenizer, examples, task, pad_to_max_length: bool = True) -> list[dict]:
    """run_glue's `preprocess_function`: the texts (pairs) truncated to 128 and padded to it
    (or not), with `label` the class id in tfds's (= Hugging Face datasets') order, or the
    score for STS-B."""
    max_seq_length = min(GLUE_MAX_SEQ_LENGTH, tokenizer.model_max_length)
    encoded = tokenizer(
        *examples.segments,
        padding="max_length" if pad_to_max_length else False,
        max_length=max_seq_length,
        truncation=True,
    )
    if task.is_regression:
        labels = [float(label) for label in examples.labels]
    else:
        labels = [task.label_names.index(label) for label in examples.labels]
    return [
        {**{name: encoded[name][index] for name in encoded}, "label": label}
        for index, label in enumerate(labels)
    ]


def run_glue(
    task,
    train,
    evaluations,
    seed: int,
    pad_to_max_length: bool = True,
    recipe: TrainerRecipe = RUN_GLUE,
) -> PeerRun:
    """Fine-tunes and scores a GLUE task as run_glue does.

    Args:
        task: the `GlueTask`.
        train: its training `ClassificationExamples`.
        evaluations: its labelled evaluation `GlueSplit`s (MNLI: matched and mismatched).
        seed: `--seed`.
        pad_to_max_length: run_glue's flag (its default pads every sequence to 128).
        recipe: the training settings (the README's).
    """
    checkpoint = start_run(seed)
    import transformers

    from keras_bert.metrics.glue import glue_scores

    num_labels = 1 if task.is_regression else len(task.label_names)
    config = transformers.AutoConfig.from_pretrained(
        checkpoint, num_labels=num_labels, finetuning_task=task.name
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        checkpoint, config=config
    )
    if not task.is_regression:
        model.config.label2id = {label: i for i, label in enumerate(task.label_names)}
        model.config.id2label = {i: label for label, i in model.config.label2id.items()}
    collator = (
        transformers.default_data_collator
        if pad_to_max_length
        else transformers.DataCollatorWithPadding(tokenizer)
    )
    features = glue_features(tokenizer, train, task, pad_to_max_length)
    run = train_like_trainer(model, model_inputs(features, ["label"]), collator, recipe, seed)
    evaluation = {}
    for split in evaluations:
        eval_features = glue_features(tokenizer, split.examples, task, pad_to_max_length)
        (logits,) = predict_like_trainer(model, model_inputs(eval_features), collator)
        evaluation[split.split] = glue_scores(task, split.examples.labels, stacked(logits))
    return PeerRun(run.seconds, run.sequences, run.epoch_losses, run.epoch_seconds, evaluation)


# --- run_ner --------------------------------------------------------------------------------


def ner_label_list(train) -> list[str]:
    """run_ner's `get_label_list` for tags given as strings: the training tags, sorted."""
    return sorted({tag for tags in train.tags for tag in tags})


def ner_features(
    tokenizer, sentences, label_list: Sequence[str], max_seq_length: int | None = None
) -> list[dict]:
    """run_ner's `tokenize_and_align_labels` with `label_all_tokens=False`: each word's first
    piece labelled with its tag's id, its other pieces and the special tokens -100."""
    encoded = tokenizer(
        sentences.words,
        padding=False,
        truncation=True,
        max_length=max_seq_length,
        is_split_into_words=True,
    )
    label_to_id = {label: index for index, label in enumerate(label_list)}
    features = []
    for index, tags in enumerate(sentences.tags):
        labels, previous_word = [], None
        for word in encoded.word_ids(index):
            first_piece = word is not None and word != previous_word
            labels.append(label_to_id[tags[word]] if first_piece else -100)
            previous_word = word
        features.append({**{name: encoded[name][index] for name in encoded}, "labels": labels})
    return features


def word_tags(
    piece_predictions: Sequence[np.ndarray], features: Sequence[dict], label_list, sentences
) -> list[list[str]]:
    """Each word's predicted tag: the prediction at its first piece (where the feature's label
    is not -100). Words cut off by truncation have no piece: they count as "O", as in
    keras_bert."""
    tags = []
    for predicted, feature, words in zip(piece_predictions, features, sentences.words, strict=True):
        labels = np.asarray(feature["labels"])
        first_pieces = np.asarray(predicted)[: len(labels)][labels != -100]
        missing = len(words) - len(first_pieces)
        tags.append([label_list[i] for i in first_pieces] + ["O"] * missing)
    return tags


def run_ner(
    train, evaluation, label_list: Sequence[str], seed: int, recipe: TrainerRecipe = RUN_NER
) -> PeerRun:
    """Fine-tunes a token classifier and scores entity F1 (conlleval's counting) as run_ner
    does, predictions of first pieces mapped back to words.

    Args:
        train, evaluation: `TaggedSentences` (IOB2 tags).
        label_list: `ner_label_list` of the whole training file (so that a sample of it has
            the same labels).
        seed: `--seed`.
        recipe: the training settings (the README's).
    """
    checkpoint = start_run(seed)
    import transformers

    from keras_bert.metrics import entity_scores

    config = transformers.AutoConfig.from_pretrained(
        checkpoint, num_labels=len(label_list), finetuning_task="ner"
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    model = transformers.AutoModelForTokenClassification.from_pretrained(checkpoint, config=config)
    model.config.label2id = {label: i for i, label in enumerate(label_list)}
    model.config.id2label = dict(enumerate(label_list))
    collator = transformers.DataCollatorForTokenClassification(tokenizer)
    features = ner_features(tokenizer, train, label_list)
    run = train_like_trainer(model, model_inputs(features, ["labels"]), collator, recipe, seed)
    eval_features = ner_features(tokenizer, evaluation, label_list)
    (logits,) = predict_like_trainer(model, model_inputs(eval_features), collator)
    piece_predictions = [row for batch in logits for row in batch.argmax(-1)]
    predicted = word_tags(piece_predictions, eval_features, label_list, evaluation)
    return PeerRun(
        run.seconds,
        run.sequences,
        run.epoch_losses,
        run.epoch_seconds,
        entity_scores(evaluation.tags, predicted),
    )


# --- run_qa ---------------------------------------------------------------------------------


def _question_windows(tokenizer, examples, pad_to_max_length: bool):
    """The tokenizer call both of run_qa's `prepare_*_features` make: questions without their
    leading whitespace, passages cut into windows of 384 with a stride of 128."""
    return tokenizer(
        [example.question.lstrip() for example in examples],
        [example.context for example in examples],
        truncation="only_second",
        max_length=min(QA_MAX_SEQ_LENGTH, tokenizer.model_max_length),
        stride=QA_DOC_STRIDE,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length" if pad_to_max_length else False,
    )


def prepare_train_features(tokenizer, examples, pad_to_max_length: bool = True) -> list[dict]:
    """run_qa's `prepare_train_features`: a feature per window, labelled with the first gold
    answer's first and last token, or `[CLS]` where the window does not hold all of it."""
    tokenized = _question_windows(tokenizer, examples, pad_to_max_length)
    sample_mapping = tokenized.pop("overflow_to_sample_mapping")
    offset_mapping = tokenized.pop("offset_mapping")
    features = []
    for index, offsets in enumerate(offset_mapping):
        input_ids = tokenized["input_ids"][index]
        cls_index = input_ids.index(tokenizer.cls_token_id)
        sequence_ids = tokenized.sequence_ids(index)
        example = examples[sample_mapping[index]]
        start_position = end_position = cls_index
        if example.answers:
            start_char = example.answer_starts[0]
            end_char = start_char + len(example.answers[0])
            token_start = 0
            while sequence_ids[token_start] != 1:
                token_start += 1
            token_end = len(input_ids) - 1
            while sequence_ids[token_end] != 1:
                token_end -= 1
            if offsets[token_start][0] <= start_char and offsets[token_end][1] >= end_char:
                # The scripts' note: this can go past the last offset if the answer is the
                # passage's last word.
                while token_start < len(offsets) and offsets[token_start][0] <= start_char:
                    token_start += 1
                start_position = token_start - 1
                while offsets[token_end][1] >= end_char:
                    token_end -= 1
                end_position = token_end + 1
        features.append(
            {
                **{name: tokenized[name][index] for name in tokenized},
                "start_positions": start_position,
                "end_positions": end_position,
            }
        )
    return features


def prepare_validation_features(tokenizer, examples, pad_to_max_length: bool = True) -> list[dict]:
    """run_qa's `prepare_validation_features`: a feature per window with its `example_id` and
    `offset_mapping`, None where a token is not the passage's."""
    tokenized = _question_windows(tokenizer, examples, pad_to_max_length)
    sample_mapping = tokenized.pop("overflow_to_sample_mapping")
    features = []
    for index in range(len(tokenized["input_ids"])):
        sequence_ids = tokenized.sequence_ids(index)
        feature = {name: tokenized[name][index] for name in tokenized}
        feature["example_id"] = examples[sample_mapping[index]].id
        feature["offset_mapping"] = [
            offset if sequence_ids[k] == 1 else None
            for k, offset in enumerate(feature["offset_mapping"])
        ]
        features.append(feature)
    return features


def postprocess_qa_predictions(
    examples,
    features: Sequence[dict],
    all_start_logits: np.ndarray,
    all_end_logits: np.ndarray,
    n_best_size: int = QA_N_BEST_SIZE,
    max_answer_length: int = QA_MAX_ANSWER_LENGTH,
) -> dict[str, str]:
    """utils_qa's `postprocess_qa_predictions` for SQuAD v1.1: for each question, the passage
    text of the best-scoring span (start + end logit) over its windows, among the `n_best_size`
    best starts and ends of each window that lie in the passage, end not before start, at most
    `max_answer_length` tokens ("empty" in the rare case where no span qualifies)."""
    features_per_example = collections.defaultdict(list)
    example_index_of = {example.id: index for index, example in enumerate(examples)}
    for feature_index, feature in enumerate(features):
        features_per_example[example_index_of[feature["example_id"]]].append(feature_index)
    predictions = {}
    for example_index, example in enumerate(examples):
        candidates = []
        for feature_index in features_per_example[example_index]:
            start_logits = all_start_logits[feature_index]
            end_logits = all_end_logits[feature_index]
            offset_mapping = features[feature_index]["offset_mapping"]
            start_indexes = np.argsort(start_logits)[-1 : -n_best_size - 1 : -1].tolist()
            end_indexes = np.argsort(end_logits)[-1 : -n_best_size - 1 : -1].tolist()
            for start_index in start_indexes:
                for end_index in end_indexes:
                    if (
                        start_index >= len(offset_mapping)
                        or end_index >= len(offset_mapping)
                        or offset_mapping[start_index] is None
                        or offset_mapping[end_index] is None
                    ):
                        continue
                    if end_index < start_index or end_index - start_index + 1 > max_answer_length:
                        continue
                    candidates.append(
                        (
                            start_logits[start_index] + end_logits[end_index],
                            offset_mapping[start_index][0],
                            offset_mapping[end_index][1],
                        )
                    )
        # sorted() is stable: among equal scores the first found wins, as in utils_qa.
        best = sorted(candidates, key=lambda candidate: candidate[0], reverse=True)[:n_best_size]
        texts = [example.context[start:end] for _, start, end in best]
        if not texts or (len(texts) == 1 and texts[0] == ""):
            texts.insert(0, "empty")
        predictions[example.id] = texts[0]
    return predictions


def run_qa(train, evaluation, seed: int, recipe: TrainerRecipe = RUN_QA) -> PeerRun:
    """Fine-tunes extractive QA and scores SQuAD v1.1 exact match and F1 as run_qa does.

    Args:
        train, evaluation: `QuestionExample`s (`keras_bert.data.squad.read_squad`).
        seed: `--seed`.
        recipe: the training settings (the README's).
    """
    checkpoint = start_run(seed)
    import transformers

    from keras_bert.metrics import squad_scores

    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint)
    model = transformers.AutoModelForQuestionAnswering.from_pretrained(checkpoint)
    collator = transformers.default_data_collator
    features = prepare_train_features(tokenizer, train)
    labels = ["start_positions", "end_positions"]
    run = train_like_trainer(model, model_inputs(features, labels), collator, recipe, seed)
    eval_features = prepare_validation_features(tokenizer, evaluation)
    start_logits, end_logits = predict_like_trainer(
        model, model_inputs(eval_features), collator, outputs=("start_logits", "end_logits")
    )
    predictions = postprocess_qa_predictions(
        evaluation, eval_features, stacked(start_logits), stacked(end_logits)
    )
    scores = squad_scores(predictions, {example.id: example.answers for example in evaluation})
    return PeerRun(run.seconds, run.sequences, run.epoch_losses, run.epoch_seconds, scores)
