"""The fine-tuning command-line jobs parse their flags and run end to end (tiny checkpoint)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import load_preprocessor
from keras_bert.export import export_for_serving, serving_module
from keras_bert.finetuning.token_classification import evaluate_token_classifier
from pipelines import finetune_classifier, finetune_ner, finetune_qa
from pipelines.export import ExportJob, trained_model
from pipelines.finetune_ner import read_sentences
from tests.export.fresh_process import run_signatures

pytestmark = pytest.mark.slow


def common_flags(checkpoint, output_dir, epochs: str = "1") -> list[str]:
    return [
        "--checkpoint", str(checkpoint), "--output-dir", str(output_dir),
        "--epochs", epochs, "--batch-size", "8",
    ]  # fmt: skip


def split_flags(directory, name: str) -> list[str]:
    """`--train` and `--eval` for the `<name>.train.jsonl` / `<name>.dev.jsonl` pair."""
    return ["--train", str(directory / f"{name}.train.jsonl"),
            "--eval", str(directory / f"{name}.dev.jsonl")]  # fmt: skip


def test_finetune_classifier_job(tiny_checkpoint_dir, data_dir, tmp_path, capsys):
    sentiment = data_dir / "sentiment"
    summary = finetune_classifier.main(
        [
            *split_flags(sentiment, "movie_snippets"),
            "--seq-length",
            "32",
            "--max-train-examples",
            "16",
            *common_flags(tiny_checkpoint_dir, tmp_path),
        ]  # fmt: skip
    )
    # 16 snippets in batches of similar length: 4 batches, one epoch.
    assert summary["train_steps"] == 4
    # One epoch, timed on its own (the speed benchmarks compare the epochs after the first).
    assert len(summary["epoch_seconds"]) == 1 and summary["epoch_seconds"][0] > 0
    assert '"train_steps": 4' in capsys.readouterr().out
    assert (tmp_path / "model.keras").is_file() and (tmp_path / "metrics.json").is_file()
    # The saved model carries its preprocessor: it answers text, and exports without flags.
    job = ExportJob(task="classifier", name="sentiment", model=str(tmp_path / "model.keras"))
    model, preprocessor = trained_model(job)
    assert preprocessor is model.preprocessor and preprocessor.seq_length == 32
    assert model.predict(["A wonderful film"], verbose=0).shape == (1, model.num_classes)
    # Its export saves the model's weights once, and neither the optimizer's state it carries
    # nor its dropout layers' seeds (the serving copy shares the weights, not the seeds).
    assert model.optimizer.variables
    export_dir = export_for_serving(serving_module(model), tmp_path / "saved_models", "sentiment")
    saved = tf.train.list_variables(str(export_dir / "variables" / "variables"))
    saved_values = sum(np.prod(shape) for name, shape in saved if "VARIABLE_VALUE" in name)
    assert saved_values == sum(np.prod(weight.shape) for weight in model.weights)
    call = {"export_dir": export_dir, "signature": "serving_default"}
    [served] = run_signatures([{**call, "inputs": {"text": ["A wonderful film"]}}])
    assert served["label"][0] in model.label_names


def test_finetune_ner_and_qa_jobs(tiny_checkpoint_dir, data_dir, tmp_path):
    ner = data_dir / "ner"
    summary = finetune_ner.main(
        [
            *split_flags(ner, "wnut16"),
            "--seq-length",
            "48",
            *common_flags(tiny_checkpoint_dir, tmp_path / "ner", "0.01"),
        ]  # fmt: skip
    )
    # The scores are the saved model's on the dev tweets, as the library evaluates them.
    restored = keras.saving.load_model(tmp_path / "ner" / "model.keras")
    preprocessor = load_preprocessor(tiny_checkpoint_dir, seq_length=48)
    dev = read_sentences(str(ner / "wnut16.dev.jsonl"))
    assert summary["evaluation"] == evaluate_token_classifier(restored, preprocessor, dev)
    assert summary["evaluation"]["per_type"]  # the dev tweets hold entities
    squad = str(data_dir / "qa" / "squad_v1_sample.json")
    summary = finetune_qa.main(
        [
            "--train",
            squad,
            "--eval",
            squad,
            "--seq-length",
            "96",
            "--doc-stride",
            "48",
            *common_flags(tiny_checkpoint_dir, tmp_path / "qa"),
        ]  # fmt: skip
    )
    assert summary["evaluation"]["count"] == 5
