"""pipelines/export.py end to end on the real MiniLM checkpoint, checked against Hugging Face."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.decoding.buckets import bucket_length
from keras_bert.export.warmup import read_warmup_requests
from tests.export.fresh_process import run_signatures

REPO_ROOT = Path(__file__).resolve().parents[2]
BUCKETS = (32, 64)  # not the default (8, 16, ... 64): the flag is read


@pytest.mark.slow
def test_exported_minilm_embeds_like_hugging_face(tmp_path, reference):
    base_dir = tmp_path / "saved_models"
    command = [sys.executable, "-m", "pipelines.export", "--task", "encoder", "--name", "minilm"]
    # With the feed-forward weights in two halves (the same encoder, computed in parallel) and
    # buckets of its own.
    command += ["--base-dir", str(base_dir), "--seq-length", "64", "--feed-forward-shards", "2"]
    command += ["--buckets", *map(str, BUCKETS)]
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"exported {base_dir / 'minilm' / '1'}" in result.stdout
    assert "docker run" in result.stdout and "tensorflow/serving:2.21.0" in result.stdout
    assert (base_dir / "models.config").read_text().count("name: ") == 1
    warmed_buckets = {
        int(bucket_length(tf.constant(tf.make_ndarray(request.inputs["input_mask"])), BUCKETS))
        for log in read_warmup_requests(base_dir / "minilm" / "1")
        if (request := log.predict_log.request).model_spec.signature_name == "serving_ids"
    }
    assert warmed_buckets == set(BUCKETS)

    texts = reference["texts"]["singles"]
    [outputs] = run_signatures(
        [
            {
                "export_dir": base_dir / "minilm" / "1",
                "signature": "serving_default",
                "inputs": {"text": texts},
            }
        ]
    )
    np.testing.assert_allclose(
        outputs["pooled_output"], reference["singles_pooled_output"], atol=1e-4
    )
    sequence_output = reference["singles_sequence_output"]
    mask = reference["singles_attention_mask"][:, :, None]
    np.testing.assert_allclose(outputs["cls_embedding"], sequence_output[:, 0], atol=1e-4)
    np.testing.assert_allclose(
        outputs["mean_embedding"], (sequence_output * mask).sum(1) / mask.sum(1), atol=1e-4
    )


def test_agreement_data_becomes_one_request_of_the_signature_inputs(tmp_path, serving_modules):
    from keras_bert.errors import DataError
    from pipelines.export import agreement_requests

    path = tmp_path / "held_out.jsonl"
    path.write_text('{"text": "Great.", "label": "pos"}\n\n{"text": "Awful.", "label": "neg"}\n')
    assert agreement_requests(serving_modules["classifier"], str(path)) == [
        {"text": ["Great.", "Awful."]}
    ]
    assert agreement_requests(serving_modules["classifier"], None) == []
    with pytest.raises(DataError, match=r"lack the fields \['question', 'context'\]"):
        agreement_requests(serving_modules["question_answerer"], str(path))


# Builds, checks and traces a serving module per precision: ~15 s on 2 cores.
@pytest.mark.slow
def test_precision_auto_chooses_the_fastest_measured_precision_that_serves(serving_modules, capsys):
    import functools
    import re

    from keras_bert.export import serving_module
    from pipelines.export import chosen_precision

    float32 = serving_modules["classifier"]
    # int8 keeps the feed-forward in one block: refused with 2 shards; the others are timed.
    make_module = functools.partial(
        serving_module, float32.model, float32.preprocessor, feed_forward_shards=2
    )
    chosen = chosen_precision(make_module, float32, [{"text": ["Great.", "Awful.", "Fine."]}])
    printed = capsys.readouterr().out
    assert "refused: feed_forward_shards=2 with precision int8" in printed
    measured = {
        precision: float(cost)
        for precision, cost in re.findall(
            r"^\s+(\w+): batch 1 .*? ([\d.]+) ms/sentence", printed, re.M
        )
        if precision != "int8"
    }
    assert set(measured) == {"float32", "bfloat16"}
    # The printed costs are rounded to 0.01 ms: two precisions can print the same least one.
    assert measured[chosen] == min(measured.values())
    assert printed.rstrip().endswith(f"chose {chosen}")
