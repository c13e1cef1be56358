"""Serving latency and throughput of our exports against the peer's real path, in one process.

Two tables, both on the real dev sentences of shared/data (movie-review snippets):

1. **Strings in, labels out** (the issue's measure): the sentiment classifier (`--classifier`, a
   `pipelines.finetune_classifier` model) exported with `export_for_serving` and loaded back
   with `tf.saved_model.load` (the graph TF Serving runs), raw-string signature, seq 128: every
   batch padded to 128 (before length buckets), to its bucket of powers of two (16/32/64/128,
   before 2026-11-26), to its bucket (8, 16, 24, ... 64, 80, ... 128, the default), buckets +
   XLA, + bfloat16, + int8 (both checked against float32 on the dev set at export), and
   bfloat16 with 2 feed-forward shards;
   against the peer's path on THE SAME classifier (`bench.peer_onnx`): Hugging Face
   `tokenizers` (the checkpoint's tokenizer.json, each batch padded to its longest sentence) +
   ONNX Runtime with dynamic axes, float32 and int8 (`quantize_dynamic`), 2 intra-op threads;
   then our ratios to the peer's faster path.
2. **128 ids** (last round's measure): the real MiniLM-L6 encoder's `serving_ids` (float32,
   XLA) and the classifier's in bfloat16 (and with 2 shards), fed the dev sentences' ids padded
   to 128 and 128 ids of text (each sentence's words cycled to fill every position), against
   ONNX Runtime running transformers' `BertModel` of the checkpoint on the same 128 ids.

ONNX files are written by `torch.onnx.export` in a subprocess, so that torch is not loaded beside
TensorFlow while timing. Batch 1: latency p50/p99 over --requests calls; batch 32: sentences/s
over --batches batches. The variants alternate call by call (`--schedule interleaved`), so
contention from other processes hits them alike, or run each in a block (`--schedule blocks`),
as a server running one model, or in blocks that take turns (`--schedule rounds`). Before
timing, every variant runs each length bucket at batch 1 and 32 (XLA compiles per shape, as the
warm-up records make TF Serving do). Prints the CPU and its features, the tables, each checked
export's agreement, and every path's dev accuracy and label agreement (ONNX Runtime int8 with
its float32, ours with our float32). Needs the `peer` extra for the peer (`--no-onnx` without).

    python -m bench.bench_serving --classifier runs/sentiment/model.keras \\
        [--requests 200] [--batches 20] [--no-onnx] [--schedule interleaved|blocks|rounds] \\
        [--intra-op-threads N --inter-op-threads N] [--onnx-process shared|own] [--accuracy-only] \\
        [--variants "classifier strings, buckets" "classifier strings, buckets + XLA" ...] \
        [--peer-python .venv-peer/bin/python] [--no-our-onnx] [--int8-modes dynamic static]

Our ONNX paths (`OUR_ONNX`): the same classifier exported by `keras_bert.export.onnx` (float32,
and int8 of each `--int8-modes`, dynamic and static quantization, where its labels agree with
float32's on the held-out half of the dev sentences), strings in and labels out
through `keras_bert.serving.OnnxModel` (`tokenizers` + ONNX Runtime, 2 intra-op threads, as the
peer), in the strings table, with their ratios to the peer's path of the same precision
(`print_onnx_goals`). `--peer-python` runs the peer's exports with another venv's Python (one
with the `peer` extra), so that this one stays what CI installs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from bench.peer_onnx import (
    labels_in_batches,
    peer_classify,
    peer_session,
    peer_tokenizer,
    tokenization_agreement,
    write_peer_models,
)
from keras_bert import BertEncoder
from keras_bert.cpu import cpu_summary
from keras_bert.export import export_for_serving, serving_module
from keras_bert.export.buckets import bucket_examples, cycled_words
from keras_bert.export.exporter import AGREEMENT_FILE
from keras_bert.export.onnx.quantization import INT8_MODES
from keras_bert.text import BertPreprocessor
from pipelines.common import default_checkpoint

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = REPO_ROOT.parent / "shared" / "data"
DEV_PATH = DATA_DIR / "sentiment" / "movie_snippets.dev.jsonl"
SEQ_LENGTH = 128
ONNX_THREADS = 2
# The buckets before 2026-11-26 (`pipelines.export --buckets 16 32 64 128`).
POWER_OF_TWO_BUCKETS = (16, 32, 64, SEQ_LENGTH)


def load_dev() -> tuple[list[str], list[str]]:
    records = [json.loads(line) for line in DEV_PATH.read_text().splitlines()]
    return [record["text"] for record in records], [record["label"] for record in records]


@dataclasses.dataclass
class Variant:
    """One thing to time: a signature (or ONNX session) and how it takes a batch of sentences:
    `make_call(batch)` prepares the inputs and returns the call to time."""

    name: str
    inputs: str
    make_call: Callable[[list[str]], Callable[[], object]]

    @property
    def key(self) -> str:
        return variant_key(self.name, self.inputs)


def variant_key(name: str, inputs: str) -> str:
    """A timed variant's key: one signature or session takes ids two ways."""
    return f"{name} ({inputs})"


