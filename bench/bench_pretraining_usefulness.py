"""Is a pretraining run useful? A campaign that outlives a session: pretraining runs of fixed
step counts, then the sentiment classifier fine-tuned from each run's checkpoint and from a
random model of the same architecture, seed by seed, each run one line of a results file.

    python -m bench.bench_pretraining_usefulness pretrain --variants mlm electra
    python -m bench.bench_pretraining_usefulness finetune --variants mlm electra \\
        --seeds 0 1 2 --epochs 1 3               # the job's defaults; one line per model, seed
    python -m bench.bench_pretraining_usefulness finetune --variants mlm --learning-rate 5e-4 \\
        --pooling mean --embedding-rms 0.01      # other settings: their own lines
    python -m bench.bench_pretraining_usefulness table [--min-seeds 3] [--models pretrained] \\
        [--settings "the job's defaults" ...] [--variants mlm electra] [--cpu "Zen 5"] \\
        [--write BENCHMARKS.md]
    python -m bench.bench_pretraining_usefulness table --over-pretraining-seeds --min-seeds 3
    python -m bench.bench_pretraining_usefulness probe --variants mlm electra
    python -m bench.bench_pretraining_usefulness detection --variants electra

`pretrain` runs `pipelines.pretrain` on a variant's recipe (`VARIANTS`) with its time budget off
(`total_steps` exactly, whatever the CPU's load) into `--runs-dir/<variant>` (resumable: rerun
after a stop; `--again` trains a recorded variant anew, its finished run moved aside) and
records the run in `bench/results/pretraining_runs.jsonl`: held-out `accuracy_at_mask` at every
checkpoint, the precision, the training seconds, the CPU, the load. `finetune` fine-tunes each
variant's run and a random model (the run's `BertConfig` drawn under the seed, its vocabulary)
with `keras_bert.finetuning.classification.finetune_classifier`, the code of
`pipelines.finetune_classifier`, on the movie snippets; defaults are the job's
(`FinetuningConfig` and `CLASSIFIER_RECIPE`: lr 5e-5, 10% warm-up, first-token head, length
128); a line of `bench/results/pretraining_usefulness.jsonl` per model, seed, epochs and
settings, skipped when recorded for the variant's last pretraining run. `probe` looks inside
each run's encoder and a random one's, without training them
(`bench/results/pretraining_probes.jsonl`): the token table's root mean square, the LayerNorm
scales, how alike the features of different sentences are (mean cosine similarity of the first
token's output and of the mean over tokens), and what a linear classifier of the frozen features
scores on the dev split (ridge regression on standardized features). `detection` scores an
ELECTRA run's discriminator on its held-out documents, masked and filled by its own generator as
in training (`bench/results/pretraining_detection.jsonl`): the share replaced, its loss against
the labels' entropy, accuracy against always answering "original", the area under the ROC
curve, recall and precision at logit 0. `table` prints the mean dev
accuracy of each model over its seeds and the differences; with `--write` it replaces the text
between `<!-- pretraining_usefulness -->` and `<!-- /pretraining_usefulness -->` in the file.
With `--over-pretraining-seeds` it prints each objective's mean on each text over its
pretraining seeds (`PRETRAINING_SEEDS`) and ELECTRA's lead, between `<!-- pretraining_seeds -->`
markers.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from bench.benchmarks_page import cpu_name, write_between_markers
from bench.results_lines import append_record, git_revision, read_records

RESULTS_DIR = Path(__file__).parent / "results"
PRETRAINING_RESULTS = "pretraining_runs.jsonl"
FINETUNING_RESULTS = "pretraining_usefulness.jsonl"
PROBE_RESULTS = "pretraining_probes.jsonl"
DETECTION_RESULTS = "pretraining_detection.jsonl"
# Held-out batches the detection scores read (64 sequences of 128 tokens each in the recipes).
DETECTION_BATCHES = 10
# The ridge penalty of the linear probe, on standardized features.
PROBE_PENALTY = 1.0
DATA_DIR = Path("../shared/data/sentiment")
MARKERS = ("<!-- pretraining_usefulness -->", "<!-- /pretraining_usefulness -->")
SEED_MARKERS = ("<!-- pretraining_seeds -->", "<!-- /pretraining_seeds -->")
# The corpus both recipes read.
RECIPE_CORPUS = (
    "../shared/data/pretraining/wikipedia_sample.txt",
    "../shared/data/pretraining/austen_novels.txt",
)
# The sentiment training split as pretraining text (`sentiment_text`), in `--runs-dir`.
SENTIMENT_TEXT_FILE = "movie_snippets.train.txt"
# The pretraining seeds each objective runs under on each text (0: the recipe's own, run without
# `--seed`): one run this small moves with its seed by as much as the 2 points compared, so
# each objective's figure is a mean over these runs.
PRETRAINING_SEEDS = (0, 1, 2, 3)
# The texts the seeded runs pretrain on, by variant-name infix: the recipes' corpus, and that
# corpus with the sentiment training snippets (`_in_domain`).
PRETRAINING_TEXTS = ("", "_in_domain")
OBJECTIVE_RECIPES = (
    ("mlm", "pipelines/recipes/budget_tiny.json"),
    ("electra", "pipelines/recipes/electra_tiny.json"),
)


def _seed_suffix(seed: int) -> str:
    """A pretraining seed's variant-name suffix: none for the recipe's own seed, 0."""
    return f"_seed_{seed}" if seed else ""


# Each pretraining variant: its recipe and the flags over it (`{runs_dir}` stands for `--runs-dir`).
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "mlm": ("pipelines/recipes/budget_tiny.json", []),
    # The masked LM at ELECTRA's peak learning rate (1e-3, half its recipe's): ELECTRA's rate was
    # searched and the masked LM's was not, so the comparison is fair only if the masked LM gets
    # the rate that helped ELECTRA too.
    "mlm_lr_0.001": ("pipelines/recipes/budget_tiny.json", ["--learning-rate", "0.001"]),
    "mlm_bert_corruption": (
        "pipelines/recipes/budget_tiny.json",
        ["--mask-token-rate", "0.8", "--random-token-rate", "0.1"],
    ),
    # The ELECTRA variants below `electra` were trained with the recipe as it was before
    # 35bafc8, at discriminator loss weight 50, and all but `electra_weight_10` before
    # f489959, at peak learning rate 2e-3, where their flags set neither; `electra` was
    # trained again at each change, last at 1e-3 and 10.
    "electra": ("pipelines/recipes/electra_tiny.json", []),
    # A third of the masked LM's steps, two fifths of ELECTRA's (the rate decayed over them): 5
    # passes over the corpus, not 16 and 13, to see whether a corpus learned by heart is what
    # fine-tuning must unlearn.
    "mlm_1000_steps": ("pipelines/recipes/budget_tiny.json", ["--total-steps", "1000"]),
    "electra_1000_steps": ("pipelines/recipes/electra_tiny.json", ["--total-steps", "1000"]),
    # ELECTRA's recipe with BERT's and ELECTRA's own dropout (0.1) in pretraining: 13 passes
    # over a small corpus without it, to see whether dropout keeps it from being learned by
    # heart.
    "electra_dropout": (
        "pipelines/recipes/electra_tiny.json",
        ["--model-config", '{"dropout_rate": 0.1, "attention_dropout_rate": 0.1}'],
    ),
    # A generator half the discriminator's width (64, not 32): the top of the paper's best range
    # (1/4-1/2), its replacements harder to detect.
    "electra_generator_0.5": ("pipelines/recipes/electra_tiny.json", ["--generator-width", "0.5"]),
    # A generator an eighth of the discriminator's width (16, not 32): the width 0.5 fine-tuned
    # worse than 0.25, so the other side of the recipe's.
    "electra_generator_0.125": (
        "pipelines/recipes/electra_tiny.json",
        ["--generator-width", "0.125"],
    ),
    # A quarter of the tokens masked and replaced, not 15% (ELECTRA-Large's rate): more
    # replaced tokens for a discriminator that detects few of them, more predictions for its
    # generator.
    "electra_mask_0.25": (
        "pipelines/recipes/electra_tiny.json",
        ["--masked-lm-prob", "0.25", "--max-predictions-per-seq", "32"],
    ),
    # The recipe at other peak learning rates (it had the masked LM's 2e-3 until the second
    # of these fine-tuned best; it has 1e-3 since). 4e-3: a discriminator that detects little
    # at the budget, and fine-tunes worse after fewer steps, may want more progress per step.
    "electra_lr_0.004": ("pipelines/recipes/electra_tiny.json", ["--learning-rate", "0.004"]),
    # 1e-3: 4e-3's discriminator fell behind 2e-3's (its run was stopped after 750 steps).
    "electra_lr_0.001": ("pipelines/recipes/electra_tiny.json", ["--learning-rate", "0.001"]),
    # 5e-4 (ELECTRA-Small's own): 1e-3 fine-tuned 2 points above 2e-3.
    "electra_lr_0.0005": ("pipelines/recipes/electra_tiny.json", ["--learning-rate", "0.0005"]),
    # The discriminator's loss weighted 10, not 50 (at 1e-3; the recipe's since): the
    # token embeddings both models share learn five times more from the generator's masked LM,
    # the task whose model fine-tunes best at this budget.
    "electra_weight_10": (
        "pipelines/recipes/electra_tiny.json",
        ["--discriminator-loss-weight", "10"],
    ),
    # Weight 5: 10 fine-tuned 2.3 points above 50 after 3 epochs, so the trend's next step.
    # Adam rescales each weight's own gradient, so the weight acts where both losses meet: the
    # token and position embeddings the two models share.
    "electra_weight_5": (
        "pipelines/recipes/electra_tiny.json",
        ["--discriminator-loss-weight", "5"],
    ),
    # Both recipes on their corpus plus the sentiment training snippets, without their labels
    # (task-adaptive pretraining, Gururangan et al. 2020): neither corpus holds film reviews,
    # and a linear probe reads no more sentiment from either run's features than from a
    # random model's, so whether either objective can carry what it learns to the task is
    # measured on text that has some.
    # `_seed_N`: the same runs under another seed (initialization, held-out documents, order),
    # on either text (the recipes' own at seed 0: `mlm` and `electra` above).
    **{
        f"{objective}{text}{_seed_suffix(seed)}": (
            recipe,
            [
                *(
                    ["--input-files", *RECIPE_CORPUS, f"{{runs_dir}}/{SENTIMENT_TEXT_FILE}"]
                    if text
                    else []
                ),
                *(["--seed", str(seed)] if seed else []),
            ],
        )
        for objective, recipe in OBJECTIVE_RECIPES
        for text in PRETRAINING_TEXTS
        for seed in PRETRAINING_SEEDS
        if text or seed
    },
}
# The masked LM each seeded ELECTRA run is compared with: the one on the same text under the
# same pretraining seed (the other ELECTRA variants: `mlm`); those masked LMs themselves with none.
MASKED_LM_ON_SAME_TEXT = {
    f"electra{text}{suffix}": f"mlm{text}{suffix}"
    for text in PRETRAINING_TEXTS
    for suffix in map(_seed_suffix, PRETRAINING_SEEDS)
}
# The models fine-tuned from a run: its checkpoint, or a checkpoint of its architecture with
# random weights but for those it keeps of the run's (canonical name prefixes): all random,
# the run's embeddings (tables and their LayerNorm) on random blocks, the run's blocks (and
# final LayerNorm) on random embeddings, or all but its top block.
MODELS: dict[str, tuple[str, ...] | None] = {
    "pretrained": None,
    "random": (),
    "pretrained_embeddings": ("bert/embeddings/",),
    "pretrained_blocks": ("bert/encoder/",),
    # The run's embeddings and first block under a random top block (and final LayerNorm):
    # the top re-initialized, as for few-sample fine-tuning (Zhang et al. 2021).
    "pretrained_first_block": ("bert/embeddings/", "bert/encoder/layer_0/"),
}
# The fine-tuning settings a line records (the rest are the job's defaults).
SETTINGS = ("learning_rate", "pooling", "embedding_rms", "seq_length", "precision", "dropout_rate")


def random_checkpoint(
    run_checkpoint: Path, directory: Path, seed: int, kept: tuple[str, ...] = ()
) -> Path:
    """A checkpoint of the run's architecture and vocabulary with random weights drawn under
    `seed`, but for the run's own weights whose canonical names start with one of `kept`."""
    import keras

    from keras_bert import BertEncoder
    from keras_bert.checkpoints import encoder_variables, load_checkpoint, save_google_checkpoint

    checkpoint = load_checkpoint(run_checkpoint)
    keras.utils.set_random_seed(seed)
    encoder = BertEncoder(checkpoint.config)
    tensors = {
        name: keras.ops.convert_to_numpy(v) for name, v in encoder_variables(encoder).items()
    }
    tensors = {
        name: checkpoint.tensors[name] if name.startswith(kept) else value
        for name, value in tensors.items()
    }
    save_google_checkpoint(
        tensors, checkpoint.config, directory, vocabulary_file=checkpoint.vocabulary_file
    )
    return directory


