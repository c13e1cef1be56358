"""Exports a trained model with its preprocessor for TensorFlow Serving (string signatures).

    .venv/bin/python -m pipelines.export --task classifier --model runs/sentiment/model.keras \\
        --name sentiment [--checkpoint DIR] [--seq-length 128] [--base-dir saved_models]
    .venv/bin/python -m pipelines.export --task classifier --model runs/sentiment/model.keras \
        --name sentiment --jit-compile  # or: --precision bfloat16 --agreement-data dev.jsonl
    .venv/bin/python -m pipelines.export --task classifier --model runs/sentiment/model.keras \
        --name sentiment --precision auto --agreement-data dev.jsonl  # fastest here that agrees
    .venv/bin/python -m pipelines.export --task classifier --model runs/sentiment/model.keras \
        --name sentiment --precision bfloat16 --feed-forward-shards 2  # small CPU servers
    .venv/bin/python -m pipelines.export --task classifier --model runs/sentiment/model.keras \
        --name sentiment --buckets 16 32 64 128  # fewer shapes to warm up, more padding
    .venv/bin/python -m pipelines.export --task encoder --name minilm   # the checkpoint as is
    .venv/bin/python -m pipelines.export --task classifier --keras-hub-model model.keras \\
        --name sentiment [--vocabulary-file vocab.txt] [--label-names negative,positive]
    .venv/bin/python -m pipelines.export --task classifier --model runs/sentiment/model.keras \
        --name sentiment --format onnx [--precision int8|bfloat16|auto \
        --agreement-data dev.jsonl --int8-mode dynamic|static]

Writes `<base-dir>/<name>/<next version>/`, rewrites `<base-dir>/models.config` and
`batching_parameters.txt`, and prints the command that serves them. `--format onnx` writes
`model.onnx`, `tokenizer.json` and `keras_bert.json` there instead (`keras_bert.export.onnx`;
served by `keras_bert.serving.OnnxModel` in ONNX Runtime or OpenVINO, or by Triton), `--format
both` beside the SavedModel.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

from keras_bert.errors import ConfigError, DataError
from keras_bert.export.server_config import CONTAINER_BASE_PATH
from pipelines.common import (
    job_checkpoint,
    parse_job,
    run_job,
)

TASKS = ("classifier", "token_classifier", "question_answerer", "encoder", "masked_lm")
# What a keras-hub model converts to, by task.
KERAS_HUB_TASK_MODELS = {
    "classifier": "BertClassifier",
    "encoder": "BertEncoder",
    "masked_lm": "BertMaskedLM",
}
AUTO_PRECISION = "auto"
FORMATS = ("savedmodel", "onnx", "both")


@dataclasses.dataclass
class ExportJob:
    """What to export and where.

    Args:
        task: classifier, token_classifier, question_answerer, encoder or masked_lm.
        name: the model's name under `base_dir` (TF Serving's model name).
        model: the `.keras` file of the trained model (optional for the encoder).
        keras_hub_model: or the `.keras` file of a keras-hub BertTextClassifier, BertBackbone
            or BertMaskedLM, converted on the way.
        vocabulary_file: vocab.txt of a keras-hub model saved without its preprocessor.
        label_names: comma-separated class names of a keras-hub classifier.
        checkpoint: checkpoint directory or Hub id with the tokenizer files (default: the
            preprocessor the model carries, else MiniLM-L6; any family's); the encoder export
            reads its weights too when no model is given.
        revision: the Hub branch, tag or commit when `checkpoint` is a Hub id.
        base_dir: TF Serving's model base path.
        version: the version to write (default: the next free one; never overwritten).
        seq_length: packed input length of the string signatures (default: a keras-hub
            model's preprocessor's, else 128 or the model's length where less).
        text_pairs: the classifier takes text pairs (`text`, `text_pair`).
        max_entities: entities returned per text by the token classifier.
        top_k: tokens returned per [MASK] by the masked LM.
        serving_base_path: the base path as the server sees it, for models.config.
        check_ops: refuse an export with ops TF Serving 2.21 does not register.
        jit_compile: XLA-compiled model calls; serve with `--xla_cpu_compilation_enabled=true`.
        precision: "float32", "bfloat16", "int8" (compute; checked against float32 at export),
            or "auto": the fastest of the three on this machine that passes the agreement
            check (`keras_bert.export.precision_choice`; it prints what it measured). Run it
            on the serving machine or one of its kind.
        length_groups: a batch's rows computed in two groups of similar length, each padded to
            its own bucket, where that saves more than the second model call costs (the same
            answers on less padded work; `keras_bert.export.signatures`).
        feed_forward_shards: the encoder's feed-forward weights as this many independent blocks,
            computed in parallel (2 for small CPU servers; see `serving_copy`).
        buckets: the lengths a batch of texts is padded to, ascending, the last `seq_length`
            (default `length_buckets`: 8, 16, 24, ... 64, 80, 96, ... `seq_length`, four per
            doubling). Finer buckets pad short texts less: an 18-token request costs 14.3 ms on
            its own 18 ids and 20.9 ms on a bucket of 32 (BENCHMARKS.md, section Serving); each
            bucket adds warm-up requests, and an XLA program per shape.
        agreement_data: JSONL with the serving_default inputs (e.g. `text`) on which a
            bfloat16 or int8 export must agree with float32 (besides the warm-up requests);
            `--precision auto` times them too. ONNX exports also check there that
            tokenizer.json gives keras_bert's ids and that outputs equal the Keras model's;
            ONNX int8, bfloat16 (and auto) need a few hundred records, half of them held out
            (`keras_bert.export.onnx.exporter.MIN_AGREEMENT_TEXTS`).
        format: "savedmodel" (TF Serving), "onnx" (ONNX Runtime: float32 or int8; OpenVINO:
            bfloat16, the float32 graph that OpenVINO computes in bfloat16; or "auto" among
            them) or "both" in one version directory.
        int8_mode: how ONNX int8 quantizes: "dynamic" (activation ranges computed per call)
            or "static" (ranges calibrated on half the agreement data; see
            `keras_bert.export.onnx.quantization`). Unset, `--precision int8` is dynamic
            and `--precision auto` times both.
    """

    task: str
    name: str
    model: str | None = None
    keras_hub_model: str | None = None
    vocabulary_file: str | None = None
    label_names: str | None = None
    checkpoint: str | None = None
    revision: str | None = None
    base_dir: str = "saved_models"
    version: int | None = None
    seq_length: int | None = None
    text_pairs: bool = False
    max_entities: int = 32
    top_k: int = 5
    serving_base_path: str = CONTAINER_BASE_PATH
    check_ops: bool = True
    jit_compile: bool = False
    precision: str = "float32"
    length_groups: bool = True
    feed_forward_shards: int = 1
    buckets: tuple[int, ...] | None = None
    agreement_data: str | None = None
    format: str = "savedmodel"
    int8_mode: str | None = None

    def __post_init__(self):
        from keras_bert.export.onnx.quantization import INT8_MODES

        if self.format not in FORMATS:
            raise ConfigError(f"Unknown --format {self.format!r}; expected one of {FORMATS}.")
        onnx_precisions = ("float32", "bfloat16", "int8", "auto")
        if self.format != "savedmodel" and self.precision not in onnx_precisions:
            raise ConfigError(
                f"ONNX exports are {', '.join(onnx_precisions)}, not {self.precision}."
            )
        if self.int8_mode is not None and self.int8_mode not in INT8_MODES:
            raise ConfigError(
                f"Unknown --int8-mode {self.int8_mode!r}; expected one of {INT8_MODES}."
            )
        checked = self.precision in ("int8", "bfloat16")
        if self.format != "savedmodel" and checked and not self.agreement_data:
            from keras_bert.export.onnx.exporter import check_agreement_rows

            check_agreement_rows(0, self.precision)  # before the model loads
        if self.task not in TASKS:
            raise ConfigError(f"Unknown --task {self.task!r}; expected one of {', '.join(TASKS)}.")
        if self.model and self.keras_hub_model:
            raise ConfigError("Give --model or --keras-hub-model, not both.")
        if not (self.model or self.keras_hub_model) and self.task != "encoder":
            raise ConfigError(f"--model or --keras-hub-model is required for --task {self.task}.")


def agreement_requests(module, path: str | None) -> list[dict[str, list[str]]]:
    """The `serving_default` request of a JSONL file's records (its inputs' fields)."""
    if not path:
        return []
    with open(path, encoding="utf-8") as file:
        records = [json.loads(line) for line in file if line.strip()]
    names = list(module.example_inputs())
    missing = [name for name in names if any(name not in record for record in records)]
    if missing:
        raise DataError(f"{path}: records lack the fields {missing} of serving_default.")
    return [{name: [record[name] for record in records] for name in names}]


def converted_keras_hub_model(job: ExportJob):
    """The keras_bert model and preprocessor of `job.keras_hub_model`."""
    from keras_bert import from_keras_hub

    label_names = job.label_names.split(",") if job.label_names else None
    model, preprocessor = from_keras_hub(
        job.keras_hub_model, job.vocabulary_file, job.seq_length, label_names=label_names
    )
    expected = KERAS_HUB_TASK_MODELS.get(job.task)
    if type(model).__name__ != expected:
        raise ConfigError(
            f"{job.keras_hub_model} converts to a {type(model).__name__}, which --task "
            f"{job.task} does not export; keras-hub models export as "
            f"{', '.join(KERAS_HUB_TASK_MODELS)}."
        )
    if preprocessor is None:
        raise ConfigError(
            f"{job.keras_hub_model} was saved without a preprocessor: pass --vocabulary-file."
        )
    return model, preprocessor


def trained_model(job: ExportJob):
    """The model of `job.model` (or the checkpoint's encoder) and its preprocessor: the one the
    model carries (`BertTask.from_checkpoint`'s), unless `--checkpoint` or another
    `--seq-length` is given, else the checkpoint's (its family's: WordPiece, byte-level BPE or
    SentencePiece)."""
    from keras_bert import load_encoder, load_preprocessor
    from keras_bert.checkpoints import find_checkpoint
    from keras_bert.models.model_files import load_model_file

    model = load_model_file(job.model) if job.model else None
    carried = getattr(model, "preprocessor", None)
    if carried is not None and job.checkpoint is None:
        if job.seq_length in (None, carried.seq_length):
            return model, carried
    # Found once, for the preprocessor and the encoder; without weights when the model is given.
    checkpoint = find_checkpoint(
        job_checkpoint(job.checkpoint), job.revision, weights=model is None
    )
    preprocessor = load_preprocessor(checkpoint, seq_length=job.seq_length)
    if model is not None:
        return model, preprocessor
    return load_encoder(checkpoint), preprocessor


def chosen_precision(make_module, float32_module, requests: list[dict[str, list[str]]]) -> str:
    """`--precision auto`: the precision `choose_precision` picks on the warm-up and
    `--agreement-data` requests, after printing what it measured on this CPU."""
    from keras_bert.cpu import cpu_summary
    from keras_bert.export.buckets import bucket_examples
    from keras_bert.export.precision_choice import choose_precision

    timed = [float32_module.example_inputs(), *bucket_examples(float32_module), *requests]
    chosen, timings = choose_precision(make_module, timed)
    print(f"--precision auto on {cpu_summary()}:")
    for timing in timings:
        print(f"  {timing.describe()}")
    print(f"chose {chosen}")
    return chosen


def onnx_export(job: ExportJob, float32_module, requests: list[dict[str, list[str]]]):
    """The job's checked `OnnxExport` (`keras_bert.export.onnx`); with `--precision auto` the
    fastest of float32 and int8 (each mode) here, after printing what was measured on this CPU."""
    from keras_bert.cpu import cpu_summary
    from keras_bert.export.onnx import choose_onnx_precision, prepare_onnx
    from keras_bert.export.onnx.precision_choice import candidate_name
    from keras_bert.export.onnx.quantization import INT8_MODES

    if job.precision != AUTO_PRECISION:
        return prepare_onnx(float32_module, job.precision, requests, job.int8_mode or "dynamic")
    int8_modes = (job.int8_mode,) if job.int8_mode else INT8_MODES
    export, timings = choose_onnx_precision(float32_module, requests, int8_modes=int8_modes)
    print(f"--format onnx --precision auto on {cpu_summary()}:")
    for timing in timings:
        print(f"  {timing.describe()}")
    print(f"chose {candidate_name(export)}")
    return export


def export(job: ExportJob) -> Path:
    """Exports the job's model with its preprocessor and rewrites the server config."""
    from keras_bert.export import export_for_serving, serving_module, write_server_config
    from keras_bert.export.server_config import docker_command

    if job.keras_hub_model:
        model, preprocessor = converted_keras_hub_model(job)
    else:
        model, preprocessor = trained_model(job)
    options = {
        "classifier": {"text_pairs": job.text_pairs},
        "token_classifier": {"max_entities": job.max_entities},
        "masked_lm": {"top_k": job.top_k},
    }.get(job.task, {}) | {"buckets": job.buckets}
    float32_module = serving_module(model, preprocessor, **options)
    make_module = functools.partial(
        serving_module,
        model,
        preprocessor,
        jit_compile=job.jit_compile,
        feed_forward_shards=job.feed_forward_shards,
        length_groups=job.length_groups,
        **options,
    )
    requests = agreement_requests(float32_module, job.agreement_data)
    onnx_files = onnx_export(job, float32_module, requests) if job.format != "savedmodel" else None
    if job.format == "onnx":
        from keras_bert.export.layout import write_version

        export_dir = write_version(Path(job.base_dir) / job.name, onnx_files.write, job.version)
        print(f"exported {export_dir} (ONNX, {onnx_files.metadata['precision']})")
        print(f"serve with:\n  keras_bert.serving.OnnxModel({str(export_dir)!r})")
        return export_dir
    precision = job.precision
    if precision == AUTO_PRECISION:
        precision = chosen_precision(make_module, float32_module, requests)
    module = make_module(precision=precision)
    export_dir = export_for_serving(
        module,
        job.base_dir,
        job.name,
        job.version,
        check_ops=job.check_ops,
        float32_module=float32_module,
        agreement_requests=requests,
        write_extra=onnx_files.write if onnx_files else None,
    )
    config_path, batching_path = write_server_config(job.base_dir, job.serving_base_path)
    print(f"exported {export_dir}")
    print(f"wrote {config_path} and {batching_path}")
    print(f"serve with:\n  {docker_command(job.base_dir)}")
    return export_dir


def main(argv: list[str] | None = None) -> Path:
    return export(parse_job(__doc__, ExportJob, argv, required=("task", "name")))


if __name__ == "__main__":
    run_job(main)
