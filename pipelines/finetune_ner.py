"""Fine-tune a BERT checkpoint for named-entity recognition (BIO token classification).

Example (the real MiniLM checkpoint on WNUT-16 tweets):
    python -m pipelines.finetune_ner \\
        --train ../shared/data/ner/wnut16.train.jsonl \\
        --eval ../shared/data/ner/wnut16.dev.jsonl \\
        --output-dir runs/wnut16 --seq-length 128
"""

from __future__ import annotations

from pathlib import Path

from keras_bert.data.token_classification import (
    load_tfds_token_classification,
    read_conll,
    read_tagged_jsonl,
)
from keras_bert.finetuning.token_classification import finetune_token_classifier
from keras_bert.training.recipes import NER_RECIPE, recipe_flags
from pipelines.common import finetuning_parser, parse_finetuning_job, print_summary, run_job


def read_sentences(path: str):
    """JSONL with `tokens` and `tags`, or a CoNLL file (any other suffix)."""
    return read_tagged_jsonl(path) if Path(path).suffix == ".jsonl" else read_conll(path)


def main(argv: list[str] | None = None) -> dict:
    parser = finetuning_parser(__doc__, "JSONL (tokens, tags) or CoNLL", "conll2003")
    args, config = parse_finetuning_job(parser, recipe_flags(NER_RECIPE), argv)

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
    _, summary = finetune_token_classifier(config, train, evaluation, tag_names=tag_names)
    print_summary(summary)
    return summary


if __name__ == "__main__":
    run_job(main)
