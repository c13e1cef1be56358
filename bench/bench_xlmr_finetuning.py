"""XLM-RoBERTa fine-tuning step: keras_bert against transformers, the same random weights, the
same batches, one process, the two taking turns step by step (`keras_bert.timing`).

A sequence classifier at XLM-R's real sizes (`--size base`: 250,002 tokens, hidden 768, 12
layers; `large`: hidden 1024, 24 layers; `tiny` to smoke-test the script) is drawn at random by
transformers (`XLMRobertaForSequenceClassification`, every weight), saved, and read by
keras_bert (`BertClassifier.from_checkpoint`: the same encoder and head). Each step trains on a
batch of real movie-review sentences (shared/data), tokenized by the shared XLM-R SentencePiece
model and spread over the whole table by a fixed random map of its ids (a 250k-token
vocabulary's batch touches about as many distinct rows: the embedding gradient's rows), with
dropout on, loss, backward, clipping at norm 1.0 and AdamW (5e-5, weight decay 0.01 off biases
and LayerNorms): keras_bert's recipe optimizer (`FusedAdamW`) and transformers' `Trainer`'s
(`torch.optim.AdamW(fused=True)`) on 2 threads (`bench/peer_trainer.py`).

Where the step's time goes at 250k tokens: the embedding table is 192M of base's 278M
weights, and its gradient has only the batch's rows, but dense AdamW (both sides) updates
every row each step: the rows the batch missed still decay (weight decay) and still move by
their momentum, so that is a pass over 3 x 192M floats (weights, both moments) a step.
`keras_bert_sparse` updates only the batch's rows of sparse gradients (`FusedAdamW(
sparse_updates=True)`, TF's LazyAdam): faster, but a row the batch missed keeps its moments
and is not decayed, which is not transformers' AdamW. The default stays dense (see
docs/families.md, XLM-RoBERTa at its real size).

The batches are padded to `--seq-length` (128), as transformers' `run_glue.py` pads by
default; about 28% of their positions are real tokens. `transformers_dynamic_padding` is the
same model on each batch cut to its longest row (`DataCollatorWithPadding`'s batches, about
half the positions). keras_bert's classifier cuts those columns itself
(`TrailingPaddingTrim`) and its training step runs each block on the real tokens alone
(`real_tokens_only`: projections, norms and feed-forward; the scores over the batch); both
change no real token's output and no gradient.

How fast a step can be: its matmuls (1.07 TFLOP at base size over every position: forward
2 x 85M weights x 2,048 tokens plus attention's 9.7 GFLOP, backward twice that) at the
fastest matmul rate measured here on the step's own shapes (TensorFlow's and torch's, 2
threads): each variant's floor is that of the work it does, and its step over its floor
(`over_matmul_floor`) is what the rest of the step costs.

Prints the CPU, each variant's median seconds per step and its speed-up over transformers;
appends one JSON record per run to `--results`. Runs in the peer environment:

    .venv-peer/bin/python -m bench.bench_xlmr_finetuning --size base --steps 10
    .venv-peer/bin/python -m bench.bench_xlmr_finetuning --size tiny --steps 2   # smoke test
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench.results_lines import append_record, git_revision

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
XLM_ROBERTA = SHARED / "reference" / "variants" / "xlm_roberta"
SENTENCES = SHARED / "data" / "sentiment" / "movie_snippets.train.jsonl"
SIZES = {
    "tiny": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
             "intermediate_size": 128},
    "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
             "intermediate_size": 3072},
    "large": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
              "intermediate_size": 4096},
}  # fmt: skip
VOCABULARY_SIZE = 250_002
VARIANTS = ("keras_bert", "keras_bert_sparse", "transformers", "transformers_dynamic_padding")
# fairseq's special ids, kept by the map of the shared model's ids onto the whole table.
SPECIAL_IDS = 4


def random_checkpoint(size: str, directory: Path) -> None:
    """A transformers classifier of `size`, every weight drawn at random, saved."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.XLMRobertaConfig(
        vocab_size=VOCABULARY_SIZE, max_position_embeddings=514, type_vocab_size=1, **SIZES[size]
    )
    model = transformers.XLMRobertaForSequenceClassification(config)
    model.save_pretrained(directory)


def batches(count: int, batch_size: int, seq_length: int) -> list[dict[str, np.ndarray]]:
    """`count` packed batches of real sentences with labels, ids mapped onto the whole table."""
    import keras_bert

    preprocessor = keras_bert.load_preprocessor(XLM_ROBERTA, seq_length=64)
    preprocessor = keras_bert.text.TextPreprocessor(
        preprocessor.tokenizer, seq_length=seq_length, cls_token="<s>", sep_token="</s>",
        pad_token="<pad>", pair_separators=2, second_type_id=0,
    )  # fmt: skip
    records = [json.loads(line) for line in SENTENCES.read_text("utf-8").splitlines()]
    rows = np.random.default_rng(0).permutation(VOCABULARY_SIZE - SPECIAL_IDS) + SPECIAL_IDS
    id_map = np.concatenate([np.arange(SPECIAL_IDS), rows])
    result = []
    for index in range(count):
        chunk = records[index * batch_size : (index + 1) * batch_size]
        packed = {k: v.numpy() for k, v in preprocessor([r["text"] for r in chunk]).items()}
        packed["input_word_ids"] = id_map[packed["input_word_ids"]].astype(np.int32)
        packed["labels"] = np.array([r["label"] == "pos" for r in chunk], np.int32)
        result.append(packed)
    return result