def export_variants(
    base_dir: Path, classifier, dev_texts: list[str], names: Collection[str] | None = None
) -> dict:
    """Exports every variant (or those of `names`): {name: (serving module, export dir, "text"
    or "ids")}."""
    checkpoint = default_checkpoint()
    preprocessor = BertPreprocessor.from_checkpoint(checkpoint, seq_length=SEQ_LENGTH)
    encoder = BertEncoder.from_checkpoint(checkpoint)
    exports = {
        "encoder `serving_ids`, float32": (serving_module(encoder, preprocessor), "ids"),
        "encoder `serving_ids`, XLA": (
            serving_module(encoder, preprocessor, jit_compile=True),
            "ids",
        ),
    }
    agreement_requests = []
    float32_classifier = None
    if classifier is not None:
        float32_classifier = serving_module(classifier, preprocessor)
        agreement_requests = [{"text": dev_texts}]
        bfloat16 = serving_module(classifier, preprocessor, precision="bfloat16")
        int8 = serving_module(classifier, preprocessor, precision="int8")
        sharded = serving_module(
            classifier, preprocessor, precision="bfloat16", feed_forward_shards=2
        )
        exports |= {
            "classifier strings, padded to 128 (before)": (
                serving_module(classifier, preprocessor, buckets=(SEQ_LENGTH,)),
                "text",
            ),
            "classifier strings, powers of two (before)": (
                serving_module(classifier, preprocessor, buckets=POWER_OF_TWO_BUCKETS),
                "text",
            ),
            "classifier strings, buckets": (float32_classifier, "text"),
            "classifier strings, buckets + XLA": (
                serving_module(classifier, preprocessor, jit_compile=True),
                "text",
            ),
            "classifier strings, buckets + bfloat16": (bfloat16, "text"),
            "classifier strings, buckets + int8": (int8, "text"),
            "classifier `serving_ids`, bfloat16": (bfloat16, "ids"),
            "classifier strings, buckets + bfloat16 + 2 shards": (sharded, "text"),
            "classifier `serving_ids`, bfloat16 + 2 shards": (sharded, "ids"),
        }
    unknown = set(names or ()) - set(exports)
    if unknown:  # before any export: a misspelled name costs nothing
        raise ValueError(f"unknown variants {sorted(unknown)}; expected some of {list(exports)}")
    exports = {name: value for name, value in exports.items() if names is None or name in names}
    export_dirs = {}  # by module
    for index, (module, _) in enumerate(exports.values()):  # bfloat16 ones serve two variants
        if id(module) not in export_dirs:
            export_dirs[id(module)] = export_for_serving(
                module,
                base_dir,
                f"variant{index}",
                float32_module=float32_classifier,
                agreement_requests=agreement_requests,
            )
    return {
        name: (module, export_dirs[id(module)], inputs)
        for name, (module, inputs) in exports.items()
    }