def _provenance() -> dict:
    from keras_bert.cpu import cpu_summary

    return {
        "cpu": cpu_summary(),
        "load_average": round(os.getloadavg()[0], 2),
        "revision": git_revision(),
        "finished": datetime.datetime.now().isoformat(timespec="seconds"),
    }


def pretraining_record(variant: str, run_dir: Path, precision: str) -> dict:
    """A finished run as a results line: its recipe, steps and held-out scores."""
    recipe, flags = VARIANTS[variant]
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    config = json.loads((run_dir / "config.json").read_text("utf-8"))
    return {
        "variant": variant,
        "recipe": recipe,
        "flags": flags,
        "precision": precision,
        "total_steps": config["total_steps"],
        "steps_per_checkpoint": config["steps_per_checkpoint"],
        "heldout_accuracy_at_mask": [
            round(float(row["heldout_accuracy_at_mask"]), 4) for row in rows
        ],
        "train_seconds": round(float(rows[-1]["train_seconds"]), 1),
        **_provenance(),
    }


def set_aside_finished_run(run_dir: Path) -> Path | None:
    """Moves a finished run (its `pretrainer.keras` written) and its log aside, to
    `<run_dir>.<finished time>` beside it, so that the variant trains anew; a killed run stays
    to resume. Returns where the run went (None: nothing finished there)."""
    model = run_dir / "pretrainer.keras"
    if not model.is_file():
        return None
    stamp = datetime.datetime.fromtimestamp(model.stat().st_mtime).strftime("%Y%m%dT%H%M%S")
    moved = run_dir.with_name(f"{run_dir.name}.{stamp}")
    run_dir.rename(moved)
    log = run_dir.parent / f"{run_dir.name}.log"
    if log.is_file():
        log.rename(moved.with_name(f"{moved.name}.log"))
    return moved


