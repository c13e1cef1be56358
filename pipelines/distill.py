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

import argparse
import dataclasses

from keras_bert.data.classification import read_classification_file
from keras_bert.distillation import DistillationLosses
from keras_bert.distillation.augmentation import augment_texts
from keras_bert.distillation.task_distillation import (
    StudentConfig,
    distill_classifier,
    distill_token_classifier,
    read_unlabeled_texts,
)
from pipelines.common import add_finetuning_arguments, finetuning_config, print_summary
from pipelines.finetune_ner import read_sentences


def add_loss_arguments(parser: argparse.ArgumentParser) -> None:
    """--temperature and a --<loss> weight flag per distillation loss."""
    defaults = DistillationLosses()
    parser.add_argument("--temperature", type=float, default=defaults.temperature)
    for name in DistillationLosses.weight_names():
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, type=float, default=getattr(defaults, name), help="weight")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--teacher", required=True, help="the teacher's model.keras")
    parser.add_argument("--task", choices=("classifier", "token_classifier"), default="classifier")
    parser.add_argument("--train", required=True, help="the teacher's training file")
    parser.add_argument("--unlabeled", nargs="+", default=[], help="text files, a text a line")
    parser.add_argument(
        "--augment-copies",
        type=int,
        default=0,
        help="add N variants of every training text (masked words, n-grams) as unlabeled text",
    )
    parser.add_argument("--eval", help="evaluation file")
    parser.add_argument("--num-layers", type=int, required=True)
    parser.add_argument("--hidden-size", type=int, help="default: the teacher's")
    parser.add_argument(
        "--teacher-layers", type=int, nargs="+", help="blocks to copy (default: spread evenly)"
    )
    add_loss_arguments(parser)
    add_finetuning_arguments(parser)
    args = parser.parse_args(argv)

    student_config = StudentConfig(
        teacher=args.teacher,
        num_layers=args.num_layers,
        hidden_size=args.hidden_size,
        teacher_layers=tuple(args.teacher_layers) if args.teacher_layers else None,
        losses=DistillationLosses(
            temperature=args.temperature,
            **{name: getattr(args, name) for name in DistillationLosses.weight_names()},
        ),
    )
    read, distill = {
        "classifier": (read_classification_file, distill_classifier),
        "token_classifier": (read_sentences, distill_token_classifier),
    }[args.task]
    train = read(args.train)
    unlabeled = read_unlabeled_texts(args.unlabeled)
    if args.augment_copies:
        texts = train.texts if args.task == "classifier" else map(" ".join, train.words)
        unlabeled += augment_texts(list(texts), args.augment_copies, seed=args.seed)
    _, summary = distill(
        finetuning_config(args),
        student_config,
        train,
        unlabeled,
        read(args.eval) if args.eval else None,
    )
    print_summary(summary | {"distillation": dataclasses.asdict(student_config)})
    return summary


if __name__ == "__main__":
    main()
