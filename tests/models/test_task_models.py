import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder
from keras_bert.layers import TrailingPaddingTrim
from keras_bert.models import BertClassifier, BertQuestionAnswerer, BertTokenClassifier
from keras_bert.models.token_classifier import IGNORED_LABEL, MaskedTokenAccuracy
from tests.layer_checks import check_layer
from tests.models.test_encoder import INPUTS

CONFIG = BertConfig.preset(
    "tiny",
    vocab_size=50,
    max_position_embeddings=16,
    dropout_rate=0.0,
    attention_dropout_rate=0.0,
)


def encoder():
    return BertEncoder(CONFIG)


def test_classifier(tmp_path):
    model = BertClassifier(encoder(), num_classes=3, label_names=["a", "b", "c"], dropout_rate=0)
    check_layer(model, INPUTS, tmp_path, expected_shapes=(2, 3))
    assert model.get_config()["label_names"] == ["a", "b", "c"]


def test_classifier_learns_a_pair_task():
    # Label = whether segment B exists: a fact the pooled [CLS] must learn from type ids.
    model = BertClassifier(encoder(), num_classes=2)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    labels = np.array([0, 1])
    history = model.fit(INPUTS, labels, epochs=30, batch_size=2, verbose=0)
    assert history.history["accuracy"][-1] == 1.0
    assert history.history["loss"][-1] < history.history["loss"][0] / 5


def test_mean_pooling_classifier_reads_the_masked_mean(tmp_path):
    model = BertClassifier(encoder(), num_classes=2, dropout_rate=0, pooling="mean")
    check_layer(model, INPUTS, tmp_path, expected_shapes=(2, 2))
    assert not model.uses_pooled_output
    pooler = {id(weight) for weight in model.encoder.pooler.weights}
    assert not pooler & {id(weight) for weight in model.trainable_weights}
    # The logits are the head applied to the mean of the unmasked sequence output.
    sequence = np.asarray(model.encoder(INPUTS)["sequence_output"])
    mask = INPUTS["input_mask"][..., None]
    mean = (sequence * mask).sum(1) / mask.sum(1)
    kernel, bias = model.get_layer("logits").get_weights()
    np.testing.assert_allclose(np.asarray(model(INPUTS)), mean @ kernel + bias, atol=1e-5)
    with pytest.raises(ValueError, match="pooling must be one of first_token, mean"):
        BertClassifier(encoder(), num_classes=2, pooling="max")


@pytest.mark.parametrize("pooling", ["first_token", "mean"])
def test_classifier_skips_the_padding_no_row_has(pooling):
    # Both rows padded from 6 to 16 positions (max_position_embeddings): the logits and every
    # gradient are those of the batch as it was, and the step's tensors are 6 positions long.
    keras.utils.set_random_seed(0)
    model = BertClassifier(encoder(), num_classes=3, dropout_rate=0, pooling=pooling)
    padded = {name: np.pad(value, ((0, 0), (0, 10))) for name, value in INPUTS.items()}
    labels = tf.constant([0, 2])

    def logits_and_gradients(inputs):
        with tf.GradientTape() as tape:
            logits = model(inputs, training=True)
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(labels, logits)
        return logits, tape.gradient(loss, model.trainable_variables)

    cut_logits, cut_gradients = logits_and_gradients(INPUTS)
    padded_logits, padded_gradients = logits_and_gradients(padded)
    np.testing.assert_allclose(padded_logits, cut_logits, atol=1e-6)
    for padded_gradient, cut_gradient in zip(padded_gradients, cut_gradients, strict=True):
        np.testing.assert_allclose(
            tf.convert_to_tensor(padded_gradient), tf.convert_to_tensor(cut_gradient), atol=1e-6
        )
    trimmed = model.get_layer("padding_trim")(padded)
    assert {tuple(value.shape) for value in trimmed.values()} == {(2, 6)}


def test_classifier_steps_compute_the_real_tokens_alone():
    # Training, evaluation and prediction gather the real tokens (`RealTokens`, whose map of
    # positions is a cumulative sum); the encoder's own call computes every position.
    model = BertClassifier(encoder(), num_classes=2)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))

    def op_types(function, *args):
        graph = tf.function(function).get_concrete_function(*args).graph
        return {operation.type for operation in graph.get_operations()}

    labelled = (INPUTS, np.array([0, 1]))
    assert "Cumsum" in op_types(model.train_step, labelled)
    assert "Cumsum" in op_types(model.test_step, labelled)
    assert "Cumsum" in op_types(model.predict_step, (INPUTS,))
    assert "Cumsum" not in op_types(model.encoder, INPUTS)


