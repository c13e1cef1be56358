"""keras-hub BERT models converted by `from_keras_hub` compute what keras-hub computes.

The keras-hub models are small (2 layers, hidden 64) on the real MiniLM vocabulary; the text is
the real movie snippets of `../shared/data/sentiment`.
"""

import json
import subprocess
import sys
import unicodedata
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertEncoder, BertMaskedLM, from_keras_hub
from keras_bert.checkpoints import CheckpointError, encoder_variables
from keras_bert.checkpoints.keras_hub import read_keras_hub_model
from keras_bert.export import serving_module
from keras_bert.models.masked_lm import masked_lm_head_variables
from keras_bert.models.masked_lm_objective import MaskedLMLoss
from keras_bert.text.vocabulary import load_vocabulary
from tests.export.fresh_process import run_signatures

keras_hub = pytest.importorskip("keras_hub")

REPO_ROOT = Path(__file__).resolve().parents[1]
SEQ_LENGTH = 64
LABEL_NAMES = ["neg", "pos"]
SIZES = {"num_layers": 2, "num_heads": 4, "hidden_dim": 64, "intermediate_dim": 128}


def read_snippets(path: Path) -> tuple[list[str], np.ndarray]:
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    labels = np.array([LABEL_NAMES.index(record["label"]) for record in records])
    return [record["text"] for record in records], labels


@pytest.fixture(scope="module")
def vocabulary(minilm_dir) -> list[str]:
    return load_vocabulary(minilm_dir / "vocab.txt")


@pytest.fixture(scope="module")
def dev(data_dir) -> tuple[list[str], np.ndarray]:
    return read_snippets(data_dir / "sentiment" / "movie_snippets.dev.jsonl")


@pytest.fixture(scope="module")
def hub_preprocessor(vocabulary):
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocabulary, lowercase=True)
    return keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=SEQ_LENGTH)


@pytest.fixture(scope="module")
def hub_dev_inputs(hub_preprocessor, dev) -> dict[str, tf.Tensor]:
    return hub_preprocessor(dev[0])


def our_inputs(hub_inputs: dict, **extra) -> dict[str, tf.Tensor]:
    return {
        "input_word_ids": hub_inputs["token_ids"],
        "input_mask": tf.cast(hub_inputs["padding_mask"], tf.int32),
        "input_type_ids": hub_inputs["segment_ids"],
        **extra,
    }


@pytest.fixture(scope="module")
def hub_masked_lm(vocabulary):
    """A keras-hub `BertMaskedLM` whose every weight (LayerNorms and biases too) is random."""
    keras.utils.set_random_seed(19)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(vocabulary), max_sequence_length=SEQ_LENGTH, **SIZES
    )
    model = keras_hub.models.BertMaskedLM(backbone)
    ids = np.zeros((1, 4), "int32")
    model({"token_ids": ids, "segment_ids": ids, "padding_mask": ids, "mask_positions": ids})
    random = np.random.default_rng(19)
    for variable in model.weights:
        variable.assign(variable.numpy() + random.normal(0, 0.1, variable.shape))
    return model


@pytest.fixture(scope="module")
def hub_classifier_file(tmp_path_factory, data_dir, hub_preprocessor, vocabulary) -> Path:
    """A keras-hub `BertTextClassifier` fine-tuned for a few steps, saved with its preprocessor."""
    keras.utils.set_random_seed(7)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(vocabulary), max_sequence_length=SEQ_LENGTH, **SIZES
    )
    classifier = keras_hub.models.BertTextClassifier(
        backbone, num_classes=2, preprocessor=hub_preprocessor
    )
    classifier.compile(optimizer=keras.optimizers.Adam(1e-3))
    texts, labels = read_snippets(data_dir / "sentiment" / "movie_snippets.train.jsonl")
    classifier.fit(texts[:256], labels[:256], batch_size=32, epochs=1, verbose=0)
    path = tmp_path_factory.mktemp("keras_hub") / "classifier.keras"
    classifier.save(path)
    return path


def test_backbone_gives_the_same_sequence_and_pooled_outputs(
    hub_masked_lm, hub_dev_inputs, minilm_dir
):
    backbone = hub_masked_lm.backbone
    encoder, preprocessor = from_keras_hub(backbone)
    assert isinstance(encoder, BertEncoder) and preprocessor is None
    assert encoder.bert_config.hidden_activation == "gelu_approximate"
    assert encoder.bert_config.max_position_embeddings == SEQ_LENGTH

    hub_inputs = {name: tensor[:128] for name, tensor in hub_dev_inputs.items()}
    ours, theirs = encoder(our_inputs(hub_inputs)), backbone(hub_inputs)
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(ours[name], theirs[name], atol=1e-5, rtol=0)

    _, preprocessor = from_keras_hub(backbone, vocabulary_file=minilm_dir / "vocab.txt")
    assert preprocessor.lowercase and preprocessor.seq_length == 128