def longest_row(batch: dict[str, np.ndarray]) -> int:
    """The real tokens of the batch's longest row (padding trails, as packing makes it)."""
    return int(batch["input_mask"].sum(axis=1).max())


def cut_to_longest_row(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The batch without the columns that are padding in every row: what transformers'
    `DataCollatorWithPadding` (padding to the batch's longest row) would have made of it."""
    length = longest_row(batch)
    return {name: value[:, :length] if value.ndim == 2 else value for name, value in batch.items()}


def keras_bert_step(directory: Path, sparse_updates: bool, total_steps: int):
    """keras_bert's classifier of the checkpoint and its recipe optimizer: one step a call."""
    import keras_bert
    from keras_bert.training.recipes import FINETUNING_RUN

    model = keras_bert.BertClassifier.pretrained(directory, None, num_classes=2)
    optimizer = FINETUNING_RUN.create_optimizer(total_steps)
    if sparse_updates:
        optimizer = type(optimizer).from_config({**optimizer.get_config(), "sparse_updates": True})
    model.compile(optimizer=optimizer, jit_compile=False)

    def step(batch):
        inputs = {name: batch[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}
        return model.train_on_batch(inputs, batch["labels"])

    return step


def transformers_steps(directory: Path, total_steps: int) -> dict:
    """transformers' classifier of the checkpoint and `Trainer`'s AdamW: one step a call, on
    the batch as given (`transformers`) or cut to its longest row (`..._dynamic_padding`).
    Both train the one model (a step's time does not depend on the weights' values), so that
    the process holds one more copy of 278M weights, gradients and moments, not two."""
    import torch
    import transformers

    from bench.peer_trainer import TORCH_THREADS, hugging_face_optimizer, hugging_face_step

    torch.set_num_threads(TORCH_THREADS)
    model = transformers.XLMRobertaForSequenceClassification.from_pretrained(directory)
    model.train()
    optimizer, schedule = hugging_face_optimizer(model, total_steps, fused=True)

    def step(batch):
        inputs = {
            "input_ids": torch.tensor(batch["input_word_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(batch["input_mask"], dtype=torch.long),
            "labels": torch.tensor(batch["labels"], dtype=torch.long),
        }
        return hugging_face_step(model, inputs, optimizer, schedule)

    return {
        "transformers": step,
        "transformers_dynamic_padding": lambda batch: step(cut_to_longest_row(batch)),
    }


def step_matmul_flops(
    size: str, batch_size: int, seq_length: int, weight_rows: int | None = None
) -> float:
    """The floating-point operations of a training step's matmuls: the blocks' weights and
    attention's scores and context, forward (2 per multiply-add) and backward (twice that);
    the weights multiply `weight_rows` tokens (every position by default), the scores are
    every position's."""
    hidden, layers = SIZES[size]["hidden_size"], SIZES[size]["num_hidden_layers"]
    weight_rows = batch_size * seq_length if weight_rows is None else weight_rows
    weights = 2 * (4 * hidden + 2 * SIZES[size]["intermediate_size"]) * hidden * weight_rows
    return 3 * layers * (weights + 4 * batch_size * seq_length**2 * hidden)


def matmul_gflops(size: str, batch_size: int, seq_length: int) -> dict[str, float]:
    """The fastest rate, in GFLOP/s, that TensorFlow and torch each reach on the step's three
    matmul shapes (tokens x hidden by hidden x hidden, x intermediate, and back): each library
    in a block of its own (torch's threads spin between calls), median of 20 calls."""
    import tensorflow as tf
    import torch

    from keras_bert.timing import interleaved_median_seconds

    def matmuls(left: np.ndarray, right: np.ndarray) -> dict:
        tf_left, tf_right = tf.constant(left), tf.constant(right)
        torch_left, torch_right = torch.from_numpy(left), torch.from_numpy(right)
        tf_matmul = tf.function(lambda: tf.matmul(tf_left, tf_right))
        return {
            "tensorflow": lambda: tf_matmul().numpy(),
            "torch": lambda: torch_left @ torch_right,
        }

    hidden, intermediate = SIZES[size]["hidden_size"], SIZES[size]["intermediate_size"]
    tokens = batch_size * seq_length
    random = np.random.default_rng(0)
    rates = {"tensorflow": 0.0, "torch": 0.0}
    for inner, columns in ((hidden, hidden), (hidden, intermediate), (intermediate, hidden)):
        left = random.standard_normal((tokens, inner), np.float32)
        right = random.standard_normal((inner, columns), np.float32)
        for name, call in matmuls(left, right).items():
            seconds = interleaved_median_seconds({name: [call] * 20}, rounds=1)[name]
            rates[name] = max(rates[name], 2 * tokens * inner * columns / seconds / 1e9)
    return {name: round(rate, 1) for name, rate in rates.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=SIZES, default="base")
    parser.add_argument("--steps", type=int, default=10, help="timed steps of each variant")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument(
        "--results", type=Path, default=REPO_ROOT / "bench/results/xlmr_finetuning.jsonl"
    )
    args = parser.parse_args(argv)
    # TensorFlow as every job starts it: quietly, oneDNN on where faster (AVX2-only CPUs).
    import pipelines  # noqa: F401

    variants = args.variants.split(",")
    from keras_bert.cpu import ONEDNN_SWITCH, cpu_summary
    from keras_bert.timing import interleaved_median_seconds

    print(cpu_summary(), flush=True)
    data = batches(args.steps, args.batch_size, args.seq_length)
    total_steps = 10 * (args.steps + 1)  # the schedule's warm-up spans the timed steps
    with tempfile.TemporaryDirectory() as scratch:
        random_checkpoint(args.size, Path(scratch))
        steps = {
            "keras_bert": lambda: keras_bert_step(Path(scratch), False, total_steps),
            "keras_bert_sparse": lambda: keras_bert_step(Path(scratch), True, total_steps),
        }
        built = {name: steps[name]() for name in variants if name in steps}
        if any(name.startswith("transformers") for name in variants):
            peer = transformers_steps(Path(scratch), total_steps)
            built |= {name: peer[name] for name in variants if name in peer}
        calls = {
            name: [lambda step=step, batch=batch: step(batch) for batch in data]
            for name, step in built.items()
        }
        seconds = interleaved_median_seconds(calls, rounds=1)
    record = {
        "size": args.size,
        "batch_size": args.batch_size,
        "seq_length": args.seq_length,
        "steps": args.steps,
        "median_step_seconds": {name: round(value, 4) for name, value in seconds.items()},
        **{
            f"speedup_over_{peer}": {
                name: round(seconds[peer] / value, 3)
                for name, value in seconds.items()
                if not name.startswith("transformers")
            }
            for peer in ("transformers", "transformers_dynamic_padding")
            if peer in seconds
        },
        "cpu": cpu_summary(),
        # TensorFlow's oneDNN switch as the run had it: `pipelines` sets 1 on AVX2-only CPUs
        # (since 2026-12-05); None is TensorFlow's default, on with AVX-512 VNNI, BF16 or AMX.
        ONEDNN_SWITCH: os.environ.get(ONEDNN_SWITCH),
        "revision": git_revision(),
        "command": " ".join(["python -m bench.bench_xlmr_finetuning", *(argv or sys.argv[1:])]),
        "finished": datetime.datetime.now().isoformat(timespec="seconds"),
    }
    for name, value in seconds.items():
        ratios = [
            f"{record[f'speedup_over_{peer}'][name]:.2f}x {peer}"
            for peer in ("transformers", "transformers_dynamic_padding")
            if name in record.get(f"speedup_over_{peer}", {})
        ]
        print(f"{name:28s} {value:8.3f} s/step  " + ", ".join(ratios))
    # The floors: each step's matmuls alone at the fastest rate measured here, for the work
    # it does: every position (transformers), each batch cut to its longest row (with dynamic
    # padding), and that with the blocks' weights on the real tokens alone (keras_bert; its
    # last block's work at [CLS] alone not counted).
    rates = matmul_gflops(args.size, args.batch_size, args.seq_length)
    cut = [(longest_row(batch), int(batch["input_mask"].sum())) for batch in data]
    flops = {
        "transformers": step_matmul_flops(args.size, args.batch_size, args.seq_length),
        "transformers_dynamic_padding": np.mean(
            [step_matmul_flops(args.size, args.batch_size, length) for length, _ in cut]
        ),
        "keras_bert": np.mean(
            [step_matmul_flops(args.size, args.batch_size, n, real) for n, real in cut]
        ),
    }
    floors = {name: float(value) / max(rates.values()) / 1e9 for name, value in flops.items()}
    record |= {
        "matmul_gflops": rates,
        "longest_rows": [length for length, _ in cut],
        "real_tokens": [real for _, real in cut],
        "step_matmul_tflop": {name: round(value / 1e12, 3) for name, value in flops.items()},
        "matmul_floor_seconds": {name: round(value, 3) for name, value in floors.items()},
        "over_matmul_floor": {
            name: round(value / floors[name.removesuffix("_sparse")], 3)
            for name, value in seconds.items()
        },
    }
    print(f"the fastest matmul rates here: {rates} GFLOP/s")
    for name, value in floors.items():
        print(f"{name:28s} matmuls {flops[name] / 1e12:.3f} TFLOP, floor {value:.2f} s/step")
    print(f"each step over the floor of its own work: {record['over_matmul_floor']}")
    append_record(args.results, record)


if __name__ == "__main__":
    main()
