"""The ready recipes `pipelines/recipes/budget_tiny.json`, `continued_minilm.json` and
`electra_tiny.json`: they name real files from the repository root, turn the budget switches
on, and train as `pipelines.pretrain` reads them."""

import csv
import dataclasses
from pathlib import Path

import keras
import numpy as np
import pytest

import keras_bert
from keras_bert import BertEncoder
from keras_bert.pretraining import build_pretrainer, run_pretraining
from pipelines.common import default_checkpoint
from pipelines.pretrain import pretraining_config

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "pipelines" / "recipes" / "budget_tiny.json"
ELECTRA_RECIPE = ROOT / "pipelines" / "recipes" / "electra_tiny.json"
# The model fields that make a model's size and its switches.
ARCHITECTURE = (
    "vocab_size",
    "num_layers",
    "hidden_size",
    "num_heads",
    "intermediate_size",
    "pre_layer_norm",
    "dropout_rate",
    "relative_attention_buckets",
    "local_attention_bias",
)


def read_recipe(recipe: Path, output_dir: Path):
    """The recipe's config as `pipelines.pretrain` reads it, checked for what every recipe
    here does: the shared corpus, no NSP, `[MASK]`-only corruption (ELECTRA's: 85% `[MASK]`,
    the rest kept, as its generator's samples replace them all), held-out documents scored at
    whole checkpoints, at most 30 minutes of training in this machine's fastest precision."""
    config = pretraining_config(["--config", str(recipe), "--output-dir", str(output_dir)])
    assert config.run.precision == "auto" and config.time_budget_minutes < 30
    assert all((ROOT / name).is_file() for name in config.input_files)
    masking = config.data.masking
    assert not config.data.next_sentence_prediction and masking.random_token_rate == 0
    assert masking.mask_token_rate == (0.85 if config.replaced_token_detection else 1)
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


def small_run_flags(recipe: Path, output_dir: Path, small_corpus: dict) -> list[str]:
    """A recipe's flags for 4 steps on the small corpus and its 3,000-entry vocabulary."""
    flags = ["--config", str(recipe), "--output-dir", str(output_dir)]
    flags += ["--input-files", *small_corpus["input_files"]]
    flags += ["--vocabulary-file", small_corpus["vocabulary_file"], "--held-out-documents", "2"]
    flags += ["--total-steps", "4", "--steps-per-checkpoint", "2", "--global-batch-size", "8"]
    flags += ["--seq-length", "32", "--max-predictions-per-seq", "5", "--verbose", "0"]
    return flags + ["--model-config", '{"vocab_size": 3000}']


def test_recipe_trains_its_model(small_corpus, tmp_path):
    config = pretraining_config(small_run_flags(RECIPE, tmp_path / "run", small_corpus))
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


def test_electra_recipe_compares_like_for_like_with_the_budget_recipe(tmp_path):
    """The same corpus, held-out documents, batches, masking rate, schedule and time budget;
    its discriminator the budget model's size and switches; fewer steps, as its step costs
    more (`bench/bench_replaced_token_step.py`), and half the peak learning rate and a
    discriminator loss weight of 10, not the paper's 50, as its discriminator fine-tuned best so
    (docs/pretraining.md)."""
    electra = read_recipe(ELECTRA_RECIPE, tmp_path / "electra")
    budget = read_recipe(RECIPE, tmp_path / "budget")
    assert electra.replaced_token_detection and not budget.replaced_token_detection
    for name in ("input_files", "held_out_documents", "global_batch_size", "time_budget_minutes"):
        assert getattr(electra, name) == getattr(budget, name), name
    assert electra.data.seq_length == budget.data.seq_length
    assert electra.data.masking.masked_lm_prob == budget.data.masking.masked_lm_prob
    assert electra.run.learning_rate == budget.run.learning_rate / 2
    same_rate = dataclasses.replace(electra.run, learning_rate=budget.run.learning_rate)
    assert same_rate == budget.run and electra.steps_per_checkpoint == budget.steps_per_checkpoint
    for name in ARCHITECTURE:
        assert electra.model_config[name] == budget.model_config[name], name
    assert electra.model_config["model_type"] == "electra"
    assert budget.total_steps * 0.7 <= electra.total_steps < budget.total_steps
    assert (electra.generator_width, electra.discriminator_loss_weight) == (0.25, 10.0)


def test_electra_recipe_trains_its_discriminator(small_corpus, tmp_path):
    flags = small_run_flags(ELECTRA_RECIPE, tmp_path / "run", small_corpus)
    run_pretraining(pretraining_config([*flags, "--precision", "float32"]))
    detector = keras_bert.load_replaced_token_detector(tmp_path / "run")
    assert detector.encoder.bert_config.relative_attention_buckets == 32
    assert detector.encoder.embedding_projection is None  # E = H = 128
    generator = keras_bert.load_masked_lm(tmp_path / "run" / "generator")
    assert generator.encoder.bert_config.hidden_size == 32
    records = list(csv.DictReader((tmp_path / "run" / "metrics.csv").open()))
    assert {"heldout_accuracy_at_mask", "replaced_token_accuracy"} <= set(records[0])
