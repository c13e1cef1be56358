"""Pretraining throughput: keras_bert's BertPretrainer vs keras-hub's BertMaskedLM.

Both models get the same architecture (random init), the same batch of valid fake data and the
same AdamW settings (warm-up/decay, weight decay, global-norm clipping), and train with
`train_on_batch`; keras_bert also trains its NSP head. Each trains with its library's optimizer:
keras_bert's `FusedAdamW`, Keras' `AdamW` for keras-hub (plus one keras-hub case with
`FusedAdamW`, to separate model from optimizer). Each oneDNN setting runs in its own process
(TF_ENABLE_ONEDNN_OPTS is read when TensorFlow starts); inside it, every (size, precision,
model, XLA) case is timed per step after warm-up and the median is reported. `mixed_bfloat16`
runs only with oneDNN, which sends bfloat16 matmuls to AMX/AVX-512-BF16; without it TF emulates
bfloat16 in slow Eigen kernels.

    python -m bench.bench_pretraining                # both sizes, both oneDNN settings
    python -m bench.bench_pretraining --sizes mini --steps 5 --precisions float32

MFU is against 2 cores x 32 flop/cycle x 2.0 GHz = 128 GFLOP/s, with a train step counted as
6 x (non-embedding parameters x tokens + masked-LM head parameters x predictions) plus
attention (12 x layers x sequence^2 x hidden per sequence).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from keras_bert.cpu import ONEDNN_SWITCH

PEAK_FLOPS = 2 * 32 * 2.0e9
SIZES = {
    "mini": {"preset": "mini", "batch_size": 32},
    "base": {"preset": "base", "batch_size": 8},
}
SEQUENCE_LENGTH = 128
PREDICTIONS = 20
PRECISIONS = ("float32", "mixed_bfloat16")


def train_step_flops(config, batch_size: int) -> float:
    hidden, layers, vocabulary = config.hidden_size, config.num_layers, config.vocab_size
    per_layer = 4 * hidden * hidden + 2 * hidden * config.intermediate_size
    tokens = batch_size * SEQUENCE_LENGTH
    predictions = batch_size * PREDICTIONS
    matmuls = layers * per_layer * tokens + (hidden * hidden + vocabulary * hidden) * predictions
    attention = 12 * layers * SEQUENCE_LENGTH**2 * hidden * batch_size
    return 6 * matmuls + attention


def fake_batch(config, batch_size: int, seed: int = 0):
    import numpy as np

    rng = np.random.default_rng(seed)
    lengths = rng.integers(SEQUENCE_LENGTH // 2, SEQUENCE_LENGTH + 1, batch_size)
    mask = (np.arange(SEQUENCE_LENGTH)[None] < lengths[:, None]).astype("int32")
    word_ids = rng.integers(1000, config.vocab_size, (batch_size, SEQUENCE_LENGTH))
    word_ids = (word_ids * mask).astype("int32")
    word_ids[:, 0] = 101
    word_ids[np.arange(batch_size), lengths - 1] = 102
    type_ids = ((np.arange(SEQUENCE_LENGTH)[None] >= lengths[:, None] // 2) * mask).astype("int32")
    positions = np.stack(
        [
            np.sort(rng.choice(np.arange(1, length - 1), PREDICTIONS, replace=False))
            for length in lengths
        ]
    ).astype("int32")
    masked_ids = np.take_along_axis(word_ids, positions, axis=1)
    return {
        "word_ids": word_ids,
        "mask": mask,
        "type_ids": type_ids,
        "positions": positions,
        "masked_ids": masked_ids,
        "weights": np.ones((batch_size, PREDICTIONS), "float32"),
        "next_sentence": rng.integers(0, 2, batch_size).astype("int32"),
    }


# keras_bert's step under each pretraining objective whose step differs: BERT's (MLM + NSP;
# SOP's step is the same, only its labels differ), the budget recipe's model switches
# (pre-LN, relative attention seeded on neighbours, no dropout, no next-sentence loss: RoBERTa's
# FULL-SENTENCES step) and SpanBERT's added span-boundary head.
OBJECTIVES = ("bert", "budget", "span_boundary")
BUDGET_SWITCHES = {
    "pre_layer_norm": True,
    "dropout_rate": 0.0,
    "attention_dropout_rate": 0.0,
    "relative_attention_buckets": 32,
    "local_attention_bias": 5.0,
}


def _ours(config, batch, jit_compile, objective="bert"):
    from keras_bert.models.pretrainer import BertPretrainer
    from keras_bert.pretraining import pretraining_loss_weights
    from keras_bert.training import create_optimizer

    if objective == "budget":
        config = config.replace(**BUDGET_SWITCHES)
    span_boundary = objective == "span_boundary"
    model = BertPretrainer(config, span_boundary_objective=span_boundary)
    model.compile(
        optimizer=create_optimizer(1e-4, 10_000),
        jit_compile=jit_compile,
        loss_weights=pretraining_loss_weights(objective != "budget", span_boundary),
    )
    x = {
        "input_word_ids": batch["word_ids"],
        "input_mask": batch["mask"],
        "input_type_ids": batch["type_ids"],
        "masked_lm_positions": batch["positions"],
    }
    y = {"masked_lm": batch["masked_ids"], "next_sentence": batch["next_sentence"]}
    weights = {"masked_lm": batch["weights"], "next_sentence": batch["weights"][:, 0]}
    if span_boundary:
        y["span_boundary"], weights["span_boundary"] = batch["masked_ids"], batch["weights"]
    return model, x, y, weights


def stock_adamw():
    """Keras' own AdamW with exactly `create_optimizer(1e-4, 10_000)`'s settings: what a
    keras-hub user trains with (keras_bert's default is its `FusedAdamW`)."""
    import keras

    from keras_bert.training import create_optimizer
    from keras_bert.training.optimization import NO_WEIGHT_DECAY_NAMES

    # FusedAdamW takes AdamW's arguments and one of its own (where epsilon is added, which does
    # not change the work of a step); the weight-decay exclusions are not in the config.
    config = create_optimizer(1e-4, 10_000).get_config()
    config.pop("epsilon_after_bias_correction")
    optimizer = keras.optimizers.AdamW.from_config(config)
    optimizer.exclude_from_weight_decay(var_names=list(NO_WEIGHT_DECAY_NAMES))
    return optimizer


def keras_hub_sizes(config) -> dict:
    """A `BertConfig`'s sizes as keras-hub's backbones name them."""
    return {
        "vocabulary_size": config.vocab_size,
        "num_layers": config.num_layers,
        "num_heads": config.num_heads,
        "hidden_dim": config.hidden_size,
        "intermediate_dim": config.intermediate_size,
        "dropout": config.dropout_rate,
    }


def keras_hub_masked_lm(config, optimizer, jit_compile: bool = False):
    """keras-hub's `BertMaskedLM` (no preprocessor) of the size a `BertConfig` says, compiled
    with `optimizer`, its loss and masked accuracy (as `masked_lm_accuracy`)."""
    import keras_hub

    backbone = keras_hub.models.BertBackbone(
        **keras_hub_sizes(config),
        max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size,
    )
    return compile_keras_hub_masked_lm(
        keras_hub.models.BertMaskedLM(backbone, preprocessor=None), optimizer, jit_compile
    )


def compile_keras_hub_masked_lm(model, optimizer, jit_compile: bool):
    """A keras-hub masked LM compiled with `optimizer`, its loss and masked accuracy (as
    `masked_lm_accuracy`)."""
    import keras

    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy(name="masked_lm_accuracy")],
        jit_compile=jit_compile,
    )
    return model


