"""ONNX exports: the graph of every family and head equals the Keras model, the runtime answers
as the SavedModel's string signatures, tokenizer.json gives our ids, int8 keeps its labels."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import keras
import numpy as np
import onnx
import onnxruntime
import openvino
import pytest
import tensorflow as tf

import keras_bert
from bench.bench_transformers_twins import FAMILIES
from keras_bert.decoding.mask_fillers import mask_token_of
from keras_bert.export.onnx import MaskedLMOptions, hf_tokenizer, task_graph, tokenizer_agreement
from keras_bert.export.onnx.model_files import parameter_count
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.serving import OnnxModel
from keras_bert.serving.graph_runtimes import ONE_ROW_STEP, one_row_lengths
from tests.export.builders import TASKS
from tests.export.test_bad_inputs import HOSTILE_TEXTS

# DeBERTa's attention is a `MultiHeadAttention` node with a bias, which OpenVINO does not read.
OPENVINO_FAMILIES = tuple(family for family in FAMILIES if family != "deberta_v3")
TEXTS = [
    "The cat sat on the mat.",
    "A longer sentence, with more words in it, to be padded by the others!",
    "",
    "Special tokens: [MASK] and <mask>.",
]


def _checkpoint(family, reference_dir, minilm_dir):
    return minilm_dir if family == "bert" else reference_dir / "variants" / family


def _masked_lm_checkpoint(checkpoint: Path) -> Path:
    """The checkpoint of a family's masked LM: ELECTRA's discriminator has none, its generator
    beside it (the same vocabulary) has."""
    return checkpoint.parent / "generator" if checkpoint.name == "discriminator" else checkpoint


@functools.cache
def _family_models(checkpoint: Path) -> dict:
    """A checkpoint's preprocessor, `TEXTS` packed by it (numpy `feeds`), encoder, a model of
    every head on it (new heads, seeded) and its masked LM (MiniLM's is new: it has no
    masked-LM head), loaded once per module."""
    preprocessor = keras_bert.load_preprocessor(checkpoint, seq_length=24)
    encoder = keras_bert.load_encoder(checkpoint)
    keras.utils.set_random_seed(0)
    heads = {
        "classifier": keras_bert.BertClassifier(encoder, 3),
        "regressor, mean pooling": keras_bert.BertClassifier(encoder, 1, pooling="mean"),
        "token classifier": keras_bert.BertTokenClassifier(encoder, ["O", "B-x", "I-x"]),
        "question answerer": keras_bert.BertQuestionAnswerer(encoder),
    }
    masked_lm = (
        keras_bert.BertMaskedLM(encoder)
        if encoder.bert_config.model_type == "bert"
        else keras_bert.load_masked_lm(_masked_lm_checkpoint(checkpoint))
    )
    mask_id = preprocessor.tokenizer.token_to_id(mask_token_of(preprocessor.tokenizer))
    return {
        "preprocessor": preprocessor,
        "feeds": {name: value.numpy() for name, value in preprocessor(tf.constant(TEXTS)).items()},
        "encoder": encoder,
        "heads": heads,
        "masked_lm": masked_lm,
        "masked_lm_options": MaskedLMOptions(mask_id, top_k=3, max_masks=2),
    }


def _run(model, feeds, masked_lm=None) -> dict[str, np.ndarray]:
    graph = task_graph(model, masked_lm)
    session = onnxruntime.InferenceSession(graph.SerializeToString())
    names = [output.name for output in session.get_outputs()]
    inputs = {graph_input.name: feeds[graph_input.name] for graph_input in session.get_inputs()}
    return dict(zip(names, session.run(names, inputs), strict=True)), graph


def _op_counts(graph: onnx.GraphProto) -> Counter:
    """How many nodes of each type `graph` holds, those of its subgraphs (a `Loop`'s body)
    included."""
    counts = Counter(node.op_type for node in graph.node)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                counts += _op_counts(attribute.g)
    return counts


def _close_at_real_tokens(ours, theirs, mask, atol=1e-4):
    theirs = np.asarray(theirs)
    if ours.ndim >= 2 and ours.shape[:2] == mask.shape:
        ours, theirs = ours[mask], theirs[mask]
    np.testing.assert_allclose(ours, theirs, atol=atol)


@pytest.mark.parametrize("family", OPENVINO_FAMILIES)
def test_openvino_runs_every_graph_as_onnx_runtime_does(
    family, reference_dir, minilm_dir, tmp_path
):
    """OpenVINO reads the float32 graphs (their `com.microsoft` nodes included) and computes
    what ONNX Runtime does, in float32 (its default on a CPU with bfloat16 units is bfloat16)."""
    models = _family_models(_checkpoint(family, reference_dir, minilm_dir))
    feeds, mask = models["feeds"], models["feeds"]["input_mask"].astype(bool)
    core = openvino.Core()
    for index, model in enumerate([models["encoder"], *models["heads"].values()]):
        expected, graph = _run(model, feeds)
        path = tmp_path / f"{index}.onnx"
        path.write_bytes(graph.SerializeToString())
        compiled = core.compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        inputs = [graph_input.get_any_name() for graph_input in compiled.inputs]
        outputs = compiled({name: feeds[name] for name in inputs})
        for output, value in outputs.items():
            [name] = output.get_names() & set(expected)
            _close_at_real_tokens(value, expected[name], mask, atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_head_equals_keras(family, reference_dir, minilm_dir):
    models = _family_models(_checkpoint(family, reference_dir, minilm_dir))
    preprocessor, encoder, feeds = models["preprocessor"], models["encoder"], models["feeds"]
    mask = feeds["input_mask"].astype(bool)
    outputs, graph = _run(encoder, feeds)
    expected = encoder(feeds)
    _close_at_real_tokens(outputs["sequence_output"], expected["sequence_output"], mask)
    counts = _op_counts(graph.graph)
    layers = encoder.bert_config.num_layers
    # One attention node per layer; ModernBERT's rotary attention is standard operators, its
    # global layers' in a `Loop` over query blocks.
    fused = counts["Attention"] + counts["MultiHeadAttention"]
    assert (counts["Softmax"] if family == "modernbert" else fused) == layers
    global_layers = sum(
        not getattr(block.attention, "attention_window", 0) for block in encoder.blocks
    )
    assert counts["Loop"] == (global_layers if family == "modernbert" else 0)
    assert counts["Einsum"] == 0
    for model in models["heads"].values():
        outputs, _ = _run(model, feeds)
        expected = model(feeds)
        expected = expected if isinstance(expected, dict) else {"logits": expected}
        for output, value in expected.items():
            _close_at_real_tokens(outputs[output], value, mask)
    if family == "bert":
        return  # MiniLM has no masked-LM head
    masked_lm = models["masked_lm"]
    outputs, _ = _run(masked_lm, feeds, models["masked_lm_options"])
    serving = keras_bert.export.MaskedLMServing(masked_lm, preprocessor, 3, 2)  # kept alive
    expected = serving.serve_ids(feeds)
    assert outputs["num_masks"].tolist() == [0, 0, 0, 1]
    np.testing.assert_array_equal(outputs["top_ids"], expected["top_ids"])
    np.testing.assert_allclose(
        outputs["top_probabilities"], expected["top_probabilities"], atol=1e-4
    )


def test_modernbert_global_attention_scores_a_query_block_at_a_time(reference_dir, tmp_path):
    """The global layer's scores in ONNX Runtime are `[batch, heads, block, sequence]`, one
    query block of 512 at a time (a `Loop`), never `[sequence, sequence]`: at 1,000 tokens
    (two blocks, the last padded; the checkpoint reads 1,024) no value of the run is as large,
    and the sequence output equals Keras'."""
    encoder = _family_models(_checkpoint("modernbert", reference_dir, None))["encoder"]
    heads, length = encoder.bert_config.num_heads, 1000
    ids = np.random.default_rng(0).integers(5, encoder.bert_config.vocab_size, (1, length))
    feeds = {"input_word_ids": ids.astype("int32"), "input_mask": np.ones((1, length), "int32")}
    options = onnxruntime.SessionOptions()
    options.enable_profiling, options.profile_file_prefix = True, str(tmp_path / "profile")
    session = onnxruntime.InferenceSession(task_graph(encoder).SerializeToString(), options)
    [sequence] = session.run(["sequence_output"], feeds)
    events = json.loads(Path(session.end_profiling()).read_text())
    shapes = [
        next(iter(output.values()))
        for event in events
        if event.get("cat") == "Node"
        for output in event["args"].get("output_type_shape", [])
    ]
    assert [1, heads, 512, length] in shapes
    assert max(int(np.prod(shape)) for shape in shapes) < heads * length * length
    expected = encoder({**feeds, "input_type_ids": np.zeros_like(ids)})["sequence_output"]
    np.testing.assert_allclose(sequence, expected, atol=1e-4)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_graph_holds_each_keras_parameter_once(family, reference_dir, minilm_dir):
    """ALBERT's shared blocks, the masked LM's tied decoder and DeBERTa's relative table: one
    initializer each, so the float32 graph's parameters are the Keras model's, but for a pooler
    that the model's outputs do not read (the graph leaves it out)."""
    models = _family_models(_checkpoint(family, reference_dir, minilm_dir))
    options = models["masked_lm_options"]
    pooler = models["encoder"].pooler
    for name, model in {
        "encoder": models["encoder"],
        **models["heads"],
        "masked LM": models["masked_lm"],
    }.items():
        graph = task_graph(model, options if name == "masked LM" else None)
        unread = pooler is not None and not getattr(model, "uses_pooled_output", True)
        expected = model.count_params() - (pooler.count_params() if unread else 0)
        assert parameter_count(graph) == expected, name
    if family == "bert":  # the pretrainer's masked-LM graph leaves its next-sentence head out
        pretrainer = BertPretrainer(models["encoder"])
        next_sentence = pretrainer.next_sentence_head.count_params() + pooler.count_params()
        expected = pretrainer.count_params() - next_sentence
        assert parameter_count(task_graph(pretrainer, options)) == expected


@pytest.mark.parametrize("family", FAMILIES)
def test_a_classifiers_last_block_computes_the_first_token_alone(family, reference_dir, minilm_dir):
    """The feed-forward of the classifier's last block runs one row a sequence (its attention
    still reads every token: the logits equal Keras', `test_every_head_equals_keras`); every
    other block, and every block of the encoder's graph, one row a token."""
    models = _family_models(_checkpoint(family, reference_dir, minilm_dir))
    feeds = models["feeds"]
    length, layers = feeds["input_mask"].shape[1], models["encoder"].bert_config.num_layers
    for model, last_rows in ((models["heads"]["classifier"], 1), (models["encoder"], length)):
        graph = task_graph(model)
        feed_forward = [
            node.output[0]
            for node in graph.graph.node
            if node.op_type == "MatMul" and "/intermediate" in node.name
        ]
        graph.graph.output.extend(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None)
            for name in feed_forward
        )
        session = onnxruntime.InferenceSession(graph.SerializeToString())
        inputs = {value.name: feeds[value.name] for value in session.get_inputs()}
        rows = [value.shape[1] for value in session.run(feed_forward, inputs)]
        assert rows == [length] * (layers - 1) + [last_rows], type(model).__name__


