"""Pretraining with `model.fit`: data, strategy, precision, optimizer, checkpoints and resume."""

from __future__ import annotations

import dataclasses
import logging
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from keras_bert.config import BertConfig
from keras_bert.data import (
    PretrainingDataConfig,
    load_tfds_documents,
    pretraining_dataset,
    read_pretraining_tfrecords,
    read_text_documents,
    split_features,
    tokenize_documents,
)
from keras_bert.data.document_stream import document_ids, documents_by_id
from keras_bert.data.streaming import StreamingConfig, streaming_pretraining_dataset
from keras_bert.errors import ConfigError
from keras_bert.metrics.masked_lm import MaskedLMEvaluation, masked_lm_evaluation_dataset
from keras_bert.training.precision import check_precision
from keras_bert.training.run import RunSettings, fit_resumable

logger = logging.getLogger(__name__)

# The held-out documents of a run, in BERT's text format, in its output directory.
HELD_OUT_FILE = "held_out.txt"


@dataclasses.dataclass
class PretrainingConfig:
    """Everything a pretraining run needs; `pipelines/pretrain.py` fills it from flags or JSON.

    Args:
        output_dir: backups (`backup/`), TensorBoard logs (`logs/`), `metrics.csv`, and at the
            end `pretrainer.keras` and a Google-format checkpoint (`checkpoint/`).
        vocabulary_file: the WordPiece `vocab.txt`; with `init_checkpoint`, a new vocabulary
            the checkpoint moves onto (default: the checkpoint's own).
        lowercase: uncased tokenization.
        input_files: BERT-format text files (one sentence per line, blank line between docs),
            or TFRecord files of tokenized documents (`*.tfrecord`, see `document_stream`);
            streamed (`streaming_pretraining_dataset`), never read whole.
        tfds_name: or a TensorFlow Datasets text dataset (see `load_tfds_documents`).
        tfds_split, tfds_data_dir, tfds_text_feature: its split, data dir and text feature.
        tfrecord_pattern: or static examples written by `create_pretraining_data.py`.
        held_out_documents: documents kept out of training for evaluation (text/tfds input),
            written to `held_out.txt` in `output_dir`.
        model_preset: size of a randomly initialised model ("tiny" ... "large").
        model_config: or a dict of `BertConfig` fields (overrides `model_preset`); with
            `init_checkpoint`, changes to the checkpoint's config that keep its weights' shapes
            (e.g. `{"dropout_rate": 0.0}`).
        init_checkpoint: or a checkpoint to start from (heads restored when present).
        span_boundary_objective: add SpanBERT's span-boundary head and loss (pair it with
            `data.masking.span_masking`).
        data: a `PretrainingDataConfig` (or its dict).
        streaming: a `StreamingConfig` (or its dict): the buffers of text and tfds input.
        global_batch_size: examples per step over all replicas.
        total_steps: training steps (batches) of the whole run.
        steps_per_checkpoint: an epoch of `fit`: backup, logs and evaluation cadence.
        eval_steps: held-out batches per evaluation (0: no evaluation).
        learning_rate, warmup_fraction, weight_decay, optimizer, clip_global_norm: see
            `create_optimizer`.
        gradient_accumulation_steps: batches summed per optimizer update (None: 1).
        precision: "float32", "mixed_bfloat16", "mixed_float16" (with loss scaling) or "auto"
            (the fastest here: `resolve_precision`).
        time_budget_minutes: plan the run by time: as many whole checkpoint intervals as fit
            these minutes of training on this machine, at most `total_steps` (the step is
            timed on the first batches before training: `keras_bert.training.time_budget`).
            None: exactly `total_steps`.
        jit_compile: compile train steps with XLA (falls back where unsupported).
        strategy, tpu: see `resolve_strategy`.
        steps_per_execution: train steps per `tf.function` call (large on TPUs).
        seed: seeds data pairs, masks, order and weight initialisation.
        verbose: `fit` verbosity (1: progress bar). On the command line, `--verbose` also shows
            TensorFlow's own log lines.
    """

    output_dir: str
    vocabulary_file: str | None = None
    lowercase: bool = True
    input_files: list[str] = dataclasses.field(default_factory=list)
    tfds_name: str | None = None
    tfds_split: str = "train"
    tfds_data_dir: str | None = None
    tfds_text_feature: str = "text"
    tfrecord_pattern: str | None = None
    held_out_documents: int = 0
    model_preset: str = "tiny"
    model_config: dict[str, Any] | None = None
    init_checkpoint: str | None = None
    span_boundary_objective: bool = False
    data: PretrainingDataConfig = dataclasses.field(default_factory=PretrainingDataConfig)
    streaming: StreamingConfig = dataclasses.field(default_factory=StreamingConfig)
    global_batch_size: int = 32
    total_steps: int = 1000
    steps_per_checkpoint: int = 100
    eval_steps: int = 0
    learning_rate: float = 1e-4
    warmup_fraction: float = 0.01
    weight_decay: float = 0.01
    optimizer: str = "adamw"
    clip_global_norm: float | None = 1.0
    gradient_accumulation_steps: int | None = None
    precision: str = "float32"
    time_budget_minutes: float | None = None
    jit_compile: bool = False
    strategy: str = "default"
    tpu: str | None = None
    steps_per_execution: int = 1
    seed: int = 0
    verbose: int = 1

    def __post_init__(self):
        if isinstance(self.data, dict):
            self.data = PretrainingDataConfig(**self.data)
        if isinstance(self.streaming, dict):
            self.streaming = StreamingConfig(**self.streaming)
        check_precision(self.precision)
        if self.time_budget_minutes is not None and self.time_budget_minutes <= 0:
            raise ConfigError(
                f"time_budget_minutes must be positive, got {self.time_budget_minutes}."
            )
        if self.total_steps % self.steps_per_checkpoint:
            raise ConfigError(
                f"total_steps ({self.total_steps}) must be a multiple of steps_per_checkpoint "
                f"({self.steps_per_checkpoint}): a run resumes at checkpoint boundaries."
            )
        sources = [bool(self.input_files), bool(self.tfds_name), bool(self.tfrecord_pattern)]
        if sum(sources) != 1:
            raise ConfigError("Give exactly one of input_files, tfds_name, tfrecord_pattern.")
        if not self.tfrecord_pattern and not self.vocabulary_file and not self.init_checkpoint:
            raise ConfigError("Text input needs a vocabulary_file (or an init_checkpoint's).")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _vocabulary(config: PretrainingConfig) -> tuple[list[str], str]:
    from keras_bert.text import load_vocabulary

    path = config.vocabulary_file
    if path is None:
        from keras_bert.checkpoints import checkpoint_vocabulary_file

        path = str(checkpoint_vocabulary_file(config.init_checkpoint))
    return load_vocabulary(path), path


