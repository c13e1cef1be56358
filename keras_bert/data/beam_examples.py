"""Static pretraining examples with Apache Beam: read shards, tokenize, pair, mask, write.

The same pipeline runs on the `DirectRunner` (several local processes) and on Dataflow, Flink
or Spark with a runner flag. Each input file's examples are those of the library's one builder
(`graph_instances.build_instances`, then `pretraining.masked_batches`), as training streams
them: `dupe_factor` passes over the file's documents, each with its own pairs and masks. The
random B segments come from a fixed-size, seeded sample of documents drawn across all shards (a
side input: bounded per worker, unlike the corpus). The files are Google's feature format
(`tfrecords.read_pretraining_tfrecords` reads them).

Memory is bounded by the builder's buffers, not by the corpus: after the list of files is
spread over the workers, each file goes to the written records in one fused step, streamed by
`tf.data`, with no shuffle of documents or examples in between (the sample reads the files a
second time rather than keeping the corpus between steps). Only a fixed `num_shards` adds a
shuffle, of the serialized examples, since one worker must write each file; by default every
bundle of work writes its own file, which is what makes a local run's workers flat in memory.

The examples depend only on the input files' contents and names (relative to their common
folder) and on the seed, not on where they live, on how a runner splits the work or on
TensorFlow's global seed: each file's pairs and masks are seeded by its name, and its stream
shuffles nothing but with stateless ops.
"""

from __future__ import annotations

import posixpath
import zlib
from collections.abc import Iterator, Sequence

import numpy as np


def _common_folder(paths: Sequence[str]) -> str:
    """The longest folder prefix (ending in "/") that all `paths` share; "" if none."""
    prefix = posixpath.commonprefix(list(paths))
    return prefix[: prefix.rfind("/") + 1]


def _read_documents(source: tuple[int, str], folder: str) -> Iterator[tuple[str, int, list[str]]]:
    """The documents of one BERT-format file as `(key, document_id, sentences)`: keyed by the
    file's name below `folder` and the document's place in it (the same keys wherever the files
    are copied), with the id `document_stream` gives it as file `source[0]` of the corpus."""
    from apache_beam.io.filesystems import FileSystems

    from keras_bert.data.document_stream import SOURCE_SHIFT

    source_index, path = source
    index, current = 0, []
    with FileSystems.open(path) as file:
        for line in [*file, b""]:
            line = line.decode("utf-8", errors="replace").strip()
            if line:
                current.append(line)
            elif current:
                yield (
                    f"{path[len(folder) :]}#{index}",
                    (source_index << SOURCE_SHIFT) + index,
                    current,
                )
                index, current = index + 1, []


def _sample_order(seed: int):
    """The order of the seeded document sample: documents of lowest key hash first."""
    return lambda document: -zlib.crc32(f"{seed}/{document[0]}".encode())


class _Tokenize:
    """Tokenizes the sampled documents' sentences with the in-graph `WordPieceTokenizer` (built
    once per worker from the tokens, which travel with the transform: workers need no
    vocabulary file); documents without tokens are dropped."""

    def __init__(self, vocabulary: Sequence[str], lowercase: bool):
        self.vocabulary, self.lowercase = list(vocabulary), lowercase

    def __call__(self, documents) -> list[tuple[int, list[np.ndarray]]]:
        from keras_bert.data.tokenized_documents import tokenize_documents
        from keras_bert.text import WordPieceTokenizer

        tokenizer = WordPieceTokenizer(self.vocabulary, lowercase=self.lowercase)
        return [
            (document_id, pieces)
            for _, document_id, sentences in documents
            for pieces in tokenize_documents([sentences], tokenizer)
        ]