def test_masked_lm_gives_the_same_logits_with_keras_hubs_head(hub_masked_lm, hub_dev_inputs):
    model, _ = from_keras_hub(hub_masked_lm)
    assert isinstance(model, BertMaskedLM)
    # keras-hub's head: exact GELU and LayerNorm epsilon 1e-5, on a tanh-GELU encoder.
    assert (model.head_activation, model.head_layer_norm_epsilon) == ("gelu", 1e-5)
    assert model.masked_lm_head.token_embedding is model.encoder.token_embedding

    hub_inputs = {name: tensor[:64] for name, tensor in hub_dev_inputs.items()}
    lengths = tf.reduce_sum(tf.cast(hub_inputs["padding_mask"], tf.int32), axis=1)
    positions = tf.stack([lengths // 3, lengths // 2, lengths - 2], axis=1)
    theirs = hub_masked_lm({**hub_inputs, "mask_positions": positions})
    ours = model(our_inputs(hub_inputs, masked_lm_positions=positions))["masked_lm"]
    np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)

    # BERT's head settings (those of the encoder) would not reproduce keras-hub.
    bert_head = BertMaskedLM(model.encoder)
    bert_head.masked_lm_head.set_weights(model.masked_lm_head.get_weights())
    differs = bert_head(our_inputs(hub_inputs, masked_lm_positions=positions))["masked_lm"]
    assert np.abs(np.asarray(differs) - np.asarray(theirs)).max() > 1e-4


def test_masked_lm_serves_keras_hubs_fillers_for_mask_tokens_in_text(
    hub_masked_lm, minilm_dir, dev
):
    model, preprocessor = from_keras_hub(
        hub_masked_lm, vocabulary_file=minilm_dir / "vocab.txt", seq_length=SEQ_LENGTH
    )
    texts = [" ".join(text.split()[:4] + ["[MASK]"] + text.split()[5:]) for text in dev[0][:16]]
    module = serving_module(model, preprocessor, top_k=3, max_masks=1)
    served = module.serve_text(tf.constant(texts))
    assert served["num_masks"].numpy().tolist() == [1] * len(texts)

    # keras-hub's tokenizer reads "[MASK]" as three pieces: give it our ids.
    inputs = preprocessor(texts)
    mask_id = preprocessor.tokenizer.token_to_id("[MASK]")
    positions = tf.argmax(tf.cast(inputs["input_word_ids"] == mask_id, tf.int32), axis=1)[:, None]
    hub_inputs = {
        "token_ids": inputs["input_word_ids"],
        "segment_ids": inputs["input_type_ids"],
        "padding_mask": inputs["input_mask"],
        "mask_positions": tf.cast(positions, tf.int32),
    }
    probabilities, ids = tf.math.top_k(tf.nn.softmax(hub_masked_lm(hub_inputs)), k=3)
    np.testing.assert_array_equal(served["top_ids"], ids)
    np.testing.assert_allclose(served["top_probabilities"], probabilities, atol=1e-6)


def test_classifier_gives_the_logits_before_keras_hubs_softmax(
    hub_masked_lm, hub_preprocessor, hub_dev_inputs
):
    hub_classifier = keras_hub.models.BertTextClassifier(
        hub_masked_lm.backbone, num_classes=3, preprocessor=hub_preprocessor, activation="softmax"
    )
    head = hub_classifier.output_dense
    head.kernel.assign(np.random.default_rng(3).normal(0, 1, head.kernel.shape))
    head.bias.assign([0.5, -0.25, 0.0])
    model, preprocessor = from_keras_hub(hub_classifier)
    assert isinstance(model, BertClassifier) and model.num_classes == 3
    assert (preprocessor.seq_length, preprocessor.lowercase) == (SEQ_LENGTH, True)

    hub_inputs = {name: tensor[:128] for name, tensor in hub_dev_inputs.items()}
    probabilities = tf.nn.softmax(model(our_inputs(hub_inputs)))
    np.testing.assert_allclose(probabilities, hub_classifier(hub_inputs), atol=1e-5, rtol=0)


@pytest.mark.slow
def test_fine_tuned_classifier_file_gives_the_same_logits(hub_classifier_file, hub_dev_inputs, dev):
    hub_classifier = keras.saving.load_model(hub_classifier_file, compile=False)
    model, preprocessor = from_keras_hub(hub_classifier_file, label_names=LABEL_NAMES)
    assert isinstance(model, BertClassifier)
    assert (model.num_classes, model.label_names) == (2, LABEL_NAMES)
    assert (preprocessor.seq_length, preprocessor.lowercase) == (SEQ_LENGTH, True)
    assert preprocessor.truncation == "round_robin"

    # On the same ids, every dev sentence.
    theirs = np.asarray(hub_classifier(hub_dev_inputs))
    ours = model(our_inputs(hub_dev_inputs))
    np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)
    # Fine-tuning moved the weights: the classes are not all equally likely.
    assert np.abs(theirs[:, 1] - theirs[:, 0]).max() > 0.1

    # BERT's tokenizer gives keras-hub's ids except where keras-hub keeps accents.
    our_ids = preprocessor(dev[0])["input_word_ids"]
    differing = np.flatnonzero(
        (np.asarray(our_ids) != np.asarray(hub_dev_inputs["token_ids"])).any(axis=1)
    )
    assert len(differing) < 0.02 * len(dev[0])
    assert all(tokenization_difference(dev[0][index]) == "accent" for index in differing)


