"""Writes static pretraining examples to sharded TFRecords (for TPU jobs), as Google's
`create_pretraining_data.py` does, in its feature format.

    python -m pipelines.create_pretraining_data --input_files corpus.txt \
        --vocabulary_file vocab.txt --output_dir data/pretraining --dupe_factor 10 --num_shards 8
"""

from __future__ import annotations

import argparse
import logging

from keras_bert.data import (
    MaskingConfig,
    PretrainingDataConfig,
    create_pretraining_tfrecords,
    load_tfds_documents,
    read_text_documents,
    tokenize_documents,
)
from keras_bert.text import WordPieceTokenizer, load_vocabulary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input_files", nargs="+", help="BERT-format text files")
    source.add_argument("--tfds_name", help="a TensorFlow Datasets text dataset")
    parser.add_argument("--tfds_split", default="train")
    parser.add_argument("--tfds_data_dir")
    parser.add_argument("--vocabulary_file", required=True)
    parser.add_argument("--lowercase", type=lambda text: text.lower() == "true", default=True)
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--masked_lm_prob", type=float, default=0.15)
    parser.add_argument("--short_seq_prob", type=float, default=0.1)
    parser.add_argument("--whole_word_masking", action="store_true")
    parser.add_argument("--no_next_sentence_prediction", action="store_true")
    parser.add_argument("--dupe_factor", type=int, default=10)
    parser.add_argument("--num_shards", type=int, default=1)
    parser.add_argument("--seed", type=int, default=12345)
    arguments = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)

    if arguments.input_files:
        documents = read_text_documents(arguments.input_files)
    else:
        documents = load_tfds_documents(
            arguments.tfds_name, arguments.tfds_split, arguments.tfds_data_dir
        )
    tokenizer = WordPieceTokenizer(arguments.vocabulary_file, lowercase=arguments.lowercase)
    config = PretrainingDataConfig(
        seq_length=arguments.seq_length,
        next_sentence_prediction=not arguments.no_next_sentence_prediction,
        short_seq_prob=arguments.short_seq_prob,
        masking=MaskingConfig(
            masked_lm_prob=arguments.masked_lm_prob,
            max_predictions_per_seq=arguments.max_predictions_per_seq,
            whole_word_masking=arguments.whole_word_masking,
        ),
    )
    paths = create_pretraining_tfrecords(
        tokenize_documents(documents, tokenizer),
        load_vocabulary(arguments.vocabulary_file),
        arguments.output_dir,
        config,
        dupe_factor=arguments.dupe_factor,
        num_shards=arguments.num_shards,
        seed=arguments.seed,
    )
    logging.info("Wrote %s", ", ".join(str(path) for path in paths))


if __name__ == "__main__":
    main()
