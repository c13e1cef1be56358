"""Vocabulary reading, casing inference and learning with tensorflow-text's WordPiece learner."""

import gc
import subprocess
import sys
from pathlib import Path

import pytest
import tensorflow as tf

from keras_bert.errors import DataError
from keras_bert.text import WordPieceTokenizer, infer_lowercase, load_vocabulary
from keras_bert.text.special_tokens import SPECIAL_TOKENS
from keras_bert.text.vocabulary import build_vocabulary
from tests.text.conftest import read_corpus_sentences


def _unk_rate(vocabulary: list[str], sentences: list[str]) -> float:
    ids = WordPieceTokenizer(vocabulary)(tf.constant(sentences)).flat_values
    return float(tf.reduce_mean(tf.cast(ids == vocabulary.index("[UNK]"), tf.float32)))


def test_minilm_vocabulary_is_uncased(minilm_dir):
    vocabulary = load_vocabulary(minilm_dir / "vocab.txt")
    assert len(vocabulary) == 30_522
    assert vocabulary[:1] == ["[PAD]"] and vocabulary[100:104] == [
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
    ]
    assert infer_lowercase(vocabulary)
    assert not infer_lowercase(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "Paris", "paris"])


def test_learned_vocabulary_covers_its_corpus(data_dir):
    sentences = read_corpus_sentences(data_dir)[:2000]
    vocabulary = build_vocabulary(
        tf.data.Dataset.from_tensor_slices(sentences).batch(512), vocab_size=1000
    )
    assert vocabulary[:5] == list(SPECIAL_TOKENS)
    assert 500 < len(vocabulary) <= 1000
    assert len(set(vocabulary)) == len(vocabulary)
    assert _unk_rate(vocabulary, sentences) < 0.002


def test_texts_without_words_are_a_data_error():
    with pytest.raises(DataError, match="hold no words"):
        build_vocabulary(tf.data.Dataset.from_tensor_slices(["", "  \n\t "]), vocab_size=100)


def test_a_vocabulary_list_is_written_for_the_tokenizer_and_removed_with_it(minilm_dir):
    vocabulary = load_vocabulary(minilm_dir / "vocab.txt")
    tokenizer = WordPieceTokenizer(vocabulary)
    written = Path(tokenizer.vocabulary_asset.asset_path.numpy().decode())
    assert load_vocabulary(written) == vocabulary
    del tokenizer
    gc.collect()
    assert not written.parent.exists()


@pytest.mark.slow
def test_build_vocab_pipeline_writes_a_vocab_file(data_dir, tmp_path):
    corpus = tmp_path / "corpus.txt"
    lines = (
        (data_dir / "pretraining" / "wikipedia_sample.txt").read_text(encoding="utf-8").split("\n")
    )
    corpus.write_text("\n".join(lines[:2000]), encoding="utf-8")
    output = tmp_path / "new_directory" / "vocab.txt"  # created by the pipeline
    command = [sys.executable, "-m", "pipelines.build_vocab", "--input_files", str(corpus)]
    command += ["--output", str(output)]
    subprocess.run(command + ["--vocab-size", "1500"], check=True, capture_output=True)
    vocabulary = load_vocabulary(output)
    assert vocabulary[:5] == list(SPECIAL_TOKENS) and 1000 < len(vocabulary) <= 1500
    assert _unk_rate(vocabulary, [line for line in lines[:2000] if line]) < 0.002
