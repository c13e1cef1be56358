"""Opt-in export options: XLA-compiled model calls, bfloat16 and int8 compute with their
agreement check."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.export import (
    AgreementTolerance,
    ClassifierServing,
    EncoderServing,
    PrecisionAgreementError,
    check_serving_ops,
    docker_command,
    export_for_serving,
)
from keras_bert.export.exporter import AGREEMENT_FILE
from keras_bert.export.op_check import xla_compiled_functions
from keras_bert.export.precision import measure_agreement
from keras_bert.layers.layer_normalization import (
    FUSED_KERNEL_MIN_VALUES,
    FastLayerNormalization,
)
from keras_bert.models import BertClassifier
from tests.export import builders
from tests.export.builders import SEQ_LENGTH
from tests.export.fresh_process import run_signatures

TEXTS = ["A gripping, beautifully [MASK] film.", "Dull.", "Straße ΟΔΟΣ 中文 🥰 naïve café, Zoë!"]


def _served(export_dir, reference_dir, texts=TEXTS) -> tuple[dict, dict]:
    """`serving_default` outputs on `texts` of two exports, in a fresh process."""
    inputs = {"text": texts}
    calls = [
        {"export_dir": path, "signature": "serving_default", "inputs": inputs}
        for path in (export_dir, reference_dir)
    ]
    return tuple(run_signatures(calls))


@pytest.mark.slow
def test_xla_export_is_op_checked_and_answers_like_the_default(
    tmp_path, serving_modules, exported_base
):
    float32 = serving_modules["classifier"]
    module = ClassifierServing(float32.model, float32.preprocessor, jit_compile=True)
    export_dir = export_for_serving(module, tmp_path, "xla")
    compiled = xla_compiled_functions(export_dir)
    assert any("model_call" in name for name in compiled)  # a request's model call
    # A large batch's: its real tokens outside XLA, and one attention function compiled, which
    # every block calls (they compute alike): XLA compiles it once per shape, not per block.
    contexts = [name for name in compiled if "context_of" in name]
    assert len(contexts) == 1 < len(module.model.encoder.blocks)
    assert docker_command(tmp_path).endswith(" --xla_cpu_compilation_enabled=true")
    assert {"FastWordpieceTokenizeWithOffsets", "MatMul"} <= check_serving_ops(export_dir)
    # 120 rows: the 40 short ones (8 columns) run as one request's model call, the others (16
    # or more) as a large batch.
    large_batch = TEXTS * 40
    assert 40 * 8 < -(-FUSED_KERNEL_MIN_VALUES // module.bert_config.hidden_size) < 80 * 16
    for texts in (TEXTS, large_batch):
        xla, default = _served(export_dir, exported_base / "classifier" / "1", texts)
        np.testing.assert_allclose(xla["probabilities"], default["probabilities"], atol=1e-5)
        assert xla["label"] == default["label"]


@pytest.mark.slow
def test_sharded_feed_forward_export_answers_like_the_default(
    tmp_path, serving_modules, exported_base
):
    float32 = serving_modules["classifier"]
    module = ClassifierServing(float32.model, float32.preprocessor, feed_forward_shards=2)
    assert module.model is not float32.model  # a copy; the trained model keeps its layout
    assert len(module.model.encoder.blocks[0].output_dense.kernels) == 2
    export_dir = export_for_serving(module, tmp_path, "sharded")
    assert xla_compiled_functions(export_dir) == []
    check_serving_ops(export_dir)
    sharded, default = _served(export_dir, exported_base / "classifier" / "1")
    np.testing.assert_allclose(sharded["probabilities"], default["probabilities"], atol=1e-5)
    assert sharded["label"] == default["label"]


@pytest.mark.slow
def test_mean_pooling_classifier_serves_raw_strings_like_keras(tmp_path, serving_modules):
    base = serving_modules["classifier"]
    classifier = BertClassifier(
        base.model.encoder, 3, label_names=base.model.label_names, pooling="mean"
    )
    export_dir = export_for_serving(ClassifierServing(classifier, base.preprocessor), tmp_path, "m")
    (served,) = run_signatures(
        [
            {
                "export_dir": export_dir,
                "signature": "serving_default",
                "inputs": {"text": TEXTS},
            }
        ]
    )
    logits = classifier(base.preprocessor(tf.constant(TEXTS)))
    expected = tf.nn.softmax(logits).numpy()
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5)


@pytest.mark.slow
def test_bfloat16_export_agrees_with_float32_and_records_it(
    tmp_path, serving_modules, exported_base
):
    float32 = serving_modules["classifier"]
    module = ClassifierServing(float32.model, float32.preprocessor, precision="bfloat16")
    held_out = [{"text": TEXTS}]
    export_dir = export_for_serving(
        module, tmp_path, "bf16", float32_module=float32, agreement_requests=held_out
    )
    agreement = json.loads((export_dir / AGREEMENT_FILE).read_text())
    # The example request's 2 texts, a request per bucket and the 3 held-out texts: a label each.
    assert agreement["precision"] == "bfloat16"
    assert agreement["labels"] == 2 + len(module.buckets) + len(TEXTS)
    assert agreement["label_agreement"] == 1.0
    assert 0 < agreement["max_probability_difference"] < 0.01
    assert xla_compiled_functions(export_dir) == []
    # Large batches run the layer norms in the form oneDNN fuses (`_whole_batch_branches`).
    assert "FusedBatchNormV3" in check_serving_ops(export_dir)
    bfloat16, default = _served(export_dir, exported_base / "classifier" / "1")
    assert bfloat16["label"] == default["label"]
    difference = np.abs(np.array(bfloat16["probabilities"]) - default["probabilities"]).max()
    assert 0 < difference <= agreement["max_probability_difference"] + 0.01
    # A batch that takes that form (33 rows of 32 tokens, over FUSED_KERNEL_MIN_VALUES values),
    # by text and by ids, in TF Serving's environment (oneDNN on: TensorFlow 2.21 fused a
    # layer-norm form chosen per layer into a graph that failed on fed ids).
    texts = [" ".join([text] * 16) for text in TEXTS] * 11  # each cut at SEQ_LENGTH
    ids = {
        name: value.numpy().tolist()
        for name, value in module.pack_texts(tf.constant(texts)).items()
    }
    assert len(texts) * SEQ_LENGTH * module.bert_config.hidden_size >= FUSED_KERNEL_MIN_VALUES
    calls = [
        {"export_dir": path, "signature": signature, "inputs": inputs}
        for signature, inputs in (("serving_default", {"text": texts}), ("serving_ids", ids))
        for path in (export_dir, exported_base / "classifier" / "1")
    ]
    by_text, by_text_float32, by_ids, by_ids_float32 = run_signatures(calls)
    for bfloat16_logits, float32_logits in ((by_text, by_text_float32), (by_ids, by_ids_float32)):
        np.testing.assert_allclose(bfloat16_logits["logits"], float32_logits["logits"], atol=0.05)


def test_a_bfloat16_module_traces_its_model_with_each_layer_norm_form(serving_modules):
    float32 = serving_modules["encoder"]
    bfloat16 = EncoderServing(float32.model, float32.preprocessor, precision="bfloat16")
    inputs = {name: tf.ones([2, 8], tf.int32) for name in ("input_word_ids", "input_mask")}
    inputs["input_type_ids"] = tf.zeros([2, 8], tf.int32)

    def operations(function) -> set[str]:
        return {op.type for op in function.get_concrete_function(inputs).graph.get_operations()}

    assert "FusedBatchNormV3" in operations(bfloat16._untracked.large_batch_call)
    assert "FusedBatchNormV3" not in operations(bfloat16._untracked.call)
    assert float32._untracked.large_batch_call is None
    # Outside those traces the copy keeps the element-wise form.
    assert {
        layer.normalize.__name__
        for layer in bfloat16.model._flatten_layers()
        if isinstance(layer, FastLayerNormalization)
    } == {"layer_normalization"}


@pytest.mark.parametrize("precision", ["bfloat16", "int8"])
def test_reduced_precision_export_outside_tolerance_is_refused(
    tmp_path, serving_modules, precision
):
    float32 = serving_modules["classifier"]
    module = ClassifierServing(float32.model, float32.preprocessor, precision=precision)
    exact = AgreementTolerance(min_label_agreement=1.0, max_probability_difference=0.0)
    refusal = rf"^{precision} disagrees with float32 .* max probability difference 0\.0"
    with pytest.raises(PrecisionAgreementError, match=refusal):
        export_for_serving(module, tmp_path, precision, float32_module=float32, tolerance=exact)
    with pytest.raises(ValueError, match=f"A {precision} export needs its float32 serving module"):
        export_for_serving(module, tmp_path, precision)
    assert not (tmp_path / precision).exists() or list((tmp_path / precision).iterdir()) == []


@pytest.mark.slow
def test_int8_export_serves_strings_and_records_its_agreement(
    tmp_path, serving_modules, exported_base
):
    float32 = serving_modules["classifier"]
    module = ClassifierServing(float32.model, float32.preprocessor, precision="int8")
    block = module.model.encoder.blocks[0]
    assert block.intermediate_dense.quantization_mode == "int8"
    assert block.intermediate_dense._kernel.dtype == "int8"
    assert float32.model.encoder.blocks[0].intermediate_dense.quantization_mode is None
    export_dir = export_for_serving(
        module, tmp_path, "int8", float32_module=float32, agreement_requests=[{"text": TEXTS}]
    )
    agreement = json.loads((export_dir / AGREEMENT_FILE).read_text())
    assert agreement["precision"] == "int8"
    assert agreement["labels"] == 2 + len(module.buckets) + len(TEXTS)
    assert agreement["label_agreement"] == 1.0
    assert 0 < agreement["max_probability_difference"] < 0.01
    # The int8 matmul (int8 x int8 -> int32) is an op TF Serving 2.21 registers.
    assert "BatchMatMulV3" in check_serving_ops(export_dir)
    int8, default = _served(export_dir, exported_base / "classifier" / "1")
    assert int8["label"] == default["label"]
    difference = np.abs(np.array(int8["probabilities"]) - default["probabilities"]).max()
    assert 0 < difference <= agreement["max_probability_difference"] + 0.01


def test_int8_with_feed_forward_shards_is_refused(serving_modules):
    float32 = serving_modules["classifier"]
    with pytest.raises(ValueError, match="feed_forward_shards=2 with precision int8"):
        ClassifierServing(
            float32.model, float32.preprocessor, precision="int8", feed_forward_shards=2
        )


def test_bfloat16_encoder_has_no_labels_to_check(tmp_path, serving_modules):
    float32 = serving_modules["encoder"]
    module = EncoderServing(float32.model, float32.preprocessor, precision="bfloat16")
    with pytest.raises(ValueError, match="EncoderServing outputs hold no labels"):
        export_for_serving(module, tmp_path, "bf16", float32_module=float32)


def test_unknown_precision_is_named(serving_modules):
    float32 = serving_modules["classifier"]
    with pytest.raises(ValueError, match=r"got 'float16'"):
        ClassifierServing(float32.model, float32.preprocessor, precision="float16")


@pytest.mark.parametrize(
    ("task", "options", "refused"),
    [
        ("masked_lm", {"top_k": 0}, "top_k must be positive, got 0"),
        ("masked_lm", {"max_masks": 0}, "max_masks must be positive, got 0"),
        ("masked_lm", {"top_k": 40_000}, "top_k 40000 is more than the 30522 tokens"),
        ("token_classifier", {"max_entities": 0}, "max_entities must be positive, got 0"),
        ("question_answerer", {"max_answer_length": 0}, "max_answer_length must be positive"),
        ("question_answerer", {"max_question_length": 0}, "max_question_length must be positive"),
        # SEQ_LENGTH 32: a 29-piece question leaves [CLS] q [SEP] [SEP] no passage token.
        ("question_answerer", {"max_question_length": 29}, r"seq_length \(32\) leaves no room"),
    ],
)
def test_task_options_that_serve_nothing_are_refused(serving_modules, task, options, refused):
    """Options that exported before and then answered with nothing (no fillers, no masks, no
    entities), ignored the question, or could not trace (more fillers than tokens)."""
    module = serving_modules[task]
    with pytest.raises(ConfigError, match=refused):
        type(module)(module.model, module.preprocessor, **options)


def test_question_length_by_default_leaves_short_windows_half_their_tokens(serving_modules):
    """64 pieces as SQuAD keeps, or half a window where that is fewer: a window of 32 keeps 14
    of the question (29 tokens besides [CLS] q [SEP] p [SEP]), the passage 15 or more."""
    module = serving_modules["question_answerer"]
    default = type(module)(module.model, module.preprocessor)
    assert (module.preprocessor.seq_length, default.max_question_length) == (SEQ_LENGTH, 14)


@pytest.mark.parametrize(
    "task", ["classifier", "token_classifier", "question_answerer", "masked_lm"]
)
def test_agreement_compares_each_tasks_labels(serving_modules, minilm_dir, task):
    float32 = serving_modules[task]
    bfloat16 = builders.serving_modules(str(minilm_dir / "vocab.txt"), precision="bfloat16")[task]
    request = {"text": TEXTS, "question": ["Who?"] * 3, "context": TEXTS}
    texts = [tf.constant(request[name]) for name in float32.example_inputs()]
    batch = float32.pack_texts(*texts)
    mask = batch["input_mask"].numpy()
    masks = (batch["input_word_ids"].numpy() == float32.tokenizer.token_to_id("[MASK]")).sum(1)
    max_masks = getattr(float32, "max_masks", 0)
    expected = {
        "classifier": len(TEXTS),  # a class per row
        "token_classifier": int(mask.sum()),  # a tag per real token
        "question_answerer": 2 * len(TEXTS),  # start and end per row
        "masked_lm": int(np.minimum(masks, max_masks).sum()),  # top filler per mask
    }[task]
    agreement = measure_agreement(bfloat16, float32, [batch])
    assert agreement.labels == expected > 0
    assert agreement.label_agreement >= 0.9
    assert 0 < agreement.max_probability_difference < 0.05
    same = measure_agreement(float32, float32, [batch])
    assert (same.label_agreement, same.max_probability_difference) == (1.0, 0.0)