def sentiment_text(directory: Path) -> Path:
    """The sentiment training snippets, labels dropped, as a BERT-format text file in
    `directory`: one snippet a document (a line, then a blank line)."""
    from keras_bert.data.classification import read_classification_file

    path = directory / SENTIMENT_TEXT_FILE
    snippets = read_classification_file(DATA_DIR / "movie_snippets.train.jsonl").texts
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{snippet.strip()}\n\n" for snippet in snippets), "utf-8")
    return path


def pretrain(arguments: argparse.Namespace) -> None:
    results = arguments.results_dir / PRETRAINING_RESULTS
    recorded = {record["variant"] for record in read_records(results)}
    for variant in arguments.variants:
        run_dir = arguments.runs_dir / variant
        if variant in recorded and not arguments.again:
            continue
        if arguments.again:
            set_aside_finished_run(run_dir)
        if not (run_dir / "pretrainer.keras").is_file():
            recipe, flags = VARIANTS[variant]
            if any(SENTIMENT_TEXT_FILE in flag for flag in flags):
                sentiment_text(arguments.runs_dir)
            flags = [flag.replace("{runs_dir}", str(arguments.runs_dir)) for flag in flags]
            command = [sys.executable, "-m", "pipelines.pretrain", "--config", recipe]
            command += ["--output-dir", str(run_dir), "--time-budget-minutes", "none"]
            command += ["--precision", arguments.precision, "--verbose", "2", *flags]
            run_dir.mkdir(parents=True, exist_ok=True)
            with (run_dir.parent / f"{variant}.log").open("a") as log:
                subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True)
        record = pretraining_record(variant, run_dir, arguments.precision)
        append_record(results, record)
        print(json.dumps(record), flush=True)


