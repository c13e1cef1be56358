"""`export_onnx`: a serving module's model → a checked ONNX export for ONNX Runtime and OpenVINO.

The version directory (`<base>/<name>/<version>/`, written atomically and never overwritten, as
for SavedModels: `keras_bert.export.layout`) holds:

- `model.onnx`: the task graph (`task_graph`: ids in, the `serving_ids` outputs), float32, or
  int8 (`--precision int8`: `quantize_int8`); a bfloat16 export is the float32 graph that
  OpenVINO computes in bfloat16 (`keras_bert.export.onnx.openvino_bfloat16`);
- `tokenizer.json`: the preprocessor's tokenizer for `tokenizers` (`hf_tokenizer`);
- `keras_bert.json`: the task, family, labels, sequence length, packing, options, the meaning
  and axes of each output, the runtime a bfloat16 export runs in, and what the export checked.

Before anything is written the export checks, on the module's example request and
`agreement_requests`: float32 outputs equal the Keras model's (`serving_ids` on the same ids)
within `PARITY_TOLERANCE` (per-position outputs at real tokens), `tokenizer.json` gives the
preprocessor's ids on every text, and a reduced precision's labels agree with float32's
(`keras_bert.export.onnx.quantization`, `keras_bert.export.onnx.openvino_bfloat16`): int8 and
bfloat16 need `MIN_AGREEMENT_TEXTS` agreement inputs, every other one of which is held out (int8
chooses its float32 nodes on the rest), and the figures recorded are the held-out ones.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
import tensorflow as tf

from keras_bert.decoding.buckets import trim_to_bucket
from keras_bert.errors import ConfigError, DataError
from keras_bert.export.layout import write_version
from keras_bert.export.onnx.encoder_graph import input_names
from keras_bert.export.onnx.model_files import inference_session, parameter_count, save_model
from keras_bert.export.onnx.openvino_bfloat16 import BFLOAT16_RUNTIME, check_bfloat16
from keras_bert.export.onnx.quantization import quantize_int8
from keras_bert.export.onnx.task_graphs import MaskedLMOptions, task_graph, task_of
from keras_bert.export.onnx.tokenizer_json import check_tokenizer, hf_tokenizer
from keras_bert.families import family
from keras_bert.serving.onnx_model import METADATA_FILE, ONNX_FILE, TOKENIZER_FILE

ONNX_PRECISIONS = ("float32", "bfloat16", "int8")
# int8 is checked on agreement inputs, half of them held out: with 150 held out, one flipped
# label is 0.7%, under the 1% bar; two texts of a warm-up request would check nothing.
MIN_AGREEMENT_TEXTS = 300
# Largest |difference| between the ONNX model's float32 outputs and the Keras model's.
PARITY_TOLERANCE = 1e-4
# What each output holds, for keras_bert.json.
OUTPUT_MEANINGS = {
    "logits": "float32 class logits [batch, classes] (token classifier: [batch, sequence, tags])",
    "start_logits": "float32 answer-start logits [batch, sequence]",
    "end_logits": "float32 answer-end logits [batch, sequence]",
    "sequence_output": "float32 last layer [batch, sequence, hidden]",
    "cls_embedding": "float32 last layer at the first token [batch, hidden]",
    "mean_embedding": "float32 last layer averaged over the real tokens [batch, hidden]",
    "pooled_output": "float32 BERT's pooler (tanh dense) on the first token [batch, hidden]",
    "top_ids": "int32 token ids [batch, max_masks, top_k], most probable first (padding -1)",
    "top_probabilities": "float32 their probabilities (padding 0)",
    "num_masks": "int32 masks read per row [batch] (the first max_masks mask tokens)",
}


class OnnxParityError(ValueError):
    """The ONNX model's outputs differ from the Keras model's beyond `PARITY_TOLERANCE`."""


def requests_texts(requests: Sequence[Mapping[str, list]]) -> list[str]:
    """Every string of `serving_default` requests."""
    return [
        text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        for request in requests
        for texts in request.values()
        for text in texts
    ]


def request_rows(requests: Sequence[Mapping[str, list]]) -> int:
    """The inputs (texts, or pairs) of `serving_default` requests."""
    return sum(len(next(iter(request.values()), ())) for request in requests)


def split_requests(
    requests: Sequence[Mapping[str, list]],
) -> tuple[list[dict[str, list]], list[dict[str, list]]]:
    """The even rows and the odd rows of each request: (search part, held-out part).

    Example:
    >>> split_requests([{"text": ["a", "b", "c"]}])
    ([{'text': ['a', 'c']}], [{'text': ['b']}])
    """
    halves = [
        [
            {name: list(values[parity::2]) for name, values in request.items()}
            for request in requests
        ]
        for parity in (0, 1)
    ]
    return halves[0], halves[1]


def check_agreement_inputs(
    module, agreement_requests: Sequence[Mapping[str, list]], precision: str = "int8"
) -> None:
    """Raises where a `precision` (int8, bfloat16) export of `module` cannot be checked:
    `ConfigError` for an encoder (its outputs hold no labels), `DataError` for fewer than
    `MIN_AGREEMENT_TEXTS` agreement inputs."""
    if task_of(module.model) == "encoder":
        raise ConfigError(
            f"{precision} exports are checked on labels; an encoder's outputs hold none."
        )
    check_agreement_rows(request_rows(agreement_requests), precision)


def check_agreement_rows(rows: int, precision: str = "int8") -> None:
    """A one-line `DataError` that says what to pass if `rows` agreement inputs are too few
    to check `precision` on."""
    if rows < MIN_AGREEMENT_TEXTS:
        raise DataError(
            f"{precision} is checked against float32 on held-out inputs: pass --agreement-data, "
            f"a JSONL of at least {MIN_AGREEMENT_TEXTS} serving_default inputs (e.g. the dev "
            f"set); got {rows}."
        )


def masked_lm_options(module) -> MaskedLMOptions | None:
    if task_of(module.model) != "masked_lm":
        return None
    return MaskedLMOptions(module.mask_id, module.top_k, module.max_masks)


def packed_batches(module, requests: Sequence[Mapping[str, list]], batch_size: int = 64):
    """The requests packed as `serving_default` packs them, cut to their longest row."""
    longest = tuple(range(1, module.preprocessor.seq_length + 1))
    for request in requests:
        rows = len(next(iter(request.values())))
        for start in range(0, rows, batch_size):
            texts = [tf.constant(values[start : start + batch_size]) for values in request.values()]
            yield {
                name: tensor.numpy()
                for name, tensor in trim_to_bucket(module.pack_texts(*texts), longest).items()
            }


def check_parity(session, module, requests: Sequence[Mapping[str, list]]) -> float:
    """The largest |ONNX - Keras| over the outputs (per-position ones at real tokens) on the
    requests; `OnnxParityError` beyond `PARITY_TOLERANCE` or where top ids differ."""
    feeds_names = [graph_input.name for graph_input in session.get_inputs()]
    largest = 0.0
    for packed in packed_batches(module, requests):
        names = [output.name for output in session.get_outputs()]
        ours = dict(
            zip(
                names, session.run(names, {name: packed[name] for name in feeds_names}), strict=True
            )
        )
        reference = {name: np.asarray(value) for name, value in module.serve_ids(packed).items()}
        real = packed["input_mask"].astype(bool)
        for name, value in ours.items():
            expected = reference[name]
            if name in ("top_ids", "num_masks"):
                if not np.array_equal(value, expected):
                    raise OnnxParityError(f"ONNX {name} differ from the Keras model's.")
                continue
            if value.ndim >= 2 and value.shape[:2] == real.shape:
                value, expected = value[real], expected[real]
            largest = max(largest, float(np.abs(value - expected).max(initial=0.0)))
    if largest > PARITY_TOLERANCE:
        raise OnnxParityError(
            f"The ONNX model's outputs differ from the Keras model's by {largest:.2e} (at most "
            f"{PARITY_TOLERANCE} allowed)."
        )
    return largest


def _encoder(module):
    return module.model if task_of(module.model) == "encoder" else module.model.encoder


def metadata(module, model: onnx.ModelProto, precision: str) -> dict:
    """`keras_bert.json`: what a client needs to tokenize, pack and read the outputs."""
    task = task_of(module.model)
    preprocessor = module.preprocessor
    packer = preprocessor.packer
    config = _encoder(module).bert_config
    outputs = [output.name for output in model.graph.output]
    info = {
        "format": "keras_bert onnx export",
        "task": task,
        "family": config.model_type,
        "precision": precision,
        "seq_length": preprocessor.seq_length,
        "longest_input": config.longest_input,
        "vocab_size": config.vocab_size,
        "type_vocab_size": config.type_vocab_size,
        "refuses_token_types": family(config.model_type).refuses_token_types,
        "hidden_size": config.hidden_size,
        "parameters": parameter_count(model),
        "inputs": input_names(config),
        "outputs": {name: OUTPUT_MEANINGS[name] for name in outputs},
        # For runtimes that name no symbolic axis (OpenVINO): `OnnxModel` finds positions by them.
        "output_axes": {
            output.name: [
                dim.dim_param or dim.dim_value for dim in output.type.tensor_type.shape.dim
            ]
            for output in model.graph.output
        },
        "packing": {
            "cls_id": packer.cls_id,
            "sep_id": packer.sep_id,
            "pad_id": packer.pad_id,
            "pair_separators": packer.pair_separators,
            "second_type_id": packer.second_type_id,
            "truncation": packer.truncation,
        },
    }
    if task == "classifier":
        info |= {
            "num_classes": module.num_classes,
            "label_names": [name.decode() for name in module.label_names.numpy()],
            "text_pairs": module.text_pairs,
        }
    elif task == "token_classifier":
        info |= {"label_names": list(module.model.label_names), "max_entities": module.max_entities}
    elif task == "question_answerer":
        info |= {
            "max_question_length": module.max_question_length,
            "max_answer_length": module.max_answer_length,
        }
    elif task == "masked_lm":
        info |= {
            "mask_token": module.mask_token,
            "top_k": module.top_k,
            "max_masks": module.max_masks,
        }
    return info


@dataclasses.dataclass
class OnnxExport:
    """What `prepare_onnx` made and checked: the model, tokenizer, metadata and checks."""

    model: onnx.ModelProto
    tokenizer: object
    metadata: dict

    def write(self, directory: Path) -> None:
        """Writes the three files into `directory`."""
        save_model(self.model, directory / ONNX_FILE)
        self.tokenizer.save(str(directory / TOKENIZER_FILE))
        (directory / METADATA_FILE).write_text(
            json.dumps(self.metadata, indent=1, ensure_ascii=False)
        )


def prepare_onnx(
    module,
    precision: str = "float32",
    agreement_requests: Sequence[Mapping[str, list]] = (),
    int8_mode: str = "dynamic",
) -> OnnxExport:
    """The checked ONNX export of a float32 serving module (see the module docstring).

    Args:
        module: a float32 serving module (`serving_module(model, preprocessor, ...)`): its
            model, preprocessor and options (labels, `max_entities`, `top_k`, ...).
        precision: "float32", "bfloat16" (computed by OpenVINO) or "int8".
        agreement_requests: `serving_default` requests (dicts of lists of strings) for the
            checks, e.g. held-out sentences; int8 and bfloat16 need `MIN_AGREEMENT_TEXTS` of
            them.
        int8_mode: "dynamic" or "static" quantization (`quantize_int8`).

    Raises:
        ConfigError: a sequence length beyond the model's positions; int8 or bfloat16 of an
            encoder; bfloat16 without OpenVINO.
        DataError: int8 or bfloat16 with fewer than `MIN_AGREEMENT_TEXTS` agreement inputs.
        OnnxParityError, TokenizerAgreementError, PrecisionAgreementError: a failed check.
    """
    if precision not in ONNX_PRECISIONS:
        raise ConfigError(f"ONNX precision must be one of {ONNX_PRECISIONS}, got {precision!r}.")
    if getattr(module, "precision", "float32") != "float32":
        raise ConfigError("An ONNX export starts from the float32 serving module.")
    if precision != "float32":
        check_agreement_inputs(module, agreement_requests, precision)
    config = _encoder(module).bert_config
    config.check_seq_length(module.preprocessor.seq_length)
    requests = [module.example_inputs(), *agreement_requests]
    model = task_graph(module.model, masked_lm_options(module))
    session = inference_session(model)
    checks = {"parity_max_difference": check_parity(session, module, requests)}
    tokenizer = hf_tokenizer(module.preprocessor)
    agreement = check_tokenizer(tokenizer, module.preprocessor, requests_texts(requests))
    checks["tokenizer_texts_identical"] = agreement.identical
    export = OnnxExport(model, tokenizer, metadata(module, model, "float32") | {"checks": checks})
    if precision == "float32":
        return export
    if precision == "bfloat16":
        return bfloat16_export(export, module, agreement_requests)
    return int8_export(export, module, agreement_requests, int8_mode)


def int8_export(
    export: OnnxExport,
    module,
    agreement_requests: Sequence[Mapping[str, list]],
    mode: str = "dynamic",
) -> OnnxExport:
    """The int8 form of a float32 `OnnxExport` (`quantize_int8` in `mode`): its float32
    nodes chosen (and static ranges calibrated) on the module's example request and every
    other agreement input, accepted on the rest (`check_agreement_inputs` first)."""
    check_agreement_inputs(module, agreement_requests)
    search, held_out = split_requests(agreement_requests)
    search = [module.example_inputs(), *search]
    model = export.model
    if mode == "static":  # the attention's input projection as a MatMul that static quantizes
        model = task_graph(module.model, masked_lm_options(module), fused_attention=False)
        check_parity(inference_session(model), module, search)
    model, agreement = quantize_int8(
        model,
        list(packed_batches(module, search)),
        list(packed_batches(module, held_out)),
        mode,
    )
    checks = export.metadata["checks"] | {"int8": dataclasses.asdict(agreement)}
    return OnnxExport(
        model, export.tokenizer, export.metadata | {"precision": "int8", "checks": checks}
    )


def bfloat16_export(
    export: OnnxExport, module, agreement_requests: Sequence[Mapping[str, list]]
) -> OnnxExport:
    """The bfloat16 form of a float32 `OnnxExport`: the same graph, which OpenVINO computes in
    bfloat16, checked on the held-out half of the agreement inputs (`check_bfloat16`)."""
    check_agreement_inputs(module, agreement_requests, "bfloat16")
    _, held_out = split_requests(agreement_requests)
    agreement = check_bfloat16(
        export.model, export.metadata["output_axes"], list(packed_batches(module, held_out))
    )
    checks = export.metadata["checks"] | {"bfloat16": dataclasses.asdict(agreement)}
    return OnnxExport(
        export.model,
        export.tokenizer,
        export.metadata | {"precision": "bfloat16", "runtime": BFLOAT16_RUNTIME, "checks": checks},
    )


def export_onnx(
    module,
    base_dir: str | os.PathLike,
    name: str,
    version: int | None = None,
    precision: str = "float32",
    agreement_requests: Sequence[Mapping[str, list]] = (),
    int8_mode: str = "dynamic",
) -> Path:
    """`prepare_onnx`, written as `<base_dir>/<name>/<version>` (the next free version if
    None; an existing one is never overwritten). Returns the version directory.

    Example (the tiny model of `keras_bert.export.onnx`'s tests, in a temporary directory):

        export_onnx(serving_module(classifier, preprocessor), "saved_models", "sentiment")
    """
    export = prepare_onnx(module, precision, agreement_requests, int8_mode)
    return write_version(Path(base_dir) / name, export.write, version)
