import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints import CheckpointError, save_google_checkpoint
from keras_bert.models.pretrainer import (
    BertPretrainer,
    pretrainer_variables,
    pretraining_losses,
)
from tests.layer_checks import check_layer

TINY = BertConfig.preset(
    "tiny", vocab_size=50, max_position_embeddings=16, dropout_rate=0.0, attention_dropout_rate=0.0
)
INPUTS = {
    "input_word_ids": np.array([[2, 11, 4, 3, 0, 0], [2, 13, 3, 14, 4, 3]], "int32"),
    "input_mask": np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], "int32"),
    "input_type_ids": np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]], "int32"),
    "masked_lm_positions": np.array([[2, 0], [4, 1]], "int32"),
}


def test_pretrainer_layer_checks(tmp_path):
    model = BertPretrainer(TINY)
    check_layer(
        model,
        INPUTS,
        tmp_path,
        expected_shapes={"masked_lm": (2, 2, 50), "next_sentence": (2, 2)},
    )


def test_decoder_is_tied_to_the_token_embedding(tmp_path):
    model = BertPretrainer(TINY)
    assert model.masked_lm_head.token_embedding is model.encoder.token_embedding
    # The table is one variable, trained once: no duplicate in the trainable weights.
    paths = [variable.path for variable in model.trainable_weights]
    assert len(paths) == len(set(paths))
    assert model.count_params() == model.encoder.count_params() + (
        128 * 128 + 128
    ) + 2 * 128 + 50 + (2 * 128 + 2)
    path = tmp_path / "pretrainer.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.masked_lm_head.token_embedding is restored.encoder.token_embedding
    assert restored.get_config() == model.get_config()


def test_masked_lm_loss_is_averaged_over_real_predictions():
    loss = pretraining_losses()["masked_lm"]
    logits = np.log(np.array([[[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]]], "float32"))
    labels = np.array([[0, 2]])
    # Only the first prediction is real: the loss is its cross-entropy, -log 0.5.
    value = loss(labels, logits, sample_weight=np.array([[1.0, 0.0]]))
    np.testing.assert_allclose(float(value), np.log(2.0), rtol=1e-5)


def test_fit_reduces_the_loss_and_reports_both_accuracies():
    keras.utils.set_random_seed(0)
    model = BertPretrainer(TINY)
    # 3e-3 converges smoothly; at 1e-2 the NSP loss oscillates on two examples.
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    labels = {"masked_lm": np.array([[4, 0], [7, 13]]), "next_sentence": np.array([0, 1])}
    weights = {"masked_lm": np.array([[1.0, 0.0], [1.0, 1.0]]), "next_sentence": np.ones(2)}
    history = model.fit(INPUTS, labels, sample_weight=weights, epochs=30, verbose=0).history
    assert history["loss"][-1] < history["loss"][0] / 2
    # Three real predictions (the padded one has weight 0): accuracy moves in steps of 1/3.
    for accuracy in history["masked_lm_accuracy"]:
        assert abs(accuracy * 3 - round(accuracy * 3)) < 1e-6
    assert history["masked_lm_accuracy"][-1] >= 2 / 3 - 1e-6
    assert history["next_sentence_accuracy"][-1] == 1.0


@pytest.mark.parametrize(
    "loss_weights, scored",
    [
        ({"masked_lm": 1.0, "next_sentence": 0.0}, False),
        ({"masked_lm": 1.0, "next_sentence": 0.5}, True),
        ([1.0, 1.0], True),  # Keras also takes weights in output order
    ],
)
def test_next_sentence_accuracy_only_where_its_loss_counts(loss_weights, scored):
    model = BertPretrainer(TINY)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss_weights=loss_weights)
    labels = {"masked_lm": np.array([[4, 0], [7, 13]]), "next_sentence": np.array([0, 1])}
    logs = model.train_on_batch(INPUTS, labels, return_dict=True)
    assert "masked_lm_accuracy" in logs and ("next_sentence_accuracy" in logs) == scored


def test_span_boundary_objective_adds_its_loss_against_the_masked_lm_targets(tmp_path):
    model = BertPretrainer(TINY, span_boundary_objective=True)
    check_layer(
        model,
        INPUTS,
        tmp_path,
        expected_shapes={
            "masked_lm": (2, 2, 50),
            "next_sentence": (2, 2),
            "span_boundary": (2, 2, 50),
        },
    )
    model.compile()
    labels = {"masked_lm": np.array([[4, 0], [7, 13]]), "next_sentence": np.array([0, 1])}
    weights = {"masked_lm": np.array([[1.0, 0.0], [1.0, 1.0]]), "next_sentence": np.ones(2)}
    results = model.evaluate(INPUTS, labels, sample_weight=weights, verbose=0, return_dict=True)
    outputs = model(INPUTS)
    losses = pretraining_losses()
    span_boundary = losses["masked_lm"](
        labels["masked_lm"], outputs["span_boundary"], weights["masked_lm"]
    )
    np.testing.assert_allclose(results["span_boundary_loss"], float(span_boundary), rtol=1e-5)
    np.testing.assert_allclose(
        results["loss"],
        results["span_boundary_loss"] + results["masked_lm_loss"] + results["next_sentence_loss"],
        rtol=1e-5,
    )


