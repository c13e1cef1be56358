"""The matmuls of one serving request, TensorFlow's against ONNX Runtime's: where TF Serving's
batch-1 time goes besides its per-op cost.

A request of one sentence is about 20 token rows. MiniLM-L6's 36 projections (per block: query,
key, value, output 384 × 384; feed-forward 384 × 1,536 with GELU and 1,536 × 384, biases) run as
one chain on `[rows, 384]`, random weights, in a TensorFlow graph session as TF Serving runs it
(oneDNN on, weights assumed frozen: `SERVER_ENVIRONMENT`) with 1 and with 2 intra-op threads, and
in ONNX Runtime with 2. Each measurement is the median of `--calls` runs after an untimed one
(`keras_bert.timing`); every configuration runs in a process of its own so that thread pools do
not mix. Each is a line
appended to `--results` (`bench/results/request_matmuls.jsonl`) with the CPU, date and commit.

    .venv/bin/python -m bench.bench_request_matmuls [--rows 20 64 640] [--calls 300]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from keras_bert.export.server_config import SERVER_ENVIRONMENT
from keras_bert.timing import interleaved_median_seconds

RESULTS = Path(__file__).resolve().parent / "results" / "request_matmuls.jsonl"

HIDDEN = 384
INTERMEDIATE = 1536
BLOCKS = 6


def projection_shapes() -> list[tuple[int, int, bool]]:
    """(inputs, outputs, GELU after it) of each projection, in order.

    Example:
    >>> len(projection_shapes()), projection_shapes()[4]
    (36, (384, 1536, True))
    """
    block = [(HIDDEN, HIDDEN, False)] * 4 + [
        (HIDDEN, INTERMEDIATE, True),
        (INTERMEDIATE, HIDDEN, False),
    ]
    return block * BLOCKS


def weights() -> list[tuple[np.ndarray, np.ndarray, bool]]:
    rng = np.random.default_rng(0)
    return [
        (0.02 * rng.standard_normal((n_in, n_out), np.float32), np.zeros(n_out, np.float32), gelu)
        for n_in, n_out, gelu in projection_shapes()
    ]


def tensorflow_chain(rows: int, threads: int):
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        inputs = tf.compat.v1.placeholder(tf.float32, [None, HIDDEN])
        hidden = inputs
        for kernel, bias, gelu in weights():
            hidden = tf.nn.bias_add(tf.matmul(hidden, tf.Variable(kernel)), tf.Variable(bias))
            hidden = tf.nn.gelu(hidden) if gelu else hidden
        initialize = tf.compat.v1.global_variables_initializer()
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads)
    session = tf.compat.v1.Session(graph=graph, config=config)
    session.run(initialize)
    feed = {inputs: np.ones((rows, HIDDEN), np.float32)}
    return lambda: session.run(hidden, feed)


def onnxruntime_chain(rows: int, threads: int):
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    nodes, initializers, previous = [], [], "inputs"
    for index, (kernel, bias, gelu) in enumerate(weights()):
        initializers += [
            numpy_helper.from_array(kernel, f"kernel{index}"),
            numpy_helper.from_array(bias, f"bias{index}"),
        ]
        nodes.append(helper.make_node("MatMul", [previous, f"kernel{index}"], [f"product{index}"]))
        nodes.append(helper.make_node("Add", [f"product{index}", f"bias{index}"], [f"sum{index}"]))
        previous = f"sum{index}"
        if gelu:
            nodes.append(helper.make_node("Gelu", [previous], [f"gelu{index}"]))
            previous = f"gelu{index}"
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("inputs", TensorProto.FLOAT, [None, HIDDEN])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, None)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(model.SerializeToString(), options)
    feed = {"inputs": np.ones((rows, HIDDEN), np.float32)}
    return lambda: session.run(None, feed)


RUNTIMES = {"tensorflow": tensorflow_chain, "onnxruntime": onnxruntime_chain}
CONFIGURATIONS = (("tensorflow", 1), ("tensorflow", 2), ("onnxruntime", 2))


def measure(runtime: str, threads: int, rows: int, calls: int) -> dict:
    run = RUNTIMES[runtime](rows, threads)
    seconds = interleaved_median_seconds({runtime: [run]}, rounds=calls)[runtime]
    flops = 2 * rows * sum(n_in * n_out for n_in, n_out, _ in projection_shapes())
    return {
        "runtime": runtime,
        "threads": threads,
        "rows": rows,
        "milliseconds": round(1000 * seconds, 3),
        "gflops": round(flops / seconds / 1e9, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[20, 64, 640])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--child", nargs=3, metavar=("RUNTIME", "THREADS", "ROWS"))
    args = parser.parse_args(argv)
    if args.child:
        runtime, threads, rows = args.child
        print(json.dumps(measure(runtime, int(threads), int(rows), args.calls)))
        return
    from bench.results_lines import append_record, git_revision
    from keras_bert.cpu import cpu_summary

    context = {
        "cpu": cpu_summary(),
        "date": datetime.date.today().isoformat(),
        "revision": git_revision(),
    }

    environment = os.environ | dict(SERVER_ENVIRONMENT) | {"TF_CPP_MIN_LOG_LEVEL": "2"}
    for rows in args.rows:
        for runtime, threads in CONFIGURATIONS:
            command = [sys.executable, "-m", "bench.bench_request_matmuls", "--calls",
                       str(args.calls), "--child", runtime, str(threads), str(rows)]  # fmt: skip
            completed = subprocess.run(
                command, capture_output=True, text=True, check=True, env=environment
            )
            record = json.loads(completed.stdout.strip().splitlines()[-1]) | context
            print(json.dumps(record), flush=True)
            append_record(args.results, record)


if __name__ == "__main__":
    main()
