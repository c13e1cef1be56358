"""The peer's serving path for our classifier: Hugging Face `tokenizers` + ONNX Runtime.

What a user who picks ONNX Runtime runs: the checkpoint's `tokenizer.json`, each batch padded to
its longest sentence, and the classifier exported from transformers with dynamic axes (batch,
sequence), in float32 and quantized to int8 (`onnxruntime.quantization.quantize_dynamic`, the
standard CPU recipe for BERT). The classifier is ours: `write_peer_models` writes our Keras
classifier's weights into transformers' `BertForSequenceClassification` (the tensor names of
`keras_bert.checkpoints.huggingface.canonical_name`, read backwards), checks that its logits
equal ours, and exports it (and saves it with `save_pretrained`, for the runtimes that convert
a transformers directory), in a subprocess, so that torch is never loaded beside TensorFlow
while timing (it slows TensorFlow's calls, BENCHMARKS.md).

Needs the `peer` extra (torch, transformers, onnx, onnxruntime).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
TENSORS_FILE = "classifier_tensors.npz"
CHECK_FILE = "classifier_check.npz"
FLOAT32_FILE = "classifier.onnx"
INT8_FILE = "classifier.int8.onnx"
TRANSFORMERS_DIRECTORY = "hf"
HEAD_FILE = "head.npz"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)
# Largest |logit difference| allowed between transformers' copy and our classifier.
LOGITS_ATOL = 1e-4
ORT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def classifier_tensors(classifier) -> dict[str, np.ndarray]:
    """Our `BertClassifier`'s weights by the canonical names that `canonical_name` gives
    `BertForSequenceClassification`'s tensors: the encoder's (`encoder_variables`), the head
    as `classifier/kernel` and `classifier/bias`.

    Raises:
        ValueError: for a classifier that does not read BERT's pooler (mean pooling, another
            family's head): transformers' BERT classifier reads the pooler.
    """
    from keras_bert.checkpoints.variables import encoder_variables

    if not classifier.uses_pooled_output:
        raise ValueError(
            f"the peer is transformers' BertForSequenceClassification, which reads the pooler; "
            f"this classifier pools with {classifier.pooling!r} and a "
            f"{classifier.encoder.bert_config.model_type} head."
        )
    head = classifier.get_layer("logits")
    tensors = {name: variable for name, variable in encoder_variables(classifier.encoder).items()}
    tensors |= {"classifier/kernel": head.kernel, "classifier/bias": head.bias}
    return {name: np.asarray(variable.numpy(), np.float32) for name, variable in tensors.items()}


def write_peer_models(
    classifier, packed: dict, directory: Path, checkpoint: str, python: str = sys.executable
) -> tuple[Path, Path]:
    """The float32 and int8 ONNX files of `classifier` (see the module), written to
    `directory` by `export_peer_models` in a subprocess of `python`; `packed` (model inputs
    of a few sentences) checks the copy's logits against ours."""
    np.savez(directory / TENSORS_FILE, **classifier_tensors(classifier))
    logits = classifier(packed, training=False)
    np.savez(
        directory / CHECK_FILE,
        logits=np.asarray(logits),
        **{name: np.asarray(value) for name, value in packed.items()},
    )
    subprocess.run(
        [
            python,
            "-c",
            "from bench.peer_onnx import export_peer_models; "
            f"export_peer_models({str(directory)!r}, {checkpoint!r})",
        ],
        cwd=REPO_ROOT,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"},
    )
    return directory / FLOAT32_FILE, directory / INT8_FILE