def _features(encoder, preprocessor, texts: list[str], batch_size: int = 128) -> dict:
    """Of every text, as numpy arrays: the first token's output, the mean of the sequence
    output over the real tokens (`mean`) and of each layer's output below it (`mean of
    embeddings`, `mean of block 0`, ...; `encoder` built with `output_all_layers`), the root
    mean square of each of those layers' token vectors, averaged over the text's tokens (`rms
    of embeddings`, ...: how large the residual stream grows), and the pooler's output where
    the encoder has one."""
    import numpy as np

    features = defaultdict(list)
    for start in range(0, len(texts), batch_size):
        inputs = preprocessor(texts[start : start + batch_size])
        outputs = encoder(inputs)
        mask = np.asarray(inputs["input_mask"], "float32")[..., None]
        layers = {
            "mean": outputs["sequence_output"],
            "mean of embeddings": outputs["embedding_output"],
            **{f"mean of block {i}": x for i, x in enumerate(outputs["encoder_outputs"])},
        }
        for name, values in layers.items():
            values = np.asarray(values)
            features[name].append((values * mask).sum(1) / mask.sum(1))
            # The root mean square of each real token's vector (the residual stream's size).
            token_rms = np.sqrt(np.square(values).mean(-1, keepdims=True))
            layer = "sequence output" if name == "mean" else name.removeprefix("mean of ")
            features[f"rms of {layer}"].append((token_rms * mask).sum(1) / mask.sum(1))
        features["first_token"].append(np.asarray(outputs["first_token_output"]))
        if "pooled_output" in outputs:
            features["pooler"].append(np.asarray(outputs["pooled_output"]))
    return {name: np.concatenate(values) for name, values in features.items()}


def mean_cosine_similarity(features):
    """The mean cosine similarity of every pair of rows (1.0: all alike)."""
    import numpy as np

    unit = features / np.linalg.norm(features, axis=1, keepdims=True)
    count = len(unit)
    total = unit.sum(0)
    return float((total @ total - count) / (count * (count - 1)))


def ridge_probe_accuracy(train, train_labels, dev, dev_labels) -> float:
    """The dev accuracy of a ridge-regression classifier (one-vs-rest, standardized features,
    `PROBE_PENALTY`) of frozen features."""
    import numpy as np

    mean, scale = train.mean(0), train.std(0) + 1e-6
    train, dev = (train - mean) / scale, (dev - mean) / scale
    train = np.concatenate([train, np.ones((len(train), 1))], 1)
    dev = np.concatenate([dev, np.ones((len(dev), 1))], 1)
    classes = sorted(set(train_labels))
    targets = np.array([[1.0 if label == c else -1.0 for c in classes] for label in train_labels])
    gram = train.T @ train + PROBE_PENALTY * np.eye(train.shape[1])
    weights = np.linalg.solve(gram, train.T @ targets)
    predicted = [classes[index] for index in (dev @ weights).argmax(1)]
    return float(np.mean([p == label for p, label in zip(predicted, dev_labels, strict=True)]))


