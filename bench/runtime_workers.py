"""One serving runtime in a process of its own, strings in and logits out, timed on request.

`bench.bench_cpu_runtimes` starts one worker per runtime, each in the venv that has its
runtime (ours in `.venv`, the peers' in `.venv-peers`), and sends each the same work in turn,
so that every runtime sees the machine alike. A runtime is a function of the prepared models
(`Models`, written by `bench_cpu_runtimes prepare`) that returns `classify(texts) -> logits`:
the whole request, tokenizing included, as a user of that runtime serves it:

- ours: the TF Serving export loaded as the server loads it (`pipelines/query_export.py`'s
  `SessionModel`, the `serving_default` signature on strings), and our ONNX exports through
  `keras_bert.serving.OnnxModel` (`tokenizers` + the runtime the export names: ONNX Runtime,
  or OpenVINO for bfloat16);
- the peers (`shared/peers/bench_peers_cpu.py`'s protocol): the checkpoint's `tokenizer.json`
  (truncated to the export's length, a batch padded to its longest sentence) feeding ONNX
  Runtime on transformers' ONNX export of the same classifier (float32, `quantize_dynamic`
  int8), OpenVINO on that file (f32, its default precision, NNCF int8 calibrated on training
  sentences) and CTranslate2's `Encoder` of transformers' copy (int8, float32), whose pooled
  output goes through the classifier's dense head in NumPy.

Every runtime computes on 2 intra-op threads (`THREADS`), as the peers' protocol does, but
our exports served with one thread per op and two ops at once (`ONE_THREAD_PER_OP`), as TF
Serving's thread flags allow: 2 threads in all.

The worker reads one JSON command a line on stdin and answers one JSON line on stdout:
`{"op": "latencies", "texts": [...]}` (seconds of each text served alone), `{"op":
"throughput", "batches": [[...], ...]}` (seconds for all the batches), `{"op": "logits",
"texts": [...]}` (logits of the texts, 32 at a time) and `{"op": "quit"}`.

    python -m bench.runtime_workers RUNTIME MODELS_JSON
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from keras_bert.cpu import ONEDNN_SWITCH

REPO_ROOT = Path(__file__).resolve().parents[1]
THREADS = 2
LOGITS_BATCH = 32
# TF Serving's (--tensorflow_intra_op_parallelism, --tensorflow_inter_op_parallelism).
ONE_THREAD_PER_OP = (1, 2)
Classify = Callable[[list[str]], np.ndarray]


@dataclasses.dataclass(frozen=True)
class Models:
    """The prepared models every runtime reads (`bench_cpu_runtimes prepare` writes them).

    Args:
        seq_length: the export's packed length; the peers truncate there too.
        savedmodels: TF Serving version directories by variant ("float32", "bfloat16",
            "float32-xla": XLA-compiled model calls, "float32-shards": feed-forward weights
            in 2 independent blocks).
        onnx_exports: our ONNX version directories by precision ("float32", "bfloat16",
            "int8-dynamic", "int8-static").
        peer_directory: transformers' copy of the classifier: `classifier.onnx`,
            `classifier.int8.onnx`, `hf/` (its `save_pretrained` directory, with
            `tokenizer.json`) and `head.npz` (the dense head on the pooled output).
        calibration_file: JSONL of training sentences for the peer's NNCF calibration.
    """

    seq_length: int
    savedmodels: dict[str, str]
    onnx_exports: dict[str, str]
    peer_directory: str
    calibration_file: str

    @classmethod
    def read(cls, path: str | os.PathLike) -> Models:
        return cls(**json.loads(Path(path).read_text()))


def savedmodel_runtime(
    precision: str, server_threads: tuple[int, int] = (0, 0)
) -> Callable[[Models], Classify]:
    """Our TF Serving export, loaded as TF Serving loads it (`SessionModel`), with the server's
    intra-op and inter-op threads (0: TensorFlow's, one per core)."""

    def load(models: Models) -> Classify:
        import importlib.util

        # The loader imports only tensorflow and tensorflow_text, as a model server has.
        spec = importlib.util.spec_from_file_location(
            "query_export", REPO_ROOT / "pipelines" / "query_export.py"
        )
        query_export = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(query_export)
        model = query_export.SessionModel(models.savedmodels[precision], *server_threads)
        return lambda texts: model.run({"text": texts})["logits"]

    return load


def onnx_runtime(precision: str) -> Callable[[Models], Classify]:
    """Our ONNX export through `OnnxModel`, in the runtime the export names."""

    def load(models: Models) -> Classify:
        from keras_bert.serving import OnnxModel

        model = OnnxModel(models.onnx_exports[precision], intra_op_threads=THREADS)
        return lambda texts: model.predict(texts)["logits"]

    return load


def peer_feeds(models: Models) -> Callable[[list[str]], dict[str, np.ndarray]]:
    """The peer's tokenizing: `tokenizer.json`, truncated to the export's length, a batch
    padded to its longest sentence, int64 inputs by transformers' names."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(models.peer_directory) / "hf" / "tokenizer.json"))
    tokenizer.enable_truncation(models.seq_length)
    tokenizer.enable_padding()

    def feeds(texts: list[str]) -> dict[str, np.ndarray]:
        encodings = tokenizer.encode_batch(texts)
        return {
            "input_ids": np.array([encoding.ids for encoding in encodings], np.int64),
            "attention_mask": np.array(
                [encoding.attention_mask for encoding in encodings], np.int64
            ),
            "token_type_ids": np.array([encoding.type_ids for encoding in encodings], np.int64),
        }

    return feeds


def peer_onnx_runtime(file_name: str) -> Callable[[Models], Classify]:
    """ONNX Runtime on transformers' export, all graph optimizations, 2 intra-op threads."""

    def load(models: Models) -> Classify:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = THREADS
        session = onnxruntime.InferenceSession(
            str(Path(models.peer_directory) / file_name),
            options,
            providers=["CPUExecutionProvider"],
        )
        feeds = peer_feeds(models)
        return lambda texts: session.run(["logits"], feeds(texts))[0]

    return load


def peer_openvino_runtime(precision: str | None, nncf_int8: bool = False):
    """OpenVINO on transformers' float32 export: one stream on 2 threads, `precision` as its
    inference precision hint (None: its default, bfloat16 on a CPU with bfloat16 units), or
    NNCF's int8 (`ModelType.TRANSFORMER`, calibrated on 300 training sentences)."""

    def load(models: Models) -> Classify:
        import contextlib

        import openvino

        core = openvino.Core()
        model = core.read_model(str(Path(models.peer_directory) / "classifier.onnx"))
        feeds = peer_feeds(models)
        if nncf_int8:
            import nncf

            calibration = [
                json.loads(line)["text"]
                for line in Path(models.calibration_file).read_text().splitlines()[:300]
            ]
            with contextlib.redirect_stdout(sys.stderr):  # its progress bars
                model = nncf.quantize(
                    model,
                    nncf.Dataset([feeds([text]) for text in calibration]),
                    subset_size=len(calibration),
                    model_type=nncf.ModelType.TRANSFORMER,
                )
        config = {"INFERENCE_NUM_THREADS": THREADS, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"}
        if precision is not None:
            config["INFERENCE_PRECISION_HINT"] = precision
        request = core.compile_model(model, "CPU", config).create_infer_request()
        return lambda texts: request.infer(feeds(texts))[0].copy()

    return load


def peer_ctranslate2_runtime(compute_type: str) -> Callable[[Models], Classify]:
    """CTranslate2's `Encoder` of transformers' copy (converted at load), its pooled output
    through the classifier's dense head."""

    def load(models: Models) -> Classify:
        import ctranslate2

        converted = str(Path(models.peer_directory) / f"ctranslate2_{compute_type}")
        ctranslate2.converters.TransformersConverter(
            str(Path(models.peer_directory) / "hf")
        ).convert(converted, force=True)
        encoder = ctranslate2.Encoder(
            converted,
            device="cpu",
            compute_type=compute_type,
            inter_threads=1,
            intra_threads=THREADS,
        )
        head = np.load(Path(models.peer_directory) / "head.npz")
        feeds = peer_feeds(models)

        def classify(texts: list[str]) -> np.ndarray:
            feed = feeds(texts)
            ids = ctranslate2.StorageView.from_array(feed["input_ids"].astype(np.int32))
            lengths = ctranslate2.StorageView.from_array(
                feed["attention_mask"].sum(1).astype(np.int32)
            )
            pooled = np.asarray(encoder.forward_batch(ids, lengths).pooler_output)
            return pooled @ head["kernel"] + head["bias"]

        return classify

    return load


@dataclasses.dataclass(frozen=True)
class Runtime:
    """A serving path: whose it is ("ours" or "peer"), its runtime and precision, and how it
    loads."""

    side: str
    runtime: str
    precision: str
    load: Callable[[Models], Classify]
    # Variables its process starts with, beyond the runtime's own (bench.bench_cpu_runtimes).
    environment: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """Its name in BENCHMARKS' table and figure: "ours: ONNX Runtime (OnnxModel), int8"."""
        return f"{self.side}: {self.runtime}, {self.precision}"

    @property
    def venv(self) -> str:
        """The venv it runs in: the project's, or the peers' (bench.bench_cpu_runtimes)."""
        return ".venv" if self.side == "ours" else ".venv-peers"


def _ours(
    runtime: str,
    precision: str,
    load: Callable[[Models], Classify],
    environment: tuple[tuple[str, str], ...] = (),
) -> Runtime:
    return Runtime("ours", runtime, precision, load, environment)


def _peer(runtime: str, precision: str, load: Callable[[Models], Classify]) -> Runtime:
    return Runtime("peer", runtime, precision, load)


RUNTIMES: dict[str, Runtime] = {
    **{
        f"ours-savedmodel-{precision}": _ours(
            "TF Serving export", precision, savedmodel_runtime(precision)
        )
        for precision in ("float32", "bfloat16")
    },
    # XLA-compiled model calls, which TF Serving runs when started with
    # --xla_cpu_compilation_enabled=true (the tokenizer stays TensorFlow's ops).
    **{
        f"ours-savedmodel-{precision}-xla": _ours(
            "TF Serving export", f"{precision}, XLA", savedmodel_runtime(f"{precision}-xla")
        )
        for precision in ("float32", "bfloat16")
    },
    # One thread per op, two ops at once: TF Serving started with
    # --tensorflow_intra_op_parallelism=1 --tensorflow_inter_op_parallelism=2. A request's ops
    # are too small to share between cores (oneDNN's attention products and softmax, parted
    # over 2 threads, took 2-3x their one-thread time on the Zen 4); the query, key and value
    # projections, and feed-forward shards, run side by side instead.
    **{
        f"ours-savedmodel-{variant}-one-thread-per-op": _ours(
            "TF Serving export",
            f"{variant.replace('-', ', ')}, 1 thread per op",
            savedmodel_runtime(variant, ONE_THREAD_PER_OP),
        )
        for variant in ("float32", "bfloat16", "float32-shards", "bfloat16-shards")
    },
    # The server's environment but oneDNN: TensorFlow's default on CPUs without AVX-512 VNNI,
    # BF16 or AMX, what the server's TF_ENABLE_ONEDNN_OPTS=1 saves there.
    "ours-savedmodel-float32-onednn-off": _ours(
        "TF Serving export",
        f"float32, {ONEDNN_SWITCH}=0",
        savedmodel_runtime("float32"),
        ((ONEDNN_SWITCH, "0"),),
    ),
    **{
        f"ours-onnx-{variant}": _ours(
            "ONNX Runtime (OnnxModel)", variant.replace("-", " "), onnx_runtime(variant)
        )
        for variant in ("float32", "int8-dynamic", "int8-static")
    },
    "ours-onnx-bfloat16": _ours("OpenVINO (OnnxModel)", "bfloat16", onnx_runtime("bfloat16")),
    "peer-ort-float32": _peer("ONNX Runtime", "float32", peer_onnx_runtime("classifier.onnx")),
    "peer-ort-int8": _peer(
        "ONNX Runtime", "int8 (quantize_dynamic)", peer_onnx_runtime("classifier.int8.onnx")
    ),
    "peer-openvino-f32": _peer("OpenVINO", "f32", peer_openvino_runtime("f32")),
    "peer-openvino-default": _peer(
        "OpenVINO", "default (bf16 where the CPU has it)", peer_openvino_runtime(None)
    ),
    "peer-openvino-int8": _peer(
        "OpenVINO", "NNCF int8", peer_openvino_runtime(None, nncf_int8=True)
    ),
    **{
        f"peer-ctranslate2-{precision}": _peer(
            "CTranslate2", precision, peer_ctranslate2_runtime(precision)
        )
        for precision in ("int8", "float32")
    },
}

# Runtimes `bench_cpu_runtimes run` times only when named: bfloat16 with XLA ran slower than
# bfloat16 and than float32 with XLA on the Zen 5 (docs/serving.md; results in
# bench/results/cpu_runtimes_by_name.jsonl), so it is no row of BENCHMARKS' table.
# With one thread per op on the Zen 4 (2026-12-07, by name): float32 without feed-forward
# shards ran behind float32 with them (8.04 against 7.11 ms), bfloat16 with shards tied
# bfloat16 without (5.09 and 6.03 against 5.18 and 5.87 ms, two runs).
NOT_BY_DEFAULT = frozenset(
    {
        "ours-savedmodel-bfloat16-xla",
        "ours-savedmodel-float32-one-thread-per-op",
        "ours-savedmodel-bfloat16-shards-one-thread-per-op",
    }
)


def answer(classify: Classify, command: dict) -> dict:
    """The worker's answer to one command (see the module)."""
    if command["op"] == "latencies":
        seconds = []
        for text in command["texts"]:
            start = time.perf_counter()
            classify([text])
            seconds.append(time.perf_counter() - start)
        return {"seconds": seconds}
    if command["op"] == "throughput":
        start = time.perf_counter()
        for batch in command["batches"]:
            classify(batch)
        return {"seconds": time.perf_counter() - start}
    if command["op"] == "logits":
        texts = command["texts"]
        logits = [
            classify(texts[start : start + LOGITS_BATCH])
            for start in range(0, len(texts), LOGITS_BATCH)
        ]
        return {"logits": np.concatenate(logits).tolist()}
    raise ValueError(f"unknown op {command['op']!r}")


def main(argv: list[str]) -> None:
    name, models_path = argv
    classify = RUNTIMES[name].load(Models.read(models_path))
    print(json.dumps({"ready": name}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command["op"] == "quit":
            break
        print(json.dumps(answer(classify, command)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
