"""The ready recipes `pipelines/recipes/budget_tiny.json` and `continued_minilm.json`: they
name real files from the repository root, turn the budget switches on, and train as
`pipelines.pretrain` reads them."""

import csv
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_bert import BertEncoder
from keras_bert.pretraining import build_pretrainer, run_pretraining
from pipelines.common import default_checkpoint
from pipelines.pretrain import pretraining_config

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "pipelines" / "recipes" / "budget_tiny.json"


def read_recipe(recipe: Path, output_dir: Path):
    """The recipe's config as `pipelines.pretrain` reads it, checked for what every recipe
    here does: the shared corpus, no NSP, `[MASK]`-only corruption, held-out documents scored
    at whole checkpoints, at most 30 minutes of training in this machine's fastest precision."""
    config = pretraining_config(["--config", str(recipe), "--output-dir", str(output_dir)])
    assert config.run.precision == "auto" and config.time_budget_minutes < 30
    assert all((ROOT / name).is_file() for name in config.input_files)
    assert not config.data.next_sentence_prediction and config.data.masking.mask_token_rate == 1
    assert config.held_out_documents > 0 and config.total_steps % config.steps_per_checkpoint == 0
    return config


def test_recipe_resolves_the_installed_vocabulary_and_the_shared_corpus(tmp_path):
    config = read_recipe(RECIPE, tmp_path)
    assert config.vocabulary_file == str(Path(default_checkpoint()) / "vocab.txt")
    model = config.model_config
    assert model["pre_layer_norm"] and model["relative_attention_buckets"]
    assert model["local_attention_bias"] > 0 and model["dropout_rate"] == 0


def test_continued_recipe_starts_from_the_installed_minilm_without_dropout(tmp_path):
    config = read_recipe(ROOT / "pipelines" / "recipes" / "continued_minilm.json", tmp_path)
    assert Path(config.init_checkpoint) == Path(default_checkpoint())
    # The recipe's model_config changes the checkpoint's config, not its weights.
    model = build_pretrainer(config)
    assert model.bert_config.dropout_rate == model.bert_config.attention_dropout_rate == 0
    original = BertEncoder.from_checkpoint(config.init_checkpoint)
    assert original.bert_config.dropout_rate == 0.1
    np.testing.assert_array_equal(
        np.asarray(model.encoder.blocks[5].output_dense.kernel),
        np.asarray(original.blocks[5].output_dense.kernel),
    )


def test_recipe_trains_its_model(small_corpus, tmp_path):
    flags = ["--config", str(RECIPE), "--output-dir", str(tmp_path / "run")]
    flags += ["--input-files", *small_corpus["input_files"]]
    flags += ["--vocabulary-file", small_corpus["vocabulary_file"], "--held-out-documents", "2"]
    flags += ["--total-steps", "4", "--steps-per-checkpoint", "2", "--global-batch-size", "8"]
    flags += ["--seq-length", "32", "--max-predictions-per-seq", "5", "--verbose", "0"]
    flags += ["--model-config", '{"vocab_size": 3000}']
    config = pretraining_config(flags)
    # Flags override the recipe's model fields one by one: the switches stay on.
    assert config.model_config["local_attention_bias"] > 0
    run_pretraining(config)
    model = keras.saving.load_model(tmp_path / "run" / "pretrainer.keras")
    assert model.bert_config.relative_attention_buckets and model.bert_config.pre_layer_norm
    records = list(csv.DictReader((tmp_path / "run" / "metrics.csv").open()))
    assert {"heldout_accuracy_at_mask", "train_seconds"} <= set(records[0])
    assert "next_sentence_accuracy" not in records[0]
    # Without sentence pairs the next-sentence loss has no weight: the pooler is left alone.
    for record in records:
        assert float(record["loss"]) == pytest.approx(float(record["masked_lm_loss"]), rel=1e-5)