def test_google_checkpoint_with_heads_round_trips(tmp_path):
    model = BertPretrainer(TINY)
    tensors = {name: np.asarray(variable) for name, variable in pretrainer_variables(model).items()}
    assert tensors["cls/seq_relationship/output_weights"].shape == (2, 128)
    save_google_checkpoint(tensors, TINY, tmp_path)
    restored = BertPretrainer.from_checkpoint(tmp_path)
    for name, output in model(INPUTS).items():
        np.testing.assert_allclose(restored(INPUTS)[name], output, atol=1e-5)


def test_checkpoint_head_of_the_wrong_shape_is_named(tmp_path):
    model = BertPretrainer(TINY)
    tensors = {name: np.asarray(variable) for name, variable in pretrainer_variables(model).items()}
    tensors["cls/predictions/output_bias"] = np.zeros([49], "float32")
    save_google_checkpoint(tensors, TINY, tmp_path)
    with pytest.raises(CheckpointError, match="cls/predictions/output_bias"):
        BertPretrainer.from_checkpoint(tmp_path)


def test_minilm_checkpoint_loads_the_encoder_and_initialises_the_heads(minilm_dir):
    model = BertPretrainer.from_checkpoint(minilm_dir)
    encoder = BertEncoder.from_checkpoint(minilm_dir)
    for ours, reference in zip(model.encoder.weights, encoder.weights, strict=True):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(reference))
    np.testing.assert_array_equal(np.asarray(model.masked_lm_head.output_bias), 0.0)
    assert model.masked_lm_head.dense.kernel.shape == (384, 384)


@pytest.mark.slow
def test_pretrainer_overfits_one_fixed_batch_of_real_text(data_dir, minilm_dir):
    """The whole objective can be learnt: one batch of real masked sentences, memorised."""
    from keras_bert.data import (
        PretrainingDataConfig,
        pretraining_dataset,
        read_text_documents,
        split_features,
        tokenize_documents,
    )
    from keras_bert.text import WordPieceTokenizer, load_vocabulary
    from keras_bert.training import create_optimizer

    keras.utils.set_random_seed(0)
    tokenizer = WordPieceTokenizer(str(minilm_dir / "vocab.txt"))
    documents = read_text_documents(data_dir / "pretraining" / "wikipedia_sample.txt")[:10]
    config = PretrainingDataConfig(seq_length=32, masking={"max_predictions_per_seq": 5})
    dataset = pretraining_dataset(
        tokenize_documents(documents, tokenizer),
        load_vocabulary(minilm_dir / "vocab.txt"),
        batch_size=16,
        config=config,
    )
    batch = next(iter(dataset.map(split_features).take(1)))
    model = BertPretrainer(
        BertConfig.preset("tiny", hidden_size=64, dropout_rate=0.0, attention_dropout_rate=0.0)
    )
    model.compile(optimizer=create_optimizer(3e-3, total_steps=None, weight_decay=0.0))
    fixed = tf.data.Dataset.from_tensors(batch)
    model.fit(fixed.repeat(150), epochs=1, verbose=0)
    final = model.evaluate(fixed, verbose=0, return_dict=True)
    assert final["masked_lm_accuracy"] > 0.95 and final["next_sentence_accuracy"] == 1.0, final


def test_continued_pretraining_on_a_new_vocabulary_keeps_shared_pieces(minilm_dir, tmp_path):
    from keras_bert.text import load_vocabulary

    old_vocabulary = load_vocabulary(minilm_dir / "vocab.txt")
    # A domain vocabulary: the first 5,000 pieces and 100 new words.
    new_vocabulary = old_vocabulary[:5000] + [f"protein{index}" for index in range(100)]
    vocabulary_file = tmp_path / "vocab.txt"
    vocabulary_file.write_text("\n".join(new_vocabulary) + "\n", "utf-8")
    model = BertPretrainer.from_checkpoint(minilm_dir, vocabulary_file=vocabulary_file)
    original = BertEncoder.from_checkpoint(minilm_dir)

    table = np.asarray(model.encoder.token_embedding.embeddings)
    trained = np.asarray(original.token_embedding.embeddings)
    assert table.shape == (5100, 384) and model.bert_config.vocab_size == 5100
    np.testing.assert_array_equal(table[:5000], trained[:5000])
    assert 0.005 < table[5000:].std() < 0.05  # fresh rows, initializer_range 0.02
    # The rest of the encoder is the checkpoint's.
    np.testing.assert_array_equal(
        np.asarray(model.encoder.blocks[3].attention.query.kernel),
        np.asarray(original.blocks[3].attention.query.kernel),
    )
