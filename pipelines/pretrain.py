"""Pretrains BERT (masked LM, next sentences) or ELECTRA on text files, tfds or TFRecords.

    python -m pipelines.pretrain --output-dir runs/tiny --model-preset tiny \\
        --vocabulary-file vocab.txt --input-files ../shared/data/pretraining/*.txt \\
        --total-steps 2000 --seq-length 128

The defaults are the recipe BENCHMARKS.md measured (`DEFAULT_RECIPE`, its "Pretraining
recipes" section), so a run given only its data trains the published model:

    python -m pipelines.pretrain --output-dir runs/R0 --input-files corpus.txt

Every `PretrainingConfig` field is a flag, the data and masking settings included
(`--seq-length`, `--masked-lm-prob`, `--whole-word-masking true`); `--config run.json` reads
them from a JSON file (nested as `PretrainingConfig.to_dict` writes them: the learning rate,
precision and the other `RunSettings` under `"run"`), and flags override it; both override the
recipe field by field (see `recipe_defaults`). Google's
`run_pretraining.py` names work too (`--input_file`, `--max_seq_length`, `--train_batch_size`,
`--num_train_steps`). `--init-checkpoint minilm` and
`--vocabulary-file minilm` name the installed MiniLM-L6 checkpoint and its vocabulary.
Restarting the same command resumes an interrupted run from its last checkpoint in
`--output-dir`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keras_bert.pretraining import PretrainingConfig, run_pretraining
from pipelines.common import (
    JobParser,
    add_config_arguments,
    config_overrides,
    expand_files,
    merge_config,
    resolve_installed,
    run_job,
)

# Google's run_pretraining.py flag names, where they differ from ours.
GOOGLE_FLAGS = {
    "tfrecord_pattern": ["input_file"],
    "seq_length": ["max_seq_length"],
    "global_batch_size": ["train_batch_size"],
    "total_steps": ["num_train_steps"],
    "steps_per_checkpoint": ["save_checkpoints_steps"],
    "eval_steps": ["max_eval_steps"],
    "tpu": ["tpu_name"],
}


# The recipe BENCHMARKS.md measured ("Pretraining recipes"): the job's defaults.
DEFAULT_RECIPE = Path(__file__).resolve().parent / "recipes" / "budget_tiny.json"
# Where the recipe's examples came from: the data of its measurement, which a run names itself.
DATA_SOURCES = ("input_files", "tfds_name", "tfrecord_pattern")


def recipe_defaults(given: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of `DEFAULT_RECIPE` that a run's `given` config (its `--config` file and
    flags) does not replace whole: all but the recipe's corpus; its model unless the run names
    a preset or a checkpoint; its vocabulary unless the run starts from a checkpoint (whose own
    vocabulary is then the default).

    Example:
    >>> defaults = recipe_defaults({"init_checkpoint": "runs/a/checkpoint"})
    >>> "model_config" in defaults, "vocabulary_file" in defaults, defaults["global_batch_size"]
    (False, False, 64)
    """
    recipe = json.loads(DEFAULT_RECIPE.read_text("utf-8"))
    replaced = set(DATA_SOURCES)
    if given.get("init_checkpoint") or given.get("model_preset"):
        replaced.add("model_config")
    if given.get("init_checkpoint"):
        replaced.add("vocabulary_file")
    return {name: value for name, value in recipe.items() if name not in replaced}


def _recipe_fields() -> dict[str, Any]:
    """Every field of a run given only its data, by name (as `--help` shows defaults)."""
    config = PretrainingConfig("", input_files=["corpus.txt"], **recipe_defaults({}))

    def leaves(value) -> dict[str, Any]:
        fields = dataclasses.fields(value)
        return {
            name: item
            for field in fields
            for name, item in (
                leaves(getattr(value, field.name)).items()
                if dataclasses.is_dataclass(getattr(value, field.name))
                else [(field.name, getattr(value, field.name))]
            )
        }

    unset = ("output_dir", *DATA_SOURCES)
    return {name: value for name, value in leaves(config).items() if name not in unset}


def parser() -> JobParser:
    job_parser = JobParser(description=__doc__.splitlines()[0])
    job_parser.add_argument("--config", help="JSON file of PretrainingConfig fields")
    add_config_arguments(
        job_parser, PretrainingConfig, aliases=GOOGLE_FLAGS, shown_defaults=_recipe_fields()
    )
    return job_parser


def pretraining_config(argv: list[str] | None = None) -> PretrainingConfig:
    """The run's config: `recipe_defaults`, the `--config` JSON file (if any) over them, and
    the flags over both."""
    arguments = parser().parse_args(argv)
    values = {}
    if arguments.config:
        values = json.loads(Path(arguments.config).read_text("utf-8"))
    values = merge_config(values, config_overrides(arguments))
    values = merge_config(recipe_defaults(values), values)
    if values.get("input_files"):
        values["input_files"] = expand_files(values["input_files"])
    values["init_checkpoint"] = resolve_installed(values.get("init_checkpoint"))
    values["vocabulary_file"] = resolve_installed(values.get("vocabulary_file"), "vocab.txt")
    return PretrainingConfig(**values)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO)
    run_pretraining(pretraining_config(argv))


if __name__ == "__main__":
    run_job(main)