def test_padding_trim_keeps_every_column_up_to_the_last_real_position():
    mask = np.array([[1, 0, 1, 0, 0], [0, 0, 0, 0, 0]], "int32")
    trimmed = TrailingPaddingTrim()({"input_mask": mask, "input_word_ids": mask * 7})
    np.testing.assert_array_equal(trimmed["input_word_ids"], mask[:, :3] * 7)
    # A batch of nothing but padding keeps its first column (where a head reads).
    empty = TrailingPaddingTrim()({"input_mask": np.zeros((2, 4), "int32")})
    assert tuple(empty["input_mask"].shape) == (2, 1)


def test_regressor_defaults():
    model = BertClassifier(encoder(), num_classes=1)
    model.compile()
    assert model.is_regression
    assert isinstance(model.loss, keras.losses.MeanSquaredError)


def test_classifier_argument_errors():
    with pytest.raises(ValueError, match="2 label_names given for 3 classes"):
        BertClassifier(encoder(), num_classes=3, label_names=["a", "b"])
    with pytest.raises(ValueError, match="num_classes must be at least 1"):
        BertClassifier(encoder(), num_classes=0)


def test_token_classifier(tmp_path):
    model = BertTokenClassifier(encoder(), label_names=["O", "B-x", "I-x"], dropout_rate=0)
    check_layer(model, INPUTS, tmp_path, expected_shapes=(2, 6, 3))


def test_task_heads_are_drawn_from_the_untruncated_normal():
    # Fine-tuning at BERT's rates moves a head by less than its initial spread, so the draw
    # matters: a truncated normal (std 0.88 x the range, nothing beyond 2 std) cost WNUT-16
    # 7 points of entity F1 against Hugging Face's normal draw.
    keras.utils.set_random_seed(0)
    model = BertTokenClassifier(encoder(), label_names=[f"tag{i}" for i in range(60)])
    kernel = model.get_layer("token_logits").get_weights()[0]
    spread = CONFIG.initializer_range
    assert abs(kernel.std() / spread - 1) < 0.05
    assert (np.abs(kernel) > 2 * spread).mean() > 0.03  # a normal has 4.6% there


def test_token_classifier_ignores_unlabelled_positions():
    model = BertTokenClassifier(encoder(), label_names=["O", "B-x"])
    model.compile()
    labels = np.full((2, 6), IGNORED_LABEL)
    labels[:, 1] = 1
    logits = np.asarray(model(INPUTS))
    loss = float(model.loss(labels, logits))
    # Cross-entropy of the two labelled positions only.
    log_probabilities = logits[:, 1] - np.log(np.exp(logits[:, 1]).sum(-1, keepdims=True))
    np.testing.assert_allclose(loss, -log_probabilities[:, 1].mean(), rtol=1e-5)

    accuracy = MaskedTokenAccuracy()
    predictions = np.zeros((2, 6, 2), "float32")
    predictions[0, 1, 1] = 1.0  # right at the labelled position of example 0, wrong for 1
    accuracy.update_state(labels, predictions)
    assert float(accuracy.result()) == 0.5


def test_question_answerer(tmp_path):
    model = BertQuestionAnswerer(encoder())
    outputs = check_layer(
        model, INPUTS, tmp_path, expected_shapes={"end_logits": (2, 6), "start_logits": (2, 6)}
    )
    assert outputs["start_logits"].dtype == np.float32
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    labels = {"start_logits": np.array([1, 3]), "end_logits": np.array([2, 4])}
    history = model.fit(INPUTS, labels, epochs=2, batch_size=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


@pytest.mark.parametrize(
    ("make_task", "labels"),
    [
        (
            lambda encoder: BertTokenClassifier(encoder, label_names=["O", "B-x"]),
            np.zeros((2, 6), "int32"),
        ),
        (
            BertQuestionAnswerer,
            {"start_logits": np.array([1, 3]), "end_logits": np.array([2, 4])},
        ),
    ],
    ids=["token_classifier", "question_answerer"],
)
def test_heads_on_the_sequence_output_train_without_the_pooler(make_task, labels):
    # The pooler gets no gradient from these heads: it is not trained, so Keras does not warn
    # "Gradients do not exist for variables", and it is still saved.
    shared_encoder = encoder()
    model = make_task(shared_encoder)
    pooler = [variable.path for variable in shared_encoder.pooler.weights]
    assert not set(pooler) & {variable.path for variable in model.trainable_variables}
    assert set(pooler) <= {variable.path for variable in model.weights}
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(INPUTS, labels, epochs=1, batch_size=2, verbose=0)
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]
    # The encoder itself is unchanged: a classifier on it still trains the pooler.
    classifier = BertClassifier(shared_encoder, num_classes=2)
    assert set(pooler) <= {variable.path for variable in classifier.trainable_variables}