def weight_statistics(encoder) -> dict:
    """The token table's root mean square and each LayerNorm's mean scale, by variable path."""
    import numpy as np

    statistics_ = {
        "token_embedding_rms": float(
            np.sqrt(np.mean(np.square(encoder.token_embedding.embeddings.numpy())))
        )
    }
    for variable in encoder.weights:
        if variable.path.endswith("gamma"):
            statistics_[f"{variable.path} mean"] = round(float(np.mean(variable.numpy())), 4)
    return statistics_


def probe(arguments: argparse.Namespace) -> None:
    from keras_bert import BertEncoder, load_preprocessor
    from keras_bert.data.classification import read_classification_file

    train = read_classification_file(DATA_DIR / "movie_snippets.train.jsonl")
    dev = read_classification_file(DATA_DIR / "movie_snippets.dev.jsonl")
    with tempfile.TemporaryDirectory(prefix="pretraining_usefulness_") as scratch:
        work = Path(scratch)
        for variant in arguments.variants:
            run_checkpoint = arguments.runs_dir / variant / "checkpoint"
            preprocessor = load_preprocessor(run_checkpoint, seq_length=arguments.seq_length)
            checkpoints = {
                "pretrained": run_checkpoint,
                "random": random_checkpoint(run_checkpoint, work / variant, seed=0),
            }
            for model, checkpoint in checkpoints.items():
                encoder = BertEncoder.from_checkpoint(checkpoint, output_all_layers=True)
                train_features = _features(encoder, preprocessor, list(train.texts))
                dev_features = _features(encoder, preprocessor, list(dev.texts))
                sizes = {
                    name: dev_features.pop(name) for name in list(dev_features) if "rms" in name
                }
                record = {
                    "variant": variant,
                    "model": model,
                    "seq_length": arguments.seq_length,
                    "weights": weight_statistics(encoder),
                    "token_rms": {
                        name: round(float(value.mean()), 4) for name, value in sizes.items()
                    },
                    "mean_cosine_similarity": {
                        name: round(mean_cosine_similarity(values), 4)
                        for name, values in dev_features.items()
                    },
                    "linear_probe_dev_accuracy": {
                        name: round(
                            ridge_probe_accuracy(
                                train_features[name], train.labels, dev_features[name], dev.labels
                            ),
                            4,
                        )
                        for name in dev_features
                    },
                    **_provenance(),
                }
                append_record(arguments.results_dir / PROBE_RESULTS, record)
                print(json.dumps(record), flush=True)


def detection_scores(labels, logits) -> dict:
    """How well replaced-token logits separate replaced tokens (label 1) from original ones:
    flat numpy arrays of the real tokens.

    Example:
    >>> import numpy as np
    >>> scores = detection_scores(np.array([1.0, 0.0, 0.0, 0.0]), np.array([2.0, -1.0, 0.5, -3.0]))
    >>> scores["replaced_fraction"], scores["auc"], scores["recall"], scores["precision"]
    (0.25, 1.0, 1.0, 0.5)
    """
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from keras_bert.models.replaced_token_objective import (
        replaced_token_cross_entropy,
        replaced_token_matches,
    )

    replaced = labels > 0.5
    share = float(replaced.mean())
    # The training's loss and accuracy, per token.
    loss = np.mean(replaced_token_cross_entropy(labels, logits))
    entropy = -(share * np.log(share) + (1 - share) * np.log(1 - share))
    predicted = logits > 0
    return {
        "replaced_fraction": round(share, 4),
        "loss": round(float(loss), 4),
        "label_entropy": round(float(entropy), 4),
        "accuracy": round(float(np.mean(replaced_token_matches(labels, logits))), 4),
        "always_original_accuracy": round(1 - share, 4),
        "auc": round(float(roc_auc_score(replaced, logits)), 4),
        "recall": round(float(predicted[replaced].mean()), 4),
        "precision": round(float(replaced[predicted].mean()) if predicted.any() else 0.0, 4),
    }


