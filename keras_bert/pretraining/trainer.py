"""The pretraining job: its data, model, `fit` (resumable) and the saved pretrainer."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from keras_bert.checkpoints.location import RUN_CHECKPOINT
from keras_bert.config import BertConfig
from keras_bert.data import (
    load_tfds_documents,
    read_pretraining_tfrecords,
    read_text_documents,
    split_features,
    split_replaced_token_features,
    tokenize_documents,
)
from keras_bert.data.document_stream import document_ids, documents_by_id
from keras_bert.data.streaming import streaming_pretraining_dataset
from keras_bert.errors import DataError
from keras_bert.metrics.masked_lm import MaskedLMEvaluation, masked_lm_evaluation_dataset
from keras_bert.pretraining.config import PretrainingConfig
from keras_bert.pretraining.embedding_scale import rescaled_embedding_tables
from keras_bert.training.precision import TrainStepShape
from keras_bert.training.run import fit_resumable

logger = logging.getLogger(__name__)

# The held-out documents of a run, in BERT's text format, in its output directory.
HELD_OUT_FILE = "held_out.txt"


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
    _check_documents_left(len(documents), config)
    random.Random(config.run.seed).shuffle(documents)
    return documents[config.held_out_documents :], documents[: config.held_out_documents]


def _check_documents_left(count: int, config: PretrainingConfig) -> None:
    """Raises a `DataError` when the held-out documents are all `count` the corpus holds: the
    training stream would wait forever for a first document."""
    if config.held_out_documents and count <= config.held_out_documents:
        raise DataError(
            f"The corpus holds {count} documents and held_out_documents is "
            f"{config.held_out_documents}: none is left to train on. Hold out fewer "
            "(--held-out-documents), or give more documents (a blank line ends each)."
        )


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
    _check_documents_left(len(ids), config)
    random.Random(config.run.seed).shuffle(ids)
    held_out_ids = ids[: config.held_out_documents]
    return held_out_ids, documents_by_id(held_out_ids, config.input_files, **_tfds_source(config))


def tokenized_documents(config: PretrainingConfig) -> tuple[list, list, list[str]]:
    """The training and held-out documents of a text or tfds run (see `_split_documents`),
    tokenized, and the vocabulary."""
    training, held_out = _split_documents(config)
    tokenizer, vocabulary = _tokenizer(config)
    held_out = tokenize_documents(held_out, tokenizer)
    return tokenize_documents(training, tokenizer), held_out, vocabulary


def feature_split(config: PretrainingConfig) -> Callable:
    """The run's features as its model's `(inputs, labels, sample_weights)`:
    `split_features` for `BertPretrainer`, `split_replaced_token_features` for
    `ElectraPretrainer`."""
    return split_replaced_token_features if config.replaced_token_detection else split_features


def build_datasets(
    config: PretrainingConfig, start_batch: int = 0
) -> tuple[tf.data.Dataset | Callable, tf.data.Dataset | None]:
    """The training dataset (resuming after `start_batch` batches) and the held-out dataset,
    both of `(inputs, labels, sample_weights)` for the run's model (`feature_split`). Streamed
    text or tfds input gives the training dataset as a function of the
    `tf.distribute.InputContext` (see `fit_resumable`): every worker streams its own share of
    the corpus."""
    data = config.data
    split = feature_split(config)
    if config.tfrecord_pattern:
        train = read_pretraining_tfrecords(
            config.tfrecord_pattern,
            config.global_batch_size,
            data.seq_length,
            data.masking.max_predictions_per_seq,
            seed=config.run.seed,
        ).skip(start_batch)
        return train.map(split), None

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
            seed=config.run.seed,
            start_batch=start_batch,
            streaming=config.streaming,
            input_context=input_context,
            excluded_ids=held_out_ids,
            **_tfds_source(config),
        ).map(split)

    evaluation = None
    # Documents that tokenize to nothing would leave the evaluation stream waiting forever.
    if tokenize_documents(held_out_documents, tokenizer) and config.eval_steps:
        # Built as the training examples are, from the held-out documents; a fixed seed and
        # no skipping: every evaluation sees the same pairs and masks.
        evaluation = (
            streaming_pretraining_dataset(
                tokenizer=tokenizer,
                vocabulary=vocabulary,
                batch_size=config.global_batch_size,
                config=data,
                seed=config.run.seed + 1,
                streaming=config.streaming,
                documents_in_memory=held_out_documents,
            )
            .map(split)
            .take(config.eval_steps)
            .cache()
            # A known length: Keras otherwise runs one empty step past the end and averages
            # the losses over it.
            .apply(tf.data.experimental.assert_cardinality(config.eval_steps))
        )
    return train, evaluation


def build_pretrainer(config: PretrainingConfig):
    """The model of a run: from `init_checkpoint`, `model_config` or `model_preset`; an
    `ElectraPretrainer` (its discriminator so built) with `replaced_token_detection`."""
    from keras_bert.models.electra_pretrainer import ElectraPretrainer
    from keras_bert.models.pretrainer import BertPretrainer

    if config.replaced_token_detection:
        if config.init_checkpoint:
            return ElectraPretrainer.from_checkpoint(
                config.init_checkpoint,
                vocabulary_file=config.vocabulary_file,
                generator_width=config.generator_width,
                **(config.model_config or {}),
            )
        return ElectraPretrainer(encoder_config(config), generator_width=config.generator_width)
    if config.init_checkpoint:
        # Continued pretraining, on the checkpoint's vocabulary or a new one.
        return BertPretrainer.from_checkpoint(
            config.init_checkpoint,
            vocabulary_file=config.vocabulary_file,
            span_boundary_objective=config.span_boundary_objective,
            **(config.model_config or {}),
        )
    return BertPretrainer(
        encoder_config(config), span_boundary_objective=config.span_boundary_objective
    )


def encoder_config(config: PretrainingConfig) -> BertConfig:
    """The `BertConfig` of the run's encoder: `init_checkpoint`'s with the changes of
    `model_config` (its vocabulary size aside, which a new `vocabulary_file` changes), else
    `model_config`, else `model_preset`'s.

    Example:
    >>> config = PretrainingConfig("runs/mini", vocabulary_file="vocab.txt",
    ...                            input_files=["corpus.txt"], model_preset="mini")
    >>> encoder_config(config).hidden_size
    256
    """
    if config.init_checkpoint:
        from keras_bert.checkpoints import find_checkpoint

        checkpoint = find_checkpoint(config.init_checkpoint, weights=False)
        return checkpoint.config.replace(**(config.model_config or {}))
    if config.model_config:
        return BertConfig.from_dict(config.model_config)
    return BertConfig.preset(config.model_preset)


def write_documents(documents: list[list[str]], path: Path) -> None:
    """Writes documents in BERT's text format: a sentence per line, a blank line between."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n\n".join("\n".join(document) for document in documents) + "\n", "utf-8")