def test_unsupported_objects_and_mismatched_vocabularies_are_named(
    hub_masked_lm, hub_preprocessor, tmp_path
):
    supported = "supported are keras-hub's BertBackbone, BertTextClassifier, BertMaskedLM"
    with pytest.raises(CheckpointError, match=f"BertTextClassifierPreprocessor: {supported}"):
        from_keras_hub(hub_preprocessor)
    path = tmp_path / "dense.keras"
    keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]).save(path)
    with pytest.raises(CheckpointError, match=f"Sequential: {supported}"):
        from_keras_hub(path)
    tokenizer = keras_hub.models.BertTokenizer(
        vocabulary=hub_preprocessor.tokenizer.get_vocabulary(), suffix_indicator="@@"
    )
    classifier = keras_hub.models.BertTextClassifier(
        hub_masked_lm.backbone, 2, keras_hub.models.BertTextClassifierPreprocessor(tokenizer)
    )
    with pytest.raises(CheckpointError, match="'suffix_indicator': '@@'.* are not BERT's"):
        from_keras_hub(classifier)
    too_long = tmp_path / "vocab.txt"
    too_long.write_text("\n".join(hub_preprocessor.tokenizer.get_vocabulary() + ["[EXTRA]"]))
    with pytest.raises(CheckpointError, match="30523 tokens but the model embeds only 30522"):
        from_keras_hub(hub_masked_lm.backbone, vocabulary_file=too_long)


def test_export_pipeline_names_the_task_a_keras_hub_model_converts_to(
    hub_masked_lm, tmp_path, capsys
):
    from pipelines import export
    from pipelines.common import run_job

    path = tmp_path / "masked_lm.keras"
    hub_masked_lm.save(path)
    arguments = ["--task", "classifier", "--keras-hub-model", str(path)]
    arguments += ["--name", "x", "--base-dir", str(tmp_path)]
    with pytest.raises(SystemExit):
        run_job(export.main, arguments)
    assert "converts to a BertMaskedLM, which --task classifier does not export" in (
        capsys.readouterr().err
    )
    arguments[1] = "masked_lm"
    with pytest.raises(SystemExit):
        run_job(export.main, arguments)
    assert "saved without a preprocessor: pass --vocabulary-file" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def tokenization_difference(text: str) -> str:
    """Why keras-hub's uncased `BertTokenizer` may tokenize `text` unlike BERT's."""
    if any(unicodedata.category(char) == "Mn" for char in unicodedata.normalize("NFD", text)):
        return "accent"  # keras-hub: strip_accents=False
    if text.casefold() != text.lower():
        return "case folding"  # keras-hub folds case ("ß" -> "ss"); BERT lowercases
    if any(unicodedata.category(char) in ("Cc", "Cf") and char not in "\t\n\r" for char in text):
        return "control character"  # BERT removes them
    return "unexplained"


