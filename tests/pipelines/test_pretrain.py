"""`pipelines.pretrain`'s defaults are the recipe BENCHMARKS.md measured."""

import re
from pathlib import Path

from pipelines.common import default_checkpoint
from pipelines.pretrain import DEFAULT_RECIPE, pretraining_config
from tests.pretraining.test_budget_recipe import ROOT, read_recipe


def benchmarked_recipe():
    """The recipe of the first `pipelines.pretrain` command of BENCHMARKS' "Pretraining
    recipes" section (the headline's "pretrain from scratch" figure)."""
    text = (ROOT / "BENCHMARKS.md").read_text("utf-8")
    section = text[text.index("## Pretraining recipes") :]
    return ROOT / re.search(r"pipelines\.pretrain --config (\S+\.json)", section).group(1)


def test_a_run_given_only_its_data_is_the_benchmarked_recipe(tmp_path):
    assert benchmarked_recipe() == DEFAULT_RECIPE
    recipe = read_recipe(DEFAULT_RECIPE, tmp_path)
    defaults = pretraining_config(
        ["--output-dir", str(tmp_path), "--input-files", *recipe.input_files]
    )
    assert defaults == recipe
    # The recipe's corpus is not a default: tfds input takes its place.
    tfds = pretraining_config(["--output-dir", str(tmp_path), "--tfds-name", "wiki40b/en"])
    assert tfds.input_files == [] and tfds.global_batch_size == recipe.global_batch_size
    # Its time budget can be switched off: the run takes exactly `total_steps`.
    exact = pretraining_config(
        ["--output-dir", str(tmp_path), "--input-files", "a.txt", "--time-budget-minutes", "none"]
    )
    assert exact.time_budget_minutes is None and recipe.time_budget_minutes == 25.5


def test_a_named_model_replaces_the_recipes_model(tmp_path):
    flags = ["--output-dir", str(tmp_path), "--input-files", "corpus.txt"]
    preset = pretraining_config([*flags, "--model-preset", "mini"])
    assert preset.model_preset == "mini" and preset.model_config is None
    # A checkpoint keeps its own vocabulary; the recipe's settings stay.
    continued = pretraining_config([*flags, "--init-checkpoint", "minilm"])
    assert Path(continued.init_checkpoint) == Path(default_checkpoint())
    assert continued.model_config is None and continued.vocabulary_file is None
    assert continued.run.learning_rate == read_recipe(DEFAULT_RECIPE, tmp_path).run.learning_rate
    # Model fields given alone change the recipe's model field by field.
    deeper = pretraining_config([*flags, "--model-config", '{"num_layers": 4}'])
    assert deeper.model_config["num_layers"] == 4 and deeper.model_config["pre_layer_norm"]
