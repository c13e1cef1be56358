"""GLUE's tasks, read from the TSV files of GLUE's download or through tensorflow-datasets.

Each task is known by its tfds spelling (`cola`, `sst2`, `mrpc`, `stsb`, `qqp`, `mnli`, `qnli`,
`rte`, `wnli`; `ax` is MNLI's diagnostic set): its directory, columns, label names and metrics,
so no column flags are needed. The files are read as GLUE's own processors read them: tab
separated with no quoting (RTE and MNLI hold bare `"` characters inside fields), a UTF-8 byte-order
mark ignored (MRPC's header starts with one), CRLF or LF line endings, CoLA's train and dev files
without a header (its test file has one), and `test.tsv` without labels. Class labels use tfds's
names in tfds's order (MRPC's `1` is `equivalent`), so a model trained from the files and one
trained through tfds answer alike.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import logging
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from keras_bert.data.classification import ClassificationExamples, load_tfds_classification
from keras_bert.data.utf8_files import read_utf8
from keras_bert.errors import DataError

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """What a GLUE task is: its files, columns, labels and metrics.

    Args:
        name: tfds's spelling (`glue/<name>`).
        directory: the task's directory in GLUE's download (`MRPC`).
        text_column: the header of the text column.
        pair_column: the header of the second text of a pair (None for single sentences).
        label_column: the header of the label column.
        label_names: the classes as tfds names them, in its order; None for regression.
        file_labels: how the TSV files spell each class, in the order of `label_names`.
        metrics: the task's metrics, by name (`accuracy`, `f1`, `mcc`, `pearson`,
            `spearman`); their mean is the task's GLUE score.
        split_files: file name of each split; `test*` splits have no labels.
        submission_files: the GLUE server's file name of each test split's predictions.
        headerless_columns: the columns of files that have no header (CoLA's train and dev).
        labelled_by: the task whose model predicts this one (AX: MNLI's); None for itself.
    """

    name: str
    directory: str
    text_column: str
    pair_column: str | None
    label_column: str
    label_names: tuple[str, ...] | None
    file_labels: tuple[str, ...] | None
    metrics: tuple[str, ...]
    split_files: dict[str, str] = dataclasses.field(
        default_factory=lambda: {"train": "train.tsv", "validation": "dev.tsv", "test": "test.tsv"}
    )
    submission_files: dict[str, str] = dataclasses.field(default_factory=dict)
    headerless_columns: tuple[str, ...] | None = None
    labelled_by: str | None = None

    @property
    def is_regression(self) -> bool:
        return self.label_names is None

    @property
    def evaluation_splits(self) -> list[str]:
        """The labelled splits that are not `train` (MNLI: matched and mismatched)."""
        return [s for s in self.split_files if s != "train" and not s.startswith("test")]

    @property
    def test_splits(self) -> list[str]:
        return [split for split in self.split_files if split.startswith("test")]


_BINARY = ("0", "1")
_ENTAILMENT = ("entailment", "not_entailment")
_NLI = ("entailment", "neutral", "contradiction")
_MNLI_FILES = {
    "train": "train.tsv",
    "validation_matched": "dev_matched.tsv",
    "validation_mismatched": "dev_mismatched.tsv",
    "test_matched": "test_matched.tsv",
    "test_mismatched": "test_mismatched.tsv",
}

GLUE_TASKS: dict[str, GlueTask] = {
    task.name: task
    for task in (
        GlueTask(
            "cola", "CoLA", "sentence", None, "label", ("unacceptable", "acceptable"), _BINARY,
            ("mcc",), submission_files={"test": "CoLA.tsv"},
            headerless_columns=("source", "label", "original_label", "sentence"),
        ),
        GlueTask(
            "sst2", "SST-2", "sentence", None, "label", ("negative", "positive"), _BINARY,
            ("accuracy",), submission_files={"test": "SST-2.tsv"},
        ),
        GlueTask(
            "mrpc", "MRPC", "#1 String", "#2 String", "Quality",
            ("not_equivalent", "equivalent"), _BINARY, ("f1", "accuracy"),
            submission_files={"test": "MRPC.tsv"},
        ),
        GlueTask(
            "stsb", "STS-B", "sentence1", "sentence2", "score", None, None,
            ("pearson", "spearman"), submission_files={"test": "STS-B.tsv"},
        ),
        GlueTask(
            "qqp", "QQP", "question1", "question2", "is_duplicate",
            ("not_duplicate", "duplicate"), _BINARY, ("f1", "accuracy"),
            submission_files={"test": "QQP.tsv"},
        ),
        GlueTask(
            "mnli", "MNLI", "sentence1", "sentence2", "gold_label", _NLI, _NLI, ("accuracy",),
            split_files=_MNLI_FILES,
            submission_files={"test_matched": "MNLI-m.tsv", "test_mismatched": "MNLI-mm.tsv"},
        ),
        GlueTask(
            "qnli", "QNLI", "question", "sentence", "label", _ENTAILMENT, _ENTAILMENT,
            ("accuracy",), submission_files={"test": "QNLI.tsv"},
        ),
        GlueTask(
            "rte", "RTE", "sentence1", "sentence2", "label", _ENTAILMENT, _ENTAILMENT,
            ("accuracy",), submission_files={"test": "RTE.tsv"},
        ),
        GlueTask(
            "wnli", "WNLI", "sentence1", "sentence2", "label", ("not_entailment", "entailment"),
            _BINARY, ("accuracy",), submission_files={"test": "WNLI.tsv"},
        ),
        GlueTask(
            "ax", "diagnostic", "sentence1", "sentence2", "label", _NLI, _NLI, ("mcc",),
            split_files={"test": "diagnostic.tsv"}, submission_files={"test": "AX.tsv"},
            labelled_by="mnli",
        ),
    )
}  # fmt: skip


def glue_task(name: str) -> GlueTask:
    """The task of a name in tfds's (`sst2`) or GLUE's spelling (`SST-2`), any case.

    Example:
    >>> glue_task("STS-B").name, glue_task("mrpc").metrics
    ('stsb', ('f1', 'accuracy'))
    """
    key = name.lower().replace("-", "").removeprefix("glue/")
    if key not in GLUE_TASKS:
        raise DataError(f"Unknown GLUE task {name!r}; the tasks are {', '.join(GLUE_TASKS)}.")
    return GLUE_TASKS[key]


@dataclasses.dataclass
class GlueSplit:
    """One split of a GLUE task: its examples, with labels None in a test split and `ids` the
    indices that GLUE's server knows them by (a test file's `index` column)."""

    task: GlueTask
    split: str
    examples: ClassificationExamples

    @property
    def is_labelled(self) -> bool:
        return self.examples.labels is not None

    def __len__(self) -> int:
        return len(self.examples)


def glue_task_directory(data_dir: str | Path, task: GlueTask) -> Path:
    """`data_dir/<directory>` of a task (`MRPC`), found whatever its case."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"{data_dir}: no such GLUE data directory.")
    for child in sorted(data_dir.iterdir()):
        if child.is_dir() and child.name.lower() == task.directory.lower():
            return child
    raise FileNotFoundError(f"{data_dir}: no {task.directory} directory for GLUE's {task.name}.")


def available_glue_tasks(data_dir: str | Path) -> list[GlueTask]:
    """The tasks (in GLUE's order) whose directory holds a training file, for `--tasks all`."""
    found = []
    for task in GLUE_TASKS.values():
        try:
            directory = glue_task_directory(data_dir, task)
        except FileNotFoundError:
            continue
        if (directory / task.split_files.get("train", "")).is_file():
            found.append(task)
    return found


def _rows(path: Path) -> list[list[str]]:
    """A TSV file's rows as GLUE reads them: no quoting, byte-order mark and CR dropped."""
    file = io.StringIO(read_utf8(path).removeprefix("\ufeff"), newline="")
    rows = csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE)
    return [[field.rstrip("\r") for field in row] for row in rows if any(row)]


