"""A small real pretraining setup for the training tests, and a way to run it in a process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest

from keras_bert.data import read_text_documents

ROOT = Path(__file__).resolve().parents[2]
# A model and data small enough for a few steps per second on two shared CPU cores.
SMALL_MODEL = {
    "vocab_size": 3000,
    "hidden_size": 32,
    "num_layers": 1,
    "num_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
}
# ELECTRA's objective over the small setup: an electra discriminator of SMALL_MODEL's size with
# factorized embeddings (E 16 → H 32), a generator half its width, ELECTRA's masking (85%
# [MASK], the rest kept); the run tests that concern every objective take both.
REPLACED_TOKEN_DETECTION = {
    "model_config": {**SMALL_MODEL, "model_type": "electra", "pooler": False, "embedding_size": 16},
    "data": {
        "seq_length": 32,
        "next_sentence_prediction": False,
        "masking": {"max_predictions_per_seq": 5, "mask_token_rate": 0.85, "random_token_rate": 0},
    },
    "replaced_token_detection": True,
    "generator_width": 0.5,
}
OBJECTIVES = {"masked_lm": {}, "replaced_token_detection": REPLACED_TOKEN_DETECTION}


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory, data_dir, minilm_dir):
    """15 real Wikipedia articles and the first 3,000 entries of the uncased vocabulary
    ([PAD], [UNK], [CLS], [SEP], [MASK], characters and the commonest words)."""
    directory = tmp_path_factory.mktemp("small_corpus")
    documents = read_text_documents(data_dir / "pretraining" / "wikipedia_sample.txt")[:15]
    corpus = directory / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(document) for document in documents), "utf-8")
    vocabulary = (minilm_dir / "vocab.txt").read_text("utf-8").split("\n")[:3000]
    vocabulary_file = directory / "vocab.txt"
    vocabulary_file.write_text("\n".join(vocabulary) + "\n", "utf-8")
    return {"input_files": [str(corpus)], "vocabulary_file": str(vocabulary_file)}


@pytest.fixture
def restore_dtype_policy():
    """Sets Keras' global dtype policy back to float32 after a test that changes it."""
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.fixture
def small_config(small_corpus, tmp_path):
    return {
        **small_corpus,
        "output_dir": str(tmp_path / "run"),
        "model_config": SMALL_MODEL,
        "data": {"seq_length": 32, "masking": {"max_predictions_per_seq": 5}},
        # Buffers for 15 documents (the defaults would hold several passes of them).
        "streaming": {
            "document_shuffle_buffer": 16,
            "instance_shuffle_buffer": 256,
            "segment_shuffle_buffer": 256,
        },
        "global_batch_size": 8,
        "total_steps": 40,
        "steps_per_checkpoint": 10,
        "run": {"learning_rate": 1e-3, "verbose": 0},
    }


def worker_command(spec: dict, spec_path: Path) -> list[str]:
    spec_path.write_text(json.dumps(spec), "utf-8")
    return [sys.executable, "-m", "tests.training.run_worker", str(spec_path)]


def worker_environment() -> dict:
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)}


def run_worker(spec: dict, spec_path: Path, timeout: float = 300) -> None:
    result = subprocess.run(
        worker_command(spec, spec_path),
        cwd=ROOT,
        env=worker_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr[-3000:]