def keras_hub_inputs(word_ids, mask, type_ids, positions) -> dict:
    """`BertMaskedLM`'s input dictionary."""
    return {
        "token_ids": word_ids,
        "padding_mask": mask,
        "segment_ids": type_ids,
        "mask_positions": positions,
    }


def _keras_hub(config, batch, jit_compile, fused_adamw=False):
    from keras_bert.training import create_optimizer

    optimizer = create_optimizer(1e-4, 10_000) if fused_adamw else stock_adamw()
    model = keras_hub_masked_lm(config, optimizer, jit_compile)
    x = keras_hub_inputs(batch["word_ids"], batch["mask"], batch["type_ids"], batch["positions"])
    return model, x, batch["masked_ids"], batch["weights"]


def time_case(build, config, batch_size, jit_compile, warmup, steps) -> list[float]:
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model, x, y, weights = build(config, fake_batch(config, batch_size), jit_compile)
    x, y, weights = tf.nest.map_structure(tf.constant, (x, y, weights))
    for _ in range(warmup):
        model.train_on_batch(x, y, sample_weight=weights)
    times, cpu_times = [], []
    for _ in range(steps):
        start, cpu_start = time.perf_counter(), time.process_time()
        model.train_on_batch(x, y, sample_weight=weights)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    return times, cpu_times


