"""Where a served request's time goes, op by op: an export loaded as TF Serving loads it.

Loads a SavedModel version directory with `pipelines/query_export.py`'s `SessionModel` (the
graph in a session, the server's environment: `SERVER_ENVIRONMENT`), with the server's intra-op
and inter-op threads, and runs `serving_default` on one sentence: first `--calls` times untimed
by the tracer (their p50), then `--traces` times with TensorFlow's step statistics, whose nodes
it sums by op type and by the first scopes of their names (the tokenizer, the model's function,
the branch points). A node's time is its own, from its start to its end; with two ops at once
the sums exceed the request's time. Printed, not recorded:

    .venv/bin/python -m bench.bench_request_ops \\
        artifacts/cpu_runtimes/exports/savedmodel-bfloat16/1 \\
        [--intra-op-threads 1 --inter-op-threads 2] [--text "..."]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

from keras_bert.cpu import cpu_summary
from keras_bert.export.server_config import SERVER_ENVIRONMENT
from keras_bert.timing import interleaved_median_seconds

SENTENCE = "A gripping, beautifully shot film whose quiet final act stays with you for days."


def op_type(timeline_label: str, node_name: str) -> str:
    """The op of a traced node from its timeline label ("name = Op(inputs)").

    Example:
    >>> op_type("block_1/query = _MklNativeFusedMatMul(x, kernel)", "block_1/query")
    '_MklNativeFusedMatMul'
    >>> op_type("", "_SOURCE")
    '_SOURCE'
    """
    if "=" not in timeline_label:
        return node_name
    return timeline_label.split("=", 1)[1].split("(", 1)[0].strip()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if any(os.environ.get(name) != value for name, value in SERVER_ENVIRONMENT):
        # oneDNN's switch is read when TensorFlow loads: start again in the server's environment.
        environment = os.environ | dict(SERVER_ENVIRONMENT) | {"TF_CPP_MIN_LOG_LEVEL": "2"}
        command = [sys.executable, "-m", "bench.bench_request_ops", *argv]
        os.execve(sys.executable, command, environment)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export_dir", help="a SavedModel version directory")
    parser.add_argument("--text", default=SENTENCE)
    parser.add_argument("--intra-op-threads", type=int, default=0, help="0: TensorFlow's")
    parser.add_argument("--inter-op-threads", type=int, default=0, help="0: TensorFlow's")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--traces", type=int, default=50)
    parser.add_argument("--top", type=int, default=25, help="op types and scopes printed")
    args = parser.parse_args(argv)
    from tensorflow.core.protobuf import config_pb2

    from pipelines.query_export import SessionModel

    model = SessionModel(args.export_dir, args.intra_op_threads, args.inter_op_threads)
    signature = model.signatures["serving_default"]
    feed = {signature.inputs["text"].name: [args.text]}
    fetches = [output.name for output in signature.outputs.values()]
    for _ in range(20):
        model.session.run(fetches, feed)
    request = [lambda: model.session.run(fetches, feed)]
    median = interleaved_median_seconds({"request": request}, rounds=args.calls)["request"]
    options = config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE)
    by_op, count_by_op, by_scope = (
        collections.Counter(),
        collections.Counter(),
        collections.Counter(),
    )
    nodes: set[str] = set()
    for _ in range(args.traces):
        metadata = config_pb2.RunMetadata()
        model.session.run(fetches, feed, options=options, run_metadata=metadata)
        for device in metadata.step_stats.dev_stats:
            for node in device.node_stats:
                op = op_type(node.timeline_label, node.node_name)
                by_op[op] += node.all_end_rel_micros
                count_by_op[op] += 1
                by_scope["/".join(node.node_name.split("/")[:3])] += node.all_end_rel_micros
                nodes.add(node.node_name)
    model.close()
    print(
        f"{cpu_summary()}; threads intra-op {args.intra_op_threads or 'default'}, inter-op "
        f"{args.inter_op_threads or 'default'}\n{args.export_dir}: p50 "
        f"{1000 * median:.2f} ms untraced ({args.calls} calls); {len(nodes)} nodes "
        f"a request, their own times summing to {sum(by_op.values()) / args.traces / 1000:.2f} ms"
    )
    for title, counter in (("op", by_op), ("scope", by_scope)):
        print(f"\n| {title} | µs a request | nodes |\n|---|---:|---:|")
        for name, micros in counter.most_common(args.top):
            count = count_by_op[name] // args.traces if counter is by_op else ""
            print(f"| {name} | {micros / args.traces:.1f} | {count} |")


if __name__ == "__main__":
    main()
