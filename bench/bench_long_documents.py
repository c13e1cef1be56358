"""ModernBERT on long inputs, side by side with transformers: the forward pass of one sequence
(batch 1, every token real) of 512, 2,048 and 8,192 tokens through keras_bert's encoder and
through transformers' `ModernBertModel` (`attn_implementation="sdpa"`, PyTorch's fused
attention), with BERT-base up to 512 tokens beside them.

A third side, `keras_bert_onnx`, runs keras_bert's ONNX export of the same encoder
(`keras_bert.export.onnx.task_graph`, written once per run beside the weights) in ONNX Runtime, as
`keras_bert.serving.OnnxModel` serves it: a process with ONNX Runtime and no TensorFlow (float32
only: `--dtype bfloat16` leaves it out).

All sides read the same random weights: transformers draws them at the model's published size
(`ModernBertForMaskedLM(ModernBertConfig())`: 22 layers, hidden 768, intermediate 1,152, 12 heads,
a local window of 128 in two layers of three, vocabulary 50,368, 8,192 positions; BERT-base:
`BertModel(BertConfig())`) and saves them, and keras_bert loads the directory. Every measurement
(side, model, length) runs in a subprocess of its own, which reports:

- `seconds`: the median of `--calls` forward passes after one untimed pass (tracing, oneDNN's
  first-call work), the sequence output computed (keras_bert: its `tf.function`, as a SavedModel
  runs it; transformers: under `torch.inference_mode()`);
- `forward_peak_mb`: the largest resident memory of the process while it runs the passes
  (sampled every 2 ms), the loaded model, runtime and activations together; `loaded_mb` the
  resident memory before the first pass (both sides give the allocator's free memory back to
  the system first, `malloc_trim`); `process_peak_mb`, the process's peak over its whole life,
  loading included (`ru_maxrss`); `framework_mb`, the resident memory with the side's
  libraries imported and no model loaded.

`--dtype bfloat16` loads both sides' weights in bfloat16 and computes in it (Keras' `bfloat16`
policy, transformers' `dtype=torch.bfloat16`), for CPUs with AVX512_BF16 or AMX (on AVX2 alone
bfloat16 is slower than float32); each record names its dtype, and the figure draws float32's.

keras_bert's side runs in TF Serving's environment (`keras_bert.export.server_config.
SERVER_ENVIRONMENT`), as our jobs do: oneDNN's kernels on, which TensorFlow leaves off on a CPU
with AVX2 and no AVX-512 (there, ModernBERT-base at 2,048 tokens took 8.2 s without them and
4.8 s with them; AMD EPYC, 2026-12-06).

The sides take turns, length by length, and every round starts with the other side, so that
both meet the same load on a shared machine. Each measurement is a line appended to `--results`
(`bench/results/long_documents.jsonl`), with the CPU, the versions, the revision and the
command. `python -m bench.figures long_documents` draws time and memory against length from that
file (`bench.figures`).

Run alone on the machine, from the repository root (transformers from the peer environment):

    .venv/bin/python -m bench.bench_long_documents --peer-python .venv-peer/bin/python \\
        --lengths 512,2048,8192 --bert-lengths 128,256,512 --rounds 3
    .venv/bin/python -m bench.figures long_documents

Smoke test (tiny random models, a minute):

    .venv/bin/python -m bench.bench_long_documents --peer-python .venv-peer/bin/python \\
        --size tiny --lengths 64,256 --bert-lengths 64 --rounds 1 --calls 1 \\
        --results /tmp/long_documents_smoke.jsonl
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "bench" / "results" / "long_documents.jsonl"
SIDES = ("keras_bert", "keras_bert_onnx", "transformers")
ONNX_FILE = "model.onnx"  # keras_bert's ONNX export of the weights, beside them
MODELS = ("modernbert", "bert")
DTYPES = ("float32", "bfloat16")
# transformers' configs of each model and size (the published base sizes are their defaults).
SIZES = {
    "base": {"modernbert": {}, "bert": {}},
    "tiny": {
        "modernbert": {
            "vocab_size": 1000,
            "hidden_size": 64,
            "intermediate_size": 96,
            "num_hidden_layers": 3,
            "num_attention_heads": 4,
            "local_attention": 16,
            "max_position_embeddings": 1024,
            **{f"{token}_token_id": index for index, token in enumerate(("cls", "sep", "pad"))},
            "bos_token_id": 0,
            "eos_token_id": 1,
        },
        "bert": {
            "vocab_size": 1000,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
        },
    },
}
MEMORY_SAMPLE_SECONDS = 0.002


# In the subprocesses ---------------------------------------------------------------------


def make_weights(model: str, size: str, directory: Path) -> None:
    """transformers' random model of `model` at `size`, saved into `directory` (torch)."""
    import torch
    import transformers

    torch.manual_seed(0)
    if model == "modernbert":
        network = transformers.ModernBertForMaskedLM(
            transformers.ModernBertConfig(**SIZES[size][model])
        )
    else:
        network = transformers.BertModel(transformers.BertConfig(**SIZES[size][model]))
    network.save_pretrained(directory)