@pytest.mark.parametrize("family", FAMILIES)
def test_tokenizer_json_ids_equal_ours(family, reference_dir, minilm_dir, data_dir):
    """On a sample of shared/data (bench/onnx_tokenizer_agreement.py checks every text) and
    on hostile texts."""
    from bench.onnx_tokenizer_agreement import shared_texts

    preprocessor = keras_bert.load_preprocessor(
        _checkpoint(family, reference_dir, minilm_dir), seq_length=32
    )
    texts = shared_texts(data_dir)[::500] + [
        text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        for text in HOSTILE_TEXTS
    ]
    texts += [
        "Ｆｕｌｌｗｉｄｔｈ ﬁ",
        "café naïve ÀÉÎ",
        "``quoted''",
        "a\x1fb\u200bc",
        "1990, 2000,5",
    ]
    agreement = tokenizer_agreement(hf_tokenizer(preprocessor), preprocessor, texts)
    assert agreement.identical == agreement.texts, agreement.first_difference


# Texts of shared/data with two segmentations of equal score (see tokenizer_json.py).
SCORE_TIE_TEXTS = ["Mmmm", "---------------------", "Duluth 5.06 up .02 --- --- -- --"]


@pytest.mark.xfail(
    raises=AssertionError,
    strict=True,
    reason="sentencepiece breaks score ties by float32 sums along the text, tokenizers' Unigram "
    "by float64 sums word by word, and tokenizer.json has no setting for it",
)
@pytest.mark.parametrize("family", ("albert", "deberta_v3"))
def test_tokenizer_json_breaks_score_ties_as_sentencepiece(family, reference_dir):
    preprocessor = keras_bert.load_preprocessor(reference_dir / "variants" / family)
    tokenizer = hf_tokenizer(preprocessor)
    agreement = tokenizer_agreement(tokenizer, preprocessor, SCORE_TIE_TEXTS)
    assert agreement.identical == agreement.texts, agreement.first_difference


