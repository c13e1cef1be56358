"""Memory of XLM-RoBERTa at its real size: how many copies of the weights loading, a training
step and the exports hold, each in a fresh process.

A random XLM-R checkpoint of `--size` (base: 278M weights, 1.06 GiB; its 250,002-token table
is 192M of them) is written as `model.safetensors` with numpy. Each stage then runs in a child
process, which reports its anonymous memory (`RssAnon`: the copies a process holds; the
memory-mapped file's pages are `RssFile`, page cache) and its peak resident set (`VmHWM`, file
pages included) beside the weights' size:

- `load`: `load_masked_lm` (encoder and the tied masked-LM head);
- `fit`: a classifier's first `train_on_batch` (AdamW adds two moments of every weight: three
  copies in all are the optimizer's, not a duplicate); `fit_sparse` with
  `FusedAdamW(sparse_updates=True)` (the table's gradient and update only on the batch's rows);
- `savedmodel`: `export_for_serving` of the classifier (a float32 serving copy shares the
  model's variables);
- `onnx`: `export_onnx` of the classifier (the graph's initializers are the weights' bytes,
  one copy; above protobuf's 2 GB they are written as external data).

    python -m bench.bench_xlmr_memory --size base [--stages load,fit,savedmodel,onnx]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
SENTENCEPIECE_MODEL = (
    REPO_ROOT.parent
    / "shared"
    / "reference"
    / "variants"
    / "xlm_roberta"
    / "sentencepiece.bpe.model"
)
SIZES = {
    "tiny": (64, 2, 4, 128),
    "small": (256, 2, 4, 512),
    "base": (768, 12, 12, 3072),
    "large": (1024, 24, 16, 4096),
}
VOCABULARY_SIZE = 250_002
POSITIONS = 514
STAGES = ("load", "fit", "fit_sparse", "savedmodel", "onnx")


def write_checkpoint(directory: Path, size: str) -> int:
    """A random XLM-R masked LM of `size` in transformers' layout; returns its weights' bytes."""
    from safetensors.numpy import save_file

    hidden, layers, heads, intermediate = SIZES[size]
    rng = np.random.default_rng(0)

    def normal(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32) * 0.02

    def dense(name: str, out_size: int, in_size: int) -> dict[str, np.ndarray]:
        return {f"{name}.weight": normal(out_size, in_size), f"{name}.bias": normal(out_size)}

    def norm(name: str) -> dict[str, np.ndarray]:
        return {f"{name}.weight": 1 + normal(hidden), f"{name}.bias": normal(hidden)}

    tensors = {
        "roberta.embeddings.word_embeddings.weight": normal(VOCABULARY_SIZE, hidden),
        "roberta.embeddings.position_embeddings.weight": normal(POSITIONS, hidden),
        "roberta.embeddings.token_type_embeddings.weight": normal(1, hidden),
        **norm("roberta.embeddings.LayerNorm"),
        **dense("lm_head.dense", hidden, hidden),
        **norm("lm_head.layer_norm"),
        "lm_head.bias": normal(VOCABULARY_SIZE),
    }
    for layer in range(layers):
        prefix = f"roberta.encoder.layer.{layer}"
        for name in ("attention.self.query", "attention.self.key", "attention.self.value"):
            tensors |= dense(f"{prefix}.{name}", hidden, hidden)
        tensors |= dense(f"{prefix}.attention.output.dense", hidden, hidden)
        tensors |= norm(f"{prefix}.attention.output.LayerNorm")
        tensors |= dense(f"{prefix}.intermediate.dense", intermediate, hidden)
        tensors |= dense(f"{prefix}.output.dense", hidden, intermediate)
        tensors |= norm(f"{prefix}.output.LayerNorm")
    save_file(tensors, str(directory / "model.safetensors"))
    config = {
        "architectures": ["XLMRobertaForMaskedLM"],
        "model_type": "xlm-roberta",
        "vocab_size": VOCABULARY_SIZE,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": intermediate,
        "hidden_act": "gelu",
        "max_position_embeddings": POSITIONS,
        "type_vocab_size": 1,
        "layer_norm_eps": 1e-5,
        "pad_token_id": 1,
    }
    (directory / "config.json").write_text(json.dumps(config))
    return sum(tensor.nbytes for tensor in tensors.values())


def memory() -> dict[str, int]:
    """This process's `VmHWM`, `RssAnon` and `RssFile`, in MiB."""
    values = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "RssAnon", "RssFile"):
            values[name] = int(value.split()[0]) // 1024
    return values


def run_stage(stage: str, checkpoint: Path, scratch: Path) -> dict:
    """One stage in this process (the child's side); returns its memory before and after."""
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras_bert

    before = memory()
    if stage == "load":
        keras_bert.load_masked_lm(checkpoint)
        return {"before": before, "after": memory()}
    classifier = keras_bert.BertClassifier.pretrained(checkpoint, None, num_classes=2)
    loaded = memory()
    if stage.startswith("fit"):
        from keras_bert.models.task import recipe_optimizer

        optimizer = recipe_optimizer(100)
        if stage == "fit_sparse":
            optimizer = type(optimizer).from_config(
                {**optimizer.get_config(), "sparse_updates": True}
            )
        classifier.compile(optimizer=optimizer)
        ids = np.full((8, 128), 5, np.int32)
        inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids),
                  "input_type_ids": np.zeros_like(ids)}  # fmt: skip
        classifier.train_on_batch(inputs, np.zeros(8, np.int32))
        return {"before": before, "loaded": loaded, "after": memory()}
    from keras_bert.export import ClassifierServing, export_for_serving
    from keras_bert.text import TextPreprocessor, UnigramTokenizer

    tokenizer = UnigramTokenizer(SENTENCEPIECE_MODEL, special_tokens=["<mask>"])
    preprocessor = TextPreprocessor(
        tokenizer, seq_length=128, cls_token="<s>", sep_token="</s>", pad_token="<pad>",
        pair_separators=2, second_type_id=0,
    )  # fmt: skip
    module = ClassifierServing(classifier, preprocessor)
    if stage == "savedmodel":
        export_for_serving(module, scratch, "xlmr")
    else:
        from keras_bert.export.onnx import export_onnx

        export_onnx(module, scratch, "xlmr")
    return {"before": before, "loaded": loaded, "after": memory()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=SIZES, default="base")
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--stage", help=argparse.SUPPRESS)  # a child's one stage
    parser.add_argument("--checkpoint", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stage:
        with tempfile.TemporaryDirectory() as scratch:
            print(json.dumps(run_stage(args.stage, args.checkpoint, Path(scratch))))
        return
    from keras_bert.cpu import cpu_summary

    print(cpu_summary())
    with tempfile.TemporaryDirectory() as directory:
        weights = write_checkpoint(Path(directory), args.size) / 2**20
        print(f"{args.size}: weights {weights:.0f} MiB")
        for stage in args.stages.split(","):
            child = subprocess.run(
                [sys.executable, "-m", "bench.bench_xlmr_memory", "--stage", stage,
                 "--checkpoint", directory],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            report = json.loads(child.stdout.strip().splitlines()[-1])
            before, after = report["before"], report["after"]
            added = after["RssAnon"] - before["RssAnon"]
            peak = after["VmHWM"] - before["RssAnon"] - before["RssFile"]
            print(
                f"{stage:10s} anonymous +{added} MiB ({added / weights:.2f} x weights), "
                f"peak resident +{peak} MiB ({peak / weights:.2f} x, mapped file included)"
            )


if __name__ == "__main__":
    main()
