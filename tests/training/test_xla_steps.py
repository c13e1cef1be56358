"""The path TPUStrategy takes: one `jit_compile=True` train step of every model, on static
shapes, gives the loss of the plain step (dropout off, same weights and batch)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.data import (
    PretrainingDataConfig,
    create_pretraining_tfrecords,
    read_text_documents,
    split_features,
    tokenize_documents,
)
from keras_bert.data.tfrecords import read_pretraining_tfrecords
from keras_bert.models import (
    BertClassifier,
    BertQuestionAnswerer,
    BertTokenClassifier,
    ElectraPretrainer,
)
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.text import WordPieceTokenizer, load_vocabulary
from keras_bert.training import create_optimizer

pytestmark = pytest.mark.slow

SEQ_LENGTH = 32
CONFIG = BertConfig.preset(
    "tiny", num_layers=1, hidden_size=64, dropout_rate=0.0, attention_dropout_rate=0.0
)


def _first_step_loss(build, batch, jit_compile: bool) -> float:
    keras.utils.set_random_seed(0)
    model = build()
    model.compile(
        optimizer=create_optimizer(1e-3, total_steps=10),
        jit_compile=jit_compile,
        steps_per_execution=2,
    )
    dataset = tf.data.Dataset.from_tensors(batch).repeat(2)
    history = model.fit(dataset, epochs=1, verbose=0)
    return history.history["loss"][0]


def _assert_xla_matches(build, batch):
    plain = _first_step_loss(build, batch, jit_compile=False)
    compiled = _first_step_loss(build, batch, jit_compile=True)
    assert np.isfinite(plain) and abs(compiled - plain) <= 1e-4 * max(1.0, abs(plain))


@pytest.fixture(scope="module")
def pretraining_batch(tmp_path_factory, data_dir, minilm_dir):
    """A batch of static examples read back from TFRecords, as a TPU job reads them."""
    vocabulary_file = str(minilm_dir / "vocab.txt")
    documents = read_text_documents(data_dir / "pretraining" / "wikipedia_sample.txt")[:4]
    directory = tmp_path_factory.mktemp("static_examples")
    data = PretrainingDataConfig(seq_length=SEQ_LENGTH, masking={"max_predictions_per_seq": 5})
    create_pretraining_tfrecords(
        tokenize_documents(documents, WordPieceTokenizer(vocabulary_file)),
        load_vocabulary(vocabulary_file),
        directory,
        data,
        dupe_factor=1,
    )
    dataset = read_pretraining_tfrecords(str(directory / "*"), 8, SEQ_LENGTH, 5, seed=0)
    return next(iter(dataset.map(split_features)))


def test_pretrainer_xla_step_from_tfrecords(pretraining_batch):
    _assert_xla_matches(lambda: BertPretrainer(CONFIG), pretraining_batch)


def test_electra_pretrainer_xla_step_from_tfrecords(pretraining_batch):
    """ELECTRA's step, the generator's draws included: the draw is XLA's in both steps."""
    inputs, labels, weights = pretraining_batch
    masking = {"masked_lm_ids": labels["masked_lm"], "masked_lm_weights": weights["masked_lm"]}
    batch = (
        {**inputs, **masking},
        {"masked_lm": labels["masked_lm"]},
        {"masked_lm": weights["masked_lm"]},
    )
    discriminator = CONFIG.replace(model_type="electra", pooler=False)
    _assert_xla_matches(lambda: ElectraPretrainer(discriminator, seed=0), batch)


def _inputs(batch_size: int = 8) -> dict:
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, SEQ_LENGTH + 1, batch_size)
    mask = (np.arange(SEQ_LENGTH)[None] < lengths[:, None]).astype("int32")
    return {
        "input_word_ids": (rng.integers(5, 1000, (batch_size, SEQ_LENGTH)) * mask).astype("int32"),
        "input_mask": mask,
        "input_type_ids": np.zeros_like(mask),
    }


TASKS = {
    "classifier": (
        lambda: BertClassifier(BertEncoder(CONFIG), num_classes=3, dropout_rate=0.0),
        lambda inputs: np.arange(len(inputs["input_mask"])) % 3,
    ),
    "token_classifier": (
        lambda: BertTokenClassifier(
            BertEncoder(CONFIG), label_names=["O", "B-x", "I-x"], dropout_rate=0.0
        ),
        lambda inputs: np.where(inputs["input_mask"] > 0, inputs["input_word_ids"] % 3, -100),
    ),
    "question_answerer": (
        lambda: BertQuestionAnswerer(BertEncoder(CONFIG)),
        lambda inputs: {
            "start_logits": np.full(len(inputs["input_mask"]), 2),
            "end_logits": np.full(len(inputs["input_mask"]), 3),
        },
    ),
}


@pytest.mark.parametrize("task", sorted(TASKS))
def test_task_model_xla_step(task):
    build, labels = TASKS[task]
    inputs = _inputs()
    _assert_xla_matches(build, (inputs, labels(inputs)))