def _savedmodel_outputs(module, task, texts):
    if task == "question_answerer":
        return module.serve_text(tf.constant(texts), tf.constant(texts))
    return module.serve_text(tf.constant(texts))


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_runtime_answers_as_the_savedmodel(onnx_exported_base, serving_modules, task):
    """Strings, hostile ones included, through OnnxModel and through the string signature."""
    model = OnnxModel(onnx_exported_base / task / "1")
    texts = ["Barack Obama visited Paris in June.", "The [MASK] sat on the [MASK] mat."]
    texts += HOSTILE_TEXTS
    ours = model.predict(texts, texts) if task == "question_answerer" else model.predict(texts)
    expected = _savedmodel_outputs(serving_modules[task], task, texts)
    assert set(ours) == set(expected)
    for name, value in expected.items():
        value = value.numpy()
        if value.dtype == object:
            decoded = np.vectorize(lambda text: text.decode("utf-8"), otypes=[object])(value)
            np.testing.assert_array_equal(ours[name], decoded, err_msg=name)
        else:
            np.testing.assert_allclose(ours[name], value, atol=1e-5, err_msg=name)
    for name, value in model.predict([]).items():
        assert value.shape[0] == 0, name


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_runtime_runs_rows_by_length_as_one_batch(onnx_exported_base, data_dir, task):
    """`run` in groups of similar length gives each row what the whole padded batch gives it,
    at every real position (outputs over positions keep the batch's width)."""
    texts = _dev_texts(data_dir, 12) + ["Paris.", "The [MASK] sat on the [MASK] mat. " * 6]
    grouped = OnnxModel(onnx_exported_base / task / "1", call_cost_tokens=0)
    whole = OnnxModel(onnx_exported_base / task / "1", call_cost_tokens=None)
    ids = [encoding.ids for encoding in grouped.encode(texts)]
    packed = grouped.pack(ids, ids) if task == "question_answerer" else grouped.pack(ids)
    ours, expected = grouped.run(packed), whole.run(packed)
    mask = packed["input_mask"].astype(bool)
    for name, value in expected.items():
        assert ours[name].shape == value.shape, name
        real = mask if grouped.sequence_axes[name] else slice(None)
        np.testing.assert_allclose(ours[name][real], value[real], atol=1e-5, err_msg=name)


