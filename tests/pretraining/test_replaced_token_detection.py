"""`pipelines.pretrain --replaced-token-detection true`: ELECTRA's objective end to end on real
text: the run directory is the discriminator's checkpoint (the detector, the encoder and the
fine-tuning jobs read it; it publishes as `ElectraForPreTraining`), its generator beside it.
(Under MirroredStrategy, MultiWorkerMirroredStrategy and killed, resumed: tests/training, every
objective.)"""

import csv
import json

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert import BertEncoder
from keras_bert.errors import ConfigError
from keras_bert.models.electra_pretrainer import ElectraPretrainer
from keras_bert.pretraining import PretrainingConfig, run_pretraining
from pipelines import evaluate_mlm, finetune_classifier, publish
from pipelines.pretrain import pretraining_config
from tests.training.conftest import REPLACED_TOKEN_DETECTION

DISCRIMINATOR = REPLACED_TOKEN_DETECTION["model_config"]


@pytest.fixture
def electra_config(small_config) -> dict:
    return {**small_config, **REPLACED_TOKEN_DETECTION}


def test_config_refuses_sentence_pairs_and_bad_settings(electra_config):
    with pytest.raises(ConfigError, match="single segments"):
        PretrainingConfig(**{**electra_config, "data": {"next_sentence_prediction": True}})
    with pytest.raises(ConfigError, match="single segments"):
        PretrainingConfig(**{**electra_config, "span_boundary_objective": True})
    with pytest.raises(ConfigError, match="generator_width"):
        PretrainingConfig(**{**electra_config, "generator_width": 1.5})


@pytest.mark.slow
def test_a_run_is_the_discriminators_checkpoint(electra_config, data_dir, tmp_path, capsys):
    flags = ["--output-dir", str(tmp_path / "run"), "--replaced-token-detection", "true"]
    flags += ["--generator-width", "0.5", "--discriminator-loss-weight", "40"]
    flags += ["--input-files", *electra_config["input_files"]]
    flags += ["--vocabulary-file", electra_config["vocabulary_file"]]
    # A preset replaces the recipe's model (whose pre-LN blocks transformers has not): the
    # config is then DISCRIMINATOR's alone, transformers' ELECTRA.
    flags += ["--model-preset", "tiny", "--model-config", json.dumps(DISCRIMINATOR)]
    flags += ["--held-out-documents", "2", "--eval-steps", "2", "--seq-length", "32"]
    flags += ["--max-predictions-per-seq", "5", "--mask-token-rate", "0.85"]
    flags += ["--global-batch-size", "8", "--total-steps", "20", "--steps-per-checkpoint", "10"]
    flags += ["--learning-rate", "1e-3", "--time-budget-minutes", "none", "--verbose", "0"]
    # float32: "auto" picks mixed_bfloat16 on a CPU where it times faster, and the pretrainer
    # loaded below would then compute in it while the detector computes in float32.
    flags += ["--precision", "float32"]
    config = pretraining_config(flags)
    assert config.replaced_token_detection and config.discriminator_loss_weight == 40
    history = run_pretraining(config)
    run = tmp_path / "run"
    records = list(csv.DictReader((run / "metrics.csv").open()))
    assert {"replaced_token_loss", "replaced_token_accuracy", "heldout_accuracy_at_mask"} <= set(
        records[0]
    )
    for record in records:  # the generator's loss and 40 times the discriminator's
        expected = float(record["masked_lm_loss"]) + 40 * float(record["replaced_token_loss"])
        assert float(record["loss"]) == pytest.approx(expected, rel=1e-4)
    assert history.history["replaced_token_accuracy"][-1] > 0.5

    model = keras.saving.load_model(run / "pretrainer.keras")
    assert isinstance(model, ElectraPretrainer)
    detector = keras_bert.load_replaced_token_detector(run)
    batch = {
        "input_word_ids": np.array([[2, 1996, 2003, 1037, 3]], "int32"),
        "input_mask": np.ones((1, 5), "int32"),
        "input_type_ids": np.zeros((1, 5), "int32"),
    }
    np.testing.assert_allclose(detector(batch), model.discriminator(batch), atol=1e-6)
    encoder = BertEncoder.from_checkpoint(run)
    assert encoder.bert_config == model.encoder.bert_config
    # Its tables at the initializer's scale (`rescaled_embedding_tables`), the outputs above
    # the pretrainer's.
    table = encoder.embeddings.token_embedding.embeddings.numpy()
    assert np.sqrt(np.mean(table**2)) == pytest.approx(model.bert_config.initializer_range)
    generator = keras_bert.load_masked_lm(run / "generator")
    positions = {"masked_lm_positions": np.array([[2]], "int32")}
    np.testing.assert_allclose(
        generator({**batch, **positions})["masked_lm"],
        model.generator({**batch, **positions})["masked_lm"],
        atol=1e-5,
    )
    # The generator is what evaluate_mlm scores: the number the run logged.
    scores = evaluate_mlm.main(
        ["--model", str(run), "--input-files", str(run / "held_out.txt"), "--seq-length", "32"]
    )
    assert scores["accuracy_at_mask"] == pytest.approx(
        float(records[-1]["heldout_accuracy_at_mask"]), abs=1e-6
    )
    # The fine-tuning jobs take the run directory as their checkpoint.
    train = data_dir / "sentiment" / "movie_snippets.dev.jsonl"
    summary = finetune_classifier.main(
        ["--checkpoint", str(run), "--train", str(train), "--output-dir", str(tmp_path / "ft")]
        + ["--seq-length", "32", "--epochs", "1", "--max-train-examples", "64"]
    )
    assert summary["train_steps"] > 0
    classifier = keras.saving.load_model(tmp_path / "ft" / "model.keras")
    assert classifier.encoder.bert_config == detector.encoder.bert_config
    # It publishes as ELECTRA's discriminator.
    publish.main(
        ["--model", str(run / "pretrainer.keras"), "--checkpoint", str(run)]
        + ["--output", str(tmp_path / "hf")]
    )
    config_json = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config_json["architectures"] == ["ElectraForPreTraining"]
    published = keras_bert.load_replaced_token_detector(tmp_path / "hf")
    np.testing.assert_allclose(published(batch), detector(batch), atol=1e-6)
    capsys.readouterr()
