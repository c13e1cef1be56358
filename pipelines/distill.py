"""Distill a fine-tuned task model or a pretrained masked LM into a smaller student.

Example (a 3-layer student of a MiniLM-L6 sentiment classifier):
    python -m pipelines.distill --teacher runs/teacher/model.keras \\
        --train ../shared/data/sentiment/movie_snippets.train.jsonl \\
        --eval ../shared/data/sentiment/movie_snippets.dev.jsonl \\
        --output-dir runs/student_l3 --num-layers 3 --seq-length 64

The defaults of each `--task` are the recipe BENCHMARKS.md measured for it (`RECIPES`): the
learning rate, the epochs and the loss weights; flags override them.

Writes `<output-dir>/model.keras`, an ordinary `BertClassifier` (or `BertTokenClassifier`)
that `pipelines.export` exports like any other; the vocabulary is `--checkpoint`'s (the
teacher's).

General distillation (`--task masked_lm`): the teacher is a `pipelines.pretrain` run's
`pretrainer.keras`, `--train` and `--eval` are BERT-format text (globs and comma-separated
lists work; documents of `--eval` found in `--train` are left out of training), and the
student is also written as a checkpoint, `<output-dir>/checkpoint`, to fine-tune from or score
with `pipelines.evaluate_mlm`:
    python -m pipelines.distill --task masked_lm --teacher runs/continued/pretrainer.keras \
        --train "../shared/data/pretraining/*.txt" --eval runs/continued/held_out.txt \
        --output-dir runs/general_l3 --num-layers 3
"""

from __future__ import annotations

import argparse
import dataclasses

from keras_bert.checkpoints import checkpoint_vocabulary_file
from keras_bert.config import ConfigError
from keras_bert.data import read_text_documents, tokenize_documents
from keras_bert.data.classification import read_classification_file
from keras_bert.distillation.augmentation import augment_texts
from keras_bert.distillation.masked_lm_distillation import distill_masked_lm, leave_out
from keras_bert.distillation.task_distillation import (
    StudentConfig,
    distill_classifier,
    distill_token_classifier,
    read_unlabeled_texts,
)
from keras_bert.errors import check_not_negative
from keras_bert.finetuning.recipe import FinetuningConfig
from keras_bert.text import WordPieceTokenizer, infer_lowercase, load_vocabulary
from pipelines.common import (
    JobParser,
    add_config_arguments,
    config_overrides,
    expand_files,
    parse_finetuning_job,
    print_summary,
    run_job,
)
from pipelines.finetune_ner import read_sentences

STUDENT_FIELDS = [field.name for field in dataclasses.fields(StudentConfig)]
TASKS = ("classifier", "token_classifier", "masked_lm")

# The recipes BENCHMARKS.md measured ("Distillation"), per task: the defaults, so that a run
# given only its teacher, data and student size gets the published result.
RECIPES = {
    # 3 layers keep 98.4-99.1% of the teacher's dev accuracy; the teacher's own fine-tuning
    # recipe (5e-5, 3 epochs, no layer-wise losses) keeps 96.9%.
    "classifier": {
        "learning_rate": 1e-4,
        "epochs": 5,
        "hidden_mse": 1.0,
        "attention_scores": 0.05,
    },
    # Entity F1 0.510 against the teacher's 0.478; TinyBERT's layer-wise losses drop it to 0.429.
    "token_classifier": {"learning_rate": 1e-4, "epochs": 10},
    # One pass over the shared corpus: 0.249 accuracy at [MASK], 69% of the teacher's.
    "masked_lm": {
        "learning_rate": 1e-4,
        "epochs": 1,
        "hidden_mse": 1.0,
        "attention_scores": 0.05,
    },
}


def _task(argv: list[str] | None) -> str:
    """The `--task` of a command line, read before the flags whose defaults it chooses."""
    task_parser = argparse.ArgumentParser(add_help=False)
    task_parser.add_argument("--task", choices=TASKS, default="classifier")
    return task_parser.parse_known_args(argv)[0].task


def distillation_job(
    argv: list[str] | None = None,
) -> tuple[argparse.Namespace, StudentConfig, FinetuningConfig]:
    """The parsed command line, the student's config and the training settings of a job."""
    recipe = RECIPES[_task(argv)]
    parser = JobParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--task",
        choices=TASKS,
        default="classifier",
        help="what the teacher is; it chooses the defaults (`RECIPES`)",
    )
    parser.add_argument(
        "--train", required=True, help="the teacher's training file (masked_lm: text files)"
    )
    parser.add_argument("--unlabeled", nargs="+", default=[], help="text files, a text a line")
    parser.add_argument(
        "--augment-copies",
        type=int,
        default=0,
        help="add N variants of every training text (masked words, n-grams) as unlabeled text",
    )
    parser.add_argument("--eval", help="evaluation file")
    add_config_arguments(parser, StudentConfig, required=("teacher", "num_layers"), defaults=recipe)
    args, finetuning = parse_finetuning_job(parser, recipe, argv)
    check_not_negative(augment_copies=args.augment_copies)
    values = config_overrides(args)
    student_config = StudentConfig(
        **{name: values[name] for name in STUDENT_FIELDS if name in values}
    )
    return args, student_config, finetuning


def main(argv: list[str] | None = None) -> dict:
    args, student_config, finetuning = distillation_job(argv)
    if args.task == "masked_lm":
        summary = distill_masked_lm_job(args, finetuning, student_config)
        print_summary(summary | {"distillation": dataclasses.asdict(student_config)})
        return summary

    read, distill = {
        "classifier": (read_classification_file, distill_classifier),
        "token_classifier": (read_sentences, distill_token_classifier),
    }[args.task]
    train = read(args.train)
    unlabeled = read_unlabeled_texts(args.unlabeled)
    if args.augment_copies:
        texts = train.texts if args.task == "classifier" else map(" ".join, train.words)
        unlabeled += augment_texts(list(texts), args.augment_copies, seed=finetuning.run.seed)
    _, summary = distill(
        finetuning, student_config, train, unlabeled, read(args.eval) if args.eval else None
    )
    print_summary(summary | {"distillation": dataclasses.asdict(student_config)})
    return summary


def distill_masked_lm_job(args, finetuning, student_config: StudentConfig) -> dict:
    """General distillation on BERT-format text with the vocabulary of `--checkpoint`."""
    if args.unlabeled or args.augment_copies:
        raise ConfigError(
            "--task masked_lm trains on the text of --train; --unlabeled and --augment-copies "
            "are for task distillation."
        )
    vocabulary_file = str(checkpoint_vocabulary_file(finetuning.checkpoint, finetuning.revision))
    vocabulary = load_vocabulary(vocabulary_file)
    tokenizer = WordPieceTokenizer(vocabulary_file, lowercase=infer_lowercase(vocabulary))
    held_out = read_text_documents(expand_files([args.eval])) if args.eval else []
    documents = leave_out(read_text_documents(expand_files([args.train])), held_out)
    _, summary = distill_masked_lm(
        finetuning,
        student_config,
        tokenize_documents(documents, tokenizer),
        vocabulary,
        vocabulary_file,
        held_out=tokenize_documents(held_out, tokenizer),
    )
    return summary


if __name__ == "__main__":
    run_job(main)
