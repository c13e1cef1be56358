"""Static pretraining examples with Apache Beam: read shards, tokenize, pair, mask, write.

The same pipeline runs on the `DirectRunner` (several local processes) and on Dataflow, Flink
or Spark with a runner flag. Instances follow `instances.document_pair_instances` per document:
the random B segments come from a fixed-size, seeded sample of documents drawn across all shards (a
side input: bounded per worker, unlike the corpus). Masking is `TokenMasker`, and the files are
Google's feature format (`tfrecords.read_pretraining_tfrecords` reads them).

Memory is bounded by a document, not by the corpus: after the list of files is spread over the
workers, each document goes from its file to the written records in one fused step, with no
shuffle of documents or examples in between (the sample reads the files a second time rather
than keeping the corpus between steps). Only a fixed `num_shards` adds a shuffle, of the
serialized examples, since one worker must write each file; by default every bundle of work
writes its own file, which is what makes a local run's workers flat in memory.

The examples depend only on the input files' contents and names (relative to their common
folder) and on the seed, not on where they live or on how a runner splits the work: each
document's pairs and masks are seeded by its key.
"""

from __future__ import annotations

import posixpath
import random
import zlib
from collections.abc import Iterator, Sequence

import numpy as np

from keras_bert.data.instances import contiguous_instances, document_pair_instances


def _common_folder(paths: Sequence[str]) -> str:
    """The longest folder prefix (ending in "/") that all `paths` share; "" if none."""
    prefix = posixpath.commonprefix(list(paths))
    return prefix[: prefix.rfind("/") + 1]


def _read_documents(path: str, folder: str) -> Iterator[tuple[str, list[str]]]:
    """The documents of one BERT-format file, keyed by the file's name below `folder` and the
    document's place in it (the same keys wherever the files are copied)."""
    from apache_beam.io.filesystems import FileSystems

    index, current = 0, []
    with FileSystems.open(path) as file:
        for line in [*file, b""]:
            line = line.decode("utf-8").strip()
            if line:
                current.append(line)
            elif current:
                yield f"{path[len(folder) :]}#{index}", current
                index, current = index + 1, []


def _sample_order(seed: int):
    """The order of the seeded document sample: documents of lowest key hash first."""
    return lambda document: -zlib.crc32(f"{seed}/{document[0]}".encode())


class _Tokenize:
    """Tokenizes a document's sentences with the in-graph `WordPieceTokenizer` (built once per
    worker from the tokens, which travel with the transform: workers need no vocabulary file)."""

    def __init__(self, vocabulary: Sequence[str], lowercase: bool):
        self.vocabulary, self.lowercase, self.tokenizer = list(vocabulary), lowercase, None

    def __call__(self, keyed_document):
        import tensorflow as tf

        from keras_bert.text import WordPieceTokenizer

        if self.tokenizer is None:
            self.tokenizer = WordPieceTokenizer(self.vocabulary, lowercase=self.lowercase)
        key, sentences = keyed_document
        ids = self.tokenizer(tf.constant(sentences)).numpy()
        pieces = [np.asarray(row, np.int32) for row in ids if len(row)]
        return [(key, pieces)] if pieces else []


def _document_instances(keyed_document, random_documents, config, seed: int, dupe_factor: int):
    """The instances of one document for each of the `dupe_factor` passes, as the reference
    builds them; random B segments come from `random_documents` (another document's)."""
    key, document = keyed_document
    others = [other for other_key, other in random_documents if other_key != key] or [document]
    documents = [document, *others]
    for dupe in range(dupe_factor):
        rng = random.Random(f"{seed}/{dupe}/{zlib.crc32(key.encode())}")
        if config.sentence_pairs:
            yield from document_pair_instances(
                documents,
                0,
                config.seq_length,
                config.short_seq_prob,
                rng,
                sentence_order=config.sentence_order_prediction,
            )
        else:
            yield from contiguous_instances([document], config.seq_length, None)


class _DocumentExamples:
    """One document's serialized `tf.train.Example`s: its instances for every pass, packed with
    `BertPacker` and masked with `TokenMasker` in batches of at most `batch_size`, each batch
    seeded by the document's key and its place in the document."""

    def __init__(
        self, vocabulary: Sequence[str], config, seed: int, dupe_factor: int, batch_size: int
    ):
        self.vocabulary, self.config, self.seed = list(vocabulary), config, seed
        self.dupe_factor, self.batch_size, self.built = dupe_factor, batch_size, None

    def __call__(self, keyed_document, random_documents) -> Iterator[bytes]:
        key = keyed_document[0]
        instances = list(
            _document_instances(
                keyed_document, random_documents, self.config, self.seed, self.dupe_factor
            )
        )
        for start in range(0, len(instances), self.batch_size):
            batch_seed = zlib.crc32(f"{self.seed}/{key}/{start}".encode())
            yield from self._pack_and_mask(instances[start : start + self.batch_size], batch_seed)

    def _pack_and_mask(self, instances, batch_seed: int) -> list[bytes]:
        import tensorflow as tf

        from keras_bert.data.pretraining import instance_features
        from keras_bert.data.tfrecords import serialize_features

        if self.built is None:
            self.built = instance_features(self.vocabulary, self.config)
        features = self.built(
            tf.ragged.constant([i.tokens_a for i in instances], tf.int32),
            tf.ragged.constant([i.tokens_b for i in instances], tf.int32),
            np.array([i.next_sentence_label for i in instances], np.int32),
            seed=[self.seed, batch_seed],
        )
        features = {name: np.asarray(value) for name, value in features.items()}
        return [
            serialize_features({name: values[row] for name, values in features.items()})
            for row in range(len(instances))
        ]


