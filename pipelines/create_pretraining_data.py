"""Writes static pretraining examples to sharded TFRecords (for TPU jobs), as Google's
`create_pretraining_data.py` does, in its feature format.

    python -m pipelines.create_pretraining_data --input-files corpus.txt \\
        --vocabulary-file vocab.txt --output-dir data/pretraining --dupe-factor 10 --num-shards 8

Google's flag names work too (`--input_file a.txt,b.txt`, `--vocab_file`, `--do_lower_case`,
`--max_seq_length`, `--random_seed`, `--do_whole_word_mask`).

With `--beam true` the job is an Apache Beam pipeline (text files only); flags it does not know
go to Beam's `PipelineOptions`, e.g. several local processes:

    python -m pipelines.create_pretraining_data --beam true --input-files 'corpus/*.txt' \
        --vocabulary-file vocab.txt --output-dir data/pretraining \
        --runner FnApiRunner --direct_num_workers 2 --direct_running_mode multi_processing

or Dataflow (`--runner DataflowRunner --project P --region R --temp_location gs://B/tmp`,
input and output on gs://), Flink (`--runner FlinkRunner`) or Spark (`--runner SparkRunner`).
"""

from __future__ import annotations

import dataclasses
import logging

from keras_bert.data import PretrainingDataConfig
from keras_bert.errors import ConfigError, check_positive
from pipelines.common import (
    JobParser,
    add_config_arguments,
    config_overrides,
    expand_files,
    resolve_installed,
    run_job,
)

# Google's create_pretraining_data.py flag names, where they differ from ours.
GOOGLE_FLAGS = {
    "input_files": ["input_file"],
    "vocabulary_file": ["vocab_file"],
    "lowercase": ["do_lower_case"],
    "seq_length": ["max_seq_length"],
    "seed": ["random_seed"],
    "whole_word_masking": ["do_whole_word_mask"],
}


@dataclasses.dataclass
class StaticExamplesJob:
    """Static pretraining examples: input, vocabulary, shapes and shards.

    Args:
        output_dir: where the TFRecord shards go.
        vocabulary_file: the WordPiece `vocab.txt` (`minilm`: the installed MiniLM-L6's).
        input_files: BERT-format text files (one sentence per line, blank line between
            documents); globs and comma-separated lists are expanded.
        tfds_name: or a TensorFlow Datasets text dataset.
        tfds_split: its split.
        tfds_data_dir: its data directory.
        lowercase: uncased tokenization.
        data: a `PretrainingDataConfig` (sequence length, NSP, masking).
        dupe_factor: passes over the data, each with its own pairs and masks.
        num_shards: TFRecord files to write (default: 1; with `beam`, one per bundle of work
            as the runner splits it, which needs no shuffle of the examples).
        seed: the seed of pairs and masks.
        beam: run as an Apache Beam pipeline (see the module's docstring).
    """

    output_dir: str
    vocabulary_file: str
    input_files: list[str] = dataclasses.field(default_factory=list)
    tfds_name: str | None = None
    tfds_split: str = "train"
    tfds_data_dir: str | None = None
    lowercase: bool = True
    data: PretrainingDataConfig = dataclasses.field(default_factory=PretrainingDataConfig)
    dupe_factor: int = 10
    num_shards: int | None = None
    seed: int = 12345
    beam: bool = False

    def __post_init__(self):
        if isinstance(self.data, dict):
            self.data = PretrainingDataConfig(**self.data)
        if bool(self.input_files) == bool(self.tfds_name):
            raise ConfigError("Give exactly one of --input-files and --tfds-name.")
        check_positive(dupe_factor=self.dupe_factor, num_shards=self.num_shards)
        self.vocabulary_file = resolve_installed(self.vocabulary_file, "vocab.txt")


def create_static_examples(job: StaticExamplesJob) -> list:
    """Reads, tokenizes, pairs, masks and writes; returns the shard paths."""
    from keras_bert.data import (
        create_pretraining_tfrecords,
        load_tfds_documents,
        read_text_documents,
        tokenize_documents,
    )
    from keras_bert.text import WordPieceTokenizer, load_vocabulary

    if job.input_files:
        documents = read_text_documents(expand_files(job.input_files))
    else:
        documents = load_tfds_documents(job.tfds_name, job.tfds_split, job.tfds_data_dir)
    tokenizer = WordPieceTokenizer(job.vocabulary_file, lowercase=job.lowercase)
    return create_pretraining_tfrecords(
        tokenize_documents(documents, tokenizer),
        load_vocabulary(job.vocabulary_file),
        job.output_dir,
        job.data,
        dupe_factor=job.dupe_factor,
        num_shards=job.num_shards or 1,
        seed=job.seed,
    )


def create_static_examples_with_beam(job: StaticExamplesJob, beam_arguments: list[str]) -> list:
    """Runs the Beam pipeline of `keras_bert.data.beam_examples`; returns the shard paths."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from keras_bert.data.beam_examples import build_pipeline

    if not job.input_files:
        raise ConfigError("The Beam pipeline reads text files (--input-files).")
    from apache_beam.io.filesystems import FileSystems

    # Beam's file systems expand the globs: local paths, gs://, hdfs://, s3://.
    patterns = [part for item in job.input_files for part in item.split(",") if part]
    files = sorted(
        metadata.path for match in FileSystems.match(patterns) for metadata in match.metadata_list
    )
    prefix = f"{job.output_dir.rstrip('/')}/pretraining"
    with beam.Pipeline(options=PipelineOptions(beam_arguments)) as pipeline:
        build_pipeline(
            pipeline,
            files,
            job.vocabulary_file,
            prefix,
            job.data,
            lowercase=job.lowercase,
            dupe_factor=job.dupe_factor,
            num_shards=job.num_shards or 0,
            seed=job.seed,
        )
    return sorted(match.path for match in FileSystems.match([f"{prefix}-*"])[0].metadata_list)


def _beam_spelling(argument: str) -> str:
    """`--direct-num-workers=2` → `--direct_num_workers=2`; values are kept.

    Example:
    >>> [_beam_spelling(a) for a in ["--direct-num-workers", "2", "--temp-location=gs://b/t-1"]]
    ['--direct_num_workers', '2', '--temp_location=gs://b/t-1']
    """
    if not argument.startswith("--"):
        return argument
    name, separator, value = argument.partition("=")
    return "--" + name[2:].replace("-", "_") + separator + value


def main(argv: list[str] | None = None) -> list:
    import sys

    parser = JobParser(description=__doc__.split("\n\n")[0])
    add_config_arguments(parser, StaticExamplesJob, aliases=GOOGLE_FLAGS)
    arguments, beam_arguments = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    job = StaticExamplesJob(**config_overrides(arguments))
    if beam_arguments and not job.beam:
        parser.error(f"unrecognized arguments: {' '.join(beam_arguments)}")
    # The parser spells every option with dashes; Beam's options are snake_case.
    beam_arguments = [_beam_spelling(argument) for argument in beam_arguments]
    logging.basicConfig(level=logging.INFO)
    if job.beam:
        paths = create_static_examples_with_beam(job, beam_arguments)
    else:
        paths = create_static_examples(job)
    logging.info("Wrote %s", ", ".join(str(path) for path in paths))
    return paths


if __name__ == "__main__":
    run_job(main)
