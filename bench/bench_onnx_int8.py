"""Label agreement and dev accuracy of our ONNX int8 exports, dynamic and static, against float32:
no timing (`bench/bench_serving.py --int8-modes ...` times them).

For a fine-tuned sentiment classifier (`pipelines.finetune_classifier`), exports float32 and int8
in each mode of `INT8_MODES` with `keras_bert.export.onnx`, the agreement data every 8th
training sentence (the export chooses its float32 nodes on half of it and checks the other
half), then serves the 1,033 dev sentences, which no export saw, through `OnnxModel`. Prints
per mode: the export's check (held-out and search figures, the nodes left in float32 and each
node's sensitivity), the dev accuracy and label agreement with float32, and which operators
ONNX Runtime runs after its graph optimizations (what the int8 nodes became).

    python -m bench.bench_onnx_int8 --classifier runs/sentiment/model.keras [--seq-length 128]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

import keras
import numpy as np

from bench.bench_serving import DATA_DIR, load_dev
from keras_bert.cpu import cpu_summary
from keras_bert.export import serving_module
from keras_bert.export.onnx import int8_export, prepare_onnx
from keras_bert.export.onnx.quantization import INT8_MODES
from keras_bert.export.precision import PrecisionAgreementError
from keras_bert.serving import OnnxModel
from keras_bert.serving.graph_runtimes import session_options
from keras_bert.serving.onnx_model import ONNX_FILE
from keras_bert.text import BertPreprocessor
from pipelines.common import default_checkpoint

TRAIN_PATH = DATA_DIR / "sentiment" / "movie_snippets.train.jsonl"


def training_slice(every: int = 8) -> list[str]:
    """Every `every`-th training sentence: agreement data the dev set is kept apart from."""
    lines = TRAIN_PATH.read_text().splitlines()[::every]
    return [json.loads(line)["text"] for line in lines]


def optimized_operators(directory: Path) -> Counter:
    """The operators ONNX Runtime runs for the export in `directory`, after its graph
    optimizations (fusions of quantize / dequantize pairs into int8 kernels)."""
    import onnx
    import onnxruntime

    with tempfile.TemporaryDirectory() as work:
        options = session_options()
        options.optimized_model_filepath = str(Path(work) / "optimized.onnx")
        options.log_severity_level = 3  # its note that the file suits this machine only
        onnxruntime.InferenceSession(str(directory / ONNX_FILE), options)
        model = onnx.load(options.optimized_model_filepath)
    return Counter(node.op_type for node in model.graph.node)


def labels(model: OnnxModel, texts: list[str]) -> np.ndarray:
    return np.concatenate(
        [model.predict(texts[start : start + 64])["label"] for start in range(0, len(texts), 64)]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classifier", required=True, help=".keras sentiment classifier")
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--modes", nargs="+", choices=INT8_MODES, default=list(INT8_MODES))
    args = parser.parse_args()

    classifier = keras.saving.load_model(args.classifier)
    preprocessor = BertPreprocessor.from_checkpoint(default_checkpoint(), args.seq_length)
    module = serving_module(classifier, preprocessor)
    agreement = [{"text": training_slice()}]
    dev_texts, gold = load_dev()
    exports = {"float32": prepare_onnx(module, "float32", agreement)}
    for mode in args.modes:
        try:
            exports[mode] = int8_export(exports["float32"], module, agreement, mode)
        except PrecisionAgreementError as error:
            print(f"int8 ({mode}) refused: {error}")
    print(f"{cpu_summary()}; agreement data: {len(agreement[0]['text'])} training sentences")
    with tempfile.TemporaryDirectory() as work:
        predicted = {}
        for name, export in exports.items():
            directory = Path(work) / name
            directory.mkdir()
            export.write(directory)
            predicted[name] = labels(OnnxModel(directory), dev_texts)
            operators = optimized_operators(directory)
            accuracy = np.mean(predicted[name] == np.array(gold))
            agreement_with_float32 = np.mean(predicted[name] == predicted["float32"])
            print(
                f"\n{name}: dev accuracy {100 * accuracy:.2f}%, label agreement with float32 "
                f"{100 * agreement_with_float32:.2f}% ({len(dev_texts)} dev sentences)"
            )
            print(f"  ONNX Runtime runs: {dict(operators.most_common())}")
            if name != "float32":
                print(f"  export-time check: {export.metadata['checks']['int8']}")


if __name__ == "__main__":
    main()
