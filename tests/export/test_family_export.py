"""Each family end to end: checkpoint → preprocessor → `model.fit` → raw-string SavedModel that a
process with only TensorFlow and tensorflow-text serves."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert
from keras_bert.export import ClassifierServing, export_for_serving
from tests.export.fresh_process import run_signatures

# Adding a family (DeBERTa-v3: "deberta_v3") is one entry: its directory in
# shared/reference/variants.
FAMILIES = (
    "distilbert",
    "roberta",
    "albert",
    "deberta_v3",
    "modernbert",
    "xlm_roberta",
    "electra/discriminator",
)
SEQ_LENGTH = 32


def _sentiment_examples(data_dir, count: int) -> tuple[list[str], np.ndarray]:
    lines = (data_dir / "sentiment" / "movie_snippets.train.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines[:count]]
    labels = np.array([record["label"] == "pos" for record in records], "int32")
    return [record["text"] for record in records], labels


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_family_fine_tunes_and_serves_raw_strings(family, reference_dir, data_dir, tmp_path):
    checkpoint = reference_dir / "variants" / family
    preprocessor = keras_bert.load_preprocessor(checkpoint, seq_length=SEQ_LENGTH)
    classifier = keras_bert.BertClassifier(
        keras_bert.load_encoder(checkpoint), num_classes=2, label_names=["neg", "pos"]
    )
    texts, labels = _sentiment_examples(data_dir, 32)
    dataset = (
        tf.data.Dataset.from_tensor_slices((texts, labels))
        .batch(8)
        .map(lambda text, label: (preprocessor(text), label))
    )
    keras.utils.set_random_seed(0)
    classifier.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = classifier.fit(dataset, epochs=3, verbose=0)
    assert np.isfinite(history.history["loss"]).all()

    model_name = family.replace("/", "_")
    version = export_for_serving(ClassifierServing(classifier, preprocessor), tmp_path, model_name)
    served_texts = [*texts[:3], "", "Special tokens as text: <mask> [MASK] </s>"]
    [outputs] = run_signatures(
        [
            {
                "export_dir": version,
                "signature": "serving_default",
                "inputs": {"text": served_texts},
            }
        ]
    )
    expected = keras.ops.softmax(classifier(preprocessor(tf.constant(served_texts))))
    np.testing.assert_allclose(outputs["probabilities"], expected, atol=1e-5)
    assert outputs["label_names"][0] == ["neg", "pos"]
