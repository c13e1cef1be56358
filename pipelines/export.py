"""Exports a trained model with its preprocessor for TensorFlow Serving (string signatures).

    .venv/bin/python -m pipelines.export --task classifier --model runs/sentiment/model.keras \
        --name sentiment [--checkpoint DIR] [--seq-length 128] [--base-dir saved_models] \
        [--jit-compile] [--precision bfloat16 --agreement-data held_out.jsonl]
    .venv/bin/python -m pipelines.export --task encoder --name minilm   # the checkpoint as is

Writes `<base-dir>/<name>/<next version>/`, rewrites `<base-dir>/models.config` and
`batching_parameters.txt`, and prints the command that serves them.
"""

import argparse
import json

import keras

from keras_bert import BertEncoder
from keras_bert.data.classification import DataError
from keras_bert.export import export_for_serving, serving_module, write_server_config
from keras_bert.export.precision import PRECISIONS
from keras_bert.export.server_config import CONTAINER_BASE_PATH, docker_command
from keras_bert.text import BertPreprocessor
from pipelines.common import default_checkpoint

TASKS = ("classifier", "token_classifier", "question_answerer", "encoder", "masked_lm")


def agreement_requests(module, path: str | None) -> list[dict[str, list[str]]]:
    """The `serving_default` request of a JSONL file's records (its inputs' fields)."""
    if not path:
        return []
    with open(path, encoding="utf-8") as file:
        records = [json.loads(line) for line in file if line.strip()]
    names = list(module.example_inputs())
    missing = [name for name in names if any(name not in record for record in records)]
    if missing:
        raise DataError(f"Records of {path!r} lack the fields {missing} of serving_default.")
    return [{name: [record[name] for record in records] for name in names}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=TASKS, required=True)
    parser.add_argument("--model", help=".keras file of the trained model (encoder: optional)")
    parser.add_argument("--checkpoint", help="checkpoint dir with vocab.txt (default: MiniLM)")
    parser.add_argument("--name", required=True, help="model name under --base-dir")
    parser.add_argument("--base-dir", default="saved_models")
    parser.add_argument("--version", type=int, help="default: the next free version")
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--text-pairs", action="store_true", help="classifier of text pairs")
    parser.add_argument("--max-entities", type=int, default=32)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--serving-base-path", default=CONTAINER_BASE_PATH)
    parser.add_argument("--skip-op-check", action="store_true")
    parser.add_argument(
        "--jit-compile",
        action="store_true",
        help="XLA-compiled model calls; serve with --xla_cpu_compilation_enabled=true",
    )
    parser.add_argument("--precision", choices=PRECISIONS, default="float32")
    parser.add_argument(
        "--agreement-data",
        help="JSONL with the serving_default inputs (e.g. text) for the bfloat16 check",
    )
    args = parser.parse_args()

    checkpoint = args.checkpoint or default_checkpoint()
    preprocessor = BertPreprocessor.from_checkpoint(checkpoint, seq_length=args.seq_length)
    if args.model:
        model = keras.saving.load_model(args.model)
    elif args.task == "encoder":
        model = BertEncoder.from_checkpoint(checkpoint)
    else:
        parser.error(f"--model is required for --task {args.task}")
    options = {
        "classifier": {"text_pairs": args.text_pairs},
        "token_classifier": {"max_entities": args.max_entities},
        "masked_lm": {"top_k": args.top_k},
    }.get(args.task, {})
    float32_module = serving_module(model, preprocessor, **options)
    module = serving_module(
        model, preprocessor, jit_compile=args.jit_compile, precision=args.precision, **options
    )
    export_dir = export_for_serving(
        module,
        args.base_dir,
        args.name,
        args.version,
        check_ops=not args.skip_op_check,
        float32_module=float32_module,
        agreement_requests=agreement_requests(module, args.agreement_data),
    )
    config_path, batching_path = write_server_config(args.base_dir, args.serving_base_path)
    print(f"exported {export_dir}")
    print(f"wrote {config_path} and {batching_path}")
    print(f"serve with:\n  {docker_command(args.base_dir)}")


if __name__ == "__main__":
    main()
