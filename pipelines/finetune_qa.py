"""Fine-tune a BERT checkpoint for extractive question answering (SQuAD v1.1 / v2.0).

Example:
    python -m pipelines.finetune_qa --train train-v1.1.json --eval dev-v1.1.json \\
        --output-dir runs/squad   # the recipe: 384, 2 epochs, 1e-4, batch 12
or with tfds: --tfds squad/v1.1 (and --null-score-threshold 0.0 for squad/v2.0).
"""

from __future__ import annotations

from keras_bert.data.squad import load_tfds_squad, read_squad
from keras_bert.finetuning.question_answering import finetune_question_answerer
from keras_bert.training.recipes import QA_RECIPE, QA_WINDOWS, recipe_flags
from pipelines.common import finetuning_parser, parse_finetuning_job, print_summary, run_job


def main(argv: list[str] | None = None) -> dict:
    parser = finetuning_parser(__doc__, "SQuAD JSON", "squad/v1.1 or squad/v2.0")
    for flag, help_text in (
        ("--doc-stride", "pieces between the starts of a passage's windows"),
        ("--max-query-length", "question pieces kept at most"),
        ("--n-best", "start and end candidates read from each window"),
        ("--max-answer-length", "the longest answer, in pieces"),
    ):
        default = QA_WINDOWS[flag[2:].replace("-", "_")]
        parser.add_argument(flag, type=int, default=default, help=help_text)
    parser.add_argument(
        "--null-score-threshold",
        type=float,
        help="SQuAD v2: answer nothing when [CLS] outscores the best span by more than this",
    )
    args, config = parse_finetuning_job(parser, recipe_flags(QA_RECIPE), argv)

    if args.tfds:
        train = load_tfds_squad(args.tfds, "train", data_dir=args.tfds_data_dir)
        evaluation = load_tfds_squad(args.tfds, "validation", data_dir=args.tfds_data_dir)
    else:
        train = read_squad(args.train)
        evaluation = read_squad(args.eval) if args.eval else None
    _, summary = finetune_question_answerer(
        config,
        train,
        evaluation,
        doc_stride=args.doc_stride,
        max_query_length=args.max_query_length,
        null_score_threshold=args.null_score_threshold,
        n_best=args.n_best,
        max_answer_length=args.max_answer_length,
    )
    print_summary(summary)
    return summary


if __name__ == "__main__":
    run_job(main)
