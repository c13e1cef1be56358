"""Every layout of a checkpoint loads alike: bare models (`AutoModel.save_pretrained`), the
pretraining and masked-LM models, fine-tuned task models (their heads read by the task's model)
and those with modules no keras_bert model reads."""

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from keras_bert import BertClassifier, load_encoder
from keras_bert.checkpoints import load_checkpoint
from keras_bert.checkpoints.huggingface import read_weights_file

VARIANTS = Path("../shared/reference/variants")
FIXTURES = Path(__file__).parent / "fixtures"
# Checkpoint directory -> the prefix its `*For...` model puts before the bare model's names.
LAYOUTS = {
    VARIANTS / "roberta": "roberta.",
    VARIANTS / "distilbert": "distilbert.",
    VARIANTS / "albert": "albert.",
    VARIANTS / "deberta_v3": "deberta.",
    VARIANTS / "modernbert": "model.",
    VARIANTS / "electra" / "discriminator": "electra.",  # its bare `embeddings_project.`
    FIXTURES / "tinybert": "bert.",
}


def _rewritten(source: Path, directory: Path, rename) -> Path:
    """`source`'s config and tokenizer with its tensors renamed (`None`: left out)."""
    shutil.copytree(source, directory, ignore=shutil.ignore_patterns("*.bin", "*.safetensors"))
    weights_file = next(
        path for path in source.iterdir() if path.suffix in (".bin", ".safetensors")
    )
    tensors = {
        rename(name): np.ascontiguousarray(value)
        for name, value in read_weights_file(weights_file).items()
        if rename(name) is not None
    }
    save_file(tensors, directory / "model.safetensors")
    return directory


def _assert_same_weights(encoder, other) -> None:
    assert len(encoder.weights) == len(other.weights)
    for ours, theirs in zip(encoder.weights, other.weights, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=ours.path)


@pytest.mark.parametrize("source, prefix", LAYOUTS.items(), ids=lambda value: str(value)[-12:])
def test_a_bare_model_loads_like_its_pretraining_model(tmp_path, source, prefix):
    def bare(name: str) -> str | None:  # AutoModel.save_pretrained: no prefix, no heads
        return name.removeprefix(prefix) if name.startswith(prefix) else None

    bare_directory = _rewritten(source, tmp_path / "bare", bare)

    _assert_same_weights(load_encoder(bare_directory), load_encoder(source))


def test_a_bare_albert_keeps_its_pooler(tmp_path):
    bare_directory = _rewritten(
        VARIANTS / "albert", tmp_path / "bare", lambda name: name.removeprefix("albert.")
    )

    assert "pooler.weight" in load_file(bare_directory / "model.safetensors")
    assert "bert/pooler/dense/kernel" in load_checkpoint(bare_directory).tensors


def test_a_fine_tuned_classifier_gives_its_head_and_labels(tmp_path, caplog):
    source = VARIANTS / "distilbert"
    directory = _rewritten(source, tmp_path / "classifier", lambda name: name)
    tensors = load_file(directory / "model.safetensors")
    head = {"pre_classifier.weight": np.ones((64, 64), np.float32)} | {
        "pre_classifier.bias": np.zeros(64, np.float32),
        "classifier.weight": np.full((3, 64), 2.0, np.float32),
        "classifier.bias": np.zeros(3, np.float32),
    }
    save_file(tensors | head, directory / "model.safetensors")
    config = json.loads((directory / "config.json").read_text())
    config["architectures"] = ["DistilBertForSequenceClassification"]
    config["id2label"] = {"0": "negative", "1": "neutral", "2": "positive"}
    (directory / "config.json").write_text(json.dumps(config))

    with caplog.at_level(logging.WARNING, logger="keras_bert.checkpoints.huggingface"):
        checkpoint = load_checkpoint(directory)
        classifier = BertClassifier.from_checkpoint(directory)

    assert checkpoint.ignored == () and not caplog.records
    assert classifier.label_names == ["negative", "neutral", "positive"]
    np.testing.assert_array_equal(classifier.get_layer("logits").kernel.numpy(), 2.0)
    _assert_same_weights(classifier.encoder, load_encoder(source))


def test_tinybert_fit_denses_are_ignored_not_errors():
    checkpoint = load_checkpoint(FIXTURES / "tinybert")

    assert sorted(checkpoint.ignored) == sorted(
        f"fit_denses.{index}.{parameter}" for index in range(3) for parameter in ("weight", "bias")
    )
    assert load_encoder(FIXTURES / "tinybert").bert_config.num_layers == 2


def test_a_sharded_pytorch_model_bin_is_read_through_its_index(tmp_path):
    directory = tmp_path / "sharded"
    shutil.copytree(FIXTURES / "tinybert", directory)
    (directory / "pytorch_model.bin").rename(directory / "pytorch_model-00001-of-00002.bin")
    shutil.copyfile(
        FIXTURES / "bert_pretraining_legacy.bin", directory / "pytorch_model-00002-of-00002.bin"
    )
    index = {"weight_map": {"fit_denses.0.weight": "pytorch_model-00001-of-00002.bin"}}
    index["weight_map"]["bert.pooler.dense.weight"] = "pytorch_model-00002-of-00002.bin"
    (directory / "pytorch_model.bin.index.json").write_text(json.dumps(index))

    checkpoint = load_checkpoint(directory)

    assert checkpoint.source.endswith("pytorch_model-00001-of-00002.bin")
    assert len(checkpoint.ignored) == 6
    assert load_encoder(directory).bert_config.hidden_size == 8
