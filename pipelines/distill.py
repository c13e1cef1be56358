"""Distill a fine-tuned classifier or token classifier into a smaller student.

Example (a 3-layer student of a MiniLM-L6 sentiment classifier):
    python -m pipelines.distill --teacher runs/teacher/model.keras \\
        --train ../shared/data/sentiment/movie_snippets.train.jsonl \\
        --eval ../shared/data/sentiment/movie_snippets.dev.jsonl \\
        --output-dir runs/student_l3 --num-layers 3 --seq-length 64 --epochs 3

Writes `<output-dir>/model.keras`, an ordinary `BertClassifier` (or `BertTokenClassifier`)
that `pipelines.export` exports like any other; the vocabulary is `--checkpoint`'s (the
teacher's).
"""

from __future__ import annotations

import dataclasses

from keras_bert.data.classification import read_classification_file
from keras_bert.distillation.augmentation import augment_texts
from keras_bert.distillation.task_distillation import (
    StudentConfig,
    distill_classifier,
    distill_token_classifier,
    read_unlabeled_texts,
)
from pipelines.common import (
    JobParser,
    add_config_arguments,
    add_finetuning_arguments,
    config_overrides,
    finetuning_config,
    print_summary,
    run_job,
)
from pipelines.finetune_ner import read_sentences

STUDENT_FIELDS = [field.name for field in dataclasses.fields(StudentConfig)]


def main(argv: list[str] | None = None) -> dict:
    parser = JobParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--task",
        choices=("classifier", "token_classifier"),
        default="classifier",
        help="what the teacher is",
    )
    parser.add_argument("--train", required=True, help="the teacher's training file")
    parser.add_argument("--unlabeled", nargs="+", default=[], help="text files, a text a line")
    parser.add_argument(
        "--augment-copies",
        type=int,
        default=0,
        help="add N variants of every training text (masked words, n-grams) as unlabeled text",
    )
    parser.add_argument("--eval", help="evaluation file")
    add_config_arguments(parser, StudentConfig, required=("teacher", "num_layers"))
    add_finetuning_arguments(parser)
    args = parser.parse_args(argv)
    values = config_overrides(args)
    student_config = StudentConfig(
        **{name: values[name] for name in STUDENT_FIELDS if name in values}
    )

    read, distill = {
        "classifier": (read_classification_file, distill_classifier),
        "token_classifier": (read_sentences, distill_token_classifier),
    }[args.task]
    train = read(args.train)
    unlabeled = read_unlabeled_texts(args.unlabeled)
    if args.augment_copies:
        texts = train.texts if args.task == "classifier" else map(" ".join, train.words)
        unlabeled += augment_texts(list(texts), args.augment_copies, seed=values.get("seed", 0))
    finetuning = finetuning_config(args)
    _, summary = distill(
        finetuning, student_config, train, unlabeled, read(args.eval) if args.eval else None
    )
    print_summary(summary | {"distillation": dataclasses.asdict(student_config)})
    return summary


if __name__ == "__main__":
    run_job(main)