def read_glue_split(data_dir: str | Path, task: str | GlueTask, split: str) -> GlueSplit:
    """Reads one split of a GLUE task from its original TSV file.

    Args:
        data_dir: the directory of GLUE's download (holding `CoLA/`, `MRPC/`, ...).
        task: a `GlueTask` or a name (`glue_task`).
        split: one of the task's `split_files` (`train`, `validation`, `test`; MNLI's
            `validation_matched` ...); `validation` also names MNLI's matched split.

    Example:
    >>> mrpc = read_glue_split("../shared/data/benchmarks/glue", "mrpc", "validation")
    >>> len(mrpc), mrpc.examples.labels[0], mrpc.examples.text_pairs is not None
    (408, 'equivalent', True)
    """
    task = task if isinstance(task, GlueTask) else glue_task(task)
    if split == "validation" and split not in task.split_files:
        split = "validation_matched"
    if split not in task.split_files:
        raise DataError(
            f"GLUE's {task.name} has no split {split!r}: {', '.join(task.split_files)}."
        )
    path = glue_task_directory(data_dir, task) / task.split_files[split]
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file ({task.name}'s {split} split).")
    rows = _rows(path)
    if not rows:
        raise DataError(f"{path}: the file is empty ({task.name}'s {split} split).")
    labelled = not split.startswith("test")
    columns = [task.text_column] + ([task.pair_column] if task.pair_column else [])
    columns += [task.label_column] if labelled else []
    if task.headerless_columns and task.text_column not in rows[0]:
        header, records = list(task.headerless_columns), rows
    else:
        header, records = rows[0], rows[1:]
    missing = [column for column in columns if column not in header]
    if missing:
        raise DataError(
            f"{path}: no column {', '.join(map(repr, missing))} in its header {header}; "
            f"is it GLUE's {task.directory} {split} file?"
        )
    positions = [header.index(column) for column in columns]
    id_position = next((header.index(n) for n in ("index", "id") if n in header), None)
    kept, skipped = [], 0
    for record in records:
        if len(record) <= max(positions):
            skipped += 1  # as GLUE's processors skip QQP's broken lines
            continue
        kept.append(record)
    if skipped:
        logger.warning(
            "%s: skipped %d lines with fewer than %d fields.", path, skipped, len(header)
        )
    if not kept:
        raise DataError(f"{path}: the file holds no examples.")
    texts = [record[positions[0]] for record in kept]
    pairs = [record[positions[1]] for record in kept] if task.pair_column else None
    labels = _labels(path, task, [record[positions[-1]] for record in kept]) if labelled else None
    ids = [str(n) if id_position is None else record[id_position] for n, record in enumerate(kept)]
    return GlueSplit(task, split, ClassificationExamples(texts, labels, pairs, ids))


def _labels(path: Path, task: GlueTask, values: list[str]) -> list:
    """Class names (tfds's) or float scores of a column's values; a bad value is an error."""
    if task.is_regression:
        try:
            scores = [float(value) for value in values]
        except ValueError as error:
            raise DataError(f"{path}: a score that is not a number: {error}") from None
        if not all(math.isfinite(score) for score in scores):
            raise DataError(f"{path}: a score that is not finite.")
        return scores
    names = dict(zip(task.file_labels, task.label_names, strict=True))
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise DataError(
            f"{path}: labels {', '.join(map(repr, unknown[:5]))} are not {task.name}'s "
            f"({', '.join(map(repr, task.file_labels))})."
        )
    return [names[value] for value in values]


def load_tfds_glue(
    task: str | GlueTask, split: str, data_dir: str | Path | None = None, download: bool = True
) -> GlueSplit:
    """One split of a GLUE task through `tfds.load("glue/<name>")`, as `read_glue_split` gives
    it (a test split unlabelled, tfds's `idx` as the ids)."""
    task = task if isinstance(task, GlueTask) else glue_task(task)
    if split == "validation" and "validation" not in task.split_files:
        split = "validation_matched"
    examples, _ = load_tfds_classification(
        f"glue/{task.name}", split, data_dir=data_dir, download=download
    )
    if split.startswith("test"):  # tfds's test labels are -1, STS-B's included
        examples.labels = None
    if not len(examples):
        raise DataError(f"glue/{task.name} {split}: no examples.")
    return GlueSplit(task, split, examples)


def glue_predictions_as_submitted(task: GlueTask, outputs: np.ndarray) -> list[str]:
    """A test split's predictions as GLUE's server reads them: the file's label spelling, or
    an STS-B score clipped to 0-5 with 3 decimals.

    Example:
    >>> glue_predictions_as_submitted(glue_task("rte"), np.array([[0.2, 0.9], [3.0, 1.0]]))
    ['not_entailment', 'entailment']
    >>> glue_predictions_as_submitted(glue_task("stsb"), np.array([[5.4], [2.25]]))
    ['5.000', '2.250']
    """
    if task.is_regression:
        return [f"{score:.3f}" for score in np.clip(outputs[:, 0], 0.0, 5.0)]
    return [task.file_labels[index] for index in np.asarray(outputs).argmax(-1)]


def write_glue_submission(path: str | Path, ids: Sequence[str], predictions: Sequence[str]) -> Path:
    """Writes a GLUE server file (`index<TAB>prediction` per test example)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["index\tprediction", *(f"{i}\t{p}" for i, p in zip(ids, predictions, strict=True))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