@pytest.mark.slow
def test_runtime_cuts_long_texts_as_the_savedmodel_with_a_warning(
    onnx_exported_base, serving_modules, caplog
):
    model = OnnxModel(onnx_exported_base / "classifier" / "1")
    texts = ["word " * (3 * model.seq_length), "short"]
    with caplog.at_level("WARNING"):
        ours = model.predict(texts)
    assert any("1 of 2 texts have more tokens" in record.getMessage() for record in caplog.records)
    expected = serving_modules["classifier"].serve_text(tf.constant(texts))
    np.testing.assert_allclose(ours["probabilities"], expected["probabilities"], atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_openvino_runtime_answers_as_onnx_runtime(onnx_exported_base, task):
    """`OnnxModel(runtime="openvino")` in float32 gives ONNX Runtime's answers (positions found
    by the export's `output_axes`, which OpenVINO does not name), a batch through the graph of
    any shape and one text through the one-row graph of the narrowest width that holds it."""
    path = onnx_exported_base / task / "1"
    texts = ["Barack Obama visited Paris in June.", "The [MASK] sat on the [MASK] mat.", ""]
    texts.append(" ".join(["Paris"] * (ONE_ROW_STEP + 3)))  # wider than the first width
    models = [OnnxModel(path), OnnxModel(path, runtime="openvino")]
    assert [model.runtime for model in models] == ["onnxruntime", "openvino"]
    assert models[1].sequence_axes == models[0].sequence_axes
    seq_length = models[1].seq_length
    assert models[1].session.one_row_lengths == one_row_lengths(seq_length, models[1].longest_input)
    assert OnnxModel(path, runtime="openvino", one_row_graphs=False).session.one_row_lengths == []
    for batch in [texts, *([text] for text in texts)]:
        expected, ours = (
            model.predict(batch, batch) if task == "question_answerer" else model.predict(batch)
            for model in models
        )
        for name, value in expected.items():
            if value.dtype == object:
                np.testing.assert_array_equal(ours[name], value, err_msg=name)
            else:
                np.testing.assert_allclose(ours[name], value, atol=1e-5, err_msg=name)


def test_runtime_choices_are_checked(onnx_exported_base, tmp_path):
    from keras_bert.serving.graph_runtimes import graph_session

    path = onnx_exported_base / "classifier" / "1"
    with pytest.raises(ValueError, match="runtime must be one of .*'onnxruntime', 'openvino'"):
        OnnxModel(path, runtime="tensorrt")
    with pytest.raises(ValueError, match="inference_precision 'bfloat16' is OpenVINO's"):
        OnnxModel(path, inference_precision="bfloat16")
    with pytest.raises(ValueError, match="inference_precision must be one of"):
        OnnxModel(path, runtime="openvino", inference_precision="float16")
    with pytest.raises(ValueError, match="no axes given for outputs .*; export the model again"):
        graph_session(path / "model.onnx", "openvino", output_axes={})


@pytest.mark.slow
def test_bfloat16_export_runs_in_openvino_and_keeps_labels(serving_modules, data_dir, tmp_path):
    """`--precision bfloat16`: the float32 graph, which OpenVINO computes in bfloat16, checked
    on the held-out half of real sentences; `OnnxModel` opens it so."""
    from keras_bert.export.onnx import prepare_onnx
    from keras_bert.export.onnx.quantization import MAX_RELATIVE_ERROR, MIN_LABEL_AGREEMENT

    texts = _dev_texts(data_dir, 400)
    export = prepare_onnx(serving_modules["classifier"], "bfloat16", [{"text": texts}])
    float32 = prepare_onnx(serving_modules["classifier"], "float32", [{"text": texts}])
    assert export.model.SerializeToString() == float32.model.SerializeToString()
    assert export.metadata["precision"] == "bfloat16"
    assert export.metadata["runtime"] == {"name": "openvino", "inference_precision": "bfloat16"}
    bfloat16 = export.metadata["checks"]["bfloat16"]
    assert bfloat16["labels"] == 200 and bfloat16["label_agreement"] >= MIN_LABEL_AGREEMENT
    assert 0 < bfloat16["relative_error"] <= MAX_RELATIVE_ERROR
    export.write(tmp_path)
    model = OnnxModel(tmp_path)
    assert (model.runtime, model.session.inference_precision) == ("openvino", "bfloat16")
    ours = model.predict(texts[:64])
    theirs = OnnxModel(tmp_path, runtime="onnxruntime").predict(texts[:64])
    assert np.mean(ours["label"] == theirs["label"]) >= 0.95
    np.testing.assert_allclose(ours["probabilities"], theirs["probabilities"], atol=0.05)


@pytest.mark.slow
def test_export_layout_and_metadata(onnx_exported_base):
    version = onnx_exported_base / "classifier" / "1"
    assert sorted(path.name for path in version.iterdir()) == [
        "keras_bert.json",
        "model.onnx",
        "tokenizer.json",
    ]
    metadata = json.loads((version / "keras_bert.json").read_text())
    assert metadata["task"] == "classifier" and metadata["family"] == "bert"
    assert metadata["label_names"] == ["negative", "positive", "neutral"]
    assert metadata["inputs"] == ["input_word_ids", "input_mask", "input_type_ids"]
    assert set(metadata["outputs"]) == {"logits"}
    assert metadata["output_axes"] == {"logits": ["batch", 3]}
    assert metadata["checks"]["parity_max_difference"] <= 1e-4


@pytest.mark.slow
def test_runtime_imports_no_tensorflow(onnx_exported_base):
    """A fresh process serves every task with only onnxruntime, tokenizers and numpy."""
    script = textwrap.dedent(
        f"""
        import sys
        from keras_bert.serving import OnnxModel
        for task in {list(TASKS)!r}:
            model = OnnxModel({str(onnx_exported_base)!r} + "/" + task + "/1", intra_op_threads=1)
            texts = ["Paris in June.", ""]
            model.predict(texts, texts if task == "question_answerer" else None)
        heavy = sorted(name for name in ("tensorflow", "keras", "torch") if name in sys.modules)
        print("imported:", heavy)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert "imported: []" in result.stdout, result.stdout + result.stderr


def _dev_texts(data_dir, count: int) -> list[str]:
    lines = (data_dir / "sentiment" / "movie_snippets.dev.jsonl").read_text().splitlines()
    return [json.loads(line)["text"] for line in lines[:count]]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["dynamic", "static"])
def test_int8_classifier_keeps_labels_on_held_out_texts(serving_modules, data_dir, mode):
    """int8 on real sentences: quantized matmuls (dynamic: and attention) checked against
    float32 on the half of the texts that chose nothing (a random tiny model's labels are near
    ties, so the search may leave nodes in float32; what it returns meets both bounds)."""
    from keras_bert.export.onnx import prepare_onnx
    from keras_bert.export.onnx.quantization import MAX_RELATIVE_ERROR, MIN_LABEL_AGREEMENT
    from keras_bert.export.precision import PrecisionAgreementError

    texts = _dev_texts(data_dir, 400)
    try:
        export = prepare_onnx(serving_modules["classifier"], "int8", [{"text": texts}], mode)
    except PrecisionAgreementError as error:
        pytest.skip(f"no int8 configuration agrees on this random model: {error}")
    counts = Counter(node.op_type for node in export.model.graph.node)
    int8 = export.metadata["checks"]["int8"]
    if mode == "dynamic":
        assert int8["int8_nodes"] == counts["QAttention"] + counts["MatMulInteger"] > 0
    else:  # the attention's projection a MatMul like the others, weights through DequantizeLinear
        # (the last block's one query attends in standard operators)
        assert counts["Attention"] == 0 and counts["MultiHeadAttention"] == 1
        assert int8["int8_nodes"] > 0 and counts["QuantizeLinear"] >= int8["int8_nodes"]
    # Every other text held out (texts of one row each: their labels).
    assert int8["mode"] == mode and int8["labels"] == 200 and int8["search_labels"] == 202
    assert int8["label_agreement"] >= MIN_LABEL_AGREEMENT and int8["per_channel"]
    assert int8["search_relative_error"] <= MAX_RELATIVE_ERROR  # the held-out error: reported
    assert export.metadata["precision"] == "int8"


def test_int8_and_auto_refuse_without_enough_agreement_data(serving_modules, data_dir):
    from keras_bert.errors import ConfigError, DataError
    from keras_bert.export.onnx import choose_onnx_precision, prepare_onnx
    from keras_bert.export.onnx.exporter import MIN_AGREEMENT_TEXTS, check_agreement_inputs

    classifier = serving_modules["classifier"]
    with pytest.raises(DataError, match="pass --agreement-data.*; got 0"):
        prepare_onnx(classifier, "int8")
    too_few = [{"text": _dev_texts(data_dir, MIN_AGREEMENT_TEXTS - 1)}]
    with pytest.raises(DataError, match=f"at least {MIN_AGREEMENT_TEXTS} .*; got 299"):
        prepare_onnx(classifier, "int8", too_few)
    with pytest.raises(DataError, match="pass --agreement-data"):
        choose_onnx_precision(classifier, too_few)
    # An encoder's int8 is refused whatever the data (auto then keeps float32).
    with pytest.raises(ConfigError, match="hold none"):
        check_agreement_inputs(serving_modules["encoder"], too_few)


def test_a_sequence_longer_than_the_positions_is_refused(minilm_dir):
    from keras_bert.errors import ConfigError
    from keras_bert.export import ClassifierServing
    from keras_bert.export.onnx import prepare_onnx
    from keras_bert.text import BertPreprocessor

    preprocessor = BertPreprocessor(str(minilm_dir / "vocab.txt"), seq_length=32)
    config = keras_bert.BertConfig.preset(
        "tiny", vocab_size=len(preprocessor.tokenizer.vocabulary), max_position_embeddings=16
    )
    classifier = keras_bert.BertClassifier(keras_bert.BertEncoder(config), 2)
    # Refused by the serving module already, before the ONNX export is asked for.
    with pytest.raises(ConfigError, match="seq_length 32 is longer than the 16 tokens"):
        prepare_onnx(ClassifierServing(classifier, preprocessor))


@pytest.mark.slow
def test_auto_precision_times_float32_bfloat16_and_each_int8_mode(serving_modules, data_dir):
    from keras_bert.export.onnx import choose_onnx_precision
    from keras_bert.export.onnx.openvino_bfloat16 import bfloat16_offered
    from keras_bert.export.onnx.precision_choice import candidate_name

    export, timings = choose_onnx_precision(
        serving_modules["classifier"],
        [{"text": _dev_texts(data_dir, 300)}],
        rounds=1,
        batch1_requests=4,
    )
    offered = ["bfloat16"] if bfloat16_offered() else []
    expected = ["float32", *offered, "int8 dynamic", "int8 static"]
    assert [timing.precision for timing in timings] == expected
    passed = [timing for timing in timings if timing.refused is None]
    fastest = min(passed, key=lambda timing: timing.ms_per_sentence)
    assert candidate_name(export) == fastest.precision
