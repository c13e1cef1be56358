"""Fine-tuning quality and speed: keras_bert vs Hugging Face PyTorch on the same checkpoint.

Both sides fine-tune the real MiniLM-L6 checkpoint (Hugging Face loads it from the same local
directory, offline) on the same examples, read by keras_bert's readers, and both sides'
predictions are scored by `keras_bert.metrics`. Every run is its own subprocess; torch uses 2
threads. Needs the optional extra `peer` (torch, transformers).

The field's benchmarks (GLUE's `cola sst2 mrpc stsb rte`, and `qnli mnli qqp wnli` where
`--glue-dir` holds them, or `glue` for all it holds; `conll2003`: eng.train, scored on
eng.testa; `squad`: the shared SQuAD v1.1 split) run each side as its users run it:

- keras_bert: our jobs with their defaults, given only the data (`pipelines.glue`,
  `pipelines.finetune_ner`, `pipelines.finetune_qa`, each with `--seed`);
- Hugging Face: its example scripts run_glue, run_ner and run_qa with their READMEs' settings
  and `Trainer`'s defaults (`bench.peer_tasks`; run_glue pads every sequence to 128, its
  default, or to each batch's longest with `--peer-glue-padding longest`).

    python -m bench.bench_peer_finetuning --tasks cola,mrpc,stsb,rte --seeds 0,1,2 \\
        --results runs/peer_benchmarks.jsonl
    python -m bench.bench_peer_finetuning --tasks sst2,conll2003,squad \\
        --results runs/peer_benchmarks.jsonl
    python -m bench.bench_peer_finetuning --results runs/peer_benchmarks.jsonl --table-only

With `--results`, each finished run is appended to the file as a JSON line, runs already in it
are not run again (a long comparison can be run task by task, or resumed), and the table is
printed from everything in the file. Within a task the sides alternate (seed 0: keras_bert
first, seed 1: Hugging Face first, ...) so that both meet the same load on the machine.

`wnut16` (entity F1 on `wnut16.dev.jsonl`) and `sentiment` (accuracy on
`movie_snippets.dev.jsonl`) run both sides with one recipe, BERT's (AdamW 5e-5, weight decay
0.01 except biases and LayerNorm, 10% linear warm-up then linear decay, clipping at 1.0,
dropout 0.1, batches padded to their longest; keras_bert's classification batches texts of
similar length), with `--epochs`, `--seq-length` and `--batch-size`:

    python -m bench.bench_peer_finetuning --tasks wnut16 --seeds 0,1,2 --epochs 5 \\
        --seq-length 128

Sequences/s are the sequences trained (examples, or QA windows, x epochs) over the seconds of
the training loop (model loading and evaluation excluded); keras_bert's are what its job
reports (steps x batch size). The field's benchmarks also record each epoch's seconds
(`epoch_seconds`, both sides): with `--epochs 2` or more, the epochs after the first compare
the training steps without our first step's graph building and both sides' warm-up.
`--precision mixed_bfloat16` (or `auto`) trains our side in bfloat16: records carry it in their
settings, so both precisions of ours can be timed beside the peer in one run. The CPU
seconds of each whole run (loading, training, evaluation) are less disturbed by other jobs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.peer_tasks import ner_features, word_tags
from bench.peer_trainer import (
    TORCH_THREADS,
    TrainerRecipe,
    hugging_face_optimizer,
    hugging_face_step,
    predict_like_trainer,
)
from bench.results_lines import append_record, git_revision, read_records

DATA = {
    "wnut16": ("../shared/data/ner/wnut16.train.jsonl", "../shared/data/ner/wnut16.dev.jsonl"),
    "sentiment": (
        "../shared/data/sentiment/movie_snippets.train.jsonl",
        "../shared/data/sentiment/movie_snippets.dev.jsonl",
    ),
}
BENCHMARKS = Path("../shared/data/benchmarks")
GLUE_DIR = BENCHMARKS / "glue"
CONLL2003 = (BENCHMARKS / "conll2003/eng.train", BENCHMARKS / "conll2003/eng.testa")
SQUAD = (BENCHMARKS / "squad/squad-v1.1-train.json", BENCHMARKS / "squad/squad-v1.1-dev.json")
SIDES = ("keras_bert", "hugging_face")
# wnut16's and sentiment's epochs unless `--epochs` says otherwise.
RECIPE_EPOCHS = 5


def is_glue(task: str) -> bool:
    from keras_bert.data.glue import GLUE_TASKS

    return task in GLUE_TASKS and GLUE_TASKS[task].labelled_by is None


def headline_metrics(task: str) -> list[tuple[str, str, float]]:
    """The (result name, metric, scale to percent) pairs a task is reported by: a GLUE task's
    metrics (MNLI's mismatched accuracy too), entity F1, SQuAD's exact match and F1."""
    if task in DATA:
        return [(task, "f1" if task == "wnut16" else "accuracy", 100.0)]
    if task == "conll2003":
        return [(task, "f1", 100.0)]
    if task == "squad":
        return [(task, "exact_match", 1.0), (task, "f1", 1.0)]
    from keras_bert.data.glue import glue_task

    metrics = [(task, metric, 100.0) for metric in glue_task(task).metrics]
    return metrics + ([("mnli_mismatched", "accuracy", 100.0)] if task == "mnli" else [])


def sample_indices(count: int, sample_size: int | None, seed: int) -> np.ndarray:
    """The examples a run trains on: `sample_size` drawn at random under `seed` as keras_bert's
    `max_train_examples` draws them (`ClassificationExamples.sample`), or all of them."""
    if not sample_size:
        return np.arange(count)
    return np.random.default_rng(seed).permutation(count)[:sample_size]


def sampled(examples, args: argparse.Namespace):
    """`ClassificationExamples` or `TaggedSentences` to train on: `--max-train-examples` of
    them drawn under the seed as keras_bert's jobs draw them, else all."""
    if not args.max_train_examples:
        return examples
    return examples.sample(args.max_train_examples, seed=args.seed)


# --- wnut16 and sentiment: one recipe on both sides -----------------------------------------


def read_task(task: str):
    """(train, evaluation) examples of a task as keras_bert's readers return them, and the
    label names (from all the training data, so that a sample of it has the same ones)."""
    from keras_bert.data.classification import read_classification_file
    from keras_bert.data.token_classification import read_tagged_jsonl, tag_names_of

    read = read_tagged_jsonl if task == "wnut16" else read_classification_file
    train, evaluation = (read(path) for path in DATA[task])
    label_names = tag_names_of(train) if task == "wnut16" else sorted(set(train.labels))
    return train, evaluation, label_names


def run_keras_bert_recipe(task: str, args: argparse.Namespace) -> dict:
    """Trains and evaluates with the fine-tuning recipes that the pipelines call."""
    from keras_bert.finetuning.classification import finetune_classifier
    from keras_bert.finetuning.recipe import FinetuningConfig
    from keras_bert.finetuning.token_classification import finetune_token_classifier
    from pipelines.common import default_checkpoint

    train, evaluation, label_names = read_task(task)
    with tempfile.TemporaryDirectory(prefix=f"peer_{task}_") as output_dir:
        config = FinetuningConfig(
            checkpoint=default_checkpoint(),
            output_dir=output_dir,
            seq_length=args.seq_length,
            batch_size=args.batch_size,
            epochs=args.epochs or RECIPE_EPOCHS,
            run={"seed": args.seed, **({"precision": args.precision} if args.precision else {})},
            max_train_examples=args.max_train_examples,
        )
        if task == "wnut16":
            _, summary = finetune_token_classifier(config, train, evaluation, tag_names=label_names)
        else:
            _, summary = finetune_classifier(config, train, evaluation, label_names=label_names)
    sequences = config.epochs * min(len(train), args.max_train_examples or len(train))
    return {
        "train_seconds": summary["train_seconds"],
        "train_sequences": sequences,
        "precision": summary["precision"],
        "evaluation": {task: summary["evaluation"]},
    }


def hugging_face_batches(encoded: list[dict], batch_size: int, seed: int, epochs: int):
    """Shuffled batches each epoch, padded to their longest sequence (labels with -100)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        order = torch.randperm(len(encoded), generator=generator).tolist()
        for start in range(0, len(order), batch_size):
            yield pad_batch([encoded[index] for index in order[start : start + batch_size]])


def pad_batch(features: list[dict]) -> dict:
    import torch

    length = max(len(feature["input_ids"]) for feature in features)
    batch = {}
    for name, padding in (("input_ids", 0), ("attention_mask", 0), ("token_type_ids", 0)):
        batch[name] = torch.tensor(
            [feature[name] + [padding] * (length - len(feature[name])) for feature in features]
        )
    labels = [feature["labels"] for feature in features]
    if isinstance(labels[0], list):
        labels = [label + [-100] * (length - len(label)) for label in labels]
    batch["labels"] = torch.tensor(labels)
    return batch


def encode_for_hugging_face(task: str, tokenizer, examples, label_names, seq_length: int):
    """Token ids and labels: the first piece of each word labelled, -100 elsewhere."""
    if task == "sentiment":
        encoded = tokenizer(examples.texts, truncation=True, max_length=seq_length)
        return [
            {**{name: encoded[name][index] for name in encoded}, "labels": label_names.index(label)}
            for index, label in enumerate(examples.labels)
        ]
    return ner_features(tokenizer, examples, label_names, seq_length)


def hugging_face_scores(task: str, model, tokenizer, evaluation, label_names, seq_length) -> dict:
    """The model's evaluation scores from `keras_bert.metrics` (word tags from first pieces)."""
    from keras_bert.metrics import classification_scores, entity_scores

    eval_features = encode_for_hugging_face(task, tokenizer, evaluation, label_names, seq_length)
    (logits,) = predict_like_trainer(model, eval_features, pad_batch, batch_size=64)
    predictions = [row for batch in logits for row in batch.argmax(-1)]
    if task == "sentiment":
        labels = [label_names.index(label) for label in evaluation.labels]
        return classification_scores(
            np.asarray(labels), np.asarray(predictions), num_classes=len(label_names)
        )
    return entity_scores(
        evaluation.tags, word_tags(predictions, eval_features, label_names, evaluation)
    )


def run_hugging_face_recipe(task: str, args: argparse.Namespace) -> dict:
    """The same recipe written as a Hugging Face user writes it (BertFor...; torch AdamW)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    import transformers

    from pipelines.common import default_checkpoint

    torch.set_num_threads(TORCH_THREADS)
    transformers.set_seed(args.seed)
    train, evaluation, label_names = read_task(task)
    train = sampled(train, args)
    model_class = (
        transformers.BertForTokenClassification
        if task == "wnut16"
        else transformers.BertForSequenceClassification
    )
    model = model_class.from_pretrained(default_checkpoint(), num_labels=len(label_names))
    tokenizer = transformers.BertTokenizerFast.from_pretrained(default_checkpoint())
    train_features = encode_for_hugging_face(task, tokenizer, train, label_names, args.seq_length)
    epochs = args.epochs or RECIPE_EPOCHS
    steps = epochs * -(-len(train_features) // args.batch_size)
    optimizer, schedule = hugging_face_optimizer(model, steps)

    model.train()
    started = time.perf_counter()
    for batch in hugging_face_batches(train_features, args.batch_size, args.seed, epochs):
        hugging_face_step(model, batch, optimizer, schedule)
    seconds = time.perf_counter() - started
    scores = hugging_face_scores(task, model, tokenizer, evaluation, label_names, args.seq_length)
    return {
        "train_seconds": round(seconds, 1),
        "train_sequences": epochs * len(train_features),
        "evaluation": {task: scores},
    }


# --- the field's benchmarks: each side as its users run it ----------------------------------


def squad_file(examples, path: Path) -> Path:
    """Writes questions as a SQuAD v1.1 JSON file (a paragraph per question)."""
    paragraphs = [
        {
            "context": example.context,
            "qas": [
                {
                    "id": example.id,
                    "question": example.question,
                    "answers": [
                        {"text": text, "answer_start": start}
                        for text, start in zip(example.answers, example.answer_starts, strict=True)
                    ],
                }
            ],
        }
        for example in examples
    ]
    data = {"version": "1.1", "data": [{"title": "sample", "paragraphs": paragraphs}]}
    path.write_text(json.dumps(data), "utf-8")
    return path


def sampled_squad_training(args: argparse.Namespace) -> list:
    """The SQuAD training questions of a run (`--max-train-examples` of them, drawn under the
    seed, else all)."""
    from keras_bert.data.squad import read_squad

    train = read_squad(SQUAD[0])
    return [train[i] for i in sample_indices(len(train), args.max_train_examples, args.seed)]


def job_config(output_dir: Path) -> dict:
    """The settings a finished job trained with (its `config.json`), without the paths."""
    config = json.loads((output_dir / "config.json").read_text("utf-8"))
    return {key: value for key, value in config.items() if key not in ("output_dir", "checkpoint")}


def run_keras_bert_job(task: str, args: argparse.Namespace) -> dict:
    """Our job for the task with its defaults: only the data, the output directory and the
    seed (and `--max-train-examples` when given). The output directory is the run's work
    directory when it has one (a killed run's job resumes there), else a temporary one."""
    output = (
        contextlib.nullcontext(args.one_run_work_dir)
        if args.one_run_work_dir
        else tempfile.TemporaryDirectory(prefix=f"peer_{task}_")
    )
    with output as output_dir:
        flags = ["--output-dir", output_dir, "--seed", str(args.seed), *given_flags(args)]
        if is_glue(task):
            from pipelines import glue

            report = glue.main(["--data-dir", str(args.glue_dir), "--tasks", task, *flags])
            run = report["runs"][task]
            names = [name for name, _, _ in headline_metrics(task)]
            evaluation = {name: report["tasks"][name] for name in dict.fromkeys(names)}
            config = job_config(Path(output_dir) / task)
        elif task == "conll2003":
            from pipelines import finetune_ner

            data = ["--train", str(CONLL2003[0]), "--eval", str(CONLL2003[1])]
            run = finetune_ner.main([*data, *flags])
            evaluation = {task: run["evaluation"]}
            config = job_config(Path(output_dir))
        else:
            from pipelines import finetune_qa

            # finetune_qa does not sample `--max-train-examples`: it gets the sample as a file.
            train = SQUAD[0]
            if args.max_train_examples:
                train = squad_file(sampled_squad_training(args), Path(output_dir) / "train.json")
            run = finetune_qa.main(["--train", str(train), "--eval", str(SQUAD[1]), *flags])
            evaluation = {task: run["evaluation"]}
            config = job_config(Path(output_dir))
    return {
        "config": config,
        # The job's seconds are its last process's: an earlier, killed one trained the epochs
        # before this.
        "resumed_after_epoch": run.get("resumed_after_epoch"),
        "train_seconds": run["train_seconds"],
        "train_sequences": round(run["sequences_per_second"] * run["train_seconds"]),
        "epoch_seconds": run.get("epoch_seconds"),
        # The policy it trained in, and for `--precision auto` the timings that chose it.
        "precision": run.get("precision"),
        "evaluation": evaluation,
    }


def peer_recipe(recipe: TrainerRecipe, args: argparse.Namespace) -> TrainerRecipe:
    """An example script's `TrainerRecipe`, with `--epochs` when given."""
    return dataclasses.replace(recipe, epochs=args.epochs) if args.epochs else recipe


def run_hugging_face_example(task: str, args: argparse.Namespace) -> dict:
    """Hugging Face's example script for the task (`bench.peer_tasks`)."""
    from bench import peer_tasks

    if is_glue(task):
        from keras_bert.data.glue import glue_task, read_glue_split

        glue = glue_task(task)
        train = sampled(read_glue_split(args.glue_dir, glue, "train").examples, args)
        evaluations = [read_glue_split(args.glue_dir, glue, s) for s in glue.evaluation_splits]
        padded = args.peer_glue_padding == "max_length"
        recipe = peer_recipe(peer_tasks.RUN_GLUE, args)
        run = peer_tasks.run_glue(glue, train, evaluations, args.seed, padded, recipe)
        evaluation = {
            "mnli_mismatched" if split.endswith("mismatched") else task: scores
            for split, scores in run.evaluation.items()
        }
    elif task == "conll2003":
        from keras_bert.data.token_classification import read_conll

        train, testa = (read_conll(path) for path in CONLL2003)
        label_list = peer_tasks.ner_label_list(train)
        recipe = peer_recipe(peer_tasks.RUN_NER, args)
        run = peer_tasks.run_ner(sampled(train, args), testa, label_list, args.seed, recipe)
        evaluation = {task: run.evaluation}
    else:
        from keras_bert.data.squad import read_squad

        recipe = peer_recipe(peer_tasks.RUN_QA, args)
        train, dev = sampled_squad_training(args), read_squad(SQUAD[1])
        run = peer_tasks.run_qa(train, dev, args.seed, recipe)
        evaluation = {task: run.evaluation}
    return {
        "train_seconds": round(run.train_seconds, 1),
        "train_sequences": run.train_sequences,
        "epoch_losses": run.epoch_losses,
        "epoch_seconds": run.epoch_seconds,
        "evaluation": evaluation,
    }


def run_side(side: str, task: str, args: argparse.Namespace) -> dict:
    if task in DATA:
        runner = run_keras_bert_recipe if side == "keras_bert" else run_hugging_face_recipe
    else:
        runner = run_keras_bert_job if side == "keras_bert" else run_hugging_face_example
    return runner(task, args)


def versions(side: str) -> dict[str, str]:
    """The libraries a side's run used (its modules are imported by then)."""
    import importlib.metadata

    names = ("tensorflow", "keras") if side == "keras_bert" else ("torch", "transformers")
    return {name: importlib.metadata.version(name) for name in names}


def one_run(args: argparse.Namespace) -> None:
    """A child process: one side on one task and seed; writes its result as JSON."""
    started = time.process_time()
    result = run_side(args.one_run, args.tasks[0], args)
    # CPU time is what other jobs sharing the cores disturb least.
    result["run_cpu_seconds"] = round(time.process_time() - started, 1)
    result["versions"] = versions(args.one_run)
    Path(args.one_run_output).write_text(json.dumps(result, default=float), "utf-8")


# --- runs, their records, the table ---------------------------------------------------------


def run_settings(task: str, side: str, args: argparse.Namespace) -> dict:
    """What a run depends on besides task, side and seed: the record's identity in a results
    file (a run with the same is not run again)."""
    settings = {"max_train_examples": args.max_train_examples}
    if task in DATA:
        epochs = args.epochs or RECIPE_EPOCHS
        settings.update(epochs=epochs, seq_length=args.seq_length, batch_size=args.batch_size)
    elif args.epochs:
        settings["epochs"] = args.epochs
    if side == "hugging_face" and is_glue(task):
        settings["glue_padding"] = args.peer_glue_padding
    if side == "keras_bert" and args.precision:
        settings["precision"] = args.precision
    return settings


def given_flags(args: argparse.Namespace) -> list[str]:
    """The optional settings a run passes on, those given: `--epochs`, `--max-train-examples`,
    `--precision`."""
    flags = []
    for flag, value in (
        ("--epochs", args.epochs),
        ("--max-train-examples", args.max_train_examples),
        ("--precision", args.precision),
    ):
        flags += [flag, str(value)] if value else []
    return flags


def child_flags(args: argparse.Namespace) -> list[str]:
    return [
        *("--seq-length", str(args.seq_length), "--batch-size", str(args.batch_size)),
        *("--glue-dir", str(args.glue_dir)),
        *("--peer-glue-padding", args.peer_glue_padding),
        *given_flags(args),
    ]


def run_in_subprocess(
    side: str, task: str, seed: int, args: argparse.Namespace, work_dir: Path | None = None
) -> dict:
    """One run in a fresh process (no shared thread pools or caches); its output goes to this
    process's stderr, its result comes back as JSON. Our job writes to `work_dir` when given,
    and resumes there if an earlier run was killed (one directory per task, seed and recipe)."""
    with tempfile.TemporaryDirectory(prefix="peer_run_") as directory:
        output = Path(directory) / "result.json"
        command = [
            *(sys.executable, "-m", "bench.bench_peer_finetuning"),
            *("--one-run", side, "--tasks", task, "--seeds", str(seed)),
            *("--one-run-output", str(output), *child_flags(args)),
        ]
        command += ["--one-run-work-dir", str(work_dir)] if work_dir else []
        environment = {**os.environ, "HF_HUB_OFFLINE": "1"}
        subprocess.run(command, check=True, stdout=sys.stderr, env=environment)
        return json.loads(output.read_text("utf-8"))


def run_all(args: argparse.Namespace, seeds: list[int], command: str) -> list[dict]:
    """Runs every task, seed and side not already in the results file (all of them with
    `--again`); returns this invocation's records (appended to the file as they finish)."""
    from keras_bert.cpu import ONEDNN_SWITCH, cpu_summary

    recorded = [] if args.again else read_records(args.results)
    done = [(r["task"], r["side"], r["seed"], r["settings"]) for r in recorded]
    context = {
        "cpu": cpu_summary(),
        # The runs inherit it (`pipelines`: 1 on AVX2-only CPUs; None: TensorFlow's default).
        ONEDNN_SWITCH: os.environ.get(ONEDNN_SWITCH),
        "command": command,
        "revision": git_revision(),
    }
    records = []
    for task in args.tasks:
        for number, seed in enumerate(seeds):
            # Alternate which side goes first, so that both meet the same load over the seeds.
            for side in args.sides if number % 2 == 0 else args.sides[::-1]:
                settings = run_settings(task, side, args)
                if (task, side, seed, settings) in done:
                    print(f"{task} {side} seed {seed}: in {args.results} already", flush=True)
                    continue
                result = run_in_subprocess(side, task, seed, args)
                record = {"task": task, "side": side, "seed": seed, "settings": settings}
                record.update(result, **context)
                record["sequences_per_second"] = round(
                    record["train_sequences"] / record["train_seconds"], 2
                )
                record["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
                print(json.dumps(record), flush=True)
                records.append(record)
                if args.results:
                    append_record(args.results, record)
    return records


def settings_label(settings: dict) -> str:
    """The settings of a table row as a few words ("all examples, glue padding max_length")."""
    count = settings["max_train_examples"]
    parts = [f"{count} examples" if count else "all examples"]
    parts += [
        f"{name.replace('_', ' ')} {value}"
        for name, value in settings.items()
        if name != "max_train_examples"
    ]
    return ", ".join(parts)


def headline_scores(record: dict) -> list[float]:
    """The record's headline metrics, in percent."""
    return [
        scale * record["evaluation"][name][metric]
        for name, metric, scale in headline_metrics(record["task"])
    ]


def grouped(records: Sequence[dict]) -> dict[tuple[str, str, str], list[dict]]:
    """Records by (task, side, settings label), in the order they first appear."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for record in records:
        key = (record["task"], record["side"], settings_label(record["settings"]))
        groups.setdefault(key, []).append(record)
    return groups


def format_scores(values: Sequence[float]) -> str:
    return " / ".join(f"{value:.2f}" for value in values)


def mean_scores(runs: Sequence[dict]) -> list[float]:
    return [statistics.mean(values) for values in zip(*map(headline_scores, runs), strict=True)]


def glue_average_rows(groups: dict) -> list[str]:
    """The GLUE average of each side and settings: the mean over the GLUE tasks it ran of each
    task's score (its metrics averaged over seeds, then over metrics), as `glue_average`."""
    from keras_bert.metrics.glue import glue_average

    by_side: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for (task, side, label), runs in groups.items():
        if not is_glue(task):
            continue
        scores = by_side.setdefault((side, label), {})
        for name, metric, _ in headline_metrics(task):
            values = [run["evaluation"][name][metric] for run in runs]
            scores.setdefault(name, {})[metric] = statistics.mean(values)
    return [
        f"| GLUE average ({', '.join(scores)}) | {side} | {label} | | | "
        f"{100 * glue_average(scores):.2f} | | | |"
        for (side, label), scores in by_side.items()
    ]


def print_table(records: Sequence[dict]) -> None:
    """The per-task, per-side table (metrics in percent), the GLUE averages, and how
    keras_bert compares with Hugging Face on each task."""
    if not records:
        print("no runs to show")
        return
    for name in ("cpu", "command"):
        for value in dict.fromkeys(record[name] for record in records):
            print(f"{name}: {value}")
    print(
        "\n| task | side | settings | metrics | per seed | mean | train s | sequences/s "
        "| CPU s of the whole run |"
    )
    print("|---|---|---|---|---|---:|---:|---:|---:|")
    groups = grouped(records)
    for (task, side, label), runs in groups.items():
        metrics = " / ".join(metric for _, metric, _ in headline_metrics(task))
        per_seed = ", ".join(
            f"{run['seed']}: {format_scores(headline_scores(run))}" for run in runs
        )
        print(
            f"| {task} | {side} | {label} | {metrics} | {per_seed} "
            f"| {format_scores(mean_scores(runs))} "
            f"| {statistics.mean(run['train_seconds'] for run in runs):.0f} "
            f"| {statistics.mean(run['sequences_per_second'] for run in runs):.1f} "
            f"| {statistics.mean(run['run_cpu_seconds'] for run in runs):.0f} |"
        )
    for row in glue_average_rows(groups):
        print(row)
    print("\n| task | keras_bert | Hugging Face | keras_bert − HF (points) | throughput ratio |")
    print("|---|---|---|---|---:|")
    for (task, side, label), runs in groups.items():
        if side != "keras_bert":
            continue
        for (peer_task, peer_side, peer_label), peer_runs in groups.items():
            same_examples = (
                peer_runs[0]["settings"]["max_train_examples"]
                == runs[0]["settings"]["max_train_examples"]
            )
            if (peer_task, peer_side) != (task, "hugging_face") or not same_examples:
                continue
            difference = np.subtract(mean_scores(runs), mean_scores(peer_runs))
            ratio = statistics.mean(r["sequences_per_second"] for r in runs) / statistics.mean(
                r["sequences_per_second"] for r in peer_runs
            )
            print(
                f"| {task} | {label} ({len(runs)} seeds) | {peer_label} ({len(peer_runs)} seeds) "
                f"| {' / '.join(f'{d:+.2f}' for d in difference)} | {ratio:.2f}x |"
            )


def parse_tasks(tasks: str, glue_dir: Path) -> list[str]:
    """The `--tasks` list: names, with `glue` standing for every GLUE task `glue_dir` holds."""
    names = []
    for name in tasks.split(","):
        if name == "glue":
            from keras_bert.data.glue import available_glue_tasks

            names += [task.name for task in available_glue_tasks(glue_dir)]
        elif name:
            names.append(name)
    return list(dict.fromkeys(names))


def build_parser() -> argparse.ArgumentParser:
    """The command line; `parse_args(["--tasks", "rte"])` is also a run's settings for
    `run_in_subprocess`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tasks",
        default="wnut16,sentiment",
        help="comma-separated: GLUE tasks (tfds spelling) or glue, conll2003, squad, "
        "wnut16, sentiment",
    )
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--seeds", default="0")
    parser.add_argument(
        "--epochs",
        type=int,
        help=f"wnut16 and sentiment: default {RECIPE_EPOCHS}; the benchmarks: each side's "
        "recipe unless given (quick runs)",
    )
    parser.add_argument("--seq-length", type=int, default=128, help="wnut16 and sentiment only")
    parser.add_argument("--batch-size", type=int, default=32, help="wnut16 and sentiment only")
    parser.add_argument("--max-train-examples", type=int, help="train on N drawn at random")
    parser.add_argument("--glue-dir", type=Path, default=GLUE_DIR)
    parser.add_argument(
        "--peer-glue-padding",
        choices=("max_length", "longest"),
        default="max_length",
        help="run_glue's padding: to 128 (its default) or each batch's longest",
    )
    parser.add_argument(
        "--precision",
        choices=("float32", "mixed_bfloat16", "auto"),
        help="our side's training precision (default: the job's; wnut16 and sentiment: the "
        "fine-tuning recipe's, float32)",
    )
    parser.add_argument("--results", type=Path, help="JSON lines of the runs: appended, resumed")
    parser.add_argument(
        "--again",
        action="store_true",
        help="run even what --results holds (both sides anew, compared within this run)",
    )
    parser.add_argument(
        "--table-only", action="store_true", help="print the table of --results, run nothing"
    )
    parser.add_argument("--one-run", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--one-run-output", help=argparse.SUPPRESS)
    parser.add_argument("--one-run-work-dir", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    # TensorFlow (keras_bert's readers and metrics import it, on both sides) without its C++
    # log lines; imported before a run's CPU clock starts.
    import pipelines  # noqa: F401

    args.sides = args.sides.split(",")
    seeds = [int(seed) for seed in args.seeds.split(",")]
    if args.one_run:
        args.tasks, args.seed = [args.tasks], seeds[0]
        one_run(args)
        return
    if args.table_only:
        if args.results is None:
            parser.error("--table-only needs --results")
        print_table(read_records(args.results))
        return
    args.tasks = parse_tasks(args.tasks, args.glue_dir)
    unknown = [task for task in args.tasks if not (task in DATA or task in ("conll2003", "squad"))]
    unknown = [task for task in unknown if not is_glue(task)]
    if unknown or not set(args.sides) <= set(SIDES):
        parser.error(f"unknown tasks or sides: {unknown or args.sides}")
    command = shlex.join(["python", "-m", "bench.bench_peer_finetuning", *sys.argv[1:]])
    records = run_all(args, seeds, command)
    print_table(read_records(args.results) if args.results else records)


if __name__ == "__main__":
    main()
