"""Which teacher layers a student starts from and learns from, and its initialisation."""

import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.config import ConfigError
from keras_bert.distillation import initialize_student, layer_map, spread_layers
from keras_bert.models import BertClassifier, BertTokenClassifier

INPUTS = {
    "input_word_ids": np.array([[2, 17, 33, 9, 3, 0], [2, 40, 3, 0, 0, 0]]),
    "input_mask": np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]]),
    "input_type_ids": np.zeros((2, 6), "int32"),
}


def tiny_encoder(num_layers: int = 4) -> BertEncoder:
    return BertEncoder(BertConfig.preset("tiny", vocab_size=100, num_layers=num_layers))


def test_spread_layers_takes_first_last_and_even_steps():
    assert spread_layers(12, 6) == [0, 2, 4, 7, 9, 11]  # DistilBERT's choice
    assert spread_layers(6, 3) == [0, 3, 5]
    assert spread_layers(6, 2) == [0, 5]
    assert spread_layers(6, 6) == list(range(6))
    assert spread_layers(6, 1) == [5]


def test_layer_map_is_tinybert_uniform_strategy():
    assert layer_map(12, 4) == [2, 5, 8, 11]  # k = 3: student layer m learns from 3m
    assert layer_map(12, 6) == [1, 3, 5, 7, 9, 11]
    assert layer_map(6, 3) == [1, 3, 5]
    assert layer_map(6, 2) == [2, 5]
    assert layer_map(6, 6) == list(range(6))
    for teacher_layers, student_layers in [(6, 7), (6, 0)]:
        with pytest.raises(ConfigError, match="1 to 6 layers"):
            layer_map(teacher_layers, student_layers)


@pytest.mark.parametrize("task", ["classifier", "token_classifier"])
def test_student_copies_chosen_layers_embeddings_pooler_and_head(task):
    if task == "classifier":
        teacher = BertClassifier(tiny_encoder(), 3, label_names=["a", "b", "c"])
    else:
        teacher = BertTokenClassifier(tiny_encoder(), ["O", "B-x", "I-x"])
    student = initialize_student(teacher, num_layers=2)
    assert type(student) is type(teacher) and student.label_names == teacher.label_names
    assert student.encoder.bert_config.num_layers == 2
    pairs = [(teacher.encoder.blocks[0], student.encoder.blocks[0])]
    pairs += [(teacher.encoder.blocks[3], student.encoder.blocks[1])]
    pairs += [(teacher.encoder.embeddings, student.encoder.embeddings)]
    pairs += [(teacher.encoder.pooler, student.encoder.pooler)]
    head = "logits" if task == "classifier" else "token_logits"
    pairs += [(teacher.get_layer(head), student.get_layer(head))]
    for teacher_layer, student_layer in pairs:
        for expected, actual in zip(
            teacher_layer.get_weights(), student_layer.get_weights(), strict=True
        ):
            np.testing.assert_array_equal(actual, expected)
    # Every teacher layer copied: the same model.
    copy = initialize_student(teacher, num_layers=4)
    np.testing.assert_allclose(copy(INPUTS), teacher(INPUTS), atol=1e-6)


def test_student_from_chosen_layers():
    teacher = BertClassifier(tiny_encoder(), 2)
    student = initialize_student(teacher, num_layers=2, teacher_layers=[2, 1])
    for index, block in zip([2, 1], student.encoder.blocks, strict=True):
        expected = teacher.encoder.blocks[index].get_weights()
        np.testing.assert_array_equal(block.get_weights()[0], expected[0])
    with pytest.raises(ConfigError, match=r"teacher_layers must name 2 .* got \[1, 4\]"):
        initialize_student(teacher, num_layers=2, teacher_layers=[1, 4])


def test_narrower_student_is_fresh_with_the_teachers_heads():
    teacher = BertClassifier(tiny_encoder(), 2)
    student = initialize_student(teacher, num_layers=1, hidden_size=64)
    config = student.encoder.bert_config
    assert (config.num_layers, config.hidden_size, config.num_heads) == (1, 64, 2)
    assert config.intermediate_size == 256 and config.vocab_size == 100
    assert tuple(student(INPUTS).shape) == (2, 2)
    with pytest.raises(ConfigError, match="Cannot copy teacher layers"):
        initialize_student(teacher, num_layers=1, hidden_size=64, teacher_layers=[0])