@pytest.mark.slow
def test_exported_classifier_serves_keras_hubs_predictions_on_raw_strings(
    hub_classifier_file, dev, tmp_path
):
    base_dir = tmp_path / "saved_models"
    command = [sys.executable, "-m", "pipelines.export", "--task", "classifier"]
    command += ["--keras-hub-model", str(hub_classifier_file), "--name", "sentiment"]
    command += ["--base-dir", str(base_dir), "--label-names", ",".join(LABEL_NAMES)]
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]

    texts = dev[0]
    [served] = run_signatures(
        [
            {
                "export_dir": base_dir / "sentiment" / "1",
                "signature": "serving_default",
                "inputs": {"text": texts},
            }
        ]
    )
    hub_classifier = keras.saving.load_model(hub_classifier_file, compile=False)
    hub_logits = hub_classifier.predict(texts, batch_size=256, verbose=0)
    hub_probabilities = np.asarray(tf.nn.softmax(hub_logits))
    hub_ids = np.asarray(hub_classifier.preprocessor(texts)["token_ids"])
    _, preprocessor = from_keras_hub(hub_classifier)
    same_ids = (np.asarray(preprocessor(texts)["input_word_ids"]) == hub_ids).all(axis=1)

    probabilities = np.asarray(served["probabilities"])
    np.testing.assert_allclose(probabilities[same_ids], hub_probabilities[same_ids], atol=1e-5)
    hub_labels = np.array(LABEL_NAMES)[hub_probabilities.argmax(axis=1)]
    assert list(np.array(served["label"])[same_ids]) == list(hub_labels[same_ids])
    reasons = [
        tokenization_difference(text)
        for text, same in zip(texts, same_ids, strict=True)
        if not same
    ]
    print(f"{same_ids.sum()} of {len(texts)} dev sentences tokenized alike; differing: {reasons}")
    assert len(reasons) < 0.02 * len(texts) and "unexplained" not in reasons


def _gradients(model, inputs, labels, weights):
    """The masked-LM loss (mean over weighted predictions) and its gradient for every weight."""
    with tf.GradientTape() as tape:
        logits = model(inputs)
        logits = logits["masked_lm"] if isinstance(logits, dict) else logits
        loss = MaskedLMLoss()(labels, logits, sample_weight=weights)
    return loss, tape.gradient(loss, model.trainable_weights)


def test_masked_lm_gradients_equal_keras_hubs(hub_masked_lm, hub_dev_inputs, vocabulary):
    """Same weights, same batch of real text: the same loss, and every weight's gradient within
    1e-4 (the tied embedding's gets the encoder's and the decoder's parts on both sides)."""
    model, _ = from_keras_hub(hub_masked_lm)
    hub_inputs = {name: tensor[:16] for name, tensor in hub_dev_inputs.items()}
    lengths = tf.reduce_sum(tf.cast(hub_inputs["padding_mask"], tf.int32), axis=1)
    positions = tf.stack([lengths // 3, lengths // 2, lengths - 2, tf.zeros_like(lengths)], 1)
    labels = tf.gather(hub_inputs["token_ids"], positions, batch_dims=1)
    weights = tf.constant([[1.0, 1.0, 1.0, 0.0]] * 16)
    their_loss, their_gradients = _gradients(
        hub_masked_lm, {**hub_inputs, "mask_positions": positions}, labels, weights
    )
    our_loss, our_gradients = _gradients(
        model, our_inputs(hub_inputs, masked_lm_positions=positions), labels, weights
    )
    np.testing.assert_allclose(float(our_loss), float(their_loss), rtol=1e-6)

    # Their gradients, written into a copy of their model, read under our weight names.
    gradient_model = keras_hub.models.BertMaskedLM.from_config(hub_masked_lm.get_config())
    gradient_model.set_weights([np.asarray(w) for w in hub_masked_lm.weights])
    for variable, gradient in zip(gradient_model.trainable_weights, their_gradients, strict=True):
        # (Their pooler gets no gradient from the masked LM.)
        variable.assign(
            tf.zeros_like(variable) if gradient is None else tf.convert_to_tensor(gradient)
        )
    theirs = read_keras_hub_model(gradient_model, "gradients").tensors
    ours = {
        id(variable): gradient
        for variable, gradient in zip(model.trainable_weights, our_gradients, strict=True)
    }
    named = encoder_variables(model.encoder) | masked_lm_head_variables(model.masked_lm_head)
    compared = 0
    for name, variable in named.items():
        if id(variable) not in ours:  # the pooler: no gradient from the masked LM
            continue
        gradient = np.asarray(tf.convert_to_tensor(ours[id(variable)]))
        np.testing.assert_allclose(gradient, theirs[name].reshape(gradient.shape), atol=1e-4)
        compared += 1
    assert compared == len(our_gradients) and np.abs(theirs["cls/predictions/output_bias"]).max()


@pytest.fixture(scope="module")
def xlm_roberta_model_file(reference_dir) -> Path:
    return reference_dir / "variants" / "xlm_roberta" / "sentencepiece.bpe.model"


@pytest.fixture(scope="module")
def hub_xlm_roberta(xlm_roberta_model_file):
    """A keras-hub `XLMRobertaMaskedLM` (every weight random) and a classifier on its backbone,
    with the shared XLM-R SentencePiece model."""
    tokenizer = keras_hub.models.XLMRobertaTokenizer(proto=str(xlm_roberta_model_file))
    preprocessor = keras_hub.models.XLMRobertaTextClassifierPreprocessor(
        tokenizer, sequence_length=SEQ_LENGTH
    )
    keras.utils.set_random_seed(23)
    backbone = keras_hub.models.XLMRobertaBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), max_sequence_length=SEQ_LENGTH, **SIZES
    )
    masked_lm = keras_hub.models.XLMRobertaMaskedLM(backbone)
    classifier = keras_hub.models.XLMRobertaTextClassifier(
        backbone, num_classes=3, preprocessor=preprocessor
    )
    ids = np.zeros((1, 4), "int32")
    masked_lm({"token_ids": ids, "padding_mask": ids, "mask_positions": ids})
    random = np.random.default_rng(23)
    for variable in {id(v): v for v in masked_lm.weights + classifier.weights}.values():
        variable.assign(variable.numpy() + random.normal(0, 0.1, variable.shape))
    return masked_lm, classifier