def _split_documents(config: PretrainingConfig) -> tuple[list, list]:
    """The training and held-out documents of a text or tfds run, untokenized. The held-out
    documents are a seeded random choice, the same in every run with this seed."""
    if config.input_files:
        documents = read_text_documents(config.input_files)
    else:
        documents = load_tfds_documents(
            config.tfds_name,
            config.tfds_split,
            config.tfds_data_dir,
            config.tfds_text_feature,
        )
    random.Random(config.seed).shuffle(documents)
    return documents[config.held_out_documents :], documents[: config.held_out_documents]


def _tokenizer(config: PretrainingConfig):
    """The run's `WordPieceTokenizer` and its vocabulary."""
    from keras_bert.text import WordPieceTokenizer

    vocabulary, vocabulary_path = _vocabulary(config)
    return WordPieceTokenizer(vocabulary_path, lowercase=config.lowercase), vocabulary


def _tfds_source(config: PretrainingConfig) -> dict[str, Any]:
    if not config.tfds_name:
        return {}
    return {
        "tfds_name": config.tfds_name,
        "tfds_split": config.tfds_split,
        "tfds_data_dir": config.tfds_data_dir,
        "tfds_text_feature": config.tfds_text_feature,
    }


def _held_out(config: PretrainingConfig) -> tuple[list[int], list]:
    """The stream ids and the sentences of the held-out documents of a streamed run: the
    seeded choice of `_split_documents` (the same documents, in the same order), found
    without holding the corpus."""
    if not config.held_out_documents:
        return [], []
    ids = document_ids(config.input_files, **_tfds_source(config))
    random.Random(config.seed).shuffle(ids)
    held_out_ids = ids[: config.held_out_documents]
    return held_out_ids, documents_by_id(held_out_ids, config.input_files, **_tfds_source(config))