def export_onnx(path: str) -> None:
    """Writes the MiniLM encoder of transformers' `BertModel` to `path` as ONNX (the `peer`
    extra). `onnx_variants` runs it in a subprocess: torch loaded beside TensorFlow slows
    TensorFlow's calls (MiniLM-L6 at 128 ids, batch 1: 24.9 → 29.9 ms float32, 20.9 → 28.3 ms
    XLA, BENCHMARKS.md), and a server running ONNX Runtime does not load torch either."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    import transformers

    bert = transformers.BertModel.from_pretrained(default_checkpoint()).eval()

    class EncoderOutputs(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            outputs = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return outputs.last_hidden_state, outputs.pooler_output

    names = ["input_ids", "attention_mask", "token_type_ids"]
    outputs = ["last_hidden_state", "pooler_output"]
    example = torch.ones(2, SEQ_LENGTH, dtype=torch.int64)
    torch.onnx.export(
        EncoderOutputs(bert),
        (example, example, torch.zeros_like(example)),
        path,
        input_names=names,
        output_names=outputs,
        dynamic_axes={name: {0: "batch"} for name in names + outputs},
        dynamo=False,
    )


def export_onnx_model(work_dir: Path, python: str = sys.executable) -> Path:
    """The ONNX file of the MiniLM encoder, written by `export_onnx` in a subprocess."""
    path = work_dir / "minilm.onnx"
    subprocess.run(
        [
            python,
            "-c",
            f"from bench.bench_serving import export_onnx; export_onnx({str(path)!r})",
        ],
        cwd=REPO_ROOT,
        check=True,
    )
    return path


# ONNX Runtime's sessions: its default (worker threads spin while waiting for work) and one
# whose threads do not spin, which suffers less when other processes share the cores.
ONNX_SESSIONS = {
    f"ONNX Runtime encoder ({ONNX_THREADS} threads)": True,
    f"ONNX Runtime encoder ({ONNX_THREADS} threads, no spinning)": False,
}


def onnx_variants(model_path: Path) -> list[Variant]:
    """ONNX Runtime on the MiniLM encoder exported from transformers (`export_onnx_model`),
    each session of `ONNX_SESSIONS` fed both kinds of 128 ids."""
    import onnxruntime

    preprocessor = BertPreprocessor.from_checkpoint(default_checkpoint(), seq_length=SEQ_LENGTH)

    def variant(name: str, spinning: bool, fill: bool) -> Variant:
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = ONNX_THREADS
        options.add_session_config_entry("session.intra_op.allow_spinning", str(int(spinning)))
        session = onnxruntime.InferenceSession(
            str(model_path), options, providers=["CPUExecutionProvider"]
        )

        def make_call(batch: list[str]):
            packed = packed_ids(preprocessor, batch, fill)  # outside the timing, as for ours
            feed = {
                "input_ids": packed["input_word_ids"].numpy().astype(np.int64),
                "attention_mask": packed["input_mask"].numpy().astype(np.int64),
                "token_type_ids": packed["input_type_ids"].numpy().astype(np.int64),
            }
            return lambda: session.run(None, feed)

        return Variant(name, ID_INPUTS[fill], make_call)

    return [
        variant(name, spinning, fill)
        for name, spinning in ONNX_SESSIONS.items()
        for fill in (False, True)
    ]


def onnx_keys() -> list[tuple[str, str]]:
    """(name, inputs) of every ONNX Runtime variant, in `onnx_variants`' order."""
    return [(name, ID_INPUTS[fill]) for name in ONNX_SESSIONS for fill in (False, True)]


def onnx_timings_in_own_process(model_path: Path, args: argparse.Namespace) -> dict:
    """`timed_variants` of ONNX Runtime, run by this script in a process of its own
    (`--onnx-timings`): as deployed, neither runtime's threads share a process with the other's;
    but it runs after TensorFlow's variants, so a change in the machine's speed between the two
    goes into the ratios."""
    output = model_path.parent / "onnx_timings.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.bench_serving",
            "--onnx-timings",
            str(output),
            "--onnx-model",
            str(model_path),
            "--requests",
            str(args.requests),
            "--batches",
            str(args.batches),
            "--schedule",
            args.schedule,
        ],
        cwd=REPO_ROOT,
        check=True,
    )
    timings = json.loads(output.read_text())
    return {
        int(size): {key: np.array(values) for key, values in by_key.items()}
        for size, by_key in timings.items()
    }


