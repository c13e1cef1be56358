"""`save_checkpoint` writes transformers' layout, which keras_bert reads back exactly: every
family × head on tiny checkpoints, its tensor names as transformers saves them, its tokenizer
files giving keras_bert's ids, and a directory written whole or not at all."""

import json
from pathlib import Path

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file
from tokenizers import Tokenizer

import keras_bert
from keras_bert import (
    BertClassifier,
    BertEncoder,
    BertMaskedLM,
    BertPretrainer,
    BertQuestionAnswerer,
    BertReplacedTokenDetector,
    BertTokenClassifier,
    load_preprocessor,
    save_checkpoint,
)
from keras_bert.errors import ConfigError, PublishError
from tests.conftest import reference_outputs
from tests.text.adversarial import ADVERSARIAL_TEXTS

SEQ_LENGTH = 24
# The reference checkpoint directory of each family (BERT's: the session's BERT-Tiny).
VARIANTS = {"roberta": "roberta", "distilbert": "distilbert", "albert": "albert"}
VARIANTS["deberta-v2"] = "deberta_v3"
VARIANTS["modernbert"] = "modernbert"
VARIANTS["xlm-roberta"] = "xlm_roberta"
VARIANTS["electra"] = "electra/discriminator"
# How each head is built on a checkpoint, and read back from a saved directory.
HEADS = {
    "encoder": lambda checkpoint: BertEncoder.from_checkpoint(checkpoint),
    "masked_lm": lambda checkpoint: BertMaskedLM(BertEncoder.from_checkpoint(checkpoint)),
    "classifier": lambda checkpoint: BertClassifier.from_checkpoint(
        checkpoint, num_classes=3, label_names=["negative", "neutral", "positive"]
    ),
    "regressor": lambda checkpoint: BertClassifier.from_checkpoint(checkpoint, num_classes=1),
    "token_classifier": lambda checkpoint: BertTokenClassifier.from_checkpoint(
        checkpoint, label_names=["O", "B-place", "I-place"]
    ),
    "question_answerer": lambda checkpoint: BertQuestionAnswerer.from_checkpoint(checkpoint),
    "pretrainer": lambda checkpoint: BertPretrainer.from_checkpoint(checkpoint),
    "replaced_token_detector": lambda checkpoint: BertReplacedTokenDetector(
        BertEncoder.from_checkpoint(checkpoint)
    ),
}
# The families whose `*ForPreTraining` is each pretraining head (ELECTRA's: the discriminator).
PRETRAINING_FAMILIES = {"pretrainer": ("bert", "albert"), "replaced_token_detector": ("electra",)}
ARCHITECTURES = {
    "encoder": "Model",
    "masked_lm": "ForMaskedLM",
    "classifier": "ForSequenceClassification",
    "regressor": "ForSequenceClassification",
    "token_classifier": "ForTokenClassification",
    "question_answerer": "ForQuestionAnswering",
    "pretrainer": "ForPreTraining",
    "replaced_token_detector": "ForPreTraining",
}
TEXTS = ["The cat sat on the mat.", "Proteins fold into shapes (mostly)."]


@pytest.fixture(scope="module")
def checkpoints(reference_dir, tiny_checkpoint_dir) -> dict[str, Path]:
    variants = reference_dir / "variants"
    return {"bert": tiny_checkpoint_dir} | {
        model_type: variants / name for model_type, name in VARIANTS.items()
    }


def _inputs(preprocessor) -> dict[str, np.ndarray]:
    inputs = {name: np.asarray(value) for name, value in preprocessor(TEXTS).items()}
    return inputs | {"masked_lm_positions": np.array([[1, 2, 3]] * len(TEXTS))}


def _outputs(model, inputs) -> list[np.ndarray]:
    names = [tensor.name for tensor in keras.tree.flatten(model.input)]
    outputs = model({name: inputs[name] for name in names})
    return [np.asarray(output) for output in keras.tree.flatten(outputs)]