def tokenized_documents(config: PretrainingConfig) -> tuple[list, list, list[str]]:
    """The training and held-out documents of a text or tfds run (see `_split_documents`),
    tokenized, and the vocabulary."""
    training, held_out = _split_documents(config)
    tokenizer, vocabulary = _tokenizer(config)
    held_out = tokenize_documents(held_out, tokenizer)
    return tokenize_documents(training, tokenizer), held_out, vocabulary


def build_datasets(
    config: PretrainingConfig, start_batch: int = 0
) -> tuple[tf.data.Dataset | Callable, tf.data.Dataset | None]:
    """The training dataset (resuming after `start_batch` batches) and the held-out dataset,
    both of `(inputs, labels, sample_weights)` for `BertPretrainer.fit`. Streamed text or tfds
    input gives the training dataset as a function of the `tf.distribute.InputContext` (see
    `fit_resumable`): every worker streams its own share of the corpus."""
    data = config.data
    if config.tfrecord_pattern:
        train = read_pretraining_tfrecords(
            config.tfrecord_pattern,
            config.global_batch_size,
            data.seq_length,
            data.masking.max_predictions_per_seq,
            seed=config.seed,
        ).skip(start_batch)
        return train.map(split_features), None

    tokenizer, vocabulary = _tokenizer(config)
    held_out_ids, held_out_documents = _held_out(config)

    def train(input_context: tf.distribute.InputContext | None = None) -> tf.data.Dataset:
        # Made by each input pipeline: its share of the corpus, its replicas' batches.
        return streaming_pretraining_dataset(
            config.input_files,
            tokenizer,
            vocabulary,
            config.global_batch_size,
            data,
            seed=config.seed,
            start_batch=start_batch,
            streaming=config.streaming,
            input_context=input_context,
            excluded_ids=held_out_ids,
            **_tfds_source(config),
        ).map(split_features)

    held_out = tokenize_documents(held_out_documents, tokenizer)
    evaluation = None
    if held_out and config.eval_steps:
        # Fixed seed and no skipping: every evaluation sees the same pairs and masks.
        evaluation = (
            pretraining_dataset(
                held_out,
                vocabulary,
                config.global_batch_size,
                data,
                seed=config.seed + 1,
            )
            .map(split_features)
            .take(config.eval_steps)
            .cache()
            # A known length: Keras otherwise runs one empty step past the end and averages
            # the losses over it.
            .apply(tf.data.experimental.assert_cardinality(config.eval_steps))
        )
    return train, evaluation


def build_pretrainer(config: PretrainingConfig):
    """The model of a run: from `init_checkpoint`, `model_config` or `model_preset`."""
    from keras_bert.models.pretrainer import BertPretrainer

    if config.init_checkpoint:
        # Continued pretraining, on the checkpoint's vocabulary or a new one.
        return BertPretrainer.from_checkpoint(
            config.init_checkpoint,
            vocabulary_file=config.vocabulary_file,
            span_boundary_objective=config.span_boundary_objective,
            **(config.model_config or {}),
        )
    if config.model_config:
        bert_config = BertConfig.from_dict(config.model_config)
    else:
        bert_config = BertConfig.preset(config.model_preset)
    return BertPretrainer(bert_config, span_boundary_objective=config.span_boundary_objective)


