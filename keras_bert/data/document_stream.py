"""Pretraining documents as a `tf.data` stream: read, tokenized and shuffled in graph.

A document is `(document_id, sentences)`: an int64 id, `source << 32 | index in source`, unique
in the corpus and the same in every pass, and a `RaggedTensor` `[sentences, tokens]` of int32
WordPiece ids (sentences without tokens and documents without sentences are dropped, as
`tokenize_documents` drops them). Nothing holds more than a shard's current document and the
shuffle buffers, however big the corpus.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from keras_bert.errors import DataError

# Sentence boundaries of `documents.split_sentences` in RE2 (no look-around): a newline goes
# between the sentence-final punctuation and the next sentence's first character.
_SENTENCE_BOUNDARY = r"([.!?][\"')\]]?)\s+([A-Z0-9\"'(\[])"

SOURCE_SHIFT = 32
_TOKEN_IDS, _SENTENCE_LENGTHS = "token_ids", "sentence_lengths"


def document_id(source_index: tf.Tensor, index_in_source: tf.Tensor) -> tf.Tensor:
    """The int64 id of a document: its source (file) index and its index in that source."""
    return tf.bitwise.left_shift(tf.cast(source_index, tf.int64), SOURCE_SHIFT) + tf.cast(
        index_in_source, tf.int64
    )


def _numbered_texts(texts: tf.data.Dataset, source_index: tf.Tensor) -> tf.data.Dataset:
    """`(document_id, text)` for a dataset of texts, numbered in order."""
    return texts.enumerate().map(lambda index, text: (document_id(source_index, index), text))


def text_file_documents(
    path: tf.Tensor, source_index: tf.Tensor, block_lines: int = 4096
) -> tf.data.Dataset:
    """The documents of one BERT-format file (a sentence a line, a blank line between documents)
    as `(document_id, sentences)` with `sentences` a string vector; documents never span files.

    Lines are read in blocks; a `scan` over the blocks carries the unfinished document only.
    """
    # A blank line after the last line ends the file's last document.
    lines = tf.data.TextLineDataset(path).map(tf.strings.strip)
    lines = lines.concatenate(tf.data.Dataset.from_tensors(tf.constant("")))

    def add_block(state, block):
        carried, count = state
        block = tf.concat([carried, block], 0)
        is_blank = tf.equal(block, "")
        # Lines up to the block's last blank line close documents; the rest is carried.
        complete = tf.reduce_max(tf.where(is_blank, tf.range(tf.size(block)) + 1, 0))
        document_index = tf.cumsum(tf.cast(is_blank[:complete], tf.int32), exclusive=True)
        keep = ~is_blank[:complete]
        documents = tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(block[:complete], keep),
            tf.boolean_mask(document_index, keep),
            nrows=tf.reduce_sum(tf.cast(is_blank, tf.int32)),
        )
        # Consecutive blank lines make no document.
        documents = tf.ragged.boolean_mask(documents, documents.row_lengths() > 0)
        ids = document_id(source_index, count + tf.range(tf.cast(documents.nrows(), tf.int64)))
        return (block[complete:], count + tf.cast(documents.nrows(), tf.int64)), (ids, documents)

    initial = (tf.zeros([0], tf.string), tf.constant(0, tf.int64))
    blocks = lines.batch(block_lines).scan(initial, add_block)
    return blocks.flat_map(
        lambda ids, documents: tf.data.Dataset.from_tensor_slices((ids, documents))
    )


def split_sentences_in_graph(text: tf.Tensor) -> tf.Tensor:
    """`documents.split_sentences` as TensorFlow ops: the sentences of a text (string vector).

    Example:
    >>> split_sentences_in_graph(tf.constant("It rains. Dogs bark!\\nThe end")).numpy().tolist()
    [b'It rains.', b'Dogs bark!', b'The end']
    """
    text = tf.strings.regex_replace(text, _SENTENCE_BOUNDARY, "\\1\n\\2")
    sentences = tf.strings.strip(tf.strings.split(text, "\n"))
    return tf.boolean_mask(sentences, tf.strings.length(sentences) > 0)


def tfds_documents(
    name: str,
    split: str = "train",
    data_dir: str | os.PathLike | None = None,
    text_feature: str = "text",
    source_index: int = 0,
) -> tf.data.Dataset:
    """The documents of a TensorFlow Datasets text dataset as `(document_id, sentences)`, each
    example split into sentences in graph (the dataset must be prepared; see
    `documents.load_tfds_documents`)."""
    import tensorflow_datasets as tfds

    examples = tfds.load(name, split=split, data_dir=data_dir, shuffle_files=False)
    texts = examples.map(lambda example: example[text_feature])
    return _numbered_texts(texts, source_index).map(
        lambda identifier, text: (identifier, split_sentences_in_graph(text))
    )


def serialize_tokenized_document(sentences: Sequence[Sequence[int]]) -> bytes:
    """A `tf.train.Example` of a tokenized document: its ids and its sentences' lengths.

    Example:
    >>> record = serialize_tokenized_document([[7, 8], [9]])
    >>> parse_tokenized_document(tf.constant(record)).to_list()
    [[7, 8], [9]]
    """
    flat = [int(token) for sentence in sentences for token in sentence]
    lengths = [len(sentence) for sentence in sentences]
    feature = {
        _TOKEN_IDS: tf.train.Feature(int64_list=tf.train.Int64List(value=flat)),
        _SENTENCE_LENGTHS: tf.train.Feature(int64_list=tf.train.Int64List(value=lengths)),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def parse_tokenized_document(record: tf.Tensor) -> tf.RaggedTensor:
    """The `[sentences, tokens]` ids of a record written by `serialize_tokenized_document`."""
    spec = {
        _TOKEN_IDS: tf.io.VarLenFeature(tf.int64),
        _SENTENCE_LENGTHS: tf.io.VarLenFeature(tf.int64),
    }
    parsed = tf.io.parse_single_example(record, spec)
    return tf.RaggedTensor.from_row_lengths(
        tf.cast(parsed[_TOKEN_IDS].values, tf.int32), parsed[_SENTENCE_LENGTHS].values
    )


def tokenized_record_documents(path: tf.Tensor, source_index: tf.Tensor) -> tf.data.Dataset:
    """The documents of one TFRecord file of tokenized documents, as `(document_id, ids)`."""
    records = _numbered_texts(tf.data.TFRecordDataset(path), source_index)
    return records.map(lambda identifier, record: (identifier, parse_tokenized_document(record)))


def _tokenize(tokenizer):
    def tokenize(identifier, sentences):
        ids = tf.cast(tokenizer(sentences), tf.int32)
        if isinstance(ids, tf.RaggedTensor) and ids.ragged_rank > 1:
            ids = ids.merge_dims(1, -1)
        return identifier, tf.ragged.boolean_mask(ids, ids.row_lengths() > 0)

    return tokenize


def ragged_documents(documents: Sequence[Sequence[Sequence[int]]]) -> tf.RaggedTensor:
    """Tokenized documents as one int32 `RaggedTensor [documents, sentences, tokens]`.

    Example:
    >>> ragged_documents([[[5, 6], [7]], [[8]]]).to_list()
    [[[5, 6], [7]], [[8]]]
    """
    sentences = [sentence for document in documents for sentence in document]
    flat = np.concatenate([np.asarray(sentence, np.int32) for sentence in sentences])
    return tf.RaggedTensor.from_nested_row_lengths(
        flat,
        [[len(document) for document in documents], [len(sentence) for sentence in sentences]],
    )


def is_tokenized_file(path: str | os.PathLike) -> bool:
    """Whether a file holds tokenized documents (TFRecords) rather than BERT-format text."""
    return str(path).endswith((".tfrecord", ".tfrecords"))


def document_stream(
    files: Sequence[str | os.PathLike] = (),
    tokenizer=None,
    seed: int = 0,
    num_epochs: int | None = None,
    shuffle_buffer: int = 1000,
    cycle_length: int = 8,
    tfds_name: str | None = None,
    tfds_split: str = "train",
    tfds_data_dir: str | os.PathLike | None = None,
    tfds_text_feature: str = "text",
    num_shards: int = 1,
    shard_index: int = 0,
    excluded_ids: Sequence[int] = (),
    documents_in_memory: Sequence[Sequence[str]] = (),
    tokenized_documents: Sequence[Sequence[Sequence[int]]] = (),
) -> tf.data.Dataset:
    """Tokenized documents streamed from files, tfds or memory, shuffled, pass after pass.

    Files are read `cycle_length` at a time (`interleave`), in a new order every pass, and
    documents go through a shuffle buffer; both are seeded, so the stream is a function of
    `seed`. With `num_shards` > 1 (one per input pipeline of a distributed run) a shard reads
    its share of the files, or of the documents when there are fewer files than shards.

    Args:
        files: BERT-format text files, or TFRecord files of tokenized documents
            (`serialize_tokenized_document`; names ending in `.tfrecord`).
        tokenizer: a `WordPieceTokenizer` (for text input).
        seed: the seed of file order and document shuffling.
        num_epochs: passes over the corpus; None repeats forever.
        shuffle_buffer: documents held for shuffling.
        cycle_length: files read at once.
        tfds_name: or a TensorFlow Datasets text dataset (instead of `files`).
        tfds_split, tfds_data_dir, tfds_text_feature: its split, data dir and text feature.
        num_shards, shard_index: this input pipeline's share.
        excluded_ids: ids of documents to leave out (held out for evaluation).
        documents_in_memory: or documents held in memory, lists of sentences (e.g. the
            held-out ones); their ids are their places in the list.
        tokenized_documents: or tokenized documents held in memory (lists of sentences' ids,
            see `tokenize_documents`); their ids are their places in the list.

    Returns:
        A dataset of `(document_id, sentences)`: int64 and int32 `RaggedTensor [None, None]`.
    """
    files = [str(path) for path in files]
    if sum(map(bool, (files, tfds_name, documents_in_memory, tokenized_documents))) != 1:
        raise DataError(
            "Stream documents from files, a tfds dataset or documents in memory (exactly one)."
        )
    tokenized = bool(tokenized_documents) or (
        bool(files) and all(is_tokenized_file(path) for path in files)
    )
    if files and not tokenized and any(is_tokenized_file(path) for path in files):
        raise DataError(f"Mixed text and TFRecord document files: {', '.join(files)}.")
    if not tokenized and tokenizer is None:
        raise DataError("Text documents need a tokenizer.")

    if tfds_name:
        documents = source_documents(
            tfds_name=tfds_name,
            tfds_split=tfds_split,
            tfds_data_dir=tfds_data_dir,
            tfds_text_feature=tfds_text_feature,
        )
        documents = documents.shard(num_shards, shard_index).repeat(num_epochs)
    elif documents_in_memory or tokenized_documents:
        if documents_in_memory:
            sentences = tf.ragged.constant(
                [list(document) for document in documents_in_memory], tf.string
            )
        else:
            sentences = ragged_documents(tokenized_documents)
        documents = tf.data.Dataset.from_tensor_slices(
            (tf.range(sentences.nrows(), dtype=tf.int64), sentences)
        )
        documents = documents.shard(num_shards, shard_index).repeat(num_epochs)
    else:
        sources = tf.data.Dataset.from_tensor_slices((files, tf.range(len(files), dtype=tf.int64)))
        share_files = len(files) >= num_shards
        if share_files:
            sources = sources.shard(num_shards, shard_index)
        sources = sources.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
        read = tokenized_record_documents if tokenized else text_file_documents
        documents = sources.repeat(num_epochs).interleave(
            read,
            cycle_length=min(cycle_length, len(files)),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        if not share_files:
            documents = documents.shard(num_shards, shard_index)
    if excluded_ids:
        excluded = tf.constant(sorted(excluded_ids), tf.int64)
        documents = documents.filter(
            lambda identifier, _: tf.reduce_all(tf.not_equal(excluded, identifier))
        )
    if not tokenized:
        documents = documents.map(_tokenize(tokenizer), num_parallel_calls=tf.data.AUTOTUNE)
    documents = documents.filter(lambda _, sentences: sentences.nrows() > 0)
    # After `repeat` the buffer mixes one long stream: a new iteration need not reshuffle, and
    # does not, so that every iterator of the dataset yields the same documents.
    return documents.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=False)


def count_text_documents(paths: Sequence[str | os.PathLike]) -> list[int]:
    """The number of documents in each BERT-format file, read line by line (nothing held)."""
    counts = []
    for path in paths:
        count, in_document = 0, False
        with open(path, encoding="utf-8", errors="replace") as file:
            for line in file:
                blank = not line.strip()
                count += in_document and blank
                in_document = not blank
        counts.append(count + in_document)
    return counts


def source_documents(
    files: Sequence[str | os.PathLike] = (),
    tfds_name: str | None = None,
    tfds_split: str = "train",
    tfds_data_dir: str | os.PathLike | None = None,
    tfds_text_feature: str = "text",
) -> tf.data.Dataset:
    """The untokenized documents of text files (in file order) or of a tfds dataset, as
    `(document_id, sentences)`, unshuffled."""
    if tfds_name:
        return tfds_documents(tfds_name, tfds_split, tfds_data_dir, tfds_text_feature)
    if not files:
        raise DataError("No input: give text files or a tfds dataset.")
    sources = tf.data.Dataset.from_tensor_slices(
        ([str(path) for path in files], tf.range(len(files), dtype=tf.int64))
    )
    return sources.flat_map(text_file_documents)


def document_ids(files: Sequence[str | os.PathLike] = (), **source) -> list[int]:
    """The ids of a corpus' documents in order: counted line by line for text files, one pass
    of `source_documents` for tfds; nothing is held but the ids."""
    if source.get("tfds_name"):
        return [int(identifier) for identifier, _ in source_documents(**source).as_numpy_iterator()]
    return [
        int(document_id(source_index, index))
        for source_index, count in enumerate(count_text_documents(files))
        for index in range(count)
    ]


def documents_by_id(
    ids: Sequence[int], files: Sequence[str | os.PathLike] = (), **source
) -> list[list[str]]:
    """The sentences of the documents with these ids, in the order of `ids` (one pass over the
    corpus; only those documents are held)."""
    wanted = tf.constant(sorted(ids), tf.int64)
    found = source_documents(files, **source).filter(
        lambda identifier, _: tf.reduce_any(tf.equal(wanted, identifier))
    )
    by_id = {
        int(identifier): [sentence.decode("utf-8", errors="replace") for sentence in sentences]
        for identifier, sentences in found.as_numpy_iterator()
    }
    return [by_id[identifier] for identifier in ids]
