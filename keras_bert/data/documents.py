"""Reading pretraining text: BERT-format text files and TensorFlow Datasets, as documents."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

# A sentence ends at ., ! or ? (optionally followed by closing quotes or brackets) before
# whitespace and an upper-case letter, a digit or an opening quote. Used only for tfds text,
# which has no sentence per line; the BERT-format files are split already.
_SENTENCE_BOUNDARY = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[A-Z0-9\"'(\[])")

Document = list[str]


def read_text_documents(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Document]:
    """Reads files in the original BERT pretraining format: one sentence per line, a blank line
    between documents.

    Args:
        paths: a file or a list of files; documents never span two files.

    Returns:
        The documents, each a list of sentences (stripped, non-empty), in file order; invalid
        UTF-8 replaced by U+FFFD, as the in-graph tokenizers replace it in the streamed files.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "corpus.txt"
    >>> _ = path.write_text("First doc.\\nSecond line.\\n\\nOther doc.\\n")
    >>> read_text_documents(path)
    [['First doc.', 'Second line.'], ['Other doc.']]
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    documents: list[Document] = []
    for path in paths:
        current: Document = []
        with open(path, encoding="utf-8", errors="replace") as file:
            for line in file:
                line = line.strip()
                if line:
                    current.append(line)
                elif current:
                    documents.append(current)
                    current = []
        if current:
            documents.append(current)
    return documents


def split_sentences(text: str) -> Document:
    """Splits running text into sentences: at line breaks, then at sentence-final punctuation."""
    sentences = []
    for line in text.splitlines():
        sentences += [part.strip() for part in _SENTENCE_BOUNDARY.split(line) if part.strip()]
    return sentences


def documents_from_texts(texts: Iterable[str | bytes]) -> list[Document]:
    """One document per text (e.g. one Wikipedia article), split into sentences."""
    documents = []
    for text in texts:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        sentences = split_sentences(text)
        if sentences:
            documents.append(sentences)
    return documents


def load_tfds_documents(
    name: str,
    split: str = "train",
    data_dir: str | os.PathLike | None = None,
    text_feature: str = "text",
    download: bool = True,
) -> list[Document]:
    """Reads the documents of a TensorFlow Datasets text dataset (e.g. "wikipedia/20230601.en").

    This is `tfds.load`: it downloads and prepares the dataset into `data_dir` when needed
    (`download=True`) or reads an already prepared one. Every example is a document; its
    `text_feature` is split into sentences with `split_sentences`.

    Args:
        name: the tfds name, with config and version if needed.
        split: the split (tfds slicing syntax, e.g. "train[:1%]").
        data_dir: where tfds keeps prepared datasets (default: ~/tensorflow_datasets).
        text_feature: the feature holding the document text.
        download: whether tfds may download and prepare the dataset.
    """
    import tensorflow_datasets as tfds

    dataset = tfds.load(name, split=split, data_dir=data_dir, download=download)
    texts = (example[text_feature] for example in tfds.as_numpy(dataset))
    return documents_from_texts(texts)
