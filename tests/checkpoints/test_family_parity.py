"""BERT's family in BERT's blocks: RoBERTa, DistilBERT, ALBERT, DeBERTa-v3, ModernBERT,
XLM-RoBERTa and ELECTRA checkpoints (random weights, written by Hugging Face transformers) give
transformers' outputs."""

import json

import numpy as np
import pytest

import keras_bert
from bench.bench_transformers_twins import FAMILIES
from keras_bert.errors import ConfigError
from tests.conftest import reference_outputs

# The random checkpoints of shared/reference/variants: each family's (BERT's is the real MiniLM,
# tests/checkpoints/test_parity.py) and ELECTRA's generator.
VARIANTS = (*(family for family in FAMILIES if family != "bert"), "electra/generator")
# The `model_type` each reference checkpoint declares.
MODEL_TYPES = {
    "roberta": "roberta",
    "distilbert": "distilbert",
    "albert": "albert",
    "deberta_v3": "deberta-v2",
    "modernbert": "modernbert",
    "xlm_roberta": "xlm-roberta",
    "electra/generator": "electra",
    "electra/discriminator": "electra",
}
PARTS = ("singles", "pairs", "multilingual")
# The checkpoints with a masked-LM head (ELECTRA's discriminator has its replaced-token head).
MASKED_LM_VARIANTS = tuple(variant for variant in VARIANTS if variant != "electra/discriminator")
# The checkpoints fine-tuned for tasks (ELECTRA's is its discriminator; its narrower generator
# only fills masks).
TASK_VARIANTS = tuple(variant for variant in VARIANTS if variant != "electra/generator")


def _parts(reference) -> list[str]:
    """The reference's inputs: singles, pairs and, where there are, multilingual lines."""
    return [part for part in PARTS if f"{part}_input_ids" in reference.files]


def _inputs(reference, part):
    ids = reference[f"{part}_input_ids"].astype("int32")
    type_ids = f"{part}_token_type_ids"
    return {
        "input_word_ids": ids,
        "input_mask": reference[f"{part}_attention_mask"].astype("int32"),
        "input_type_ids": (
            reference[type_ids] if type_ids in reference.files else np.zeros_like(ids)
        ).astype("int32"),
    }


@pytest.mark.parametrize("family", VARIANTS)
def test_encoder_matches_transformers(family, reference_dir):
    reference = reference_outputs(reference_dir, family)
    encoder = keras_bert.load_encoder(reference_dir / "variants" / family, output_all_layers=True)
    assert encoder.bert_config.model_type == MODEL_TYPES[family]
    for part in _parts(reference):
        inputs = _inputs(reference, part)
        outputs = encoder(inputs)
        real = inputs["input_mask"].astype(bool)
        for name in ("embedding_output", "sequence_output"):
            difference = np.abs(np.asarray(outputs[name]) - reference[f"{part}_{name}"])[real]
            assert difference.max() <= 1e-4, (part, name, difference.max())
        if f"{part}_pooled_output" in reference.files:
            expected = reference[f"{part}_pooled_output"]
            assert np.abs(np.asarray(outputs["pooled_output"]) - expected).max() <= 1e-4


@pytest.mark.parametrize("document", ["long0", "long1"])
def test_modernbert_reads_documents_of_1024_tokens_as_transformers(document, reference_dir):
    """Two Wikipedia documents, unpadded: 64 windows of the local layers, rotary positions up
    to 1,023; the sequence output and the masked-LM logits."""
    reference = reference_outputs(reference_dir, "modernbert")
    ids = reference[f"{document}_input_ids"].astype("int32")
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids)}
    model = keras_bert.load_masked_lm(reference_dir / "variants" / "modernbert")
    inputs |= {"input_type_ids": np.zeros_like(ids), "masked_lm_positions": np.array([[1, 2, 3]])}
    outputs = model.encoder(inputs)["sequence_output"]
    expected = reference[f"{document}_sequence_output"]
    assert ids.shape == (1, 1024) and np.abs(np.asarray(outputs) - expected).max() <= 1e-4
    logits = model(inputs)["masked_lm"]
    assert np.abs(np.asarray(logits) - reference[f"{document}_mlm_logits_at_1_2_3"]).max() <= 1e-4


def test_albert_shares_its_layers_as_the_original_maps_them(reference_dir):
    encoder = keras_bert.load_encoder(reference_dir / "variants" / "albert")
    config = encoder.bert_config
    # 4 layers on 2 groups: layers 0, 1 run group 0 and layers 2, 3 group 1.
    assert config.layer_groups == [0, 0, 1, 1] and len(encoder.blocks) == 2
    assert config.embedding_size == 32 and config.hidden_activation == "gelu_approximate"
    assert (
        encoder.count_params()
        < keras_bert.BertEncoder(
            config.replace(num_layer_groups=None, embedding_size=None)
        ).count_params()
    )


def test_albert_sentence_order_head_matches_transformers(reference_dir):
    from keras_bert.models.pretrainer import BertPretrainer

    reference = reference_outputs(reference_dir, "albert")
    model = BertPretrainer.from_checkpoint(reference_dir / "variants" / "albert")
    for part in ("singles", "pairs"):
        inputs = _inputs(reference, part)
        positions = np.tile(np.array([[1, 2, 3]], "int32"), (len(inputs["input_mask"]), 1))
        outputs = model({**inputs, "masked_lm_positions": positions})
        expected = reference[f"{part}_sop_logits"]
        assert np.abs(np.asarray(outputs["next_sentence"]) - expected).max() <= 1e-4


