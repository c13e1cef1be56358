"""DeBERTa-v3 masked-LM training step: keras_bert's `BertMaskedLM` on a DeBERTa-v3 encoder vs
keras-hub's `DebertaV3MaskedLM`.

Both randomly initialised at the same size (default L6/H384/A6, intermediate 1536, DeBERTa-v3's
vocabulary of 128,100 pieces, 256 position buckets over 512 positions), on the same batch of
fake data (seq 128, batch 32, 20 masked predictions per sequence), each with its library's
optimizer at the same AdamW settings (keras_bert's `FusedAdamW`, Keras' `AdamW` for keras-hub;
see bench_pretraining). For each precision and XLA setting the two models are built side by
side and their timed `train_on_batch` steps alternate, so that load from other processes falls
on both alike; the median step times, their ratio, and best setting against best setting are
printed. A case that fails (keras-hub under XLA, for instance) is reported with its error.

    python -m bench.bench_deberta_mlm
    python -m bench.bench_deberta_mlm --precisions float32 --xla 1 --steps 3
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time

from bench.bench_pretraining import (
    PREDICTIONS,
    SEQUENCE_LENGTH,
    compile_keras_hub_masked_lm,
    fake_batch,
    keras_hub_sizes,
    stock_adamw,
)

PRECISIONS = ("float32", "mixed_bfloat16")


def deberta_config(num_layers: int, hidden_size: int, num_heads: int, vocab_size: int):
    """DeBERTa-v3's settings (as its `config.json` declares them) at the given size."""
    from keras_bert import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=num_heads,
        intermediate_size=4 * hidden_size,
        layer_norm_epsilon=1e-7,
        type_vocab_size=0,
        model_type="deberta-v2",
        pooler=False,
        position_biased_input=False,
        relative_attention=True,
        position_buckets=256,
        max_relative_positions=-1,
        pos_att_type="p2c|c2p",
        share_att_key=True,
        norm_rel_ebd="layer_norm",
    )


def _ours(config, batch, jit_compile: bool):
    from keras_bert import BertEncoder
    from keras_bert.models import BertMaskedLM
    from keras_bert.training import create_optimizer

    model = BertMaskedLM(BertEncoder(config))
    model.compile(optimizer=create_optimizer(1e-4, 10_000), jit_compile=jit_compile)
    x = {
        "input_word_ids": batch["word_ids"],
        "input_mask": batch["mask"],
        "input_type_ids": batch["type_ids"] * 0,
        "masked_lm_positions": batch["positions"],
    }
    return model, x, {"masked_lm": batch["masked_ids"]}, {"masked_lm": batch["weights"]}


def _keras_hub(config, batch, jit_compile: bool):
    import keras_hub

    backbone = keras_hub.models.DebertaV3Backbone(
        **keras_hub_sizes(config),
        max_sequence_length=config.relative_position_range,
        bucket_size=config.position_buckets,
    )
    model = compile_keras_hub_masked_lm(
        keras_hub.models.DebertaV3MaskedLM(backbone, preprocessor=None), stock_adamw(), jit_compile
    )
    x = {
        "token_ids": batch["word_ids"],
        "padding_mask": batch["mask"],
        "mask_positions": batch["positions"],
    }
    return model, x, batch["masked_ids"], batch["weights"]


IMPLEMENTATIONS = {"keras_bert": _ours, "keras_hub": _keras_hub}


