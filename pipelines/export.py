"""Exports a trained model with its preprocessor for TensorFlow Serving (string signatures).

    .venv/bin/python -m pipelines.export --task classifier --model runs/sentiment/model.keras \
        --name sentiment [--checkpoint DIR] [--seq-length 128] [--base-dir saved_models]
    .venv/bin/python -m pipelines.export --task encoder --name minilm   # the checkpoint as is
    .venv/bin/python -m pipelines.export --task classifier --keras-hub-model model.keras \
        --name sentiment [--vocabulary-file vocab.txt] [--label-names negative,positive]

Writes `<base-dir>/<name>/<next version>/`, rewrites `<base-dir>/models.config` and
`batching_parameters.txt`, and prints the command that serves them.
"""

import argparse

import keras

from keras_bert import BertClassifier, BertEncoder, BertMaskedLM, from_keras_hub
from keras_bert.export import export_for_serving, serving_module, write_server_config
from keras_bert.export.server_config import CONTAINER_BASE_PATH, docker_command
from keras_bert.text import BertPreprocessor
from pipelines.common import default_checkpoint

TASKS = ("classifier", "token_classifier", "question_answerer", "encoder", "masked_lm")
# What a keras-hub model converts to, by task.
KERAS_HUB_TASK_MODELS = {
    "classifier": BertClassifier,
    "encoder": BertEncoder,
    "masked_lm": BertMaskedLM,
}
DEFAULT_SEQ_LENGTH = 128


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=TASKS, required=True)
    model_source = parser.add_mutually_exclusive_group()
    model_source.add_argument(
        "--model", help=".keras file of the trained model (encoder: optional)"
    )
    model_source.add_argument(
        "--keras-hub-model",
        help=".keras file of a keras-hub BertTextClassifier, BertBackbone or BertMaskedLM",
    )
    parser.add_argument(
        "--vocabulary-file", help="vocab.txt of a keras-hub model saved without its preprocessor"
    )
    parser.add_argument("--label-names", help="comma-separated class names (keras-hub models)")
    parser.add_argument("--checkpoint", help="checkpoint dir with vocab.txt (default: MiniLM)")
    parser.add_argument("--name", required=True, help="model name under --base-dir")
    parser.add_argument("--base-dir", default="saved_models")
    parser.add_argument("--version", type=int, help="default: the next free version")
    parser.add_argument(
        "--seq-length",
        type=int,
        help=f"default: a keras-hub model's preprocessor's, else {DEFAULT_SEQ_LENGTH}",
    )
    parser.add_argument("--text-pairs", action="store_true", help="classifier of text pairs")
    parser.add_argument("--max-entities", type=int, default=32)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--serving-base-path", default=CONTAINER_BASE_PATH)
    parser.add_argument("--skip-op-check", action="store_true")
    args = parser.parse_args()

    if args.keras_hub_model:
        model, preprocessor = converted_keras_hub_model(parser, args)
    else:
        model, preprocessor = trained_model(parser, args)
    options = {
        "classifier": {"text_pairs": args.text_pairs},
        "token_classifier": {"max_entities": args.max_entities},
        "masked_lm": {"top_k": args.top_k},
    }.get(args.task, {})
    module = serving_module(model, preprocessor, **options)
    export_dir = export_for_serving(
        module, args.base_dir, args.name, args.version, check_ops=not args.skip_op_check
    )
    config_path, batching_path = write_server_config(args.base_dir, args.serving_base_path)
    print(f"exported {export_dir}")
    print(f"wrote {config_path} and {batching_path}")
    print(f"serve with:\n  {docker_command(args.base_dir)}")


def converted_keras_hub_model(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """The keras_bert model and preprocessor of `--keras-hub-model`."""
    label_names = args.label_names.split(",") if args.label_names else None
    model, preprocessor = from_keras_hub(
        args.keras_hub_model, args.vocabulary_file, args.seq_length, label_names=label_names
    )
    expected = KERAS_HUB_TASK_MODELS.get(args.task)
    if expected is None or not isinstance(model, expected):
        parser.error(
            f"{args.keras_hub_model} converts to a {type(model).__name__}, which --task "
            f"{args.task} does not export; keras-hub models export as "
            f"{', '.join(KERAS_HUB_TASK_MODELS)}"
        )
    if preprocessor is None:
        parser.error(
            f"{args.keras_hub_model} was saved without a preprocessor: pass --vocabulary-file"
        )
    return model, preprocessor


def trained_model(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """The keras_bert model of `--model` (or the checkpoint's encoder) and the checkpoint's
    preprocessor."""
    checkpoint = args.checkpoint or default_checkpoint()
    seq_length = args.seq_length or DEFAULT_SEQ_LENGTH
    preprocessor = BertPreprocessor.from_checkpoint(checkpoint, seq_length=seq_length)
    if args.model:
        return keras.saving.load_model(args.model), preprocessor
    if args.task == "encoder":
        return BertEncoder.from_checkpoint(checkpoint), preprocessor
    parser.error(f"--model or --keras-hub-model is required for --task {args.task}")


if __name__ == "__main__":
    main()
