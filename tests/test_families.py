"""The family registry: every family walks through its record, and every record is read.

The reference checkpoints of `shared/reference/variants` are tiny (hidden 64, 2-4 layers), and
BERT's is the session's random BERT-Tiny (`tiny_checkpoint_dir`).
"""

import contextlib
from collections.abc import Iterator
from pathlib import Path

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert import BertClassifier, BertConfig, BertEncoder
from keras_bert.config import PRESETS
from keras_bert.errors import ConfigError, KerasBertError
from keras_bert.families import FAMILIES

# The reference checkpoint directory of each family (BERT's is a fixture).
CHECKPOINTS = {
    "roberta": "roberta",
    "distilbert": "distilbert",
    "albert": "albert",
    "deberta-v2": "deberta_v3",
    "modernbert": "modernbert",
    "xlm-roberta": "xlm_roberta",
    "electra": "electra/discriminator",
}
TINY_SIZES = {
    "vocab_size": 50,
    "hidden_size": 32,
    "num_layers": 2,
    "num_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 16,
}
# Each family's own features, switched on in a tiny config (the family's layers, all counted).
FAMILY_FEATURES = {
    "bert": {"pre_layer_norm": True, "relative_attention_buckets": 8},
    "roberta": {"position_offset": 2},
    "distilbert": {},
    "albert": {"embedding_size": 16, "num_layer_groups": 1, "inner_group_num": 2},
    "deberta-v2": {
        "relative_attention": True,
        "position_buckets": 4,
        "pos_att_type": "p2c|c2p",
        "share_att_key": False,
        "norm_rel_ebd": "layer_norm",
        "position_biased_input": False,
    },
    "modernbert": {"local_attention_window": 4, "dense_bias": True, "layer_norm_bias": True},
    "xlm-roberta": {"position_offset": 2},
    "electra": {"embedding_size": 16},
}


@pytest.fixture(scope="module")
def checkpoint_dirs(reference_dir, tiny_checkpoint_dir) -> dict[str, Path]:
    variants = reference_dir / "variants"
    return {
        "bert": tiny_checkpoint_dir,
        **{model_type: variants / name for model_type, name in CHECKPOINTS.items()},
    }


@pytest.fixture(scope="module")
def encoders(checkpoint_dirs) -> dict[str, BertEncoder]:
    """Each family's encoder, loaded while every record is registered."""
    return {
        model_type: keras_bert.load_encoder(directory)
        for model_type, directory in checkpoint_dirs.items()
    }


def tiny_config(model_type: str) -> BertConfig:
    """A tiny config of the family, read from its record as `config.json` would be."""
    defaults = FAMILIES[model_type].config_defaults({"pad_token_id": 1})
    return BertConfig(
        **{**TINY_SIZES, **defaults, **FAMILY_FEATURES[model_type], "model_type": model_type}
    )


def test_every_model_type_has_a_reference_checkpoint_and_features():
    assert set(FAMILIES) == {"bert", *CHECKPOINTS} == set(FAMILY_FEATURES)
    assert all(record.model_type == name for name, record in FAMILIES.items())


@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_each_family_walks_through_its_record(model_type, checkpoint_dirs, encoders):
    record = FAMILIES[model_type]
    encoder = encoders[model_type]
    config = encoder.bert_config
    # Load: the config's family and its flags.
    assert config.model_type == model_type
    has_pooler = "pooled_output" in encoder.output
    assert record.pooler or not has_pooler
    # A checkpoint saved without a pooler (RoBERTa's masked LM) loads without one where allowed.
    assert has_pooler or record.pooler_optional or not record.pooler
    assert (encoder.embeddings.segment_embedding is not None) == (config.type_vocab_size > 0)
    assert encoder.embeddings.zero_padding == record.zero_padding_embeddings
    assert (config.position_offset > 0) == record.positions_after_padding
    # Tokenize: the family's special tokens frame a pair.
    preprocessor = keras_bert.load_preprocessor(checkpoint_dirs[model_type], seq_length=12)
    tokenizer, packing = preprocessor.tokenizer, record.packing
    ids = preprocessor((["a b"], ["c"]))["input_word_ids"].numpy()[0]
    cls_id, sep_id, pad_id = (
        tokenizer.token_to_id(token)
        for token in (packing.cls_token, packing.sep_token, packing.pad_token)
    )
    second = np.flatnonzero(ids == sep_id)
    assert ids[0] == cls_id and len(second) == packing.pair_separators + 1
    assert ids[-1] == pad_id
    types = preprocessor((["a b"], ["c"]))["input_type_ids"].numpy()[0]
    assert types[second[-1]] == packing.second_type_id
    # Classify: the family's head (or BERT's pooler).
    classifier = BertClassifier(encoder, num_classes=2)
    layer_names = {layer.name for layer in classifier.layers}
    assert ("pre_classifier" in layer_names) == (record.classifier_head.activation is not None)
    assert classifier.uses_pooled_output == (record.classifier_head.activation is None)
    has_norm = record.classifier_head.layer_norm_module is not None
    assert ("pre_classifier_layer_norm" in layer_names) == has_norm
    # Count: the config's parameter count is the encoder's.
    assert config.num_parameters() == encoder.count_params()


@contextlib.contextmanager
def registry_without(model_type: str) -> Iterator[None]:
    """The registry less one record, then restored in its order: error messages list the families
    in that order, and other modules' tests match them (`monkeypatch.delitem` restores a record
    at the end)."""
    original = dict(FAMILIES)
    del FAMILIES[model_type]
    try:
        yield
    finally:
        FAMILIES.clear()
        FAMILIES.update(original)


@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_removing_a_record_fails_that_family_load_tokenize_and_classify(
    model_type, checkpoint_dirs, encoders
):
    encoder = encoders[model_type]  # loaded with the record in place
    unknown = f"Unknown model_type '{model_type}'"
    with registry_without(model_type):
        with pytest.raises(KerasBertError, match=unknown):  # the checkpoint's unusable config
            keras_bert.load_encoder(checkpoint_dirs[model_type])
        with pytest.raises(ConfigError, match=unknown):
            keras_bert.load_preprocessor(checkpoint_dirs[model_type])
        with pytest.raises(ConfigError, match=unknown):
            BertClassifier(encoder, num_classes=2)
        with pytest.raises(ConfigError, match=unknown):
            BertConfig(model_type=model_type)


@pytest.mark.parametrize("model_type", sorted(FAMILIES))
def test_num_parameters_counts_the_weights_of_every_family(model_type):
    config = tiny_config(model_type)
    encoder = BertEncoder(config)
    assert config.num_parameters() == encoder.count_params()


def _count_params_unallocated(config: BertConfig) -> int:
    """The weights of `BertEncoder(config)`, counted without allocating or drawing them."""
    with keras.StatelessScope(initialize_variables=False):
        count = BertEncoder(config).count_params()
    # The scope leaves its variables pending; the next symbolic call would draw them all.
    from keras.src.backend.common import global_state

    global_state.set_global_attribute("uninitialized_variables", [])
    return count


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_num_parameters_of_every_preset_equals_the_built_encoder(preset):
    config = BertConfig.preset(preset)
    assert config.num_parameters() == _count_params_unallocated(config)


def test_albert_base_counts_its_shared_layers_once():
    """ALBERT-base (albert-base-v2's sizes): 11.7M weights, not BERT-base's 109M."""
    config = BertConfig.preset(
        "base", vocab_size=30000, embedding_size=128, num_layer_groups=1, model_type="albert"
    )
    assert config.num_parameters() == _count_params_unallocated(config) == 11_683_584