def timed_variants(
    variants: list[Variant], texts: list[str], warmup: list[list[str]], args: argparse.Namespace
) -> dict[int, dict[str, np.ndarray]]:
    """Seconds per call of every variant at batch 1 (`--requests` calls) and 32 (`--batches`),
    after running each `warmup` batch at both sizes (XLA compiles per shape)."""
    for variant in variants:
        for batch in warmup:
            for size in (1, 32):
                variant.make_call((batch * 32)[:size])()
    results = {}
    for batch_size, count in [(1, args.requests), (32, args.batches)]:
        batches = request_batches(texts, batch_size, count)
        calls = {
            variant.key: [variant.make_call(batch) for batch in batches] for variant in variants
        }
        results[batch_size] = scheduled_timings(calls, args.schedule, warmup=0)
    return results


def write_onnx_timings(args: argparse.Namespace) -> None:
    """The `--onnx-timings` process: times `onnx_variants` alone and writes them as JSON."""
    texts, _ = load_dev()
    variants = onnx_variants(Path(args.onnx_model))
    results = timed_variants(variants, texts, [texts[:32]], args)
    Path(args.onnx_timings).write_text(
        json.dumps(
            {
                size: {key: values.tolist() for key, values in by_key.items()}
                for size, by_key in results.items()
            }
        )
    )


# The string variants of the bfloat16 and int8 exports (checked against float32 at export).
CHECKED_STRINGS = (
    "classifier strings, buckets + bfloat16",
    "classifier strings, buckets + bfloat16 + 2 shards",
    "classifier strings, buckets + int8",
)
# The peer's string paths: `tokenizers` + ONNX Runtime on our classifier (`bench.peer_onnx`).
PEER_STRINGS = (
    f"`tokenizers` + ONNX Runtime float32 ({ONNX_THREADS} threads)",
    f"`tokenizers` + ONNX Runtime int8 ({ONNX_THREADS} threads)",
)
ID_INPUTS = {False: "sentences, padded to 128 ids", True: "128 ids of text"}


def packed_ids(preprocessor: BertPreprocessor, batch: list[str], fill: bool) -> dict:
    """`batch` packed to 128 ids: each sentence padded (a bucketed `serving_ids` computes on
    its bucket, ONNX Runtime on all 128), or with every position real text (`fill`: the
    issue's measure, where nothing can be trimmed)."""
    # 200 words make at least 200 word pieces: every one of the 128 positions is real text.
    texts = [cycled_words(sentence, 200) for sentence in batch] if fill else batch
    packed = preprocessor(tf.constant(texts))
    if fill and not bool(tf.reduce_all(packed["input_mask"] == 1)):
        raise ValueError("a filled text does not reach 128 word pieces")
    return packed


def signature_variants(name: str, module, export_dir: Path, inputs: str) -> list[Variant]:
    loaded = tf.saved_model.load(str(export_dir))
    if inputs == "text":
        signature = loaded.signatures["serving_default"]

        def make_call(batch: list[str]):
            texts = tf.constant(batch)
            return lambda: signature(text=texts)

        return [Variant(name, "sentences", make_call)]
    signature = loaded.signatures["serving_ids"]

    def ids_variant(fill: bool) -> Variant:
        def make_call(batch: list[str]):
            packed = packed_ids(module.preprocessor, batch, fill)  # outside the timing
            return lambda: signature(**packed)

        return Variant(name, ID_INPUTS[fill], make_call)

    return [ids_variant(fill=False), ids_variant(fill=True)]


def request_batches(sentences: list[str], batch_size: int, count: int) -> list[list[str]]:
    """`count` consecutive batches of `batch_size` sentences, wrapping around (full ones only)."""
    batches = [
        sentences[(index * batch_size) % len(sentences) :][:batch_size] for index in range(count)
    ]
    return [batch for batch in batches if len(batch) == batch_size]


SCHEDULES = ("interleaved", "blocks", "rounds")
# Rounds of the "rounds" schedule.
ROUNDS = 5