def _resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _give_back_free_memory() -> None:
    """glibc's `malloc_trim`: the allocator's free memory (a loader's copies) back to the system,
    so that resident memory is what the process holds."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def measured(forward, calls: int) -> dict:
    """`forward`'s median seconds over `calls` passes after one untimed pass, and the memory
    while they run."""
    _give_back_free_memory()
    loaded = _resident_mb()
    peak = [loaded]
    running = threading.Event()
    running.set()

    def sample() -> None:
        while running.is_set():
            peak[0] = max(peak[0], _resident_mb())
            time.sleep(MEMORY_SAMPLE_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    forward()
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        forward()
        seconds.append(time.perf_counter() - start)
    running.clear()
    sampler.join()
    import resource

    return {
        "seconds": statistics.median(seconds),
        "all_seconds": seconds,
        "loaded_mb": round(loaded, 1),
        "forward_peak_mb": round(max(peak[0], _resident_mb()), 1),
        "process_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _token_ids(length: int, vocab_size: int):
    import numpy as np

    return np.random.default_rng(0).integers(5, vocab_size, (1, length)).astype("int32")


def keras_bert_forward(weights: Path, length: int, dtype: str):
    """keras_bert's encoder of `weights` (its variables and compute in `dtype`) and a pass of
    one sequence of `length` ids through it (the sequence output, in a `tf.function`)."""
    import keras
    import numpy as np
    import tensorflow as tf

    import keras_bert

    encoder = keras_bert.load_encoder(weights, dtype=dtype)
    sequence = keras.Model(encoder.input, encoder.output["sequence_output"])
    ids = _token_ids(length, encoder.bert_config.vocab_size)
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids)}
    inputs["input_type_ids"] = np.zeros_like(ids)
    run = tf.function(lambda values: sequence(values, training=False))
    versions = {"tensorflow": tf.__version__, "keras": keras.__version__}
    return lambda: tf.cast(run(inputs), tf.float32).numpy(), versions


def export_onnx_encoder(weights: Path) -> None:
    """keras_bert's ONNX graph of the encoder of `weights`, written to `weights / ONNX_FILE` as
    the exports write theirs (its weights in a data file beside it above 2 GB)."""
    import keras_bert
    from keras_bert.export.onnx import task_graph
    from keras_bert.export.onnx.model_files import save_model

    save_model(task_graph(keras_bert.load_encoder(weights)), weights / ONNX_FILE)


def keras_bert_onnx_forward(weights: Path, length: int, dtype: str):
    """ONNX Runtime's session of keras_bert's export of `weights` (`export_onnx_encoder`), as
    `OnnxModel` opens it, and a pass of `length` ids (the sequence output)."""
    import numpy as np
    import onnxruntime

    from keras_bert.serving.graph_runtimes import graph_session

    if dtype != "float32":
        raise ValueError("keras_bert's ONNX export computes in float32.")
    session = graph_session(weights / ONNX_FILE)
    vocab_size = json.loads((weights / "config.json").read_text())["vocab_size"]
    ids = _token_ids(length, vocab_size)
    feeds = {"input_word_ids": ids, "input_mask": np.ones_like(ids)}
    feeds["input_type_ids"] = np.zeros_like(ids)  # BERT's graph reads them, ModernBERT's not
    inputs = {name: feeds[name] for name in (value.name for value in session.get_inputs())}
    return lambda: session.run(["sequence_output"], inputs)[0], {
        "onnxruntime": onnxruntime.__version__
    }


def transformers_forward(weights: Path, length: int, dtype: str):
    """transformers' model of `weights` (sdpa attention, in `dtype`) and a pass of `length`
    ids."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(weights)
    model = transformers.AutoModel.from_pretrained(
        weights, attn_implementation="sdpa", dtype=getattr(torch, dtype)
    ).eval()
    ids = torch.from_numpy(_token_ids(length, config.vocab_size)).long()
    mask = torch.ones_like(ids)

    def forward():
        with torch.inference_mode():
            return model(input_ids=ids, attention_mask=mask).last_hidden_state.float().numpy()

    versions = {"torch": torch.__version__, "transformers": transformers.__version__}
    return forward, versions | {"threads": torch.get_num_threads()}


def framework_mb(side: str) -> float:
    """The resident memory of the process with its side's libraries imported and no model yet
    (TensorFlow, Keras and keras_bert; PyTorch and transformers), after `malloc_trim`: the part
    of `forward_peak_mb` that is the framework's, whatever the model."""
    if side == "keras_bert":
        import keras  # noqa: F401
        import tensorflow  # noqa: F401

        import keras_bert.models  # noqa: F401
    elif side == "keras_bert_onnx":
        import numpy  # noqa: F401
        import onnxruntime  # noqa: F401

        import keras_bert.serving.graph_runtimes  # noqa: F401
    else:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    _give_back_free_memory()
    return round(_resident_mb(), 1)


