"""Task distillation: a classifier or token classifier student from a fine-tuned teacher, over
the teacher's training set plus unlabeled in-domain text."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tensorflow as tf

from keras_bert.data.classification import (
    ClassificationExamples,
    DataError,
    classification_dataset,
    encode_labels,
)
from keras_bert.data.token_classification import (
    TaggedSentences,
    encode_tags,
    token_classification_dataset,
)
from keras_bert.distillation.distiller import DistillationLosses, Distiller
from keras_bert.distillation.student import initialize_student
from keras_bert.errors import check_positive
from keras_bert.finetuning.classification import evaluate_classifier
from keras_bert.finetuning.recipe import (
    FinetuningConfig,
    find_run_checkpoint,
    fit_model,
    save_run,
)
from keras_bert.finetuning.token_classification import evaluate_token_classifier
from keras_bert.models import BertClassifier, BertTokenClassifier
from keras_bert.models.model_files import load_model_file
from keras_bert.models.task import BertTask
from keras_bert.models.token_classifier import IGNORED_LABEL
from keras_bert.text.checkpoint_preprocessors import checkpoint_preprocessor


@dataclasses.dataclass
class StudentConfig:
    """What to distill into what.

    Args:
        teacher: the trained teacher's `.keras` file (a `BertClassifier` or
            `BertTokenClassifier`, e.g. `<run>/model.keras` of a fine-tuning pipeline).
        num_layers: the student's Transformer blocks.
        hidden_size: the student's width (default: the teacher's, with copied layers).
        teacher_layers: the teacher blocks the student starts from (default: spread evenly).
        initial_student: a deeper student of the same teacher and width (its `.keras` file)
            that this one starts from instead of the teacher: its embeddings, head and blocks
            (`teacher_layers` then name its blocks). Distilling 6 → 3 → 2 layers this way
            (progressive) drops fewer layers at a time.
        losses: the loss weights and temperature.
    """

    teacher: str
    num_layers: int
    hidden_size: int | None = None
    teacher_layers: tuple[int, ...] | None = None
    initial_student: str | None = None
    losses: DistillationLosses = dataclasses.field(default_factory=DistillationLosses)

    def __post_init__(self) -> None:
        # From a command line or JSON: nested settings come as a dict, layers as a list.
        if isinstance(self.losses, dict):
            self.losses = DistillationLosses(**self.losses)
        if self.teacher_layers is not None:
            self.teacher_layers = tuple(self.teacher_layers)
        check_positive(num_layers=self.num_layers, hidden_size=self.hidden_size)


def read_unlabeled_texts(paths: Sequence[str | Path]) -> list[str]:
    """The non-blank lines of text files, one text per line.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "reviews.txt"
    >>> _ = path.write_text("A gem.\\n\\n  Dull and long. \\n")
    >>> read_unlabeled_texts([path])
    ['A gem.', 'Dull and long.']
    """
    texts = []
    for path in map(Path, paths):
        if not path.is_file():
            raise FileNotFoundError(f"No text file at {path}.")
        texts += [line.strip() for line in path.read_text("utf-8").splitlines() if line.strip()]
    return texts


def load_teacher(path: str | Path, task_class: type[BertTask]) -> BertTask:
    teacher = load_model_file(path, compile=False)
    if not isinstance(teacher, task_class):
        raise DataError(f"{path} holds a {type(teacher).__name__}, not a {task_class.__name__}.")
    return teacher


def distill_task_model(
    config: FinetuningConfig,
    student_config: StudentConfig,
    task_class: type[BertTask],
    train_dataset: tf.data.Dataset,
    num_train_examples: int,
    evaluate: Callable[[BertTask], dict] | None = None,
) -> tuple[BertTask, dict]:
    """Trains a student of the teacher in `student_config` on `train_dataset` (batches of
    `(inputs, labels)`) with `fit_model`'s schedule (resumable), scores student and teacher
    with `evaluate`, and writes `<output_dir>/model.keras` (the student alone),
    `metrics.json` and `distillation.json`.

    Returns:
        The student and a summary: speed, history, parameters, evaluation of both models.
    """
    built: list[Distiller] = []

    def build_distiller() -> Distiller:
        teacher = load_teacher(student_config.teacher, task_class)
        source = teacher
        if student_config.initial_student is not None:
            source = load_teacher(student_config.initial_student, task_class)
        student = initialize_student(
            source,
            student_config.num_layers,
            student_config.hidden_size,
            student_config.teacher_layers,
        )
        built.append(Distiller(teacher, student, student_config.losses))
        return built[-1]

    distiller, summary = fit_model(build_distiller, config, train_dataset, num_train_examples)
    summary["teacher_parameters"] = distiller.teacher.count_params()
    summary["student_parameters"] = distiller.student.count_params()
    if evaluate is not None:
        summary["evaluation"] = evaluate(distiller.student)
        summary["teacher_evaluation"] = evaluate(distiller.teacher)
    save_run(distiller.student, summary, config)
    distillation = json.dumps(dataclasses.asdict(student_config), indent=2)
    Path(config.output_dir, "distillation.json").write_text(distillation)
    return distiller.student, summary


# The labelled tasks' batches (examples, preprocessor, label ids, batch size, ...) and scores
# (model, preprocessor, examples).
LABELLED_TASKS: dict[type[BertTask], tuple[Callable[..., tf.data.Dataset], Callable]] = {
    BertClassifier: (classification_dataset, evaluate_classifier),
    BertTokenClassifier: (token_classification_dataset, evaluate_token_classifier),
}


def _distill_labelled(
    config: FinetuningConfig,
    student_config: StudentConfig,
    task_class: type[BertTask],
    examples: Any,
    label_ids: Sequence,
    evaluation: Any | None,
) -> tuple[BertTask, dict]:
    """`distill_task_model` on labelled and unlabelled `examples` (`label_ids`: `IGNORED_LABEL`
    where unlabelled) in the task's batches (`LABELLED_TASKS`) with the vocabulary of
    `config.checkpoint`, student and teacher scored on `evaluation` (if any)."""
    task_dataset, evaluate = LABELLED_TASKS[task_class]
    checkpoint = find_run_checkpoint(config, weights=False)
    preprocessor = checkpoint_preprocessor(checkpoint, config.seq_length)
    train_dataset = task_dataset(
        examples,
        preprocessor,
        label_ids,
        config.batch_size,
        shuffle=True,
        seed=config.run.seed,
        length_bucketing=config.length_bucketing,
    )
    return distill_task_model(
        config,
        student_config,
        task_class,
        train_dataset,
        len(examples),
        evaluate=None
        if evaluation is None
        else lambda model: evaluate(model, preprocessor, evaluation),
    )


def distill_classifier(
    config: FinetuningConfig,
    student_config: StudentConfig,
    train: ClassificationExamples,
    unlabeled_texts: Sequence[str] = (),
    evaluation: ClassificationExamples | None = None,
) -> tuple[BertClassifier, dict]:
    """Distills a fine-tuned `BertClassifier` over `train` and `unlabeled_texts`; evaluates
    student and teacher on `evaluation`; writes `<output_dir>/model.keras` (the student, an
    ordinary `BertClassifier`) and `metrics.json`.

    `config.checkpoint` provides the vocabulary (the teacher's); `config.epochs` count passes
    over the training and unlabeled texts together.
    """
    if config.max_train_examples:
        train = train.sample(config.max_train_examples, seed=config.run.seed)
    if unlabeled_texts and train.text_pairs is not None:
        raise DataError("Unlabeled text is single texts; the training set holds text pairs.")
    label_names = load_teacher(student_config.teacher, BertClassifier).label_names
    if label_names is None:
        raise DataError(f"{student_config.teacher} is a regressor; distillation needs classes.")
    texts = ClassificationExamples(
        texts=[*train.texts, *unlabeled_texts],
        labels=[*train.labels, *[None] * len(unlabeled_texts)],
        text_pairs=train.text_pairs,
    )
    label_ids = np.concatenate(
        [
            encode_labels(train.labels, label_names),
            np.full(len(unlabeled_texts), IGNORED_LABEL, np.int32),
        ]
    )
    return _distill_labelled(config, student_config, BertClassifier, texts, label_ids, evaluation)


def distill_token_classifier(
    config: FinetuningConfig,
    student_config: StudentConfig,
    train: TaggedSentences,
    unlabeled_texts: Sequence[str] = (),
    evaluation: TaggedSentences | None = None,
) -> tuple[BertTokenClassifier, dict]:
    """`distill_classifier` for a `BertTokenClassifier`: unlabeled texts are split into words
    at whitespace; entity scores of student and teacher on `evaluation`."""
    if config.max_train_examples:
        train = train.sample(config.max_train_examples, seed=config.run.seed)
    tag_names = load_teacher(student_config.teacher, BertTokenClassifier).label_names
    unlabeled_words = [text.split() for text in unlabeled_texts]
    sentences = TaggedSentences(
        [*train.words, *unlabeled_words],
        [*train.tags, *[[None] * len(words) for words in unlabeled_words]],
    )
    tag_ids = encode_tags(train, tag_names) + [
        [IGNORED_LABEL] * len(words) for words in unlabeled_words
    ]
    return _distill_labelled(
        config, student_config, BertTokenClassifier, sentences, tag_ids, evaluation
    )
