"""Sentence (pair) classification and regression data: readers and `tf.data` pipelines."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import tensorflow as tf

from keras_bert.data.batching import batch_by_length, trim_padding
from keras_bert.data.prefetching import prefetched
from keras_bert.data.utf8_files import read_utf8
from keras_bert.errors import DataError

# Text and label features of common tfds classification datasets.
TFDS_FEATURES = {
    "glue/sst2": ("sentence", None, "label"),
    "glue/cola": ("sentence", None, "label"),
    "glue/mnli": ("premise", "hypothesis", "label"),
    "glue/mrpc": ("sentence1", "sentence2", "label"),
    "glue/qnli": ("question", "sentence", "label"),
    "glue/qqp": ("question1", "question2", "label"),
    "glue/rte": ("sentence1", "sentence2", "label"),
    "glue/stsb": ("sentence1", "sentence2", "label"),
    "glue/wnli": ("sentence1", "sentence2", "label"),
    "glue/ax": ("premise", "hypothesis", "label"),
    "imdb_reviews": ("text", None, "label"),
}


@dataclasses.dataclass
class ClassificationExamples:
    """Texts (optionally pairs) and their labels: strings for classes, floats for regression,
    None where the labels are not known (a benchmark's test split); `ids` name the examples
    where their source does (the index a benchmark's server knows them by)."""

    texts: list[str]
    labels: list | None
    text_pairs: list[str] | None = None
    ids: list[str] | None = None

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def segments(self) -> tuple[list[str], ...]:
        return (self.texts,) if self.text_pairs is None else (self.texts, self.text_pairs)

    def sample(self, count: int, seed: int = 0) -> ClassificationExamples:
        """`count` examples drawn at random without replacement (all of them if fewer)."""
        chosen = np.random.default_rng(seed).permutation(len(self))[:count]

        def pick(values: list | None) -> list | None:
            return None if values is None else [values[index] for index in chosen]

        return ClassificationExamples(
            pick(self.texts), pick(self.labels), pick(self.text_pairs), pick(self.ids)
        )


def _read_rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such data file.")
    if path.suffix == ".jsonl":
        rows = []
        for line_number, line in enumerate(read_utf8(path).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise DataError(f"{path}:{line_number}: not a JSON object: {error}") from None
        return rows
    if path.suffix in (".csv", ".tsv"):
        file = io.StringIO(read_utf8(path), newline="")
        return list(csv.DictReader(file, delimiter="\t" if path.suffix == ".tsv" else ","))
    raise DataError(f"Unknown data format {path.suffix!r} of {path}; use .jsonl, .csv or .tsv.")


def read_classification_file(
    path: str | Path,
    text_column: str = "text",
    label_column: str = "label",
    text_pair_column: str | None = None,
    regression: bool = False,
) -> ClassificationExamples:
    """Reads a JSONL, CSV or TSV file with a text column, an optional pair column and labels.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "train.jsonl"
    >>> _ = path.write_text('{"text": "Loved it", "label": "pos"}\\n')
    >>> read_classification_file(path).labels
    ['pos']
    """
    path = Path(path)
    rows = _read_rows(path)
    if not rows:
        raise DataError(f"{path}: the file holds no examples.")
    columns = [text_column, label_column] + ([text_pair_column] if text_pair_column else [])
    for row_number, row in enumerate(rows, start=1):
        missing = [column for column in columns if row.get(column) is None]
        if missing:
            raise DataError(f"{path}: record {row_number} has no {', '.join(missing)}.")
    labels = [row[label_column] for row in rows]
    if regression:
        labels = [float(label) for label in labels]
    else:
        labels = [str(label) for label in labels]
    return ClassificationExamples(
        texts=[str(row[text_column]) for row in rows],
        labels=labels,
        text_pairs=[str(row[text_pair_column]) for row in rows] if text_pair_column else None,
    )


def load_tfds_classification(
    name: str,
    split: str,
    data_dir: str | Path | None = None,
    features: tuple[str, str | None, str] | None = None,
    download: bool = True,
) -> tuple[ClassificationExamples, list[str] | None]:
    """Loads a classification dataset through `tfds.load`, with its label names.

    Args:
        name: a tfds name such as "glue/sst2" or "glue/mnli".
        split: e.g. "train" or "validation_matched".
        data_dir: the tfds data directory.
        features: (text, text pair or None, label) feature names; known for `TFDS_FEATURES`.
        download: whether tfds may download and prepare the data (needs the network).

    Returns:
        The examples (labels as class names, or floats for regression datasets; None for a
        test split without labels; ids from tfds's `idx` where it has one) and the class names
        (None for regression).
    """
    import tensorflow_datasets as tfds

    features = features or TFDS_FEATURES.get(name)
    if features is None:
        raise DataError(f"Name the text and label features of {name!r}: features=(...).")
    text_key, pair_key, label_key = features
    dataset, info = tfds.load(
        name, split=split, data_dir=data_dir, download=download, with_info=True
    )
    label_feature = info.features[label_key]
    label_names = list(getattr(label_feature, "names", None) or []) or None
    texts, pairs, labels, ids = [], [], [], []
    unlabelled = False
    for example in tfds.as_numpy(dataset):
        texts.append(example[text_key].decode("utf-8"))
        if pair_key:
            pairs.append(example[pair_key].decode("utf-8"))
        if "idx" in example:
            ids.append(str(int(example["idx"])))
        label = example[label_key]
        # tfds labels the examples of an unlabelled test split -1.
        unlabelled |= bool(label_names) and int(label) < 0
        labels.append(label_names[int(label)] if label_names else float(label))
    labels = None if unlabelled else labels
    examples = ClassificationExamples(texts, labels, pairs if pair_key else None, ids or None)
    return examples, label_names


def encode_labels(labels: Sequence[str], label_names: Sequence[str]) -> np.ndarray:
    """Class ids of `labels` in `label_names`; a label unseen in training is an error."""
    index = {name: position for position, name in enumerate(label_names)}
    unseen = sorted({label for label in labels if label not in index})
    if unseen:
        raise DataError(
            f"Labels not seen in training: {', '.join(map(repr, unseen[:10]))}; "
            f"known labels: {', '.join(map(repr, label_names))}."
        )
    return np.array([index[label] for label in labels], np.int32)


def packed_lengths(examples: ClassificationExamples, preprocessor) -> np.ndarray:
    """The packed length of every example: its tokens, [CLS] and [SEP]s, at most seq_length."""
    lengths = len(examples.segments) + 1
    for segment in examples.segments:
        lengths += np.asarray(preprocessor.tokenizer(tf.constant(segment)).row_lengths())
    return np.minimum(lengths, preprocessor.seq_length).astype(np.int32)


def classification_dataset(
    examples: ClassificationExamples,
    preprocessor,
    label_ids: np.ndarray,
    batch_size: int,
    shuffle: bool = False,
    seed: int | None = 0,
    dynamic_padding: bool = True,
    drop_remainder: bool = False,
    length_bucketing: bool = False,
) -> tf.data.Dataset:
    """Batches of `(inputs, labels)`, tokenized and packed in the `tf.data` graph.

    With `length_bucketing`, each batch holds texts of similar token length (buckets 8 tokens
    wide), so that, with `dynamic_padding`, little compute goes to padding: on the movie-review
    snippets (27 tokens on average) a batch is ~30 tokens long instead of ~51 for random
    batches. Batches are still drawn in shuffled order, and an epoch is every bucket's batches
    (the dataset's `cardinality`, so that `fit` counts them).

    Args:
        examples: the texts.
        preprocessor: a `BertPreprocessor`.
        label_ids: class ids (int) or regression targets (float), one per example.
        batch_size: examples per batch.
        shuffle: reshuffle every epoch (deterministic under `seed`).
        seed: the shuffle seed; None leaves it to TensorFlow's global seed
            (`keras.utils.set_random_seed`).
        dynamic_padding: cut each batch to its longest sequence instead of `seq_length`.
        drop_remainder: drop a last, smaller batch (fixed shapes for TPUs).
        length_bucketing: batch texts of similar length together.
    """
    if len(label_ids) != len(examples):
        raise DataError(f"{len(label_ids)} labels for {len(examples)} examples.")
    if not length_bucketing:
        dataset = tf.data.Dataset.from_tensor_slices((examples.segments, label_ids))
        if shuffle:
            dataset = dataset.shuffle(len(examples), seed=seed, reshuffle_each_iteration=True)
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    else:
        lengths = packed_lengths(examples, preprocessor)
        dataset = tf.data.Dataset.from_tensor_slices((examples.segments, label_ids, lengths))
        if shuffle:
            dataset = dataset.shuffle(len(examples), seed=seed, reshuffle_each_iteration=True)
        dataset = batch_by_length(
            dataset,
            lambda segments, labels, length: length,
            lengths,
            batch_size,
            preprocessor.seq_length,
            drop_remainder,
        ).map(lambda segments, labels, length: (segments, labels))
    dataset = dataset.map(
        lambda segments, labels: (preprocessor(tuple(tf.unstack(segments))), labels),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if dynamic_padding:
        dataset = dataset.map(trim_padding)
    return prefetched(dataset)