def child(side: str, weights: Path, length: int, calls: int, dtype: str) -> dict:
    framework = framework_mb(side)
    build = {
        "keras_bert": keras_bert_forward,
        "keras_bert_onnx": keras_bert_onnx_forward,
        "transformers": transformers_forward,
    }[side]
    forward, versions = build(weights, length, dtype)
    return measured(forward, calls) | {"framework_mb": framework, "versions": versions}


# In the parent -------------------------------------------------------------------------


def _run_json(command: list[str], environment: dict[str, str]) -> dict:
    completed = subprocess.run(
        command, capture_output=True, text=True, check=False, cwd=REPO_ROOT, env=environment
    )
    if completed.returncode:
        raise RuntimeError(f"{shlex.join(command)} failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def run_all(args: argparse.Namespace, command: str) -> list[dict]:
    """Every (round, model, length, side), appended to the results file as each finishes."""
    from bench.results_lines import append_record, git_revision
    from keras_bert.cpu import cpu_summary
    from keras_bert.export.server_config import SERVER_ENVIRONMENT

    pythons = {side: sys.executable for side in SIDES} | {"transformers": args.peer_python}
    environments = {side: dict(os.environ) for side in SIDES}
    environments["keras_bert"] |= dict(SERVER_ENVIRONMENT)
    sides = [side for side in SIDES if args.dtype == "float32" or side != "keras_bert_onnx"]
    context = {"cpu": cpu_summary(), "revision": git_revision(), "command": command}
    lengths = {"modernbert": args.lengths, "bert": args.bert_lengths}
    records = []
    with tempfile.TemporaryDirectory(prefix="long_documents_") as scratch:
        weights = {}
        for model in MODELS:
            if lengths[model]:
                weights[model] = Path(scratch) / model
                module = ["-m", "bench.bench_long_documents"]
                subprocess.run(
                    [args.peer_python, *module, "--make-weights", str(weights[model]),
                     "--model", model, "--size", args.size],
                    check=True, cwd=REPO_ROOT,
                )  # fmt: skip
                if "keras_bert_onnx" in sides:
                    subprocess.run(
                        [sys.executable, *module, "--export-onnx", str(weights[model])],
                        check=True, cwd=REPO_ROOT, env=environments["keras_bert"],
                    )  # fmt: skip
        for number in range(args.rounds):
            for model in MODELS:
                for length in lengths[model]:
                    for side in sides if number % 2 == 0 else sides[::-1]:
                        result = _run_json(
                            [pythons[side], "-m", "bench.bench_long_documents", "--child", side,
                             "--weights", str(weights[model]), "--length", str(length),
                             "--calls", str(args.calls), "--dtype", args.dtype],
                            environments[side],
                        )  # fmt: skip
                        record = {
                            "model": f"{model}-{args.size}",
                            "side": side,
                            "length": length,
                            "dtype": args.dtype,
                            "round": number,
                            **result,
                            **context,
                            "finished": datetime.datetime.now().isoformat(timespec="seconds"),
                        }
                        records.append(record)
                        append_record(args.results, record)
                        print(
                            f"{record['model']:>15} {side:>15} {length:>5} tokens: "
                            f"{record['seconds']:8.3f} s, {record['forward_peak_mb']:8.1f} MB"
                        )
    return records


def summary(records: list[dict]) -> dict[tuple[str, str, int], dict]:
    """(model, side, length) → the median seconds over rounds and the largest memory."""
    grouped: dict[tuple[str, str, int], list[dict]] = {}
    for record in records:
        grouped.setdefault((record["model"], record["side"], record["length"]), []).append(record)
    return {
        key: {
            "seconds": statistics.median(record["seconds"] for record in group),
            "forward_peak_mb": max(record["forward_peak_mb"] for record in group),
            "rounds": len(group),
        }
        for key, group in sorted(grouped.items())
    }


def _lengths(text: str) -> list[int]:
    return [int(value) for value in text.split(",") if value]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-python", help="the Python of an environment with transformers")
    parser.add_argument("--size", choices=sorted(SIZES), default="base")
    parser.add_argument("--lengths", type=_lengths, default=[512, 2048, 8192])
    parser.add_argument("--bert-lengths", type=_lengths, default=[128, 256, 512])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3, help="timed passes per measurement")
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        default="float32",
        help="both sides' weights and compute (bfloat16: on CPUs with AVX512_BF16 or AMX)",
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--weights", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--length", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--make-weights", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--export-onnx", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--model", choices=MODELS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.make_weights:
        make_weights(args.model, args.size, args.make_weights)
    elif args.export_onnx:
        export_onnx_encoder(args.export_onnx)
    elif args.child:
        print(json.dumps(child(args.child, args.weights, args.length, args.calls, args.dtype)))
    else:
        if not args.peer_python:
            parser.error("--peer-python is needed to run transformers' side")
        command = shlex.join(["python", "-m", "bench.bench_long_documents", *sys.argv[1:]])
        records = run_all(args, command)
        for (model, side, length), values in summary(records).items():
            print(f"{model} {side} {length}: {values}")


if __name__ == "__main__":
    main()
