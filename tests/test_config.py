import json

import pytest

from keras_bert import BertConfig, ConfigError
from keras_bert.config import PRESETS


def test_presets_have_the_published_sizes():
    sizes = {
        name: (config.num_layers, config.hidden_size, config.num_heads, config.intermediate_size)
        for name, config in ((name, BertConfig.preset(name)) for name in PRESETS)
    }
    assert sizes == {
        "tiny": (2, 128, 2, 512),
        "mini": (4, 256, 4, 1024),
        "small": (4, 512, 8, 2048),
        "medium": (8, 512, 8, 2048),
        "base": (12, 768, 12, 3072),
        "large": (24, 1024, 16, 4096),
    }


def test_json_round_trip_and_replace():
    config = BertConfig.preset("mini", hidden_activation="gelu_approximate")
    assert BertConfig.from_json(config.to_json()) == config
    assert config.replace(num_layers=2).num_layers == 2


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hidden_size": 100, "num_heads": 12}, "not divisible by num_heads"),
        ({"num_layers": 0}, "num_layers must be a positive integer"),
        ({"vocab_size": -3}, "vocab_size must be a positive integer"),
        ({"hidden_size": 7.5}, "hidden_size must be a positive integer"),
        ({"hidden_activation": "swish"}, "Unknown hidden_activation 'swish'"),
        ({"dropout_rate": 1.0}, "dropout_rate must be in"),
    ],
)
def test_invalid_configs_name_the_problem(changes, message):
    with pytest.raises(ConfigError, match=message):
        BertConfig(**changes)


def test_unknown_preset_and_fields():
    with pytest.raises(ConfigError, match="Unknown preset 'huge'"):
        BertConfig.preset("huge")
    with pytest.raises(ConfigError, match="Unknown BertConfig fields: hiden_size"):
        BertConfig.from_dict({"hiden_size": 3})


def test_reads_hugging_face_config(minilm_dir):
    config = BertConfig.from_json_file(minilm_dir / "config.json")
    assert config == BertConfig(
        vocab_size=30522,
        hidden_size=384,
        num_layers=6,
        num_heads=12,
        intermediate_size=1536,
    )


def test_reads_original_bert_config(tmp_path):
    # The exact contents of Google's uncased_L-12_H-768_A-12/bert_config.json.
    original = {
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 768,
        "initializer_range": 0.02,
        "intermediate_size": 3072,
        "max_position_embeddings": 512,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "type_vocab_size": 2,
        "vocab_size": 30522,
    }
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(original))
    assert BertConfig.from_json_file(path) == BertConfig.preset("base")
    assert BertConfig.from_original_dict(BertConfig().to_original_dict()) == BertConfig()


def test_bad_config_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="No BERT config file"):
        BertConfig.from_json_file(tmp_path / "missing.json")
    (tmp_path / "binary.json").write_bytes(b"\x89PNG\x00\xff")
    with pytest.raises(ConfigError, match="not a JSON config file"):
        BertConfig.from_json_file(tmp_path / "binary.json")
    (tmp_path / "partial.json").write_text('{"num_hidden_layers": 2}')
    with pytest.raises(ConfigError, match="missing the field 'vocab_size'"):
        BertConfig.from_json_file(tmp_path / "partial.json")
    (tmp_path / "relative.json").write_text(
        json.dumps({**BertConfig().to_original_dict(), "position_embedding_type": "relative_key"})
    )
    with pytest.raises(ConfigError, match="Only absolute"):
        BertConfig.from_json_file(tmp_path / "relative.json")