def build_pipeline(
    pipeline,
    input_files: Sequence[str],
    vocabulary_file: str,
    output_prefix: str,
    config,
    lowercase: bool = True,
    dupe_factor: int = 10,
    num_shards: int = 0,
    seed: int = 12345,
    random_sample_size: int = 1000,
    batch_size: int = 256,
):
    """Adds the static-examples transforms to a Beam `pipeline`; returns the write result.

    Args:
        pipeline: a `beam.Pipeline` (its options choose the runner).
        input_files: BERT-format text files (any Beam file system: local, gs://, ...).
        vocabulary_file: the WordPiece `vocab.txt` (read here, where the pipeline is built).
        output_prefix: the shards are `{output_prefix}-00000-of-0000N.tfrecord`.
        config: a `PretrainingDataConfig`.
        lowercase: uncased tokenization.
        dupe_factor: passes over the data, each with its own pairs and masks.
        num_shards: files to write; 0 (the default) writes one per bundle of work, as the
            runner splits it, with no shuffle; a fixed count shuffles every example to its file.
        seed: the seed of pairs and masks.
        random_sample_size: documents sampled across shards for random B segments.
        batch_size: a document's instances masked together (at most).

    Example:
    >>> import tempfile, apache_beam as beam
    >>> from keras_bert.data import PretrainingDataConfig, read_pretraining_tfrecords
    >>> folder = tempfile.mkdtemp()
    >>> tokens = "[PAD] [UNK] [CLS] [SEP] [MASK] the cat sat on a mat .".split()
    >>> with open(f"{folder}/vocab.txt", "w") as file:
    ...     _ = file.write("\\n".join(tokens))
    >>> with open(f"{folder}/corpus.txt", "w") as file:
    ...     _ = file.write("the cat sat .\\non a mat .\\n\\na cat sat on the mat .\\nthe mat .\\n")
    >>> with beam.Pipeline() as pipeline:
    ...     _ = build_pipeline(pipeline, [f"{folder}/corpus.txt"], f"{folder}/vocab.txt",
    ...                        f"{folder}/examples", PretrainingDataConfig(seq_length=16),
    ...                        dupe_factor=2, random_sample_size=2)
    >>> batches = read_pretraining_tfrecords(f"{folder}/examples-*", 4, 16, 20, shuffle=False)
    >>> next(iter(batches))["input_word_ids"].shape
    TensorShape([4, 16])
    """
    import apache_beam as beam

    from keras_bert.text import load_vocabulary

    vocabulary = load_vocabulary(vocabulary_file)
    folder = _common_folder(input_files)
    tokenize = _Tokenize(vocabulary, lowercase)
    # A fixed-size sample of documents from all shards, seeded: those of lowest hash. It reads
    # the files on its own: a step downstream of the sample's input could not run in one fused
    # step with the examples that take the sample as a side input, and the runner would hold
    # the tokenized corpus between the two.
    sample = (
        pipeline
        | "SampleFiles" >> beam.Create(sorted(input_files))
        | "ReadSample" >> beam.FlatMap(_read_documents, folder)
        | "Sample" >> beam.combiners.Top.Of(random_sample_size, key=_sample_order(seed))
        | "TokenizeSample"
        >> beam.Map(lambda documents: [kept for doc in documents for kept in tokenize(doc)])
    )
    examples = _DocumentExamples(vocabulary, config, seed, dupe_factor, batch_size)
    return (
        pipeline
        | "Files" >> beam.Create(sorted(input_files))  # spread over the workers
        | "Read" >> beam.FlatMap(_read_documents, folder)
        | "Tokenize" >> beam.FlatMap(tokenize)
        | "Examples"
        >> beam.FlatMap(
            lambda document, sampled: examples(document, sampled),
            sampled=beam.pvalue.AsSingleton(sample),
        )
        | "Write"
        >> beam.io.WriteToTFRecord(
            output_prefix, file_name_suffix=".tfrecord", num_shards=num_shards
        )
    )
