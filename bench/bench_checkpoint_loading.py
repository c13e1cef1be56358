"""Loading a BERT-Base-sized checkpoint from `pytorch_model.bin` (read without torch) and from
`model.safetensors`: time and peak resident memory of `load_checkpoint`, each load in a fresh
process.

The checkpoint (random weights, `BertForPreTraining` names, float32, 110M parameters) is written
locally: safetensors with numpy, the `.bin` files with torch itself (the `peer` extra), in its zip
and legacy formats. Goal: `.bin` within 1.5x the safetensors time, peak RSS within 2x the
weights.

    .venv/bin/python bench/bench_checkpoint_loading.py [--repeats 3] [--work-dir /tmp/bench_ckpt]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
HIDDEN, INTERMEDIATE, LAYERS, VOCABULARY, POSITIONS = 768, 3072, 12, 30522, 512
CONFIG = {
    "model_type": "bert", "hidden_size": HIDDEN, "intermediate_size": INTERMEDIATE,
    "num_hidden_layers": LAYERS, "num_attention_heads": 12, "vocab_size": VOCABULARY,
    "max_position_embeddings": POSITIONS, "type_vocab_size": 2, "hidden_act": "gelu",
    "layer_norm_eps": 1e-12,
}  # fmt: skip
FORMATS = {
    "safetensors": "model.safetensors",
    "bin (zip)": "pytorch_model.bin",
    "bin (legacy)": "pytorch_model.bin",
}


def bert_base_state_dict(seed: int = 0) -> OrderedDict:
    """`BertForPreTraining`'s tensor names and BERT-Base's shapes, random float32 values."""
    generator = np.random.default_rng(seed)
    shapes = {
        "bert.embeddings.word_embeddings.weight": (VOCABULARY, HIDDEN),
        "bert.embeddings.position_embeddings.weight": (POSITIONS, HIDDEN),
        "bert.embeddings.token_type_embeddings.weight": (2, HIDDEN),
        "bert.embeddings.LayerNorm.weight": (HIDDEN,),
        "bert.embeddings.LayerNorm.bias": (HIDDEN,),
    }
    blocks = {
        "attention.self.query": (HIDDEN, HIDDEN),
        "attention.self.key": (HIDDEN, HIDDEN),
        "attention.self.value": (HIDDEN, HIDDEN),
        "attention.output.dense": (HIDDEN, HIDDEN),
        "attention.output.LayerNorm": (HIDDEN,),
        "intermediate.dense": (INTERMEDIATE, HIDDEN),
        "output.dense": (HIDDEN, INTERMEDIATE),
        "output.LayerNorm": (HIDDEN,),
    }
    for layer in range(LAYERS):
        for module, shape in blocks.items():
            prefix = f"bert.encoder.layer.{layer}.{module}"
            shapes[f"{prefix}.weight"] = shape
            shapes[f"{prefix}.bias"] = shape[:1]
    shapes |= {
        "bert.pooler.dense.weight": (HIDDEN, HIDDEN),
        "bert.pooler.dense.bias": (HIDDEN,),
        "cls.predictions.transform.dense.weight": (HIDDEN, HIDDEN),
        "cls.predictions.transform.dense.bias": (HIDDEN,),
        "cls.predictions.transform.LayerNorm.weight": (HIDDEN,),
        "cls.predictions.transform.LayerNorm.bias": (HIDDEN,),
        "cls.predictions.bias": (VOCABULARY,),
        "cls.seq_relationship.weight": (2, HIDDEN),
        "cls.seq_relationship.bias": (2,),
    }
    return OrderedDict(
        (name, generator.standard_normal(shape, dtype=np.float32)) for name, shape in shapes.items()
    )


def write_checkpoints(work_dir: Path) -> dict[str, Path]:
    """One directory per format, each with the same weights and config."""
    import torch
    from safetensors.numpy import save_file

    state = bert_base_state_dict()
    directories = {name: work_dir / name.replace(" ", "_").strip("()") for name in FORMATS}
    for name, directory in directories.items():
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "config.json").write_text(json.dumps(CONFIG))
        path = directory / FORMATS[name]
        if path.is_file():
            continue
        if name == "safetensors":
            save_file(state, path)
        else:
            tensors = OrderedDict((key, torch.from_numpy(value)) for key, value in state.items())
            torch.save(tensors, path, _use_new_zipfile_serialization=name == "bin (zip)")
    return directories


def _resident_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(directory: str) -> None:
    """Loads once and prints seconds, resident bytes before and peak resident bytes."""
    from keras_bert.checkpoints import load_checkpoint

    before = _resident_bytes()
    start = time.perf_counter()
    checkpoint = load_checkpoint(directory)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    weights = sum(tensor.nbytes for tensor in checkpoint.tensors.values())
    print(json.dumps({"seconds": seconds, "before": before, "peak": peak, "weights": weights}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work-dir", default="/tmp/bench_checkpoint_loading")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    directories = write_checkpoints(Path(args.work_dir))
    from keras_bert.cpu import cpu_summary  # imports TensorFlow: not in the children

    print(cpu_summary())
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    results = {}
    for name, directory in directories.items():
        runs = []
        for _ in range(args.repeats + 1):  # the first warms the page cache
            output = subprocess.run(
                [sys.executable, __file__, "--child", str(directory)],
                capture_output=True, text=True, check=True, env=environment,
            ).stdout  # fmt: skip
            runs.append(json.loads(output.strip().splitlines()[-1]))
        runs = runs[1:]
        weights = runs[0]["weights"]
        seconds = float(np.median([run["seconds"] for run in runs]))
        added = float(np.median([run["peak"] - run["before"] for run in runs]))
        results[name] = seconds
        print(
            f"{name:13s} load {seconds:6.2f} s (x{seconds / results['safetensors']:.2f} of "
            f"safetensors), peak RSS added {added / 2**20:7.0f} MiB = "
            f"{added / weights:.2f}x the weights ({weights / 2**20:.0f} MiB)"
        )


if __name__ == "__main__":
    main()