@pytest.mark.slow
@pytest.mark.parametrize("model_type", ["bert", *VARIANTS])
def test_every_head_of_every_family_reads_back_exactly(model_type, checkpoints, tmp_path):
    checkpoint = checkpoints[model_type]
    preprocessor = load_preprocessor(checkpoint, seq_length=SEQ_LENGTH)
    inputs = _inputs(preprocessor)
    prefix = keras_bert.families.family(model_type).transformers_prefix
    for head, build in HEADS.items():
        if model_type not in PRETRAINING_FAMILIES.get(head, (model_type,)):
            continue  # transformers has no *ForPreTraining of the family with this head
        keras.utils.set_random_seed(0)
        model = build(checkpoint)
        directory = tmp_path / head

        save_checkpoint(model, directory, preprocessor)
        restored = type(model).from_checkpoint(directory)

        config = json.loads((directory / "config.json").read_text())
        assert config["architectures"] == [f"{prefix}{ARCHITECTURES[head]}"], head
        for ours, theirs in zip(_outputs(model, inputs), _outputs(restored, inputs), strict=True):
            np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-6, err_msg=head)
        assert getattr(restored, "label_names", None) == getattr(model, "label_names", None)
    saved = load_preprocessor(tmp_path / "classifier", seq_length=SEQ_LENGTH)
    texts = [*TEXTS, *ADVERSARIAL_TEXTS]
    np.testing.assert_array_equal(
        saved(texts)["input_word_ids"], preprocessor(texts)["input_word_ids"]
    )


@pytest.mark.parametrize("model_type", VARIANTS)
def test_tokenizer_json_gives_keras_bert_ids(model_type, checkpoints, tmp_path, reference_dir):
    preprocessor = load_preprocessor(checkpoints[model_type], seq_length=64)
    save_checkpoint(BertEncoder.from_checkpoint(checkpoints[model_type]), tmp_path, preprocessor)
    tokenizer = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = json.loads(str(reference_outputs(reference_dir, VARIANTS[model_type])["texts_json"]))
    texts = texts["singles"]

    ours = {name: np.asarray(value) for name, value in preprocessor(texts).items()}
    for row, encoding in enumerate(tokenizer.encode_batch(texts)):
        length = int(ours["input_mask"][row].sum())
        assert encoding.ids == list(ours["input_word_ids"][row][:length]), texts[row]


@pytest.mark.parametrize(
    "model_type, source, architecture",
    [
        ("roberta", "roberta", "masked_lm"),
        ("distilbert", "distilbert", "masked_lm"),
        ("deberta-v2", "deberta_v3", "masked_lm"),
        ("xlm-roberta", "xlm_roberta", "masked_lm"),
        ("albert", "albert", "pretrainer"),
        ("modernbert", "modernbert", "masked_lm"),
        ("electra", "electra/generator", "masked_lm"),
        ("electra", "electra/discriminator", "replaced_token_detector"),
    ],
)
def test_tensors_are_named_as_transformers_saves_them(
    model_type, source, architecture, reference_dir, tmp_path
):
    """The reference checkpoints were written by transformers' own `save_pretrained`."""
    checkpoint = reference_dir / "variants" / source
    load = {
        "masked_lm": keras_bert.load_masked_lm,
        "pretrainer": BertPretrainer.from_checkpoint,
        "replaced_token_detector": keras_bert.load_replaced_token_detector,
    }[architecture]
    model = load(checkpoint)

    save_checkpoint(model, tmp_path, load_preprocessor(checkpoint))

    written = load_file(tmp_path / "model.safetensors")
    published = load_file(checkpoint / "model.safetensors")
    assert sorted(written) == sorted(published)
    for name, value in published.items():
        np.testing.assert_array_equal(written[name], value, err_msg=name)