def _random_documents(sample: list[tuple[int, list[np.ndarray]]], seed: int):
    """The sampled documents as a stream of random B candidates, `(document_id, sentences)`:
    pass after pass over the sample, each in a new order drawn with stateless ops (consecutive
    documents differ within a pass)."""
    import tensorflow as tf

    from keras_bert.data.document_stream import ragged_documents

    ids = tf.constant([document_id for document_id, _ in sample], tf.int64)
    documents = ragged_documents([pieces for _, pieces in sample])
    count = tf.size(ids, out_type=tf.int64)

    def draw(index):
        place = tf.random.experimental.index_shuffle(
            index % count, tf.stack([tf.constant(seed, tf.int64), index // count]), count - 1
        )
        return ids[place], documents[place]

    return tf.data.Dataset.range(2**62).map(draw)


class _FileExamples:
    """One file's serialized `tf.train.Example`s: the library's builder over `dupe_factor`
    passes of its documents, masked in batches of `batch_size`, all seeded by the file's name
    below the inputs' common folder."""

    def __init__(
        self,
        vocabulary: Sequence[str],
        lowercase: bool,
        config,
        seed: int,
        dupe_factor: int,
        batch_size: int,
        folder: str,
    ):
        self.vocabulary, self.lowercase, self.config = list(vocabulary), lowercase, config
        self.seed, self.dupe_factor, self.batch_size = seed, dupe_factor, batch_size
        self.folder = folder

    def __call__(self, source: tuple[int, str], sample) -> Iterator[bytes]:
        from keras_bert.data.document_stream import document_id, document_stream
        from keras_bert.data.graph_instances import build_instances
        from keras_bert.data.pretraining import document_separator, masked_batches
        from keras_bert.data.tfrecords import serialize_features
        from keras_bert.text import WordPieceTokenizer

        source_index, path = source
        file_seed = zlib.crc32(f"{self.seed}/{path[len(self.folder) :]}".encode())
        # In file order (buffers of 1): TensorFlow's global seed plays no part.
        documents = document_stream(
            [path],
            WordPieceTokenizer(self.vocabulary, lowercase=self.lowercase),
            num_epochs=self.dupe_factor,
            shuffle_buffer=1,
        ).map(lambda index, sentences: (document_id(source_index, index), sentences))
        instances = build_instances(
            documents,
            lambda: _random_documents(sample, file_seed),
            self.config,
            file_seed,
            document_separator(self.vocabulary, self.config),
            # One candidate per random document, unshuffled: the pair's second candidate,
            # taken when the first is of its own document, is of another.
            segments_per_document=1,
            segment_shuffle_buffer=1,
        )
        batches = masked_batches(
            instances,
            self.vocabulary,
            self.batch_size,
            self.config,
            file_seed,
            drop_remainder=False,
        )
        for batch in batches.as_numpy_iterator():
            for row in range(len(batch["next_sentence_labels"])):
                yield serialize_features({name: values[row] for name, values in batch.items()})


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
        batch_size: instances masked together.

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
    # Files numbered as `document_stream` numbers them: documents' ids are the same.
    sources = list(enumerate(sorted(input_files)))
    # A fixed-size sample of documents from all shards, seeded: those of lowest hash. It reads
    # the files on its own: a step downstream of the sample's input could not run in one fused
    # step with the examples that take the sample as a side input, and the runner would hold
    # the tokenized corpus between the two.
    sample = (
        pipeline
        | "SampleFiles" >> beam.Create(sources)
        | "ReadSample" >> beam.FlatMap(_read_documents, folder)
        | "Sample" >> beam.combiners.Top.Of(random_sample_size, key=_sample_order(seed))
        | "TokenizeSample" >> beam.Map(_Tokenize(vocabulary, lowercase))
    )
    examples = _FileExamples(vocabulary, lowercase, config, seed, dupe_factor, batch_size, folder)
    return (
        pipeline
        | "Files" >> beam.Create(sources)  # spread over the workers
        | "Examples"
        >> beam.FlatMap(
            lambda source, sampled: examples(source, sampled),
            sampled=beam.pvalue.AsSingleton(sample),
        )
        | "Write"
        >> beam.io.WriteToTFRecord(
            output_prefix, file_name_suffix=".tfrecord", num_shards=num_shards
        )
    )
