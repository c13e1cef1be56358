"""Pretraining input: streamed documents → in-graph instances → masked batches.

Documents stream from files or tfds at corpus scale (`streaming_pretraining_dataset`) or from
memory (`pretraining_dataset`); either way the instances come from the one builder,
`graph_instances.build_instances`. Everything after the file names is TensorFlow ops in
`tf.data` (no `from_generator`, no `py_function`), so it runs on TPU hosts and in every worker
of a multi-worker run, and its memory is bounded by its buffers, not by the corpus.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import tensorflow as tf

from keras_bert.data.document_stream import document_stream
from keras_bert.data.graph_instances import build_instances
from keras_bert.data.pretraining import PretrainingDataConfig, document_separator, masked_batches
from keras_bert.data.tokenized_documents import TokenizedDocument, check_documents
from keras_bert.errors import ConfigError

# Instances mixed by `pretraining_dataset`: its documents are shuffled whole already, and a
# buffer of a corpus' scale (`StreamingConfig`) would build that many before the first batch.
IN_MEMORY_INSTANCE_BUFFER = 1024


@dataclasses.dataclass(frozen=True)
class StreamingConfig:
    """Buffers of the streaming input: its memory, and how well it mixes the corpus.

    Args:
        cycle_length: files read at once.
        document_shuffle_buffer: documents held for shuffling (each stream).
        instance_shuffle_buffer: instances held for shuffling before batching.
        random_segments_per_document: random B candidates drawn from each document of the
            second stream (NSP); more reads the corpus less often for them.
        segment_shuffle_buffer: random B candidates held for shuffling.
    """

    cycle_length: int = 8
    document_shuffle_buffer: int = 256
    instance_shuffle_buffer: int = 4096
    random_segments_per_document: int = 64
    segment_shuffle_buffer: int = 4096

    def __post_init__(self):
        for field in dataclasses.fields(self):
            if getattr(self, field.name) < 1:
                raise ConfigError(
                    f"{field.name} must be positive, got {getattr(self, field.name)}."
                )


def streaming_instances(
    files: Sequence[str | os.PathLike] = (),
    tokenizer=None,
    config: PretrainingDataConfig | None = None,
    vocabulary: Sequence[str] = (),
    seed: int = 0,
    num_epochs: int | None = None,
    streaming: StreamingConfig | None = None,
    input_context: tf.distribute.InputContext | None = None,
    **source,
) -> tf.data.Dataset:
    """`(tokens_a, tokens_b, next_sentence_label)` instances streamed from a corpus, shuffled.

    Args:
        files, tokenizer: see `document_stream`; `source` holds its other source arguments
            (`tfds_name`, ..., `excluded_ids`, `documents_in_memory`, `tokenized_documents`).
        config: a `PretrainingDataConfig` (pairs or packing, `seq_length`, `short_seq_prob`).
        vocabulary: the WordPiece tokens (for the FULL-SENTENCES separator).
        seed: the seed of the stream.
        num_epochs: passes over the corpus; None repeats forever.
        streaming: a `StreamingConfig`.
        input_context: this input pipeline's place in a distributed run
            (`distribute_datasets_from_function`): it reads its share of the corpus.
    """
    config = config or PretrainingDataConfig()
    streaming = streaming or StreamingConfig()
    num_shards = input_context.num_input_pipelines if input_context else 1
    shard_index = input_context.input_pipeline_id if input_context else 0
    # Each input pipeline draws its own pairs and random segments.
    seed = seed + 1_000_003 * shard_index

    def documents(stream_seed, epochs, shards=num_shards):
        return document_stream(
            files,
            tokenizer,
            seed=stream_seed,
            num_epochs=epochs,
            shuffle_buffer=streaming.document_shuffle_buffer,
            cycle_length=streaming.cycle_length,
            num_shards=shards,
            shard_index=shard_index if shards > 1 else 0,
            **source,
        )

    instances = build_instances(
        documents(seed, num_epochs),
        # Any document of the corpus can give a random B: the second stream is not sharded.
        lambda: documents(seed + 1, None, shards=1),
        config,
        seed,
        document_separator(vocabulary, config),
        segments_per_document=streaming.random_segments_per_document,
        segment_shuffle_buffer=streaming.segment_shuffle_buffer,
    )
    # Every iterator yields the same instances (see `document_stream`).
    return instances.shuffle(
        streaming.instance_shuffle_buffer, seed=seed, reshuffle_each_iteration=False
    )


def streaming_pretraining_dataset(
    files: Sequence[str | os.PathLike] = (),
    tokenizer=None,
    vocabulary: Sequence[str] = (),
    batch_size: int = 32,
    config: PretrainingDataConfig | None = None,
    seed: int = 0,
    num_epochs: int | None = None,
    start_batch: int = 0,
    drop_remainder: bool = True,
    streaming: StreamingConfig | None = None,
    input_context: tf.distribute.InputContext | None = None,
    **source,
) -> tf.data.Dataset:
    """Batches of pretraining features from a streamed corpus, all in graph: dynamic masking
    (new masks on every pass), `FEATURE_NAMES`, for corpora of any size.

    Args:
        files: BERT-format text files or TFRecords of tokenized documents (see
            `document_stream`); or `tfds_name=...` in `source`.
        tokenizer: a `WordPieceTokenizer` (text input).
        vocabulary: the WordPiece tokens.
        batch_size: the global batch (each input pipeline of a distributed run makes its
            per-replica share).
        config: a `PretrainingDataConfig`.
        seed: the seed of documents, pairs, order and masks.
        num_epochs: passes over the corpus; None repeats forever.
        start_batch: batches to skip (resuming a run; they are built, not masked).
        drop_remainder: drop a last partial batch (fixed shapes).
        streaming: a `StreamingConfig`.
        input_context: see `streaming_instances`.

    Example:
    >>> import pathlib, tempfile
    >>> from keras_bert.text import WordPieceTokenizer
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog", "ran"]
    >>> _ = (folder / "vocab.txt").write_text("\\n".join(words))
    >>> _ = (folder / "a.txt").write_text("the cat sat\\nthe dog ran\\n\\nthe dog sat\\ncat ran\\n")
    >>> small_buffers = StreamingConfig(16, 16, 16, 16, 16)
    >>> dataset = streaming_pretraining_dataset(
    ...     [folder / "a.txt"], WordPieceTokenizer(str(folder / "vocab.txt")), words,
    ...     batch_size=2, config=PretrainingDataConfig(seq_length=16), streaming=small_buffers)
    >>> next(iter(dataset))["input_word_ids"].shape
    TensorShape([2, 16])
    """
    config = config or PretrainingDataConfig()
    if input_context:
        batch_size = input_context.get_per_replica_batch_size(batch_size)
    instances = streaming_instances(
        files,
        tokenizer,
        config,
        vocabulary,
        seed,
        num_epochs,
        streaming,
        input_context,
        **source,
    )
    return masked_batches(
        instances,
        vocabulary,
        batch_size,
        config,
        seed,
        start_batch=start_batch,
        drop_remainder=drop_remainder,
        # An input pipeline of `distribute_datasets_from_function` reads its own share already;
        # a dataset distributed whole is split by batches between the workers.
        auto_shard_policy=tf.data.experimental.AutoShardPolicy.OFF
        if input_context
        else tf.data.experimental.AutoShardPolicy.DATA,
    )


def pretraining_dataset(
    documents: Sequence[TokenizedDocument],
    vocabulary: Sequence[str],
    batch_size: int,
    config: PretrainingDataConfig | None = None,
    seed: int = 0,
    num_epochs: int | None = None,
    start_batch: int = 0,
    drop_remainder: bool = True,
    streaming: StreamingConfig | None = None,
) -> tf.data.Dataset:
    """Batches of pretraining features from tokenized documents held in memory, built as a
    streamed corpus is (`streaming_pretraining_dataset`).

    The stream is a function of `seed` and `batch_size`: `start_batch` skips that many batches
    (resuming a run) without masking them, and the batches that follow are those an
    uninterrupted run would see. Every pass has new pairs and masks.

    Args:
        documents: tokenized documents (see `tokenize_documents`).
        vocabulary: the WordPiece tokens.
        batch_size: examples per batch (the global batch under a distribution strategy).
        config: a `PretrainingDataConfig`.
        seed: the seed of pairs, order and masks.
        num_epochs: passes over the documents; None repeats forever.
        start_batch: batches to skip at the start.
        drop_remainder: drop a last partial batch (fixed shapes).
        streaming: the shuffle buffers (default: documents shuffled over the whole corpus,
            `IN_MEMORY_INSTANCE_BUFFER` instances). Buffers of 1 keep the documents' order,
            whatever TensorFlow's global seed.

    Returns:
        A dataset of dicts with `FEATURE_NAMES`: int32 `[batch, seq_length]` inputs,
        `[batch, max_predictions_per_seq]` masked-LM positions/ids (int32) and weights
        (float32), and int32 `[batch]` next-sentence labels (1: B is random, or swapped).

    Example:
    >>> import numpy as np
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(20)]
    >>> documents = [[np.arange(5, 9), np.arange(9, 14)], [np.arange(14, 20), np.arange(20, 25)]]
    >>> dataset = pretraining_dataset(documents, vocabulary, 2, PretrainingDataConfig(16))
    >>> next(iter(dataset))["input_word_ids"].shape
    TensorShape([2, 16])
    """
    config = config or PretrainingDataConfig()
    check_documents(documents, config.next_sentence_prediction, config.sentence_order_prediction)
    return streaming_pretraining_dataset(
        vocabulary=vocabulary,
        batch_size=batch_size,
        config=config,
        seed=seed,
        num_epochs=num_epochs,
        start_batch=start_batch,
        drop_remainder=drop_remainder,
        streaming=streaming
        or StreamingConfig(
            document_shuffle_buffer=len(documents),
            instance_shuffle_buffer=IN_MEMORY_INSTANCE_BUFFER,
        ),
        tokenized_documents=documents,
    )


def instances_per_pass(
    documents: Sequence[TokenizedDocument],
    vocabulary: Sequence[str],
    config: PretrainingDataConfig,
    seed: int = 0,
) -> int:
    """How many sequences one pass of `pretraining_dataset` over `documents` makes (the
    first pass's count; later passes draw other short lengths and differ slightly).

    Example:
    >>> import numpy as np
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(20)]
    >>> documents = [[np.arange(5, 9), np.arange(9, 13)], [np.arange(13, 17)]]
    >>> config = PretrainingDataConfig(seq_length=8, next_sentence_prediction=False)
    >>> instances_per_pass(documents, vocabulary, config)
    3
    """
    check_documents(documents, config.next_sentence_prediction, config.sentence_order_prediction)
    instances = streaming_instances(
        config=config,
        vocabulary=vocabulary,
        seed=seed,
        num_epochs=1,
        # The order of the instances does not change their count.
        streaming=StreamingConfig(
            document_shuffle_buffer=len(documents), instance_shuffle_buffer=1
        ),
        tokenized_documents=documents,
    )
    return int(instances.reduce(0, lambda count, _: count + 1))