def test_minilm_is_written_in_its_own_layout_and_size(minilm_dir, tmp_path):
    encoder = BertEncoder.from_checkpoint(minilm_dir)
    preprocessor = load_preprocessor(minilm_dir)

    directory = save_checkpoint(encoder, tmp_path / "minilm", preprocessor)

    written = load_file(directory / "model.safetensors")
    published = load_file(minilm_dir / "model.safetensors")  # by transformers 4, with a buffer
    assert sorted(written) == sorted(set(published) - {"embeddings.position_ids"})
    parameter_bytes = 4 * encoder.count_params()
    tokenizer_files = ("vocab.txt", "tokenizer.json", "tokenizer_config.json")
    tokenizer_files += ("special_tokens_map.json",)
    tokenizer_bytes = sum((directory / name).stat().st_size for name in tokenizer_files)
    overhead = {name: (directory / name).stat().st_size for name in ("config.json", "README.md")}
    weights_bytes = (directory / "model.safetensors").stat().st_size
    assert parameter_bytes < weights_bytes < parameter_bytes + 16 * 1024  # + its header
    assert sum(overhead.values()) < 4 * 1024
    total = sum(path.stat().st_size for path in directory.iterdir())
    assert total == weights_bytes + tokenizer_bytes + sum(overhead.values())


def test_model_card_holds_the_hub_metadata_labels_and_metrics(checkpoints, tmp_path):
    model = HEADS["token_classifier"](checkpoints["distilbert"])
    metrics = {"train_steps": 20, "evaluation": {"entity_f1": 0.5123, "accuracy": 0.9}}

    save_checkpoint(
        model,
        tmp_path,
        load_preprocessor(checkpoints["distilbert"]),
        base_model="distilbert/distilbert-base-uncased",
        dataset="WNUT-16 (shared/data/ner)",
        metrics=metrics,
        repo_id="my-org/wnut-distilbert",
    )

    card = (tmp_path / "README.md").read_text()
    metadata = card.split("---")[1]
    assert "library_name: transformers" in metadata
    assert "pipeline_tag: token-classification" in metadata
    assert "base_model: distilbert/distilbert-base-uncased" in metadata
    assert "| 1 | B-place |" in card and "WNUT-16" in card
    assert "| entity_f1 | 0.5123 |" in card and "train_steps" not in card
    assert 'AutoModelForTokenClassification.from_pretrained("my-org/wnut-distilbert")' in card
    assert 'BertTokenClassifier.from_checkpoint("my-org/wnut-distilbert")' in card


def test_a_local_base_checkpoint_stays_out_of_the_metadata(checkpoints, tmp_path):
    save_checkpoint(
        BertEncoder.from_checkpoint(checkpoints["roberta"]),
        tmp_path,
        load_preprocessor(checkpoints["roberta"]),
        base_model=str(checkpoints["roberta"]),
    )

    card = (tmp_path / "README.md").read_text()
    assert "base_model" not in card.split("---")[1]
    assert "pipeline_tag: feature-extraction" in card
    assert "Base checkpoint: a local checkpoint, `variants/roberta`" in card


