"""Distill a fine-tuned task model or a pretrained masked LM into a smaller student.

Example (a 3-layer student of a MiniLM-L6 sentiment classifier):
    python -m pipelines.distill --teacher runs/teacher/model.keras \\
        --train ../shared/data/sentiment/movie_snippets.train.jsonl \\
        --eval ../shared/data/sentiment/movie_snippets.dev.jsonl \\
        --output-dir runs/student_l3 --num-layers 3 --seq-length 64 --epochs 3

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
        --output-dir runs/general_l3 --num-layers 3 --seq-length 128 --epochs 1
"""

from __future__ import annotations

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
from keras_bert.text import WordPieceTokenizer, infer_lowercase, load_vocabulary
from pipelines.common import (
    JobParser,
    add_config_arguments,
    add_finetuning_arguments,
    config_overrides,
    expand_files,
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
        choices=("classifier", "token_classifier", "masked_lm"),
        default="classifier",
        help="what the teacher is",
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
    add_config_arguments(parser, StudentConfig, required=("teacher", "num_layers"))
    add_finetuning_arguments(parser)
    args = parser.parse_args(argv)
    values = config_overrides(args)
    student_config = StudentConfig(
        **{name: values[name] for name in STUDENT_FIELDS if name in values}
    )
    finetuning = finetuning_config(args)
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
        unlabeled += augment_texts(list(texts), args.augment_copies, seed=values.get("seed", 0))
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