def export_peer_models(directory: str, checkpoint: str) -> None:
    """The subprocess of `write_peer_models`: `BertForSequenceClassification` of the
    checkpoint's config with our weights, checked, exported and quantized."""
    import torch
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from keras_bert.checkpoints.huggingface import canonical_name

    directory = Path(directory)
    tensors = np.load(directory / TENSORS_FILE)
    check = np.load(directory / CHECK_FILE)
    config = transformers.BertConfig.from_pretrained(
        checkpoint, num_labels=check["logits"].shape[-1]
    )
    model = transformers.BertForSequenceClassification(config).eval()
    state = {}
    for name in model.state_dict():
        canonical, transpose = canonical_name(name)
        value = tensors[canonical]
        state[name] = torch.from_numpy(np.ascontiguousarray(value.T if transpose else value))
    model.load_state_dict(state, strict=True)
    inputs = {
        "input_ids": torch.from_numpy(check["input_word_ids"].astype(np.int64)),
        "attention_mask": torch.from_numpy(check["input_mask"].astype(np.int64)),
        "token_type_ids": torch.from_numpy(check["input_type_ids"].astype(np.int64)),
    }
    with torch.no_grad():
        logits = model(**inputs).logits.numpy()
    difference = float(np.abs(logits - check["logits"]).max())
    if difference > LOGITS_ATOL:
        raise ValueError(
            f"transformers' copy of the classifier differs from ours by {difference:.2e} "
            f"(at most {LOGITS_ATOL} allowed)."
        )
    print(f"transformers' copy: max |logit difference| with ours {difference:.2e}")

    class Logits(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).logits

    torch.onnx.export(
        Logits(model),
        tuple(inputs.values()),
        str(directory / FLOAT32_FILE),
        input_names=list(ORT_INPUTS),
        output_names=["logits"],
        dynamic_axes={
            **{name: {0: "batch", 1: "sequence"} for name in ORT_INPUTS},
            "logits": {0: "batch"},
        },
        dynamo=False,
    )
    quantize_dynamic(
        str(directory / FLOAT32_FILE), str(directory / INT8_FILE), weight_type=QuantType.QInt8
    )
    # For the runtimes that convert a transformers directory (CTranslate2) and apply the
    # classifier's dense head to the pooled output themselves.
    model.save_pretrained(directory / TRANSFORMERS_DIRECTORY)
    for name in TOKENIZER_FILES:
        shutil.copy(Path(checkpoint) / name, directory / TRANSFORMERS_DIRECTORY / name)
    np.savez(
        directory / HEAD_FILE, kernel=tensors["classifier/kernel"], bias=tensors["classifier/bias"]
    )


def peer_tokenizer(checkpoint: str, seq_length: int):
    """The checkpoint's `tokenizer.json` as the peer runs it: truncated to `seq_length`, each
    batch padded to its longest sentence."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(checkpoint) / "tokenizer.json"))
    tokenizer.enable_truncation(seq_length)
    tokenizer.enable_padding()
    return tokenizer


def peer_session(model_path: Path, threads: int):
    """An ONNX Runtime session with all graph optimizations on `threads` intra-op threads."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(
        str(model_path), options, providers=["CPUExecutionProvider"]
    )


def peer_classify(tokenizer, session, label_names: list[str]) -> Callable[[list[str]], list[str]]:
    """Sentences → labels through `tokenizer` and `session`: the peer's whole request."""

    def classify(sentences: list[str]) -> list[str]:
        encodings = tokenizer.encode_batch(sentences)
        feed = {
            "input_ids": np.array([encoding.ids for encoding in encodings], np.int64),
            "attention_mask": np.array(
                [encoding.attention_mask for encoding in encodings], np.int64
            ),
            "token_type_ids": np.array([encoding.type_ids for encoding in encodings], np.int64),
        }
        (logits,) = session.run(["logits"], feed)
        return [label_names[index] for index in logits.argmax(-1)]

    return classify


def labels_in_batches(classify: Callable[[list[str]], list[str]], texts: list[str]) -> list[str]:
    """`classify`'s labels of `texts`, 64 at a time."""
    return [label for start in range(0, len(texts), 64) for label in classify(texts[start:][:64])]


def tokenization_agreement(tokenizer, preprocessor, texts: list[str]) -> float:
    """The share of `texts` whose peer ids equal our preprocessor's (padding aside)."""
    import tensorflow as tf

    packed = preprocessor(tf.constant(texts))
    ours = [
        [int(i) for i, real in zip(ids, mask, strict=True) if real]
        for ids, mask in zip(
            packed["input_word_ids"].numpy(), packed["input_mask"].numpy(), strict=True
        )
    ]
    peer = [
        encoding.ids[: sum(encoding.attention_mask)] for encoding in tokenizer.encode_batch(texts)
    ]
    return float(np.mean([a == b for a, b in zip(ours, peer, strict=True)]))