def detection(arguments: argparse.Namespace) -> None:
    import dataclasses

    import keras
    import numpy as np

    from keras_bert.pretraining.trainer import build_datasets
    from pipelines.pretrain import pretraining_config

    for variant in arguments.variants:
        run_dir = arguments.runs_dir / variant
        config = pretraining_config(
            ["--config", str(run_dir / "config.json"), "--output-dir", str(run_dir)]
        )
        if not config.replaced_token_detection:
            raise SystemExit(f"{variant} is not an ELECTRA run: it has no discriminator to score")
        # The held-out stream the run's evaluation would read, masked under its fixed seed; the
        # generator draws anew at every call, so the scores move in their third decimal.
        _, held_out = build_datasets(dataclasses.replace(config, eval_steps=DETECTION_BATCHES))
        model = keras.models.load_model(run_dir / "pretrainer.keras")
        labels, logits = [], []
        for inputs, _, _ in held_out:
            outputs = model(inputs, training=False)
            real = keras.ops.convert_to_numpy(inputs["input_mask"]).astype(bool)
            labels.append(keras.ops.convert_to_numpy(outputs["replaced_token_labels"])[real])
            logits.append(keras.ops.convert_to_numpy(outputs["replaced_token"])[real])
        record = {
            "variant": variant,
            "batches": DETECTION_BATCHES,
            **detection_scores(np.concatenate(labels), np.concatenate(logits)),
            **_provenance(),
        }
        append_record(arguments.results_dir / DETECTION_RESULTS, record)
        print(json.dumps(record), flush=True)


def settings_of(arguments: argparse.Namespace) -> dict:
    return {name: getattr(arguments, name) for name in SETTINGS}


def _finetuned_accuracy(checkpoint: Path, output_dir: Path, arguments, seed: int, epochs: float):
    """Fine-tunes `checkpoint` on the movie snippets as the job does, with the settings of
    `arguments`; returns the dev accuracy and the training seconds."""
    from keras_bert.data.classification import read_classification_file
    from keras_bert.finetuning.classification import finetune_classifier
    from keras_bert.finetuning.recipe import FinetuningConfig

    config = FinetuningConfig(
        checkpoint=str(checkpoint),
        output_dir=str(output_dir),
        seq_length=arguments.seq_length,
        epochs=epochs,
        classifier_pooling=arguments.pooling,
        dropout_rate=arguments.dropout_rate,
        embedding_rms=arguments.embedding_rms,
        run={
            "learning_rate": arguments.learning_rate,
            "precision": arguments.precision,
            "seed": seed,
        },
    )
    train = read_classification_file(DATA_DIR / "movie_snippets.train.jsonl")
    dev = read_classification_file(DATA_DIR / "movie_snippets.dev.jsonl")
    _, summary = finetune_classifier(config, train, dev)
    return summary["evaluation"]["accuracy"], summary["train_seconds"]


def finetune(arguments: argparse.Namespace) -> None:
    settings = settings_of(arguments)
    results = arguments.results_dir / FINETUNING_RESULTS
    pretraining_runs = read_records(arguments.results_dir / PRETRAINING_RESULTS)
    pretrained_runs = {r["variant"]: r for r in pretraining_runs}  # each variant's last run
    # A line counts for the variant's last pretraining run only: a new run is fine-tuned again.
    done = {
        (r["variant"], r["model"], r["seed"], r["epochs"])
        for r in read_records(results)
        if {"dropout_rate": 0.1, **r["settings"]} == settings
        and r.get("pretraining_finished") == pretrained_runs.get(r["variant"], {}).get("finished")
    }
    with tempfile.TemporaryDirectory(prefix="pretraining_usefulness_") as scratch:
        work = Path(scratch)
        for variant, seed, epochs, model in itertools.product(
            arguments.variants, arguments.seeds, arguments.epochs, arguments.models
        ):
            if (variant, model, seed, epochs) in done:
                continue
            checkpoint = arguments.runs_dir / variant / "checkpoint"
            if MODELS[model] is not None:
                checkpoint = random_checkpoint(
                    checkpoint, work / f"{model}{seed}", seed, MODELS[model]
                )
            output_dir = work / f"{variant}_{model}_{seed}_{epochs}"
            accuracy, seconds = _finetuned_accuracy(checkpoint, output_dir, arguments, seed, epochs)
            record = {
                "variant": variant,
                "model": model,
                "seed": seed,
                "epochs": epochs,
                "settings": settings,
                "dev_accuracy": round(accuracy, 5),
                "train_seconds": seconds,
                "pretraining_finished": pretrained_runs.get(variant, {}).get("finished"),
                **_provenance(),
            }
            append_record(results, record)
            print(json.dumps(record), flush=True)


def _setting_label(settings: dict) -> str:
    from keras_bert.finetuning.recipe import FinetuningConfig

    defaults = {
        "learning_rate": FinetuningConfig("", "").run.learning_rate,
        "pooling": "first_token",
        "embedding_rms": None,
        "seq_length": 128,
        "precision": "float32",
        "dropout_rate": 0.1,
    }
    changed = [f"{name} {value}" for name, value in settings.items() if defaults[name] != value]
    return ", ".join(changed) or "the job's defaults"


