"""Fine-tuning extractive question answering (SQuAD) and scoring it as SQuAD does."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from keras_bert.data.squad import QuestionExample, build_question_windows
from keras_bert.decoding.answers import Answer, decode_answers
from keras_bert.finetuning.recipe import (
    FinetuningConfig,
    find_run_checkpoint,
    fit_task_model,
    save_run,
)
from keras_bert.metrics import squad_scores
from keras_bert.models import BertQuestionAnswerer
from keras_bert.text.checkpoint_preprocessors import checkpoint_preprocessor
from keras_bert.training.recipes import QA_WINDOWS


def predict_answers(
    model: BertQuestionAnswerer,
    tokenizer,
    examples: Sequence[QuestionExample],
    seq_length: int = 384,
    doc_stride: int = QA_WINDOWS["doc_stride"],
    max_query_length: int = QA_WINDOWS["max_query_length"],
    null_score_threshold: float | None = None,
    batch_size: int = 32,
    packer=None,
    n_best: int = QA_WINDOWS["n_best"],
    max_answer_length: int = QA_WINDOWS["max_answer_length"],
) -> list[Answer]:
    """The best answer of every question, over all windows of its passage (`packer`: the
    family's packing, `preprocessor.packer`; default BERT's; `n_best` and `max_answer_length`
    as `decode_answers` takes them). The logits come from Keras' compiled `predict`."""
    windows = build_question_windows(
        examples, tokenizer, seq_length, doc_stride, max_query_length, packer=packer
    )
    outputs = model.predict(windows.dataset(batch_size), verbose=0)
    return decode_answers(
        examples,
        windows,
        outputs["start_logits"],
        outputs["end_logits"],
        n_best=n_best,
        max_answer_length=max_answer_length,
        null_score_threshold=null_score_threshold,
    )


def evaluate_question_answerer(model, tokenizer, examples, **settings) -> dict[str, float]:
    """SQuAD exact match and F1 (percent)."""
    answers = predict_answers(model, tokenizer, examples, **settings)
    predictions = {
        example.id: answer.text for example, answer in zip(examples, answers, strict=True)
    }
    return squad_scores(predictions, {example.id: example.answers for example in examples})


def finetune_question_answerer(
    config: FinetuningConfig,
    train: Sequence[QuestionExample],
    evaluation: Sequence[QuestionExample] | None = None,
    doc_stride: int = QA_WINDOWS["doc_stride"],
    max_query_length: int = QA_WINDOWS["max_query_length"],
    null_score_threshold: float | None = None,
    n_best: int = QA_WINDOWS["n_best"],
    max_answer_length: int = QA_WINDOWS["max_answer_length"],
) -> tuple[BertQuestionAnswerer, dict]:
    """Fine-tunes the checkpoint of `config` on SQuAD-style examples, evaluates EM/F1, saves.

    `config.seq_length` is the window length (384 in the BERT paper);
    `config.max_train_examples` draws that many questions (under the run's seed); the window
    and decoding settings default to `QA_WINDOWS`. Writes
    `<output_dir>/model.keras` and `<output_dir>/metrics.json`.
    """
    if config.max_train_examples:
        chosen = np.random.default_rng(config.run.seed).permutation(len(train))
        train = [train[index] for index in chosen[: config.max_train_examples]]
    checkpoint = find_run_checkpoint(config)
    preprocessor = checkpoint_preprocessor(checkpoint, config.seq_length)
    windows = build_question_windows(
        train,
        preprocessor.tokenizer,
        config.seq_length,
        doc_stride,
        max_query_length,
        for_training=True,
        packer=preprocessor.packer,
    )
    train_dataset = windows.dataset(
        config.batch_size,
        shuffle=True,
        seed=config.run.seed,
        length_bucketing=config.length_bucketing,
    )
    model, summary = fit_task_model(
        lambda encoder: BertQuestionAnswerer(encoder, preprocessor=preprocessor),
        config,
        train_dataset,
        len(windows),
        checkpoint,
    )
    if evaluation is not None:
        summary["evaluation"] = evaluate_question_answerer(
            model,
            preprocessor.tokenizer,
            evaluation,
            seq_length=config.seq_length,
            doc_stride=doc_stride,
            max_query_length=max_query_length,
            null_score_threshold=null_score_threshold,
            packer=preprocessor.packer,
            n_best=n_best,
            max_answer_length=max_answer_length,
        )
    save_run(model, summary, config)
    return model, summary