def time_pair(config, batch_size: int, jit_compile: bool, warmup: int, steps: int) -> dict:
    """Median step seconds of each implementation (or its error), steps alternating."""
    import keras
    import tensorflow as tf

    batch = fake_batch(config, batch_size)
    runs, results = {}, {}
    for name, build in IMPLEMENTATIONS.items():
        keras.utils.set_random_seed(0)
        start = time.perf_counter()
        try:
            model, *data = build(config, batch, jit_compile)
            data = tf.nest.map_structure(tf.constant, data)
            for _ in range(warmup):  # the first step traces (and compiles, with XLA)
                model.train_on_batch(data[0], data[1], sample_weight=data[2])
        except Exception as error:  # noqa: BLE001 - a failing case is a result to report
            results[name] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
            continue
        runs[name] = (model, data)
        results[name] = {"warmup_s": time.perf_counter() - start, "step_times_s": []}
    for _ in range(steps):
        for name, (model, (x, y, weights)) in runs.items():
            start = time.perf_counter()
            model.train_on_batch(x, y, sample_weight=weights)
            results[name]["step_times_s"].append(time.perf_counter() - start)
    for name in runs:
        results[name]["median_step_s"] = statistics.median(results[name]["step_times_s"])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-layers", type=int, default=6)
    parser.add_argument("--hidden-size", type=int, default=384)
    parser.add_argument("--num-heads", type=int, default=6)
    parser.add_argument("--vocab-size", type=int, default=128_100)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS)
    parser.add_argument("--xla", nargs="+", default=["0", "1"], choices=["0", "1"])
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--output", help="write all results as JSON here")
    arguments = parser.parse_args()

    import keras

    config = deberta_config(
        arguments.num_layers, arguments.hidden_size, arguments.num_heads, arguments.vocab_size
    )
    results = []
    for precision, xla in itertools.product(arguments.precisions, arguments.xla):
        keras.mixed_precision.set_global_policy(precision)
        pair = time_pair(
            config, arguments.batch_size, xla == "1", arguments.warmup, arguments.steps
        )
        results.append({"precision": precision, "xla": xla == "1", **pair})
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
        keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("float32")
    print_table(results, arguments)
    if arguments.output:
        with open(arguments.output, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=2)


def _seconds(result: dict) -> str:
    return f"{result['median_step_s']:.2f}" if "median_step_s" in result else "fails"


def print_table(results: list[dict], arguments: argparse.Namespace) -> None:
    """One Markdown row per (precision, XLA), then best against best."""
    print(
        f"L{arguments.num_layers}/H{arguments.hidden_size}/A{arguments.num_heads}, vocabulary "
        f"{arguments.vocab_size}, seq {SEQUENCE_LENGTH}, batch {arguments.batch_size}, "
        f"{PREDICTIONS} predictions"
    )
    print("| precision | XLA | keras_bert s/step | keras-hub s/step | keras-hub / keras_bert |")
    print("|---|---|---:|---:|---:|")
    for result in results:
        ours, hub = result["keras_bert"], result["keras_hub"]
        ratio = (
            f"{hub['median_step_s'] / ours['median_step_s']:.2f}"
            if "median_step_s" in ours and "median_step_s" in hub
            else "-"
        )
        print(
            f"| {result['precision']} | {'on' if result['xla'] else 'off'} | {_seconds(ours)} "
            f"| {_seconds(hub)} | {ratio} |"
        )
    for result in results:
        for name in IMPLEMENTATIONS:
            if "error" in result[name]:
                print(
                    f"{name}, {result['precision']}, XLA {result['xla']}: {result[name]['error']}"
                )
    best = {}
    for name in IMPLEMENTATIONS:
        timed = [(r[name]["median_step_s"], r) for r in results if "median_step_s" in r[name]]
        if timed:
            best[name] = min(timed, key=lambda pair: pair[0])
    if len(best) == len(IMPLEMENTATIONS):
        (ours, ours_case), (hub, hub_case) = best["keras_bert"], best["keras_hub"]
        print(
            f"best keras_bert {ours:.2f} s/step ({ours_case['precision']}, XLA "
            f"{ours_case['xla']}) vs best keras-hub {hub:.2f} s/step ({hub_case['precision']}, "
            f"XLA {hub_case['xla']}) = {hub / ours:.2f}x"
        )


if __name__ == "__main__":
    main()