def pretraining_loss_weights(
    sentence_pairs: bool,
    span_boundary_objective: bool = False,
    discriminator_loss_weight: float | None = None,
) -> dict[str, float]:
    """The weight of each head's loss. Without sentence pairs (RoBERTa's FULL-SENTENCES) every
    next-sentence label is 0: learning that constant would only saturate the pooler, which
    fine-tuning then starts from, so the head gets no weight (and the pooler no gradient).
    Replaced-token detection (a `discriminator_loss_weight`) weighs its generator's masked-LM
    loss 1 and its discriminator's by that weight.

    Example:
    >>> pretraining_loss_weights(sentence_pairs=False, span_boundary_objective=True)
    {'masked_lm': 1.0, 'next_sentence': 0.0, 'span_boundary': 1.0}
    >>> pretraining_loss_weights(sentence_pairs=False, discriminator_loss_weight=50.0)
    {'masked_lm': 1.0, 'replaced_token': 50.0}
    """
    if discriminator_loss_weight is not None:
        return {"masked_lm": 1.0, "replaced_token": discriminator_loss_weight}
    weights = {"masked_lm": 1.0, "next_sentence": 1.0 if sentence_pairs else 0.0}
    if span_boundary_objective:
        weights["span_boundary"] = 1.0
    return weights