# How the table names each fine-tuned model of a run (`MODELS`; the random one is its baseline).
MODEL_LABELS = {
    "pretrained": "",
    "pretrained_embeddings": ", its embeddings on random blocks",
    "pretrained_blocks": ", its blocks on random embeddings",
    "pretrained_first_block": ", its embeddings and first block under a random top",
}


def _scores_by_setting(
    records: list[dict], cpu: str | None
) -> dict[tuple[str, float], dict[tuple[str, str], dict[int, float]]]:
    """The dev accuracies (%) recorded, by (settings as JSON, epochs), then (variant, model),
    then fine-tuning seed: each seed's last line, of `cpu`'s lines only if given."""
    groups: dict[tuple[str, float], dict[tuple[str, str], dict[int, float]]] = defaultdict(dict)
    for record in records:
        if cpu is not None and cpu_name(record["cpu"]) != cpu:
            continue
        recorded = {"dropout_rate": 0.1, **record["settings"]}  # lines before the setting
        key = (json.dumps(recorded, sort_keys=True), record["epochs"])
        scores = groups[key].setdefault((record["variant"], record["model"]), {})
        scores[record["seed"]] = 100 * record["dev_accuracy"]  # the last line of a seed
    return groups


def pretraining_seed_table(records: list[dict], min_seeds: int = 1, cpu: str | None = None) -> str:
    """Per epochs, for each objective on each text (`PRETRAINING_TEXTS`: `mlm`, `electra`,
    `mlm_in_domain`, `electra_in_domain`) at the job's defaults: the pretrained model's dev
    accuracy under each pretraining seed (the mean over its `min_seeds` or more fine-tuning
    seeds), their mean, and ELECTRA's lead over the masked LM on the same text as the mean of
    the per-seed differences, over the pretraining seeds both have. `cpu` as in `table`."""
    lines = [
        "| epochs | objective | dev accuracy per pretraining seed (mean of its fine-tuning "
        "seeds) | mean | lead over the masked LM |",
        "|---:|---|---|---:|---:|",
    ]
    for (setting, epochs), group in sorted(_scores_by_setting(records, cpu).items()):
        if _setting_label(json.loads(setting)) != "the job's defaults":
            continue
        by_run: dict[tuple[str, str], dict[int, float]] = {}  # (text, objective): seed means
        for text, (objective, _) in itertools.product(PRETRAINING_TEXTS, OBJECTIVE_RECIPES):
            for seed in PRETRAINING_SEEDS:
                scores = group.get((f"{objective}{text}{_seed_suffix(seed)}", "pretrained"), {})
                if len(scores) >= min_seeds:
                    means = by_run.setdefault((text, objective), {})
                    means[seed] = statistics.mean(scores.values())
        for (text, objective), means in by_run.items():
            masked_lm = by_run.get((text, "mlm"), {}) if objective != "mlm" else {}
            shared = sorted(set(means) & set(masked_lm))
            lead = (
                f"{statistics.mean(means[s] - masked_lm[s] for s in shared):+.2f}" if shared else ""
            )
            per_seed = ", ".join(f"{seed}: {means[seed]:.2f}" for seed in sorted(means))
            lines.append(
                f"| {epochs:g} | {objective}{text} | {per_seed} | "
                f"**{statistics.mean(means.values()):.2f}** | {lead} |"
            )
    return "\n".join(lines)


