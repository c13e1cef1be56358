"""Fixtures of the text tests: the MiniLM (uncased) tokenizer and its `tokenizers` reference."""

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from keras_bert.text import BertPreprocessor, WordPieceTokenizer


@pytest.fixture(scope="session")
def hf_tokenizer(minilm_dir: Path) -> Tokenizer:
    """Hugging Face `tokenizers` from the checkpoint's tokenizer.json, no truncation/padding."""
    tokenizer = Tokenizer.from_file(str(minilm_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


@pytest.fixture(scope="session")
def tokenizer(minilm_dir: Path) -> WordPieceTokenizer:
    return WordPieceTokenizer(minilm_dir / "vocab.txt", lowercase=True)


@pytest.fixture(scope="session")
def preprocessor(minilm_dir: Path) -> BertPreprocessor:
    return BertPreprocessor.from_checkpoint(minilm_dir, seq_length=128)


def read_corpus_sentences(data_dir: Path) -> list[str]:
    """Every sentence of shared/data: pretraining lines, sentiment texts, NER token sequences."""
    sentences = []
    for path in sorted((data_dir / "pretraining").glob("*.txt")):
        sentences += [line for line in path.read_text(encoding="utf-8").split("\n") if line]
    for path in sorted((data_dir / "sentiment").glob("*.jsonl")):
        sentences += [json.loads(line)["text"] for line in path.read_text().splitlines()]
    for path in sorted((data_dir / "ner").glob("*.jsonl")):
        sentences += [
            " ".join(json.loads(line)["tokens"]) for line in path.read_text().splitlines()
        ]
    return sentences


@pytest.fixture(scope="session")
def corpus_sentences(data_dir: Path) -> list[str]:
    return read_corpus_sentences(data_dir)