def run_pretraining(config: PretrainingConfig) -> keras.callbacks.History:
    """Trains a `BertPretrainer` as `config` says; resumes from `output_dir/backup` if a
    previous run of the same config was interrupted. Returns the `fit` history (of this
    process's part of the run). With held-out documents, they are written to
    `output_dir/held_out.txt`, so that `pipelines.evaluate_mlm` can score any model on them."""
    callbacks = []
    if config.held_out_documents and not config.tfrecord_pattern:
        # accuracy_at_mask on the held-out documents, as pipelines.evaluate_mlm scores runs
        # (only they are read whole; build_datasets streams the training documents).
        tokenizer, vocabulary = _tokenizer(config)
        held_out_text = _held_out(config)[1]
        write_documents(held_out_text, Path(config.output_dir) / HELD_OUT_FILE)
        held_out = tokenize_documents(held_out_text, tokenizer)
        evaluation = masked_lm_evaluation_dataset(
            held_out, vocabulary, config.data.seq_length, seed=config.run.seed
        )
        callbacks.append(MaskedLMEvaluation(evaluation, vocabulary))
    result = fit_resumable(
        lambda: build_pretrainer(config),
        config.run,
        lambda start_step: build_datasets(config, start_batch=start_step),
        run_config=config.to_dict(),
        output_dir=config.output_dir,
        total_steps=config.total_steps,
        steps_per_epoch=config.steps_per_checkpoint,
        callbacks=callbacks,
        compile_options={
            "loss_weights": pretraining_loss_weights(
                config.data.sentence_pairs,
                config.span_boundary_objective,
                config.discriminator_loss_weight if config.replaced_token_detection else None,
            )
        },
        time_budget_minutes=config.time_budget_minutes,
        step_shape=TrainStepShape.of(
            encoder_config(config), config.global_batch_size, config.data.seq_length
        ),
    )
    if result.is_chief:
        save_pretrained(result.model, Path(config.output_dir), config)
    return result.history


def save_pretrained(model, output_dir: Path, config: PretrainingConfig) -> None:
    """Writes `pretrainer.keras` and Google-format checkpoints (with `vocab.txt`) that
    `BertEncoder.from_checkpoint`, the task models and the fine-tuning jobs read, from the run
    directory too: the model in `checkpoint/` (`BertPretrainer.from_checkpoint` reads its
    heads), or ELECTRA's discriminator there (`load_replaced_token_detector`) and its generator
    in `generator/` (`load_masked_lm`). A run from scratch writes its checkpoints' embedding
    tables at the initializer's scale (`rescaled_embedding_tables`: every output the same,
    fine-tuning as quick to move them as a random model's); a continued run keeps the scale of
    the checkpoint it started from."""
    from keras_bert.models.electra_pretrainer import ElectraPretrainer, electra_checkpoints

    model.save(output_dir / "pretrainer.keras")
    has_vocabulary = config.vocabulary_file or config.init_checkpoint
    vocabulary_file = _vocabulary(config)[1] if has_vocabulary else None
    table_rms = None if config.init_checkpoint else model.bert_config.initializer_range
    if not isinstance(model, ElectraPretrainer):
        save_pretrainer_checkpoint(model, output_dir / RUN_CHECKPOINT, vocabulary_file, table_rms)
        return
    for directory, (bert_config, variables) in electra_checkpoints(model).items():
        _save_checkpoint(variables, bert_config, output_dir / directory, vocabulary_file, table_rms)


def save_pretrainer_checkpoint(
    model, directory: Path, vocabulary_file: str | None, table_rms: float | None = None
) -> None:
    """A `BertPretrainer`'s weights (encoder and heads) as a Google-format checkpoint in
    `directory`, with `vocabulary_file` copied in as `vocab.txt` when given; with `table_rms`,
    its embedding tables rescaled to it (`rescaled_embedding_tables`)."""
    from keras_bert.models.pretrainer import pretrainer_variables

    _save_checkpoint(
        pretrainer_variables(model), model.bert_config, directory, vocabulary_file, table_rms
    )


def _save_checkpoint(
    variables: dict[str, keras.Variable],
    config: BertConfig,
    directory: Path,
    vocabulary_file: str | None,
    table_rms: float | None = None,
) -> None:
    from keras_bert.checkpoints import save_google_checkpoint

    tensors = {name: keras.ops.convert_to_numpy(v) for name, v in variables.items()}
    if table_rms is not None:
        tensors, factor = rescaled_embedding_tables(tensors, table_rms)
        logger.info("Embedding tables written at RMS %s (scaled by %.3f).", table_rms, factor)
    save_google_checkpoint(tensors, config, directory, vocabulary_file=vocabulary_file)