def write_documents(documents: list[list[str]], path: Path) -> None:
    """Writes documents in BERT's text format: a sentence per line, a blank line between."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join("\n".join(document) for document in documents) + "\n", "utf-8")


def pretraining_loss_weights(
    sentence_pairs: bool, span_boundary_objective: bool = False
) -> dict[str, float]:
    """The weight of each head's loss. Without sentence pairs (RoBERTa's FULL-SENTENCES) every
    next-sentence label is 0: learning that constant would only saturate the pooler, which
    fine-tuning then starts from, so the head gets no weight (and the pooler no gradient).

    Example:
    >>> pretraining_loss_weights(sentence_pairs=False, span_boundary_objective=True)
    {'masked_lm': 1.0, 'next_sentence': 0.0, 'span_boundary': 1.0}
    """
    weights = {"masked_lm": 1.0, "next_sentence": 1.0 if sentence_pairs else 0.0}
    if span_boundary_objective:
        weights["span_boundary"] = 1.0
    return weights


def run_pretraining(config: PretrainingConfig) -> keras.callbacks.History:
    """Trains a `BertPretrainer` as `config` says; resumes from `output_dir/backup` if a
    previous run of the same config was interrupted. Returns the `fit` history (of this
    process's part of the run). With held-out documents, they are written to
    `output_dir/held_out.txt`, so that `pipelines.evaluate_mlm` can score any model on them."""
    settings = RunSettings.from_config(config, steps_per_epoch=config.steps_per_checkpoint)
    callbacks = []
    if config.held_out_documents and not config.tfrecord_pattern:
        # accuracy_at_mask on the held-out documents, as pipelines.evaluate_mlm scores runs
        # (only they are read whole; build_datasets streams the training documents).
        tokenizer, vocabulary = _tokenizer(config)
        held_out_text = _held_out(config)[1]
        write_documents(held_out_text, Path(config.output_dir) / HELD_OUT_FILE)
        held_out = tokenize_documents(held_out_text, tokenizer)
        evaluation = masked_lm_evaluation_dataset(
            held_out, vocabulary, config.data.seq_length, seed=config.seed
        )
        callbacks.append(MaskedLMEvaluation(evaluation, vocabulary))
    result = fit_resumable(
        lambda: build_pretrainer(config),
        settings,
        lambda start_step: build_datasets(config, start_batch=start_step),
        run_config=config.to_dict(),
        callbacks=callbacks,
        compile_options={
            "loss_weights": pretraining_loss_weights(
                config.data.sentence_pairs, config.span_boundary_objective
            )
        },
        time_budget_minutes=config.time_budget_minutes,
    )
    if result.is_chief:
        save_pretrained(result.model, Path(config.output_dir), config)
    return result.history


def save_pretrained(model, output_dir: Path, config: PretrainingConfig) -> None:
    """Writes `pretrainer.keras` and a Google-format checkpoint (`checkpoint/`, with
    `vocab.txt`) that `BertEncoder.from_checkpoint` and `BertPretrainer.from_checkpoint` read."""
    model.save(output_dir / "pretrainer.keras")
    has_vocabulary = config.vocabulary_file or config.init_checkpoint
    vocabulary_file = _vocabulary(config)[1] if has_vocabulary else None
    save_pretrainer_checkpoint(model, output_dir / "checkpoint", vocabulary_file)


def save_pretrainer_checkpoint(model, directory: Path, vocabulary_file: str | None) -> None:
    """A `BertPretrainer`'s weights (encoder and heads) as a Google-format checkpoint in
    `directory`, with `vocabulary_file` copied in as `vocab.txt` when given."""
    from keras_bert.checkpoints import save_google_checkpoint
    from keras_bert.models.pretrainer import pretrainer_variables

    tensors = {
        name: keras.ops.convert_to_numpy(v) for name, v in pretrainer_variables(model).items()
    }
    save_google_checkpoint(tensors, model.bert_config, directory, vocabulary_file=vocabulary_file)
