"""The replaced-token-detection step against the masked-LM step at the discriminator's size:
the models of `pipelines/recipes/electra_tiny.json` (ELECTRA: a generator of a quarter of the
width, the sampling, the discriminator) and `budget_tiny.json` (the masked LM), each compiled as
`pipelines.pretrain` compiles it and trained on its own recipe's batches of the shared corpus,
their steps taking turns (`keras_bert.timing`).

    python -m bench.bench_replaced_token_step [--precisions float32 mixed_bfloat16] \\
        [--rounds 20] [--batches 4] [--results bench/results/replaced_token_step.jsonl]

Run it alone on the machine. One JSON line per precision (also appended to `--results`): each
step's median milliseconds and `ratio`, the replaced-token step over the masked-LM step (the
goal: at most 1.35). `electra_tiny.json`'s `total_steps` is `budget_tiny.json`'s divided by
the ratio, so both recipes cost about the same training time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import tempfile
from pathlib import Path

RECIPES = {
    "masked_lm": "pipelines/recipes/budget_tiny.json",
    "replaced_token": "pipelines/recipes/electra_tiny.json",
}
PRECISIONS = ("float32", "mixed_bfloat16")


def recipe_steps(recipe: str, precision: str, batches: int, output_dir: Path) -> list:
    """Calls that each train the recipe's model one step on one of `batches` batches of its
    data, in `precision`."""
    from keras_bert.pretraining import build_datasets, build_pretrainer, pretraining_loss_weights
    from keras_bert.training.precision import run_precision
    from keras_bert.training.strategy import resolve_workers
    from pipelines.pretrain import pretraining_config

    config = pretraining_config(
        ["--config", recipe, "--output-dir", str(output_dir), "--precision", precision]
    )
    train, _ = build_datasets(config)
    data = [batch for batch in train().take(batches)]
    with run_precision(precision, resolve_workers("default", None, str(output_dir))):
        model = build_pretrainer(config)
        weights = pretraining_loss_weights(
            config.data.sentence_pairs,
            config.span_boundary_objective,
            config.discriminator_loss_weight if config.replaced_token_detection else None,
        )
        model.compile(
            optimizer=config.run.create_optimizer(config.total_steps), loss_weights=weights
        )
    return [lambda batch=batch: model.train_on_batch(*batch) for batch in data]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS)
    parser.add_argument("--rounds", type=int, default=20, help="timed passes over the batches")
    parser.add_argument("--batches", type=int, default=4, help="batches of each recipe")
    parser.add_argument("--results", type=Path, help="a .jsonl file to append the lines to")
    arguments = parser.parse_args()
    # TensorFlow as `pipelines.pretrain` starts it: quietly, oneDNN on where faster (AVX2 only).
    import pipelines  # noqa: F401
    from bench.results_lines import append_record, git_revision
    from keras_bert.cpu import ONEDNN_SWITCH, cpu_summary
    from keras_bert.timing import interleaved_median_seconds

    for precision in arguments.precisions:
        with tempfile.TemporaryDirectory() as directory:
            calls = {
                objective: recipe_steps(
                    recipe, precision, arguments.batches, Path(directory) / objective
                )
                for objective, recipe in RECIPES.items()
            }
            seconds = interleaved_median_seconds(calls, arguments.rounds)
        record = {
            "bench": "replaced_token_step",
            "precision": precision,
            **{
                f"{objective}_step_ms": round(1000 * value, 2)
                for objective, value in seconds.items()
            },
            "ratio": round(seconds["replaced_token"] / seconds["masked_lm"], 3),
            "rounds": arguments.rounds,
            "batches": arguments.batches,
            "cpu": cpu_summary(),
            ONEDNN_SWITCH: os.environ.get(ONEDNN_SWITCH),
            "revision": git_revision(),
            "finished": datetime.datetime.now().isoformat(timespec="seconds"),
        }
        print(json.dumps(record), flush=True)
        if arguments.results:
            append_record(arguments.results, record)


if __name__ == "__main__":
    main()
