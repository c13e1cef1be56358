"""Fine-tune a BERT checkpoint for sentence (pair) classification or regression.

Example (the real MiniLM checkpoint on the movie-review snippets):
    python -m pipelines.finetune_classifier \\
        --train ../shared/data/sentiment/movie_snippets.train.jsonl \\
        --eval ../shared/data/sentiment/movie_snippets.dev.jsonl \\
        --output-dir runs/sentiment --seq-length 64
"""

from __future__ import annotations

from keras_bert.data.classification import load_tfds_classification, read_classification_file
from keras_bert.finetuning.classification import finetune_classifier
from keras_bert.training.recipes import CLASSIFIER_RECIPE, recipe_flags
from pipelines.common import (
    add_bool_argument,
    finetuning_parser,
    parse_finetuning_job,
    print_summary,
    run_job,
)


def main(argv: list[str] | None = None) -> dict:
    parser = finetuning_parser(__doc__, "JSONL/CSV/TSV", "glue/sst2")
    parser.add_argument("--tfds-train-split", default="train", help="tfds training split")
    parser.add_argument("--tfds-eval-split", default="validation", help="tfds evaluation split")
    parser.add_argument("--text-column", default="text", help="field of the text")
    parser.add_argument("--text-pair-column", help="field of the second text of a pair")
    parser.add_argument("--label-column", default="label", help="field of the label")
    add_bool_argument(parser, "--regression", help="float labels (STS-B style)")
    args, config = parse_finetuning_job(parser, recipe_flags(CLASSIFIER_RECIPE), argv)

    label_names = None
    if args.tfds:
        train, label_names = load_tfds_classification(
            args.tfds, args.tfds_train_split, data_dir=args.tfds_data_dir
        )
        evaluation, _ = load_tfds_classification(
            args.tfds, args.tfds_eval_split, data_dir=args.tfds_data_dir
        )
    else:
        columns = {
            "text_column": args.text_column,
            "label_column": args.label_column,
            "text_pair_column": args.text_pair_column,
            "regression": args.regression,
        }
        train = read_classification_file(args.train, **columns)
        evaluation = read_classification_file(args.eval, **columns) if args.eval else None
    _, summary = finetune_classifier(
        config,
        train,
        evaluation,
        regression=args.regression or (args.tfds is not None and label_names is None),
        label_names=label_names,
    )
    print_summary(summary)
    return summary


if __name__ == "__main__":
    run_job(main)
