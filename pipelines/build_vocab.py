"""Learns a WordPiece vocab.txt from text files (one sentence per line, as the pretraining data).

    .venv/bin/python -m pipelines.build_vocab --input-files ../shared/data/pretraining/*.txt \\
        --output vocab.txt --vocab-size 8000
"""

from __future__ import annotations

import dataclasses

from keras_bert.errors import check_positive
from pipelines.common import (
    expand_files,
    parse_job,
    run_job,
)


@dataclasses.dataclass
class VocabularyJob:
    """A WordPiece vocabulary to learn.

    Args:
        input_files: UTF-8 text files, one sentence per line; globs and comma-separated lists
            are expanded.
        output: where to write vocab.txt.
        vocab_size: pieces to learn, the special tokens included.
        lowercase: learn an uncased vocabulary (false: cased).
        min_count: ignore words seen fewer times.
    """

    input_files: list[str]
    output: str
    vocab_size: int = 8000
    lowercase: bool = True
    min_count: int = 10

    def __post_init__(self):
        check_positive(vocab_size=self.vocab_size)


def build(job: VocabularyJob) -> list[str]:
    """Learns the vocabulary and writes it to `job.output`."""
    import tensorflow as tf

    from keras_bert.text import build_vocabulary, save_vocabulary

    lines = tf.data.TextLineDataset(expand_files(job.input_files))
    lines = lines.filter(lambda line: tf.strings.length(line) > 0)
    vocabulary = build_vocabulary(
        lines.batch(1024),
        job.vocab_size,
        lowercase=job.lowercase,
        learn_params={"lower_thresh": job.min_count},
    )
    save_vocabulary(vocabulary, job.output)
    print(f"wrote {len(vocabulary)} tokens to {job.output}")
    if len(vocabulary) > job.vocab_size:
        print(
            f"  more than vocab_size {job.vocab_size}: every character of the text is kept, "
            "whatever the size asked for"
        )
    return vocabulary


def main(argv: list[str] | None = None) -> list[str]:
    return build(parse_job(__doc__, VocabularyJob, argv, required=("input_files", "output")))


if __name__ == "__main__":
    run_job(main)
