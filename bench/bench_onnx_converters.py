"""The two ways to an ONNX graph of a keras_bert model, measured side by side: tf2onnx (the
model traced in a `tf.function` with named int32 inputs, converted, then fused by ONNX
Runtime's Python optimizer at `opt_level=0`, which needs no torch) against keras_bert's
writer (`keras_bert.export.onnx.task_graph`: ONNX Runtime's fused operators written from the
config and weights).

For the real MiniLM-L6 (a classifier with a random head, or `--classifier`): conversion time,
node counts, the fused attention nodes per layer, the largest |logit - Keras logit| on the
dev sentences, and ONNX Runtime's batch-1 p50 and batch-32 throughput on the dev sentences'
ids (each batch padded to its longest), the two graphs taking turns call by call. tf2onnx
cannot convert TensorFlow's `Erfc` (the exact GELU): a handler writes it as `1 - Erf`.

    .venv/bin/python -m bench.bench_onnx_converters [--classifier model.keras] \\
        [--requests 200] [--batches 20] [--threads 2]

Needs tf2onnx and sympy (ONNX Runtime's optimizer imports it): the `peer` extra's venv has
both (torch brings sympy).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np
import onnx

from bench.bench_serving import load_dev, request_batches, scheduled_timings
from keras_bert.cpu import cpu_summary

SEQ_LENGTH = 128
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def tf2onnx_model(classifier):
    """The classifier converted by tf2onnx (opset 17), `Erfc` written as `1 - Erf`."""
    import tensorflow as tf
    import tf2onnx

    spec = [tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES]

    @tf.function(input_signature=spec)
    def logits(input_word_ids, input_mask, input_type_ids):
        inputs = {
            "input_word_ids": input_word_ids,
            "input_mask": input_mask,
            "input_type_ids": input_type_ids,
        }
        return {"logits": classifier(inputs, training=False)}

    def erfc(context, node, name, args):
        erf = context.make_node("Erf", [node.input[0]])
        one = context.make_const(tf2onnx.utils.make_name("one"), np.array(1.0, np.float32))
        context.remove_node(node.name)
        context.make_node(
            "Sub", [one.output[0], erf.output[0]], outputs=node.output, name=node.name
        )

    model, _ = tf2onnx.convert.from_function(
        logits, input_signature=spec, opset=17, custom_op_handlers={"Erfc": (erfc, [])}
    )
    return model


# The model types of ONNX Runtime's optimizer for BERT graphs; "bert_keras" expects keras2onnx's
# graphs (it fails on tf2onnx's: "Model producer not matched", then an assertion).
ORT_MODEL_TYPES = ("bert_tf", "bert")


def fused_by_ort_optimizer(model, config):
    """ONNX Runtime's transformer optimizer at opt_level 0 (pattern fusion in Python, no
    torch, but sympy), the model type of `ORT_MODEL_TYPES` that fuses the most attention
    nodes; prints what each did."""
    from onnxruntime.transformers.optimizer import optimize_model

    best, best_count = None, -1
    for model_type in ORT_MODEL_TYPES:
        try:
            optimized = optimize_model(
                onnx.load_from_string(model.SerializeToString()),  # it edits its input
                model_type=model_type,
                num_heads=config.num_heads,
                hidden_size=config.hidden_size,
                opt_level=0,
            ).model
        except Exception as error:  # noqa: BLE001 (report any failure of the optimizer)
            failure = f"{type(error).__name__}: {error}"
            print(f"ORT optimizer, model_type {model_type!r}: failed ({failure})")
            continue
        count = attention_nodes(optimized)
        print(f"ORT optimizer, model_type {model_type!r}: {count} attention nodes")
        if count > best_count:
            best, best_count = optimized, count
    return best


def attention_nodes(model) -> int:
    counts = Counter(node.op_type for node in model.graph.node)
    return sum(counts[op] for op in ("Attention", "MultiHeadAttention"))


def session(model, threads: int):
    import onnxruntime

    from keras_bert.serving.graph_runtimes import session_options

    return onnxruntime.InferenceSession(
        model.SerializeToString(), session_options(threads), providers=["CPUExecutionProvider"]
    )


def describe(name: str, model, seconds: float, config) -> None:
    counts = Counter(node.op_type for node in model.graph.node)
    attention = attention_nodes(model)
    print(
        f"{name}: written in {seconds:.1f} s, {sum(counts.values())} nodes, "
        f"{attention} attention nodes for {config.num_layers} layers; "
        f"most used: {dict(counts.most_common(8))}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classifier", help=".keras classifier (default: MiniLM, random head)")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import keras
    import tensorflow as tf

    import keras_bert
    from keras_bert.export.onnx import task_graph
    from pipelines.common import default_checkpoint

    preprocessor = keras_bert.load_preprocessor(default_checkpoint(), seq_length=SEQ_LENGTH)
    if args.classifier:
        classifier = keras.saving.load_model(args.classifier)
    else:
        keras.utils.set_random_seed(0)
        classifier = keras_bert.BertClassifier(keras_bert.load_encoder(default_checkpoint()), 2)
    config = classifier.encoder.bert_config
    models, build_seconds = {}, {}
    start = time.perf_counter()
    models["keras_bert writer"] = task_graph(classifier)
    build_seconds["keras_bert writer"] = time.perf_counter() - start
    start = time.perf_counter()
    converted = tf2onnx_model(classifier)
    models["tf2onnx"] = converted
    build_seconds["tf2onnx"] = time.perf_counter() - start
    start = time.perf_counter()
    fused = fused_by_ort_optimizer(converted, config)
    if fused is not None:
        models["tf2onnx + ORT optimizer (opt_level 0)"] = fused
    build_seconds["tf2onnx + ORT optimizer (opt_level 0)"] = build_seconds["tf2onnx"] + (  # noqa
        time.perf_counter() - start
    )

    texts, _ = load_dev()
    print(f"MiniLM-L6 classifier, {cpu_summary()}, ONNX Runtime threads {args.threads}")
    sessions = {}
    for name, model in models.items():
        describe(name, model, build_seconds[name], config)
        try:
            sessions[name] = session(model, args.threads)
        except Exception as error:  # noqa: BLE001 (an invalid graph is a result)
            print(f"{name}: ONNX Runtime cannot load it ({str(error).splitlines()[0][:300]})")

    def feeds(batch):
        packed = preprocessor(tf.constant(batch))
        length = int(packed["input_mask"].numpy().sum(1).max())
        return {name: packed[name].numpy()[:, :length] for name in INPUT_NAMES}

    for name, ort_session in list(sessions.items()):
        largest = 0.0
        try:
            for start in range(0, len(texts), 64):
                batch = feeds(texts[start : start + 64])
                expected = np.asarray(classifier(batch, training=False))
                (logits,) = ort_session.run(["logits"], batch)
                largest = max(largest, float(np.abs(logits - expected).max()))
        except Exception as error:  # noqa: BLE001 (a graph that fails to run is a result)
            print(f"{name}: fails in ONNX Runtime ({str(error).splitlines()[0][:400]})")
            del sessions[name]
            continue
        print(f"{name}: max |logit difference| with Keras on the dev sentences {largest:.2e}")

    print("\n| graph | batch-1 p50 (ms) | batch-32 sentences/s |\n|---|---:|---:|")
    results = {}
    for batch_size, count in ((1, args.requests), (32, args.batches)):
        prepared = [feeds(batch) for batch in request_batches(texts, batch_size, count)]
        calls = {
            name: [lambda s=ort_session, f=f: s.run(["logits"], f) for f in prepared]
            for name, ort_session in sessions.items()
        }
        results[batch_size] = scheduled_timings(calls)
    for name in sessions:
        p50 = 1000 * np.median(results[1][name])
        throughput = 32 / np.median(results[32][name])
        print(f"| {name} | {p50:.2f} | {throughput:.1f} |")


if __name__ == "__main__":
    main()
