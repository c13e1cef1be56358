"""Fixtures of the data tests: the real pretraining corpus, tokenized once per session."""

from pathlib import Path

import pytest

from keras_bert.data import read_text_documents, tokenize_documents
from keras_bert.text import WordPieceTokenizer, load_vocabulary


@pytest.fixture(scope="session")
def vocabulary_file(minilm_dir) -> Path:
    return minilm_dir / "vocab.txt"


@pytest.fixture(scope="session")
def vocabulary(vocabulary_file) -> list[str]:
    return load_vocabulary(vocabulary_file)


@pytest.fixture(scope="session")
def wikipedia_documents(data_dir, vocabulary_file):
    """The 105 Wikipedia articles of shared/data/pretraining, tokenized (about 600k tokens)."""
    documents = read_text_documents(data_dir / "pretraining" / "wikipedia_sample.txt")
    return tokenize_documents(documents, WordPieceTokenizer(vocabulary_file))
