import keras
import numpy as np

from keras_bert import BertEncoder
from keras_bert.models import BertMaskedLM
from keras_bert.models.pretrainer import BertPretrainer
from tests.layer_checks import check_layer
from tests.models.test_pretrainer import INPUTS, TINY


def test_masked_lm_layer_checks(tmp_path):
    model = BertMaskedLM(BertEncoder(TINY), head_activation="gelu", head_layer_norm_epsilon=1e-5)
    check_layer(model, INPUTS, tmp_path, expected_shapes={"masked_lm": (2, 2, 50)})
    head = model.masked_lm_head
    assert (head.hidden_activation, head.layer_norm_epsilon) == ("gelu", 1e-5)
    assert model.get_config()["head_layer_norm_epsilon"] == 1e-5


def test_head_defaults_to_the_encoders_settings_and_matches_the_pretrainers(tmp_path):
    encoder = BertEncoder(TINY.replace(hidden_activation="gelu_approximate"))
    model = BertMaskedLM(encoder)
    head = model.masked_lm_head
    assert (head.hidden_activation, head.layer_norm_epsilon) == ("gelu_approximate", 1e-12)
    assert head.token_embedding is encoder.token_embedding
    pretrainer = BertPretrainer(encoder)
    pretrainer.masked_lm_head.set_weights(head.get_weights())
    np.testing.assert_array_equal(model(INPUTS)["masked_lm"], pretrainer(INPUTS)["masked_lm"])
    # The pooler gets no gradient from the masked LM: it is left out of training.
    assert not {id(weight) for weight in encoder.pooler.weights} & {
        id(weight) for weight in model.trainable_weights
    }

    path = tmp_path / "masked_lm.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.masked_lm_head.token_embedding is restored.encoder.token_embedding


def test_default_compile_averages_loss_and_accuracy_over_real_predictions():
    keras.utils.set_random_seed(0)
    model = BertMaskedLM(BertEncoder(TINY))
    model.compile()
    labels = np.array([[4, 0], [7, 13]])
    weights = np.array([[1.0, 0.0], [1.0, 1.0]])
    logits = np.asarray(model(INPUTS)["masked_lm"], "float64")
    log_probabilities = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    losses = -np.take_along_axis(log_probabilities, labels[..., None], -1)[..., 0]
    correct = logits.argmax(-1) == labels
    results = model.evaluate(
        INPUTS, {"masked_lm": labels}, sample_weight={"masked_lm": weights}, return_dict=True
    )
    # The padded prediction (weight 0) counts in neither.
    np.testing.assert_allclose(results["loss"], (losses * weights).sum() / 3, rtol=1e-5)
    np.testing.assert_allclose(results["accuracy"], (correct * weights).sum() / 3, rtol=1e-6)