def test_xlm_roberta_backbone_and_masked_lm_give_keras_hubs_outputs(hub_xlm_roberta, dev):
    hub_masked_lm, hub_classifier = hub_xlm_roberta
    hub_inputs = hub_classifier.preprocessor(dev[0][:64])
    inputs = {
        "input_word_ids": hub_inputs["token_ids"],
        "input_mask": tf.cast(hub_inputs["padding_mask"], tf.int32),
        "input_type_ids": tf.zeros_like(hub_inputs["token_ids"]),
    }
    encoder, _ = from_keras_hub(hub_masked_lm.backbone)
    config = encoder.bert_config
    assert (config.model_type, config.position_offset) == ("xlm-roberta", 2)
    assert config.max_position_embeddings == SEQ_LENGTH + 2 and not config.pooler
    real = inputs["input_mask"].numpy().astype(bool)
    ours = encoder(inputs)["sequence_output"].numpy()[real]
    theirs = hub_masked_lm.backbone(hub_inputs).numpy()[real]
    np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)

    model, _ = from_keras_hub(hub_masked_lm)
    positions = tf.constant([[1, 2, 3]] * 64)
    theirs = hub_masked_lm({**hub_inputs, "mask_positions": positions})
    ours = model({**inputs, "masked_lm_positions": positions})["masked_lm"]
    np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)


def test_xlm_roberta_classifier_answers_keras_hubs_logits_from_strings(hub_xlm_roberta, dev):
    """The preprocessor reads keras-hub's SentencePiece model as transformers does, which gives
    keras-hub's ids on every dev sentence (keras-hub runs `sentencepiece`: they differ where it
    does, `tests/text/test_family_tokenizers.py`); raw strings give keras-hub's logits."""
    _, hub_classifier = hub_xlm_roberta
    model, preprocessor = from_keras_hub(hub_classifier)
    assert isinstance(model, BertClassifier) and model.num_classes == 3
    assert (preprocessor.seq_length, preprocessor.truncation) == (SEQ_LENGTH, "round_robin")
    assert type(preprocessor.tokenizer).__name__ == "UnigramTokenizer"
    texts = dev[0]
    ours, theirs = preprocessor(texts), hub_classifier.preprocessor(texts)
    np.testing.assert_array_equal(ours["input_word_ids"], theirs["token_ids"])
    np.testing.assert_array_equal(ours["input_mask"], theirs["padding_mask"])
    texts = texts[:128]
    theirs = hub_classifier(hub_classifier.preprocessor(texts))
    np.testing.assert_allclose(model(preprocessor(texts)), theirs, atol=1e-5, rtol=0)


def test_xlm_roberta_base_has_keras_hubs_preset_size_and_transformers_rows():
    """keras-hub's `xlm_roberta_base_multi` (277,450,752 parameters) in transformers' layout:
    two position rows before the padding id's successors and one token type row more."""
    from keras_hub.src.models.xlm_roberta.xlm_roberta_presets import backbone_presets

    from keras_bert import BertConfig

    config = BertConfig.preset(
        "base",
        model_type="xlm-roberta",
        vocab_size=250_002,
        max_position_embeddings=514,
        type_vocab_size=1,
        position_offset=2,
        pooler=False,
        layer_norm_epsilon=1e-5,
    )
    params = backbone_presets["xlm_roberta_base_multi"]["metadata"]["params"]
    assert config.num_parameters() == params + 3 * config.hidden_size
