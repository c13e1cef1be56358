"""Learns a WordPiece vocab.txt from text files (one sentence per line, as the pretraining data).

    .venv/bin/python pipelines/build_vocab.py ../shared/data/pretraining/*.txt \
        --output vocab.txt --vocab-size 8000
"""

import argparse

import tensorflow as tf

from keras_bert.text import build_vocabulary, save_vocabulary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="UTF-8 text files, one sentence per line")
    parser.add_argument("--output", required=True, help="where to write vocab.txt")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--cased", action="store_true", help="learn a cased vocabulary")
    parser.add_argument("--min-count", type=int, default=10, help="ignore rarer words")
    args = parser.parse_args()

    lines = tf.data.TextLineDataset(args.inputs).filter(lambda line: tf.strings.length(line) > 0)
    vocabulary = build_vocabulary(
        lines.batch(1024),
        args.vocab_size,
        lowercase=not args.cased,
        learn_params={"lower_thresh": args.min_count},
    )
    save_vocabulary(vocabulary, args.output)
    print(f"wrote {len(vocabulary)} tokens to {args.output}")


if __name__ == "__main__":
    main()