def scheduled_timings(
    calls: dict[str, list], schedule: str = "interleaved", warmup: int = 5
) -> dict[str, np.ndarray]:
    """Seconds of every call `calls[name][index]`, after `warmup` calls of each name.

    `schedule` "interleaved": index by index with the names alternating, so that all see the
    same machine load, but every call finds the caches full of the other models' weights;
    "blocks": each name's calls in a row, as a server that runs that model alone sees them (its
    weights stay in the caches from one request to the next); "rounds": blocks of a fifth of
    each name's calls, the names taking turns `ROUNDS` times, so that each still runs in a
    row and all sample the machine's slow and fast spells alike (on a shared 2-core VM the same
    call took 9.2 ms in one minute and 12.9 in the next).
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    for name in calls:
        for call in calls[name][:warmup]:
            call()
    count = min(len(values) for values in calls.values())
    if schedule == "interleaved":
        order = [(name, index) for index in range(count) for name in calls]
    elif schedule == "blocks":
        order = [(name, index) for name in calls for index in range(count)]
    else:
        rounds = np.array_split(np.arange(count), ROUNDS)
        order = [(name, int(index)) for part in rounds for name in calls for index in part]
    timings = {name: [] for name in calls}
    for name, index in order:
        start = time.perf_counter()
        calls[name][index]()
        timings[name].append(time.perf_counter() - start)
    return {name: np.array(values) for name, values in timings.items()}


def labels_on(export_dir: Path, texts: list[str]) -> list[str]:
    signature = tf.saved_model.load(str(export_dir)).signatures["serving_default"]
    labels = []
    for start in range(0, len(texts), 64):
        outputs = signature(text=tf.constant(texts[start : start + 64]))
        labels += [label.decode() for label in outputs["label"].numpy()]
    return labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classifier", help=".keras sentiment classifier (finetune_classifier)")
    parser.add_argument("--requests", type=int, default=200, help="batch-1 calls per variant")
    parser.add_argument("--batches", type=int, default=20, help="batch-32 calls per variant")
    parser.add_argument("--no-onnx", action="store_true", help="without the `peer` extra")
    parser.add_argument(
        "--variants",
        nargs="+",
        help="time only these of our variants (names as the tables print them; "
        "'classifier strings, buckets' always) beside the peer",
    )
    parser.add_argument(
        "--schedule", choices=SCHEDULES, default="interleaved", help="see scheduled_timings"
    )
    parser.add_argument(
        "--frozen-weights",
        choices=("0", "1"),
        default="1",
        help="TF_ONEDNN_ASSUME_FROZEN_WEIGHTS, as the server should run (docs/serving.md): oneDNN "
        "caches each weight in its own layout instead of reordering it every request",
    )
    parser.add_argument(
        "--intra-op-threads",
        type=int,
        default=0,
        help="TensorFlow's threads inside one op, as TF Serving's "
        "--tensorflow_intra_op_parallelism (0: TensorFlow's choice, one per core)",
    )
    parser.add_argument(
        "--inter-op-threads",
        type=int,
        default=0,
        help="TensorFlow's threads running independent ops, as TF Serving's "
        "--tensorflow_inter_op_parallelism (0: TensorFlow's choice)",
    )
    parser.add_argument(
        "--onnx-process",
        choices=("own", "shared"),
        default="shared",
        help="time ONNX Runtime in this process, beside TensorFlow's variants (the same "
        "machine state for both, as the schedule orders), or in a process of its own after them "
        "(as deployed, but at another time)",
    )
    parser.add_argument(
        "--accuracy-only",
        action="store_true",
        help="with --classifier: only the dev accuracy and agreement of the float32, bfloat16 "
        "and int8 exports and of ONNX Runtime float32 and int8, no timing",
    )
    parser.add_argument("--onnx-timings", help=argparse.SUPPRESS)  # the own process's output
    parser.add_argument("--onnx-model", help=argparse.SUPPRESS)
    parser.add_argument(
        "--peer-python",
        default=sys.executable,
        help="the Python of a venv with the `peer` extra (torch, transformers), which writes "
        "the peer's ONNX files in a subprocess (default: this one)",
    )
    parser.add_argument(
        "--int8-modes",
        nargs="*",
        choices=INT8_MODES,
        default=list(INT8_MODES),
        help="our ONNX int8 exports to check and time (keras_bert.export.onnx.quantization); "
        "none for float32 only",
    )
    parser.add_argument(
        "--no-our-onnx",
        action="store_true",
        help="leave out our ONNX exports (keras_bert.export.onnx, served by OnnxModel)",
    )
    args = parser.parse_args()
    if args.onnx_timings:
        write_onnx_timings(args)
        return
    # Read by TensorFlow at its first oneDNN kernel and when its runtime starts: nothing has
    # run yet.
    os.environ["TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"] = args.frozen_weights
    tf.config.threading.set_intra_op_parallelism_threads(args.intra_op_threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.inter_op_threads)

    texts, gold = load_dev()
    classifier = keras.saving.load_model(args.classifier) if args.classifier else None
    with tempfile.TemporaryDirectory() as work_dir:
        names = None
        if args.accuracy_only or args.variants:
            names = ("classifier strings, buckets", *(args.variants or CHECKED_STRINGS))
        exported = export_variants(Path(work_dir), classifier, texts, names)
        variants = [
            variant
            for name, (module, export_dir, inputs) in exported.items()
            for variant in signature_variants(name, module, export_dir, inputs)
        ]
        timing = not args.accuracy_only
        onnx_model = (
            export_onnx_model(Path(work_dir), args.peer_python)
            if timing and not args.no_onnx
            else None
        )
        shared_onnx = (
            onnx_variants(onnx_model) if onnx_model and args.onnx_process == "shared" else []
        )
        peer = {}  # name: sentences -> labels
        if classifier is not None and not args.no_onnx:
            peer = peer_classifiers(classifier, Path(work_dir), texts, args.peer_python)
        ours_onnx = {}  # name: OnnxModel
        if classifier is not None and not args.no_our_onnx:
            ours_onnx = our_onnx_models(exported, Path(work_dir), texts, args.int8_modes)
        variants += [
            Variant(name, "sentences", lambda batch, model=model: lambda: model.predict(batch))
            for name, model in ours_onnx.items()
        ]
        peer_string_variants = [
            Variant(name, "sentences", lambda batch, classify=classify: lambda: classify(batch))
            for name, classify in peer.items()
        ]
        # Every bucket of every variant, at batch 1 and 32 (`timed_variants`).
        bucket_requests = {
            tuple(request["text"]): request["text"]
            for module, _, _ in exported.values()
            for request in bucket_examples(module)
        }
        warmup = [*bucket_requests.values(), texts[:32]]
        timed = variants + peer_string_variants + shared_onnx
        results = timed_variants(timed, texts, warmup, args) if timing else {}
        if onnx_model and args.onnx_process == "own":
            for batch_size, timings in onnx_timings_in_own_process(onnx_model, args).items():
                results[batch_size] |= timings

        # Each checked export's export-time check, and every path's labels on the dev set.
        agreements, labels = {}, {}
        if classifier is not None:
            float32_dir = exported["classifier strings, buckets"][1]
            labels["float32"] = labels_on(float32_dir, texts)
            for name in (name for name in CHECKED_STRINGS if name in exported):
                export_dir = exported[name][1]
                agreements[name] = json.loads((export_dir / AGREEMENT_FILE).read_text())
                labels[name] = labels_on(export_dir, texts)
            labels |= {name: labels_in_batches(classify, texts) for name, classify in peer.items()}
            labels |= {
                name: labels_in_batches(
                    lambda batch, m=model: list(m.predict(batch)["label"]), texts
                )
                for name, model in ours_onnx.items()
            }

    print(
        f"MiniLM-L6 (H384), seq {SEQ_LENGTH}, {cpu_summary()}, TF {tf.__version__}, "
        f"dev sentences: {len(texts)}, schedule: {args.schedule}, "
        f"TF_ONEDNN_ASSUME_FROZEN_WEIGHTS={args.frozen_weights}, TensorFlow threads: "
        f"intra-op {args.intra_op_threads or 'default'}, "
        f"inter-op {args.inter_op_threads or 'default'}, ONNX Runtime's process: "
        f"{args.onnx_process}"
    )
    if timing:
        print_timings(
            results, [(variant.name, variant.inputs) for variant in variants], peer, onnx_model
        )
    print()
    for name, agreement in agreements.items():
        print(f"{name}: export-time check (dev + warm-up inputs): {agreement}")
    if peer:
        tokenizer = peer_tokenizer(default_checkpoint(), SEQ_LENGTH)
        preprocessor = BertPreprocessor.from_checkpoint(default_checkpoint(), seq_length=SEQ_LENGTH)
        share = tokenization_agreement(tokenizer, preprocessor, texts)
        print(f"dev sentences whose `tokenizers` ids equal ours: {share:.4f}")
    for name, predicted in labels.items():
        reference = labels[PEER_STRINGS[0]] if name == PEER_STRINGS[1] else labels["float32"]
        print(
            f"dev accuracy, {name}: {100 * np.mean(np.array(predicted) == np.array(gold)):.2f}%; "
            f"label agreement with "
            f"{'ONNX Runtime float32' if name == PEER_STRINGS[1] else 'our float32'}: "
            f"{np.mean(np.array(predicted) == np.array(reference)):.4f}"
        )


def print_timings(
    results: dict, ours: list[tuple[str, str]], peer: dict, onnx_model: Path | None
) -> None:
    """The strings table with the goal ratios, then the 128-id table with its ratios."""
    strings = [key for key in ours if key[1] == "sentences"]
    print("\nStrings in, labels out: the dev sentences at their own lengths\n")
    print_table(results, strings + [(name, "sentences") for name in peer])
    if peer:
        print_goal_ratios(results, strings, list(peer))
        print_onnx_goals(results)
    onnx = onnx_keys() if onnx_model else []
    print(f"\n{SEQ_LENGTH} ids (last round's measure)\n")
    print_table(results, [key for key in ours if key not in strings] + onnx)
    for session in ONNX_SESSIONS if onnx else ():
        print()
        print(f"| variant | input | batch-1 p50 / {session}'s | batch-32 throughput / its |")
        print("|---|---|---:|---:|")
        for name, inputs in ours:
            # ids against the same ids; sentences against 128 ids of text (the measure)
            reference = variant_key(
                session, inputs if inputs in ID_INPUTS.values() else ID_INPUTS[True]
            )
            p50 = np.percentile(results[1][variant_key(name, inputs)], 50)
            throughput = 32 / np.median(results[32][variant_key(name, inputs)])
            print(
                f"| {name} | {inputs} "
                f"| {p50 / np.percentile(results[1][reference], 50):.3f} "
                f"| {throughput / (32 / np.median(results[32][reference])):.2f} |"
            )


def print_table(results: dict, keys: list[tuple[str, str]]) -> None:
    """Batch-1 p50/p99 and batch-32 throughput of the variants `keys` ((name, inputs))."""
    print("| variant | input | batch-1 p50 (ms) | batch-1 p99 (ms) | batch-32 sentences/s |")
    print("|---|---|---:|---:|---:|")
    for name, inputs in keys:
        latency = results[1][variant_key(name, inputs)] * 1000
        throughput = 32 / np.median(results[32][variant_key(name, inputs)])
        print(
            f"| {name} | {inputs} | {np.percentile(latency, 50):.2f} "
            f"| {np.percentile(latency, 99):.2f} | {throughput:.1f} |"
        )


def print_goal_ratios(results: dict, ours: list[tuple[str, str]], peer: list[str]) -> None:
    """The issue's goals: our batch-1 p50 over the peer's faster path's (≤ 1.0, stretch 0.8)
    and our batch-32 throughput over its (≥ 1.0, stretch 1.25)."""
    p50 = {key: np.median(results[1][variant_key(*key)]) for key in ours}
    p50_peer = min(np.median(results[1][variant_key(name, "sentences")]) for name in peer)
    throughput = {key: 32 / np.median(results[32][variant_key(*key)]) for key in ours}
    throughput_peer = max(32 / np.median(results[32][variant_key(n, "sentences")]) for n in peer)
    print()
    print(
        "| variant | batch-1 p50 / peer's fastest (goal ≤ 1.0) | batch-32 sentences/s / "
        "peer's highest (goal ≥ 1.0) |"
    )
    print("|---|---:|---:|")
    for key in ours:
        print(f"| {key[0]} | {p50[key] / p50_peer:.2f} | {throughput[key] / throughput_peer:.2f} |")


def peer_classifiers(
    classifier, work_dir: Path, texts: list[str], python: str = sys.executable
) -> dict:
    """`PEER_STRINGS`' paths on `classifier`: {name: sentences -> labels} (`bench.peer_onnx`)."""
    preprocessor = BertPreprocessor.from_checkpoint(default_checkpoint(), seq_length=SEQ_LENGTH)
    packed = preprocessor(tf.constant(texts[:8]))
    checkpoint = default_checkpoint()
    models = write_peer_models(classifier, packed, work_dir, checkpoint, python)
    tokenizer = peer_tokenizer(checkpoint, SEQ_LENGTH)
    label_names = classifier.label_names or [str(i) for i in range(classifier.num_classes)]
    return {
        name: peer_classify(tokenizer, peer_session(path, ONNX_THREADS), label_names)
        for name, path in zip(PEER_STRINGS, models, strict=True)
    }


