"""General distillation: a pretrained masked LM teaches a smaller one on unlabeled text.

What DistilBERT and TinyBERT's general stage do before any task: the student (a spread of the
teacher's layers, or a narrower model) learns the teacher's masked-token distributions (soft
targets), the masked tokens themselves (hard targets) and, with their weights, the layer-wise
losses, over the pretraining corpus with dynamic masking. The teacher is a `BertPretrainer`
(what `pipelines.pretrain` writes, e.g. a continued-pretraining run); the student is one too,
saved with a Google-format checkpoint that fine-tuning jobs and `pipelines.evaluate_mlm` read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import tensorflow as tf

from keras_bert.data.pretraining import MODEL_INPUT_NAMES, PretrainingDataConfig
from keras_bert.data.streaming import instances_per_pass, pretraining_dataset
from keras_bert.distillation.task_distillation import (
    StudentConfig,
    distill_task_model,
    load_teacher,
)
from keras_bert.errors import DataError
from keras_bert.finetuning.recipe import FinetuningConfig
from keras_bert.metrics.masked_lm import evaluate_masked_lm, masked_lm_evaluation_dataset
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.models.token_classifier import IGNORED_LABEL
from keras_bert.pretraining import save_pretrainer_checkpoint

STUDENT_CHECKPOINT = "checkpoint"


def masked_lm_distillation_batches(features: dict[str, tf.Tensor]):
    """`(inputs, labels)` for a masked-LM `Distiller` from pretraining features: the encoder
    inputs and `masked_lm_positions`; the masked tokens' ids, `IGNORED_LABEL` in prediction
    slots that are padding (weight 0).

    Example:
    >>> import tensorflow as tf
    >>> features = {name: tf.zeros([1, 4], tf.int32) for name in MODEL_INPUT_NAMES}
    >>> features |= {"masked_lm_ids": tf.constant([[7, 9, 0]]),
    ...              "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0]])}
    >>> masked_lm_distillation_batches(features)[1].numpy().tolist()
    [[7, 9, -100]]
    """
    inputs = {name: features[name] for name in MODEL_INPUT_NAMES}
    real = features["masked_lm_weights"] > 0
    labels = tf.where(real, features["masked_lm_ids"], tf.constant(IGNORED_LABEL, tf.int32))
    return inputs, labels


def distill_masked_lm(
    config: FinetuningConfig,
    student_config: StudentConfig,
    documents: Sequence,
    vocabulary: Sequence[str],
    vocabulary_file: str,
    held_out: Sequence = (),
    data: PretrainingDataConfig | None = None,
) -> tuple[BertPretrainer, dict]:
    """Distills the `BertPretrainer` in `student_config.teacher` over tokenized `documents`
    for `config.epochs` passes (new pairs and masks each pass); scores student and teacher on
    `held_out` documents as `pipelines.evaluate_mlm` does (BERT's masking, seed 0); writes
    `<output_dir>/model.keras` (the student `BertPretrainer`), `metrics.json` and
    `checkpoint/` (the student's Google-format checkpoint with `vocabulary_file`).

    Args:
        config: the training settings (`seq_length`, `batch_size`, `epochs`, rates, seed).
        student_config: the teacher, the student's size and the loss weights.
        documents: tokenized training documents (see `tokenize_documents`).
        vocabulary: the teacher's WordPiece tokens.
        vocabulary_file: their `vocab.txt`, copied into the student's checkpoint.
        held_out: tokenized documents to score on (none: no evaluation).
        data: pairs and masking (default: no sentence pairs, documents packed across
            boundaries, BERT's 15% masking with 80/10/10, at `config.seq_length`).
    """
    if not documents:
        raise DataError("No training documents: distillation needs text to train on.")
    teacher_vocabulary = load_teacher(student_config.teacher, BertPretrainer).bert_config.vocab_size
    if teacher_vocabulary != len(vocabulary):
        raise DataError(
            f"{vocabulary_file} has {len(vocabulary)} tokens, the teacher's vocabulary "
            f"{teacher_vocabulary}: give the teacher's vocabulary (--checkpoint)."
        )
    data = data or PretrainingDataConfig(
        seq_length=config.seq_length, next_sentence_prediction=False
    )
    train = pretraining_dataset(
        documents,
        vocabulary,
        config.batch_size,
        data,
        seed=config.run.seed,
        num_epochs=math.ceil(config.epochs),
        drop_remainder=False,  # every pass is `ceil(instances / batch_size)` steps
    ).map(masked_lm_distillation_batches)
    evaluate = None
    if held_out:
        evaluation = masked_lm_evaluation_dataset(held_out, vocabulary, data.seq_length, seed=0)
        evaluate = partial(evaluate_masked_lm, dataset=evaluation, vocabulary=vocabulary)
    student, summary = distill_task_model(
        config,
        student_config,
        BertPretrainer,
        train,
        instances_per_pass(documents, vocabulary, data, config.run.seed),
        evaluate,
    )
    save_pretrainer_checkpoint(
        student, Path(config.output_dir) / STUDENT_CHECKPOINT, vocabulary_file
    )
    return student, summary


def leave_out(documents: Sequence, held_out: Sequence) -> list:
    """`documents` without those that also appear in `held_out` (untokenized documents:
    lists of sentences), so that a corpus and its held-out part can be given as they are.

    Example:
    >>> leave_out([["a", "b"], ["c"], ["d"]], [["c"]])
    [['a', 'b'], ['d']]
    """
    held_out_set = {tuple(document) for document in held_out}
    return [document for document in documents if tuple(document) not in held_out_set]