def table(
    records: list[dict],
    min_seeds: int = 1,
    models: tuple[str, ...] = tuple(MODEL_LABELS),
    settings: tuple[str, ...] | None = None,
    variants: tuple[str, ...] | None = None,
    cpu: str | None = None,
) -> str:
    """Per setting and epochs: the mean dev accuracy over its seeds of each of `models` of a
    run, and the points by which it leads the random model of its architecture (and each run
    but a masked LM's the masked LM's on the same text, `MASKED_LM_ON_SAME_TEXT`), from the
    seeds both have; rows of fewer than `min_seeds` seeds left out, and with `settings` (labels
    as the table writes them) or `variants` the others' rows.
    With `cpu` (BENCHMARKS' short name of a CPU, `cpu_name`: "Zen 5", "EPYC AVX2", ...) only
    that CPU's lines count: a seed's last line is otherwise whichever CPU ran it last."""
    groups = _scores_by_setting(records, cpu)
    lines = [
        "| fine-tuning | epochs | model | dev accuracy per seed | mean | random model | lead "
        "| lead over the masked LM |",
        "|---|---:|---|---|---:|---:|---:|---:|",
    ]
    for (setting, epochs), group in sorted(groups.items()):
        label = _setting_label(json.loads(setting))
        if settings is not None and label not in settings:
            continue
        for (variant, model), scores in sorted(group.items()):
            shown = variants is None or variant in variants
            if not shown or model not in models or len(scores) < min_seeds:
                continue
            random = group.get((variant, "random"), {})
            seeds = sorted(set(scores) & set(random)) or sorted(scores)
            mean = statistics.mean(scores[seed] for seed in seeds)
            random_mean = statistics.mean(random[s] for s in seeds) if random else None
            masked_lm = MASKED_LM_ON_SAME_TEXT.get(variant, "mlm")
            mlm = group.get((masked_lm, "pretrained"), {})
            mlm_seeds = sorted(set(scores) & set(mlm))
            compared = variant not in ("mlm", *MASKED_LM_ON_SAME_TEXT.values())
            over_mlm = (
                mean - statistics.mean(mlm[s] for s in mlm_seeds)
                if compared and model == "pretrained" and mlm_seeds
                else None
            )
            per_seed = ", ".join(f"{seed}: {scores[seed]:.2f}" for seed in seeds)
            lines.append(
                f"| {label} | {epochs:g} | {variant}{MODEL_LABELS[model]} | {per_seed} | "
                f"**{mean:.2f}** | "
                + (f"{random_mean:.2f} | {mean - random_mean:+.2f}" if random else " | ")
                + (f" | {over_mlm:+.2f} |" if over_mlm is not None else " | |")
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pretrain_parser = commands.add_parser("pretrain", help="run and record pretraining runs")
    finetune_parser = commands.add_parser("finetune", help="fine-tune runs and random models")
    table_parser = commands.add_parser("table", help="the table of the recorded fine-tuning")
    probe_parser = commands.add_parser("probe", help="weights and frozen features of the runs")
    probe_parser.add_argument("--seq-length", type=int, default=64)
    detection_parser = commands.add_parser(
        "detection", help="how well ELECTRA runs' discriminators detect replaced tokens"
    )
    for command in (pretrain_parser, finetune_parser, probe_parser, detection_parser):
        command.add_argument("--variants", nargs="+", choices=list(VARIANTS), required=True)
        command.add_argument("--runs-dir", type=Path, default=Path("runs/usefulness"))
    pretrain_parser.add_argument("--precision", default="mixed_bfloat16")
    pretrain_parser.add_argument(
        "--again",
        action="store_true",
        help="train a recorded variant anew (its finished run moved aside, a killed one resumed)",
    )
    finetune_parser.add_argument(
        "--models", nargs="+", default=["pretrained", "random"], choices=list(MODELS)
    )
    finetune_parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    finetune_parser.add_argument("--epochs", type=float, nargs="+", default=[3.0])
    finetune_parser.add_argument("--learning-rate", type=float, default=5e-5)
    finetune_parser.add_argument("--pooling", default="first_token")
    finetune_parser.add_argument("--embedding-rms", type=float)
    finetune_parser.add_argument("--seq-length", type=int, default=128)
    finetune_parser.add_argument("--precision", default="float32")
    finetune_parser.add_argument("--dropout-rate", type=float, default=0.1)
    table_parser.add_argument("--write", type=Path, help="a file with the table's markers")
    table_parser.add_argument(
        "--min-seeds", type=int, default=1, help="leave out rows of fewer seeds"
    )
    table_parser.add_argument(
        "--models", nargs="+", default=list(MODEL_LABELS), choices=list(MODEL_LABELS)
    )
    table_parser.add_argument(
        "--settings", nargs="+", help="only these settings' rows (labels as the table has them)"
    )
    table_parser.add_argument(
        "--variants", nargs="+", choices=list(VARIANTS), help="only these variants' rows"
    )
    table_parser.add_argument(
        "--cpu", help='only the lines of this CPU, as BENCHMARKS names it ("Zen 5", "EPYC AVX2")'
    )
    table_parser.add_argument(
        "--over-pretraining-seeds",
        action="store_true",
        help="each objective's mean on each text over its pretraining seeds, at the job's defaults",
    )
    for command in (pretrain_parser, finetune_parser, table_parser, probe_parser, detection_parser):
        command.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    arguments = parser.parse_args()
    if arguments.command == "pretrain":
        pretrain(arguments)
    elif arguments.command == "finetune":
        finetune(arguments)
    elif arguments.command == "probe":
        probe(arguments)
    elif arguments.command == "detection":
        detection(arguments)
    else:
        records = read_records(arguments.results_dir / FINETUNING_RESULTS)
        settings = tuple(arguments.settings) if arguments.settings else None
        variants = tuple(arguments.variants) if arguments.variants else None
        if arguments.over_pretraining_seeds:
            text = pretraining_seed_table(records, arguments.min_seeds, arguments.cpu)
            markers = SEED_MARKERS
        else:
            markers = MARKERS
            text = table(
                records,
                arguments.min_seeds,
                tuple(arguments.models),
                settings,
                variants,
                arguments.cpu,
            )
        if arguments.write:
            write_between_markers(arguments.write, text, markers)
        print(text)


if __name__ == "__main__":
    main()
