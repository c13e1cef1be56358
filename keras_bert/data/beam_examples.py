"""Static pretraining examples with Apache Beam: read shards, tokenize, pair, mask, write.

The same pipeline runs on the `DirectRunner` (several local processes) and on Dataflow, Flink
or Spark with a runner flag. Instances follow `instances._pair_instances` per document; the
random B segments come from a fixed-size, seeded sample of documents drawn across all shards (a
side input: bounded per worker, unlike the corpus). Masking is `TokenMasker`, and the files are
Google's feature format (`tfrecords.read_pretraining_tfrecords` reads them).

The output depends only on the input files' contents and names (relative to their common
folder) and on the seed, not on where they live or on how a runner orders the work: instances
go to a fixed group by their document, and each group is ordered and cut into batches the same
way every run.
"""

from __future__ import annotations

import posixpath
import random
import zlib
from collections.abc import Iterator, Sequence

import numpy as np

from keras_bert.data.instances import _contiguous_instances, _pair_instances


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


def _document_instances(
    keyed_document, random_documents, config, seed: int, dupe_factor: int, num_groups: int
):
    """The instances of one document for each of the `dupe_factor` passes, as the reference
    builds them; random B segments come from `random_documents` (another document's).

    Yields `(group, (order, instance))`: the document's group in `range(num_groups)` and a
    seeded order within the group.
    """
    key, document = keyed_document
    others = [other for other_key, other in random_documents if other_key != key] or [document]
    documents = [document, *others]
    group = zlib.crc32(f"{seed}/{key}".encode()) % num_groups
    for dupe in range(dupe_factor):
        rng = random.Random(f"{seed}/{dupe}/{zlib.crc32(key.encode())}")
        if config.sentence_pairs:
            instances = _pair_instances(
                documents,
                0,
                config.seq_length,
                config.short_seq_prob,
                rng,
                sentence_order=config.sentence_order_prediction,
            )
        else:
            instances = _contiguous_instances([document], config.seq_length, None)
        for index, instance in enumerate(instances):
            order = (zlib.crc32(f"{seed}/{key}/{dupe}/{index}".encode()), key, dupe, index)
            yield group, (order, instance)


class _PackAndMask:
    """Packs and masks one group of instances with `BertPacker` and `TokenMasker`, in batches of
    `batch_size` taken in the group's seeded order; returns serialized `tf.train.Example`s."""

    def __init__(self, vocabulary: Sequence[str], config, seed: int, batch_size: int):
        self.vocabulary, self.config, self.seed = list(vocabulary), config, seed
        self.batch_size, self.built = batch_size, None

    def __call__(self, keyed_group) -> Iterator[bytes]:
        group, ordered_instances = keyed_group
        instances = [instance for _, instance in sorted(ordered_instances, key=lambda x: x[0])]
        for start in range(0, len(instances), self.batch_size):
            batch_seed = zlib.crc32(f"{group}/{start}".encode())
            yield from self._pack_and_mask(instances[start : start + self.batch_size], batch_seed)

    def _pack_and_mask(self, instances, batch_seed: int) -> list[bytes]:
        import tensorflow as tf

        from keras_bert.data.masking import TokenMasker
        from keras_bert.data.pretraining import _packer
        from keras_bert.data.tfrecords import _serialize

        if self.built is None:
            self.built = (
                _packer(self.vocabulary, self.config.seq_length),
                TokenMasker(self.vocabulary, self.config.masking),
            )
        packer, masker = self.built
        tokens_a = tf.ragged.constant([i.tokens_a for i in instances], tf.int32)
        tokens_b = tf.ragged.constant([i.tokens_b for i in instances], tf.int32)
        labels = np.array([i.next_sentence_label for i in instances], np.int32)
        packed = packer((tokens_a, tokens_b) if self.config.sentence_pairs else tokens_a)
        masked = masker(
            packed["input_word_ids"], packed["input_mask"], seed=[self.seed, batch_seed]
        )
        features = {**packed, **masked}
        features = {name: value.numpy() for name, value in features.items()}
        features["next_sentence_labels"] = labels
        return [
            _serialize({name: values[row] for name, values in features.items()})
            for row in range(len(labels))
        ]


def build_pipeline(
    pipeline,
    input_files: Sequence[str],
    vocabulary_file: str,
    output_prefix: str,
    config,
    lowercase: bool = True,
    dupe_factor: int = 10,
    num_shards: int = 1,
    seed: int = 12345,
    random_sample_size: int = 1000,
    batch_size: int = 256,
    num_groups: int = 1024,
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
        num_shards: files to write.
        seed: the seed of pairs and masks.
        random_sample_size: documents sampled across shards for random B segments.
        batch_size: instances masked together.
        num_groups: groups of documents whose instances are ordered and masked together (each
            group is held by one worker: about `instances / num_groups` of them).
    """
    import apache_beam as beam

    from keras_bert.text import load_vocabulary

    vocabulary = load_vocabulary(vocabulary_file)
    documents = (
        pipeline
        | "Files" >> beam.Create(sorted(input_files))
        | "Read" >> beam.FlatMap(_read_documents, _common_folder(input_files))
        | "Spread" >> beam.Reshuffle()
        | "Tokenize" >> beam.FlatMap(_Tokenize(vocabulary, lowercase))
    )
    # A fixed-size sample of documents from all shards, seeded: those of lowest hash.
    sample = documents | "Sample" >> beam.combiners.Top.Of(
        random_sample_size, key=lambda document: -zlib.crc32(f"{seed}/{document[0]}".encode())
    )
    instances = documents | "Instances" >> beam.FlatMap(
        lambda document, sampled: _document_instances(
            document, sampled, config, seed, dupe_factor, num_groups
        ),
        sampled=beam.pvalue.AsSingleton(sample),
    )
    return (
        instances
        | "Group" >> beam.GroupByKey()
        | "Mask" >> beam.FlatMap(_PackAndMask(vocabulary, config, seed, batch_size))
        | "Write"
        >> beam.io.WriteToTFRecord(
            output_prefix, file_name_suffix=".tfrecord", num_shards=num_shards
        )
    )
