"""Pretrains BERT: `python -m pipelines.pretrain --config run.json` or with flags.

Every `PretrainingConfig` field is a flag (`--total_steps 2000`, `--input_files a.txt b.txt`,
`--data '{"seq_length": 128}'`); flags override the JSON config file. Restarting the same
command resumes an interrupted run from its last checkpoint in `--output_dir`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import typing

from keras_bert.training.trainer import PretrainingConfig, run_pretraining


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="JSON file of PretrainingConfig fields")
    hints = typing.get_type_hints(PretrainingConfig)
    for field in dataclasses.fields(PretrainingConfig):
        hint = str(hints[field.name])
        name = f"--{field.name}"
        if "list" in hint:
            parser.add_argument(name, nargs="+")
        elif field.name in ("data", "model_config"):
            parser.add_argument(name, type=json.loads, help="JSON object")
        elif "bool" in hint:
            parser.add_argument(name, type=lambda text: text.lower() in ("1", "true", "yes"))
        elif "int" in hint and "float" not in hint:
            parser.add_argument(name, type=int)
        elif "float" in hint:
            parser.add_argument(name, type=float)
        else:
            parser.add_argument(name)
    return parser


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO)
    arguments = vars(_parser().parse_args(argv))
    config_file = arguments.pop("config")
    overrides = {name: value for name, value in arguments.items() if value is not None}
    if config_file:
        config = PretrainingConfig.from_json_file(config_file, **overrides)
    else:
        config = PretrainingConfig(**overrides)
    run_pretraining(config)


if __name__ == "__main__":
    main()
