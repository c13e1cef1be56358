"""Fine-tune a BERT checkpoint for named-entity recognition (BIO token classification).

Example (the real MiniLM checkpoint on WNUT-16 tweets):
    python -m pipelines.finetune_ner \\
        --train ../shared/data/ner/wnut16.train.jsonl \\
        --eval ../shared/data/ner/wnut16.dev.jsonl \\
        --output-dir runs/wnut16 --seq-length 128 --epochs 3
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from keras_bert.data.token_classification import (
    load_tfds_token_classification,
    read_conll,
    read_tagged_jsonl,
)
from keras_bert.finetuning.token_classification import finetune_token_classifier
from pipelines.common import add_finetuning_arguments, finetuning_config


def read_sentences(path: str):
    """JSONL with `tokens` and `tags`, or a CoNLL file (any other suffix)."""
    return read_tagged_jsonl(path) if Path(path).suffix == ".jsonl" else read_conll(path)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--train", help="JSONL (tokens, tags) or CoNLL training file")
    source.add_argument("--tfds", help="tfds dataset name, e.g. conll2003")
    parser.add_argument("--eval", help="JSONL or CoNLL evaluation file")
    parser.add_argument("--tfds-data-dir")
    add_finetuning_arguments(parser)
    args = parser.parse_args(argv)

    tag_names = None
    if args.tfds:
        train, tag_names = load_tfds_token_classification(
            args.tfds, "train", data_dir=args.tfds_data_dir
        )
        evaluation, _ = load_tfds_token_classification(
            args.tfds, "validation", data_dir=args.tfds_data_dir
        )
    else:
        train = read_sentences(args.train)
        evaluation = read_sentences(args.eval) if args.eval else None
    _, summary = finetune_token_classifier(
        finetuning_config(args), train, evaluation, tag_names=tag_names
    )
    print(json.dumps({key: value for key, value in summary.items() if key != "history"}, indent=2))
    return summary


if __name__ == "__main__":
    main()