# Our ONNX paths: `pipelines.export --format onnx` of the same classifier (float32, and int8
# of each `--int8-modes` where its labels agree), served by `OnnxModel` with the peer's threads.
OUR_ONNX = {
    "float32": f"our ONNX float32, OnnxModel ({ONNX_THREADS} threads)",
    "dynamic": f"our ONNX int8 (dynamic), OnnxModel ({ONNX_THREADS} threads)",
    "static": f"our ONNX int8 (static), OnnxModel ({ONNX_THREADS} threads)",
}


def our_onnx_models(
    exported: dict, work_dir: Path, texts: list[str], int8_modes: Collection[str]
) -> dict:
    """`OUR_ONNX`'s exports of the float32 classifier export's module (float32, and int8 in
    each of `int8_modes`), checked on the dev sentences (int8: half of them held out)
    ({name: OnnxModel}); prints each int8 check, or why int8 was refused."""
    from keras_bert.export.onnx import int8_export, prepare_onnx
    from keras_bert.export.precision import PrecisionAgreementError
    from keras_bert.serving import OnnxModel

    module = exported["classifier strings, buckets"][0]
    requests = [{"text": texts}]
    exports = {"float32": prepare_onnx(module, "float32", requests)}
    for mode in int8_modes:
        try:
            exports[mode] = int8_export(exports["float32"], module, requests, mode)
            check = exports[mode].metadata["checks"]["int8"]
            print(f"our ONNX int8 ({mode}), export-time check: {check}")
        except PrecisionAgreementError as error:
            print(f"our ONNX int8 ({mode}) refused: {error}")
    models = {}
    for path, export in exports.items():
        directory = work_dir / f"onnx_{path}"
        directory.mkdir()
        export.write(directory)
        models[OUR_ONNX[path]] = OnnxModel(directory, intra_op_threads=ONNX_THREADS)
    return models


def print_onnx_goals(results: dict) -> None:
    """The issue's ONNX goals: each of our ONNX paths against the peer's path of its precision
    (batch-1 p50 ratio ≤ 1.0, batch-32 throughput ratio ≥ 1.0)."""
    print(
        "\n| our ONNX path | peer's path | batch-1 p50 ratio (≤ 1.0) | throughput ratio (≥ 1.0) |"
    )
    print("|---|---|---:|---:|")
    for path, ours in OUR_ONNX.items():
        peer = PEER_STRINGS[0] if path == "float32" else PEER_STRINGS[1]
        ours_key, peer_key = variant_key(ours, "sentences"), variant_key(peer, "sentences")
        if ours_key not in results[1] or peer_key not in results[1]:
            continue
        p50 = np.median(results[1][ours_key]) / np.median(results[1][peer_key])
        throughput = np.median(results[32][peer_key]) / np.median(results[32][ours_key])
        print(f"| {ours} | {peer} | {p50:.2f} | {throughput:.2f} |")


if __name__ == "__main__":
    main()
