"""Tokenize + pack throughput of the family's in-graph tokenizers against their reference libraries.

For RoBERTa (byte-level BPE), ALBERT and DeBERTa-v3 (SentencePiece) and XLM-RoBERTa (its
unigram model, as transformers runs it): keras_bert's
`load_preprocessor` in `tf.data` (batched, packed to --seq-length) against the reference packed
the same way: `tokenizers` `encode_batch` with the checkpoint's `tokenizer.json` (truncation and
padding on), and `sentencepiece` `encode` (ALBERT: after google-research/albert's Python
preprocessing, as the ids require) plus packing in NumPy. All sentences of shared/data, one
process, the packed ids of both sides asserted identical before timing. Prints a markdown table
of median sentences/s (wall-clock and process CPU time) over --repeats passes.

    .venv/bin/python bench/bench_family_tokenizers.py [--threads 2] [--repeats 3]
"""

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
VARIANTS_DIR = REPO_ROOT.parent / "shared" / "reference" / "variants"
DATA_DIR = REPO_ROOT.parent / "shared" / "data"
FAMILIES = ("roberta", "albert", "deberta_v3", "xlm_roberta")


def median_rates(one_pass: Callable[[], object], count: int, repeats: int) -> dict[str, float]:
    """Sentences per second of wall-clock and of process CPU time, medians after a warm-up."""
    one_pass()
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        one_pass()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {"wall": count / statistics.median(walls), "cpu": count / statistics.median(cpus)}


def keras_bert_pass(preprocessor, sentences: list[str], args: argparse.Namespace):
    import tensorflow as tf

    dataset = (
        tf.data.Dataset.from_tensor_slices(sentences)
        .batch(args.batch_size)
        .map(preprocessor, num_parallel_calls=args.threads)
        .prefetch(2)
    )
    return lambda: np.concatenate([batch["input_word_ids"].numpy() for batch in dataset])


def reference_pass(family: str, preprocessor, sentences: list[str], args: argparse.Namespace):
    """The reference library's packed ids of `sentences`, as a function of no arguments."""
    from tests.text.family_references import TOKENIZER_JSON_FAMILIES, FamilyReference

    reference = FamilyReference(family, VARIANTS_DIR / family)
    if family in TOKENIZER_JSON_FAMILIES:
        tokenizer = reference.tokenizer
        tokenizer.enable_truncation(args.seq_length)
        tokenizer.enable_padding(length=args.seq_length, pad_id=preprocessor.packer.pad_id)
        return lambda: np.array([encoding.ids for encoding in tokenizer.encode_batch(sentences)])
    packer = preprocessor.packer
    budget = args.seq_length - 2

    def encode_and_pack() -> np.ndarray:
        if family == "albert":
            rows = reference.encode(sentences)
        else:
            rows = reference.model.encode(sentences, num_threads=args.threads)
        packed = np.full((len(rows), args.seq_length), packer.pad_id, np.int32)
        for index, ids in enumerate(rows):
            ids = [packer.cls_id, *ids[:budget], packer.sep_id]
            packed[index, : len(ids)] = ids
        return packed

    return encode_and_pack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seq-length", type=int, default=128)
    args = parser.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)  # before `tokenizers` starts its pool
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    sys.path.insert(0, str(REPO_ROOT))
    import keras_bert
    from tests.text.conftest import read_corpus_sentences

    sentences = read_corpus_sentences(DATA_DIR)
    rows = []
    for family in FAMILIES:
        # Packed past the small checkpoints' 64 positions: the tokenizer is what is timed.
        preprocessor = keras_bert.load_preprocessor(VARIANTS_DIR / family)
        preprocessor = type(preprocessor).from_config(
            {**preprocessor.get_config(), "seq_length": args.seq_length}
        )
        ours = keras_bert_pass(preprocessor, sentences, args)
        reference = reference_pass(family, preprocessor, sentences, args)
        np.testing.assert_array_equal(ours(), reference())  # exact ids, or no numbers
        rates = {
            "keras_bert": median_rates(ours, len(sentences), args.repeats),
            "reference": median_rates(reference, len(sentences), args.repeats),
        }
        rows.append((family, type(preprocessor.tokenizer).__name__, rates))

    print(f"{len(sentences):,} sentences, packed to {args.seq_length}, {args.threads} threads, ")
    print(f"median of {args.repeats} passes after a warm-up; ids identical (asserted)\n")
    print(
        "| family | keras_bert (tf.data) sentences/s | reference sentences/s | ratio "
        "| keras_bert sentences/CPU-s | reference sentences/CPU-s | ratio (CPU) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for family, tokenizer, rates in rows:
        ours, theirs = rates["keras_bert"], rates["reference"]
        print(
            f"| {family} ({tokenizer}) | {ours['wall']:,.0f} | {theirs['wall']:,.0f} "
            f"| {ours['wall'] / theirs['wall']:.2f}x | {ours['cpu']:,.0f} | {theirs['cpu']:,.0f} "
            f"| {ours['cpu'] / theirs['cpu']:.2f}x |"
        )


if __name__ == "__main__":
    main()