def test_a_pretrainer_without_a_twin_publishes_its_masked_lm_alone(checkpoints, tmp_path):
    config = keras_bert.load_encoder(checkpoints["roberta"]).bert_config
    pretrainer = BertPretrainer(BertEncoder(config.replace(pooler=True)))
    preprocessor = load_preprocessor(checkpoints["roberta"], seq_length=SEQ_LENGTH)

    with pytest.raises(ConfigError, match="no roberta model with a next-sentence head"):
        save_checkpoint(pretrainer, tmp_path / "pretrainer", preprocessor)
    save_checkpoint(pretrainer, tmp_path / "masked_lm", preprocessor, task="masked_lm")

    inputs = _inputs(preprocessor)
    restored = BertMaskedLM.from_checkpoint(tmp_path / "masked_lm")
    expected = pretrainer(inputs)["masked_lm"]
    np.testing.assert_allclose(restored(inputs)["masked_lm"], expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda encoder: BertClassifier(encoder, 2, pooling="mean"),
            "sequence classifiers read the first token",
        ),
        (
            lambda encoder: BertMaskedLM(encoder, head_layer_norm_epsilon=1e-5),
            "take the encoder's LayerNorm epsilon",
        ),
        (
            lambda encoder: BertPretrainer(encoder, span_boundary_objective=True),
            "span-boundary head",
        ),
        (
            lambda encoder: BertEncoder(encoder.bert_config.replace(pre_layer_norm=True)),
            "cannot hold pre_layer_norm=True",
        ),
        (BertReplacedTokenDetector, "no bert model with a replaced-token head"),
    ],
    ids=["mean pooling", "keras-hub head", "span boundary", "pre-LN blocks", "BERT detector"],
)
def test_a_model_without_a_transformers_twin_is_refused_before_writing(
    build, message, checkpoints, tmp_path
):
    model = build(BertEncoder.from_checkpoint(checkpoints["bert"]))

    with pytest.raises(ConfigError, match=message):
        save_checkpoint(model, tmp_path / "out", load_preprocessor(checkpoints["bert"]))
    assert list(tmp_path.iterdir()) == []


def test_a_model_without_its_preprocessor_says_how_to_give_one(checkpoints, tmp_path):
    with pytest.raises(ConfigError, match="pass preprocessor="):
        save_checkpoint(BertEncoder.from_checkpoint(checkpoints["bert"]), tmp_path / "out")


@pytest.fixture
def saved_classifier(checkpoints, tmp_path):
    """A classifier, its preprocessor and the directory it was saved to."""
    keras.utils.set_random_seed(0)
    model = HEADS["classifier"](checkpoints["distilbert"])
    preprocessor = load_preprocessor(checkpoints["distilbert"])
    return model, preprocessor, save_checkpoint(model, tmp_path / "saved", preprocessor)


def _contents(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in directory.iterdir()}


def test_a_directory_holding_another_model_is_left_untouched(saved_classifier):
    model, preprocessor, directory = saved_classifier
    before = _contents(directory)
    keras.utils.set_random_seed(1)
    other = HEADS["classifier"](Path("../shared/reference/variants/distilbert"))

    with pytest.raises(PublishError, match="already holds another model"):
        save_checkpoint(other, directory, preprocessor)
    assert _contents(directory) == before
    assert [path.name for path in directory.parent.iterdir()] == ["saved"]


def test_saving_the_same_model_again_replaces_its_directory(saved_classifier):
    model, preprocessor, directory = saved_classifier

    save_checkpoint(model, directory, preprocessor, metrics={"accuracy": 0.75})

    assert "| accuracy | 0.75 |" in (directory / "README.md").read_text()
    assert [path.name for path in directory.parent.iterdir()] == ["saved"]


def test_a_directory_of_other_files_is_refused(saved_classifier, tmp_path):
    model, preprocessor, _ = saved_classifier
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("keep me")

    with pytest.raises(PublishError):
        save_checkpoint(model, tmp_path / "notes", preprocessor)
    assert _contents(tmp_path / "notes") == {"todo.txt": b"keep me"}


def test_a_failed_save_leaves_nothing_behind(saved_classifier, tmp_path, monkeypatch):
    import safetensors.numpy

    model, preprocessor, _ = saved_classifier

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(safetensors.numpy, "save_file", full_disk)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(model, tmp_path / "new", preprocessor)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["saved"]


def test_asking_for_other_classes_starts_a_new_head(saved_classifier, caplog):
    _, _, directory = saved_classifier

    with caplog.at_level("WARNING", logger="keras_bert.models.task"):
        classifier = BertClassifier.from_checkpoint(directory, num_classes=5)

    assert classifier.num_classes == 5 and classifier.label_names is None
    assert "the head starts anew" in caplog.text
