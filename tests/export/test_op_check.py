"""The op check: real exports pass; unknown ops and Python-only ops are named with the release."""

import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from keras_bert.export import UnsupportedOpError, check_serving_ops, export_for_serving
from keras_bert.export.op_check import TF_SERVING_RELEASE, saved_model_ops, serving_ops
from tests.export.builders import TASKS


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_exports_use_only_tf_serving_ops(exported_base, task):
    ops = check_serving_ops(exported_base / task / "1")
    # The in-graph tokenizer is tensorflow-text; the server links it.
    assert {"RegexSplitWithOffsets", "FastWordpieceTokenizeWithOffsets"} <= ops
    assert {"MatMul", "Softmax"} & ops


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_exports_hold_no_xla_compiled_function(exported_base, task):
    # TensorFlow Serving leaves XLA's JIT off by default. Training code is XLA-compiled in
    # places (the GELU gradient): exports leave custom gradients out.
    saved_model = saved_model_pb2.SavedModel()
    saved_model.ParseFromString((exported_base / task / "1" / "saved_model.pb").read_bytes())
    library = [f for graph in saved_model.meta_graphs for f in graph.graph_def.library.function]
    assert library
    assert [f.signature.name for f in library if f.attr["_XlaMustCompile"].b] == []


@pytest.mark.parametrize(
    "family, tokenizer_ops",
    [
        ("roberta", {"StaticRegexReplace", "UnicodeDecode", "LookupTableFindV2", "While"}),
        ("albert", {"TFText>FastSentencepieceTokenize", "NormalizeUTF8", "StringLower"}),
        ("deberta_v3", {"TFText>FastSentencepieceTokenize"}),
        ("xlm_roberta", {"UnicodeDecodeWithOffsets", "LookupTableFindV2", "StatelessWhile"}),
    ],
)
def test_family_preprocessors_use_only_tf_serving_ops(
    family, tokenizer_ops, reference_dir, tmp_path
):
    import keras_bert

    preprocessor = keras_bert.load_preprocessor(reference_dir / "variants" / family)
    module = tf.Module()
    module.preprocessor = preprocessor
    serve = tf.function(preprocessor.call, input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path), signatures=serve.get_concrete_function())
    ops = check_serving_ops(tmp_path)
    assert tokenizer_ops <= ops
    assert not any(op.startswith("Sentencepiece") for op in ops)


def test_registry_holds_core_and_text_ops_but_not_python_ops():
    available = serving_ops()
    assert {"MatMul", "StringLower", "UnicodeTranscode", "NormalizeUTF8"} <= available
    assert not {"PyFunc", "EagerPyFunc", "PyFuncStateless"} & available


def test_unknown_op_in_a_function_library_is_named(tmp_path):
    saved_model = saved_model_pb2.SavedModel()
    graph = saved_model.meta_graphs.add().graph_def
    graph.node.add(name="input", op="Placeholder")
    function = graph.library.function.add()
    function.signature.name = "__inference_serve_1"
    function.node_def.add(name="magic", op="SentencePieceOpFromNowhere")
    graph.node.add(name="call", op="__inference_serve_1")  # a function call is not an op
    (tmp_path / "saved_model.pb").write_bytes(saved_model.SerializeToString())
    assert saved_model_ops(tmp_path) == {"Placeholder", "SentencePieceOpFromNowhere"}
    with pytest.raises(UnsupportedOpError) as error:
        check_serving_ops(tmp_path)
    message = str(error.value)
    assert "SentencePieceOpFromNowhere (not registered)" in message
    assert TF_SERVING_RELEASE in message
    assert "Placeholder" not in message


class _PythonCallback(tf.Module):
    """A module whose signature calls Python: registered in TF, absent from the server."""

    def __init__(self, preprocessor):
        super().__init__()
        self.preprocessor = preprocessor

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(self, text):
        lengths = tf.py_function(lambda t: tf.strings.length(t), [text], tf.int32)
        return {"length": lengths}

    def signatures(self):
        return {"serving_default": self.serve.get_concrete_function()}

    def example_inputs(self):
        return {"text": ["a"]}


def test_export_with_python_op_fails_and_leaves_no_version(tmp_path, serving_modules):
    module = _PythonCallback(serving_modules["classifier"].preprocessor)
    with pytest.raises(UnsupportedOpError, match=r"EagerPyFunc \(runs Python code\)"):
        export_for_serving(module, tmp_path, "python_model")
    assert list((tmp_path / "python_model").iterdir()) == []