@pytest.mark.parametrize("family", MASKED_LM_VARIANTS)
def test_masked_lm_matches_transformers(family, reference_dir):
    reference = reference_outputs(reference_dir, family)
    model = keras_bert.load_masked_lm(reference_dir / "variants" / family)
    for part in _parts(reference):
        inputs = _inputs(reference, part)
        positions = np.tile(np.array([[1, 2, 3]], "int32"), (len(inputs["input_mask"]), 1))
        logits = model({**inputs, "masked_lm_positions": positions})["masked_lm"]
        expected = reference[f"{part}_mlm_logits_at_1_2_3"]
        assert np.abs(np.asarray(logits) - expected).max() <= 1e-4


def test_electra_discriminator_logits_match_transformers(reference_dir):
    """`ElectraForPreTraining`'s replaced-token logit at every position, the embedding
    projection (E 32 → H 64) and no pooler."""
    checkpoint = reference_dir / "variants" / "electra" / "discriminator"
    reference = reference_outputs(reference_dir, "electra/discriminator")
    detector = keras_bert.load_replaced_token_detector(checkpoint)
    config = detector.encoder.bert_config
    assert (config.embedding_size, config.hidden_size) == (32, 64)
    assert detector.encoder.embedding_projection is not None and detector.encoder.pooler is None
    for part in ("singles", "pairs"):
        inputs = _inputs(reference, part)
        logits = np.asarray(detector(inputs))
        assert logits.shape == inputs["input_word_ids"].shape
        assert np.abs(logits - reference[f"{part}_rtd_logits"]).max() <= 1e-4


def test_electra_generator_is_not_a_replaced_token_detector(reference_dir):
    with pytest.raises(ConfigError, match="no replaced-token head"):
        keras_bert.load_replaced_token_detector(reference_dir / "variants" / "electra/generator")
    with pytest.raises(ConfigError, match="no masked-LM head"):
        keras_bert.load_masked_lm(reference_dir / "variants" / "electra/discriminator")


def test_distilbert_preprocessor_gives_the_reference_ids(reference_dir):
    reference = reference_outputs(reference_dir, "distilbert")
    texts = json.loads(str(reference["texts_json"]))
    preprocessor = keras_bert.load_preprocessor(
        reference_dir / "variants" / "distilbert", seq_length=64
    )
    singles = preprocessor(texts["singles"])
    np.testing.assert_array_equal(singles["input_word_ids"], reference["singles_input_ids"])
    pairs = preprocessor(tuple(map(list, zip(*texts["pairs"], strict=True))))
    np.testing.assert_array_equal(pairs["input_word_ids"], reference["pairs_input_ids"])


def test_distilbert_has_no_pooler(reference_dir):
    encoder = keras_bert.load_encoder(reference_dir / "variants" / "distilbert")
    with pytest.raises(ConfigError, match="distilbert encoder has no pooler"):
        keras_bert.BertPretrainer(encoder)  # next-sentence prediction reads the pooler


@pytest.mark.parametrize("family", TASK_VARIANTS)
def test_each_family_fine_tunes_a_classifier_with_its_own_head(family, reference_dir, tmp_path):
    import keras

    reference = reference_outputs(reference_dir, family)
    encoder = keras_bert.load_encoder(reference_dir / "variants" / family)
    classifier = keras_bert.BertClassifier(encoder, num_classes=2)
    layer_names = {layer.name for layer in classifier.layers}
    assert ("pre_classifier" in layer_names) == (family != "albert")  # ELECTRA's: dense → GELU
    assert ("pre_classifier_layer_norm" in layer_names) == (family == "modernbert")
    inputs = _inputs(reference, "singles")
    labels = np.arange(len(inputs["input_mask"])) % 2
    keras.utils.set_random_seed(0)
    classifier.compile(optimizer=keras.optimizers.Adam(1e-3))
    # Eight sentences' labels, memorised: the head and encoder train.
    history = classifier.fit(inputs, labels, epochs=15, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < 0.8 * history.history["loss"][0]
    classifier.save(tmp_path / "classifier.keras")
    restored = keras.saving.load_model(tmp_path / "classifier.keras")
    np.testing.assert_allclose(restored(inputs), classifier(inputs), atol=1e-5)


def _copy_with_config(source, directory, **changes):
    """A copy of a reference checkpoint with `changes` to its config.json."""
    import shutil

    shutil.copytree(source, directory)
    config = directory / "config.json"
    config.chmod(0o644)
    config.write_text(json.dumps({**json.loads(config.read_text()), **changes}))
    return directory


@pytest.mark.parametrize("vocab_size", [4000, 5000])
def test_a_config_whose_vocabulary_is_not_the_embedding_table_says_what_to_set(
    vocab_size, reference_dir, tmp_path
):
    checkpoint = _copy_with_config(
        reference_dir / "variants" / "xlm_roberta", tmp_path / "edited", vocab_size=vocab_size
    )
    message = f"vocabulary {vocab_size}.*table has 4002 rows: set vocab_size to 4002 in its config"
    for load in (keras_bert.load_encoder, keras_bert.load_masked_lm):
        with pytest.raises(keras_bert.errors.CheckpointError, match=message) as error:
            load(checkpoint)
        assert "\n" not in str(error.value)