def child(sizes, precisions, warmup, steps, objectives=("bert",)) -> None:
    import functools
    import itertools

    import keras

    from keras_bert import BertConfig

    results = []
    implementations = (
        *(
            (
                "keras_bert" if objective == "bert" else f"keras_bert_{objective}",
                functools.partial(_ours, objective=objective),
            )
            for objective in objectives
        ),
        ("keras_hub", _keras_hub),
        # keras-hub's model with keras_bert's optimizer: separates model from optimizer speed
        # (timed at the fastest setting only).
        ("keras_hub_fused_adamw", functools.partial(_keras_hub, fused_adamw=True)),
    )
    for size, precision in itertools.product(sizes, precisions):
        config = BertConfig.preset(SIZES[size]["preset"])
        batch_size = SIZES[size]["batch_size"]
        for (implementation, build), jit_compile in itertools.product(implementations, (0, 1)):
            if implementation.endswith("fused_adamw") and (jit_compile or precision == "float32"):
                continue
            keras.mixed_precision.set_global_policy(precision)
            case_steps = steps if size != "base" else max(2, steps // 2)
            times, cpu_times = time_case(
                build, config, batch_size, bool(jit_compile), warmup, case_steps
            )
            median = statistics.median(times)
            results.append(
                {
                    "size": size,
                    "precision": precision,
                    "implementation": implementation,
                    "xla": bool(jit_compile),
                    "batch_size": batch_size,
                    "median_step_s": median,
                    "sequences_per_s": batch_size / median,
                    "mfu": train_step_flops(config, batch_size) / median / PEAK_FLOPS,
                    "step_times_s": times,
                    # CPU seconds of this process per step: on a shared machine, wall time
                    # also counts the time other processes held the cores.
                    "median_step_cpu_s": statistics.median(cpu_times),
                }
            )
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
            keras.backend.clear_session()
    print(json.dumps(results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--onednn", nargs="+", default=["0", "1"], choices=["0", "1"])
    parser.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--objectives",
        nargs="+",
        default=["bert"],
        choices=OBJECTIVES,
        help="keras_bert's step under these objectives (bert: MLM + NSP)",
    )
    parser.add_argument("--output", help="write all results as JSON here")
    arguments = parser.parse_args()
    if arguments.child:
        child(
            arguments.sizes,
            arguments.precisions,
            arguments.warmup,
            arguments.steps,
            arguments.objectives,
        )
        return

    results = []
    for onednn in arguments.onednn:
        precisions = [p for p in arguments.precisions if onednn == "1" or p == "float32"]
        if not precisions:
            continue
        environment = {**os.environ, ONEDNN_SWITCH: onednn, "TF_CPP_MIN_LOG_LEVEL": "2"}
        command = [sys.executable, "-m", "bench.bench_pretraining", "--child", "--sizes"]
        command += arguments.sizes + ["--precisions"] + precisions
        command += ["--warmup", str(arguments.warmup), "--steps", str(arguments.steps)]
        command += ["--objectives", *arguments.objectives]
        output = subprocess.run(
            command, env=environment, capture_output=True, text=True, check=True
        ).stdout
        for result in json.loads(output.strip().splitlines()[-1]):
            results.append({**result, "onednn": onednn == "1"})
    print_table(results, arguments.sizes, arguments.objectives)
    if arguments.output:
        with open(arguments.output, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=2)


def print_table(results: list[dict], sizes: list[str], objectives=("bert",)) -> None:
    """One Markdown row per (size, oneDNN, precision, XLA), then best against best per size
    (and each objective's best against keras-hub's)."""
    print("| size | oneDNN | precision | XLA | keras_bert seq/s | keras-hub seq/s | ratio |")
    print("|---|---|---|---|---:|---:|---:|")
    cases: dict[tuple, dict[str, dict]] = {}
    for result in results:
        key = (result["size"], result["onednn"], result["precision"], result["xla"])
        cases.setdefault(key, {})[result["implementation"]] = result
    for (size, onednn, precision, xla), pair in cases.items():
        if len(pair) < 2:
            continue
        ours, hub = pair["keras_bert"]["sequences_per_s"], pair["keras_hub"]["sequences_per_s"]
        print(
            f"| {size} | {'on' if onednn else 'off'} | {precision} | {'on' if xla else 'off'} "
            f"| {ours:.2f} | {hub:.2f} | {ours / hub:.2f} |"
        )
    for result in results:
        if result["implementation"] == "keras_hub_fused_adamw":
            print(
                f"keras-hub with keras_bert's FusedAdamW, {result['size']}, "
                f"{result['precision']}: {result['sequences_per_s']:.2f} seq/s"
            )
    ours_names = [
        "keras_bert" if objective == "bert" else f"keras_bert_{objective}"
        for objective in objectives
    ]
    for size in sizes:
        best = {
            name: max(
                (r for r in results if r["size"] == size and r["implementation"] == name),
                key=lambda r: r["sequences_per_s"],
            )
            for name in (*ours_names, "keras_hub")
        }
        hub = best["keras_hub"]
        for name in ours_names:
            ours = best[name]
            print(
                f"{size}: best {name} {ours['sequences_per_s']:.2f} seq/s "
                f"({ours['precision']}, XLA {ours['xla']}, MFU {ours['mfu']:.0%}) vs best "
                f"keras-hub {hub['sequences_per_s']:.2f} seq/s ({hub['precision']}, XLA "
                f"{hub['xla']}, MFU {hub['mfu']:.0%}) = "
                f"{ours['sequences_per_s'] / hub['sequences_per_s']:.2f}x"
            )


if __name__ == "__main__":
    main()
