"""Old public names keep working after the renames of issue 12, each with a DeprecationWarning."""

import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder
from keras_bert.data import PretrainingDataConfig
from keras_bert.layers import BertEmbeddings


def test_config_reads_old_field_names_with_a_warning():
    with pytest.warns(DeprecationWarning, match="`vocabulary_size` is deprecated"):
        config = BertConfig(vocabulary_size=100, max_sequence_length=64, type_vocabulary_size=3)
    assert (config.vocab_size, config.max_position_embeddings, config.type_vocab_size) == (
        100,
        64,
        3,
    )
    with pytest.warns(DeprecationWarning, match=r"BertConfig.vocabulary_size is deprecated"):
        assert config.vocabulary_size == 100
    with pytest.warns(DeprecationWarning):
        old_json = BertConfig.from_dict({"vocabulary_size": 100, "max_sequence_length": 64})
    assert old_json == BertConfig(vocab_size=100, max_position_embeddings=64)
    with pytest.raises(TypeError, match="both `vocabulary_size`"):
        BertConfig(vocabulary_size=100, vocab_size=100)


def test_from_preset_is_a_deprecated_alias_of_preset():
    with pytest.warns(DeprecationWarning, match="BertConfig.preset"):
        assert BertConfig.from_preset("tiny") == BertConfig.preset("tiny")
    with pytest.warns(DeprecationWarning, match=r"BertEncoder\(BertConfig.preset\(name\)\)"):
        encoder = BertEncoder.from_preset("tiny", vocab_size=50)
    assert encoder.bert_config == BertConfig.preset("tiny", vocab_size=50)


def test_embeddings_saved_with_old_keys_reload():
    layer = BertEmbeddings(
        vocab_size=20, type_vocab_size=2, max_position_embeddings=8, hidden_size=4
    )
    old_config = layer.get_config()
    for old, new in (
        ("vocabulary_size", "vocab_size"),
        ("max_sequence_length", "max_position_embeddings"),
        ("type_vocabulary_size", "type_vocab_size"),
    ):
        old_config[old] = old_config.pop(new)
    with pytest.warns(DeprecationWarning):
        restored = BertEmbeddings.from_config(old_config)
    assert restored.get_config() == layer.get_config()
    ids = np.array([[1, 2, 3]])
    assert tuple(restored(ids, np.zeros_like(ids)).shape) == (1, 3, 4)


def test_pretraining_data_config_takes_max_seq_length():
    with pytest.warns(DeprecationWarning, match="use `seq_length`"):
        config = PretrainingDataConfig(max_seq_length=64)
    assert config.seq_length == 64


def test_job_configs_take_their_run_settings_at_the_top_level_with_a_warning():
    from keras_bert.finetuning.recipe import FinetuningConfig

    with pytest.warns(DeprecationWarning, match="`optimizer` is deprecated; use `run.optimizer`"):
        config = FinetuningConfig("c", "o", optimizer="lamb", run={"seed": 2})
    assert (config.run.optimizer, config.run.seed, config.run.warmup_fraction) == ("lamb", 2, 0.1)
    with pytest.warns(DeprecationWarning, match=r"FinetuningConfig.seed is deprecated"):
        assert config.seed == 2
    with pytest.raises(TypeError, match="both `seed`"):
        FinetuningConfig("c", "o", seed=1, run={"seed": 2})


def test_the_python_reading_of_bio_tags_still_imports_from_its_old_module():
    from keras_bert.decoding import bio_tags, entities

    with pytest.warns(DeprecationWarning, match="use keras_bert.decoding.bio_tags.bio_spans"):
        assert entities.bio_spans is bio_tags.bio_spans
