"""Pretrains BERT (masked LM + next-sentence prediction) on text files, tfds or TFRecords.

    python -m pipelines.pretrain --output-dir runs/tiny --model-preset tiny \\
        --vocabulary-file vocab.txt --input-files ../shared/data/pretraining/*.txt \\
        --total-steps 2000 --seq-length 128

Every `PretrainingConfig` field is a flag, the data and masking settings included
(`--seq-length`, `--masked-lm-prob`, `--whole-word-masking true`); `--config run.json` reads
them from a JSON file (nested as `PretrainingConfig.to_dict` writes them: the learning rate,
precision and the other `RunSettings` under `"run"`), and flags override it. Google's
`run_pretraining.py` names work too (`--input_file`, `--max_seq_length`, `--train_batch_size`,
`--num_train_steps`). `--init-checkpoint minilm` and
`--vocabulary-file minilm` name the installed MiniLM-L6 checkpoint and its vocabulary.
Restarting the same command resumes an interrupted run from its last checkpoint in
`--output-dir`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from keras_bert.deprecation import nest_keywords
from keras_bert.pretraining import PretrainingConfig, run_pretraining
from keras_bert.training.run import RUN_FIELDS
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


def parser() -> JobParser:
    job_parser = JobParser(description=__doc__.splitlines()[0])
    job_parser.add_argument("--config", help="JSON file of PretrainingConfig fields")
    add_config_arguments(job_parser, PretrainingConfig, aliases=GOOGLE_FLAGS)
    return job_parser


def pretraining_config(argv: list[str] | None = None) -> PretrainingConfig:
    """The run's config: the `--config` JSON file (if any) with the flags applied over it."""
    arguments = parser().parse_args(argv)
    values = {}
    if arguments.config:
        # A config of before `run` held its settings at the top level (older `config.json`s).
        values = nest_keywords(
            json.loads(Path(arguments.config).read_text("utf-8")), RUN_FIELDS, "run", "--config"
        )
    values = merge_config(values, config_overrides(arguments))
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
