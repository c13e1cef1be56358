"""ONNX exports: every family and task as an ONNX Runtime graph, `tokenizer.json`, int8.

`export_onnx(module, base_dir, name)` writes `<base_dir>/<name>/<version>/` with `model.onnx`
(its weights in `model.onnx.data` above 2 GB), `tokenizer.json` and `keras_bert.json`;
`keras_bert.serving.OnnxModel` serves it without TensorFlow. `pipelines.export --format onnx`
(or `both`) is the command-line form.
"""

from keras_bert.export.onnx.exporter import (
    MIN_AGREEMENT_TEXTS,
    OnnxExport,
    OnnxParityError,
    export_onnx,
    int8_export,
    prepare_onnx,
)
from keras_bert.export.onnx.model_files import parameter_count
from keras_bert.export.onnx.precision_choice import choose_onnx_precision
from keras_bert.export.onnx.quantization import INT8_MODES, Int8Agreement, quantize_int8
from keras_bert.export.onnx.task_graphs import MaskedLMOptions, task_graph
from keras_bert.export.onnx.tokenizer_json import (
    TokenizerAgreementError,
    check_tokenizer,
    hf_tokenizer,
    tokenizer_agreement,
)

__all__ = [
    "INT8_MODES",
    "MIN_AGREEMENT_TEXTS",
    "Int8Agreement",
    "MaskedLMOptions",
    "OnnxExport",
    "OnnxParityError",
    "TokenizerAgreementError",
    "check_tokenizer",
    "choose_onnx_precision",
    "export_onnx",
    "hf_tokenizer",
    "int8_export",
    "parameter_count",
    "prepare_onnx",
    "quantize_int8",
    "task_graph",
    "tokenizer_agreement",
]
