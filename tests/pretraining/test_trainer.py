import random

import keras
import numpy as np
import pytest

from keras_bert.data import (
    MaskingConfig,
    PretrainingDataConfig,
    create_pretraining_tfrecords,
    read_text_documents,
    tokenize_documents,
)
from keras_bert.errors import DataError
from keras_bert.pretraining import PretrainingConfig, build_datasets, run_pretraining
from keras_bert.pretraining.trainer import tokenized_documents
from keras_bert.text import WordPieceTokenizer, load_vocabulary
from pipelines.pretrain import pretraining_config


def test_config_is_validated(tmp_path):
    with pytest.raises(ValueError, match="multiple of steps_per_checkpoint"):
        PretrainingConfig(str(tmp_path), input_files=["a"], vocabulary_file="v", total_steps=15)
    with pytest.raises(ValueError, match="exactly one of"):
        PretrainingConfig(str(tmp_path), vocabulary_file="v")
    # Text input streams in graph, so TPU workers take it too.
    PretrainingConfig(
        str(tmp_path), input_files=["a"], vocabulary_file="v", run={"strategy": "tpu"}
    )
    with pytest.raises(ValueError, match="instance_shuffle_buffer"):
        pretraining_config(
            [
                "--output-dir",
                "o",
                "--input-files",
                "a",
                "--vocabulary-file",
                "v",
                "--instance-shuffle-buffer",
                "0",
            ]
        )
    with pytest.raises(ValueError, match="precision"):
        PretrainingConfig(
            str(tmp_path), input_files=["a"], vocabulary_file="v", run={"precision": "fp8"}
        )


def test_a_corpus_held_out_whole_is_an_error_not_a_wait(tmp_path, minilm_dir):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat.\nIt slept.\n\nA dog ran.\n")
    config = PretrainingConfig(
        str(tmp_path / "run"),
        str(minilm_dir / "vocab.txt"),
        input_files=[str(corpus)],
        held_out_documents=2,
    )
    with pytest.raises(DataError, match="holds 2 documents and held_out_documents is 2"):
        build_datasets(config)


def test_flags_and_json_config_file(tmp_path):
    config_file = tmp_path / "run.json"
    config_file.write_text(
        '{"output_dir": "out", "input_files": ["a.txt"], "vocabulary_file": "v.txt",'
        ' "total_steps": 500, "data": {"seq_length": 64}}'
    )
    flags = ["--config", str(config_file), "--total_steps", "750", "--jit-compile", "true"]
    config = pretraining_config([*flags, "--masked-lm-prob", "0.2", "--max_seq_length", "96"])
    assert config.total_steps == 750 and config.run.jit_compile is True
    assert config.data.seq_length == 96 and config.input_files == ["a.txt"]
    assert config.data.masking.masked_lm_prob == 0.2
    # The rest is the default recipe's (pipelines/recipes/budget_tiny.json): no NSP.
    assert not config.data.next_sentence_prediction and config.global_batch_size == 64
    config = pretraining_config(["--config", str(config_file), "--train_batch_size", "8"])
    assert config.global_batch_size == 8 and config.data.seq_length == 64


@pytest.mark.parametrize(
    "precision, optimizer, compute_dtype",
    [("mixed_float16", "lamb", "float16"), ("mixed_bfloat16", "adamw", "bfloat16")],
)
def test_mixed_precision_with_gradient_accumulation(
    small_config, precision, optimizer, compute_dtype, restore_dtype_policy
):
    config = PretrainingConfig(
        **{
            **small_config,
            "run": {
                **small_config["run"],
                "precision": precision,
                "optimizer": optimizer,
                "gradient_accumulation_steps": 2,
            },
            "total_steps": 8,
            "steps_per_checkpoint": 4,
        }
    )
    history = run_pretraining(config)
    model = history.model
    assert model.encoder.blocks[0].compute_dtype == compute_dtype
    assert all(np.isfinite(history.history["loss"]))
    inner = model.optimizer
    if precision == "mixed_float16":
        # float16 needs loss scaling; bfloat16 has float32's range and does not. (The loss
        # scale starts high: steps with overflowing gradients are skipped while it adapts.)
        assert isinstance(inner, keras.optimizers.LossScaleOptimizer)
        inner = inner.inner_optimizer
    assert type(inner).__name__ == {"lamb": "Lamb", "adamw": "FusedAdamW"}[optimizer]
    assert inner.gradient_accumulation_steps == 2
    # Keras counts optimizer updates: 8 batches, accumulated 2 by 2. (Under loss scaling an
    # update with overflowing gradients would be skipped.)
    updates = int(inner.iterations.numpy())
    assert updates == 4 if precision == "mixed_bfloat16" else 1 <= updates <= 4
    # Variables stay float32 (the masters); outputs are float32 logits.
    assert all(variable.dtype == "float32" for variable in model.trainable_weights)


def test_training_from_static_tfrecords(small_corpus, small_config, tmp_path):
    vocabulary_file = small_corpus["vocabulary_file"]
    documents = tokenize_documents(
        read_text_documents(small_corpus["input_files"]), WordPieceTokenizer(vocabulary_file)
    )
    data = PretrainingDataConfig(seq_length=32, masking=MaskingConfig(max_predictions_per_seq=5))
    paths = create_pretraining_tfrecords(
        documents,
        load_vocabulary(vocabulary_file),
        tmp_path / "records",
        data,
        dupe_factor=2,
        num_shards=2,
    )
    assert len(paths) == 2
    config = {
        **small_config,
        "input_files": [],
        "tfrecord_pattern": str(tmp_path / "records" / "*"),
    }
    history = run_pretraining(
        PretrainingConfig(**{**config, "total_steps": 4, "steps_per_checkpoint": 2})
    )
    assert int(history.model.optimizer.iterations.numpy()) == 4


def test_held_out_accuracy_at_mask_is_logged_and_matches_evaluate_mlm(small_config, tmp_path):
    from pipelines import evaluate_mlm

    config = PretrainingConfig(
        **{**small_config, "held_out_documents": 3, "total_steps": 20, "eval_steps": 2}
    )
    run_pretraining(config)
    rows = (tmp_path / "run" / "metrics.csv").read_text().splitlines()
    header, last = rows[0].split(","), rows[-1].split(",")
    logged = float(last[header.index("heldout_accuracy_at_mask")])
    assert {"heldout_accuracy", "heldout_loss", "val_loss"} <= set(header)
    # The run's held-out documents (written beside it) and seed, scored from the saved run,
    # give the logged number.
    _, held_out, _ = tokenized_documents(config)
    held_out_file = tmp_path / "run" / "held_out.txt"
    documents = read_text_documents(config.input_files)
    random.Random(config.run.seed).shuffle(documents)
    assert read_text_documents(held_out_file) == documents[:3]
    scores = evaluate_mlm.main(
        ["--model", config.output_dir, "--input-files", str(held_out_file), "--seq-length", "32"]
        + ["--baseline-files", *config.input_files]
    )
    assert scores["predictions"] > 0 and len(held_out) == 3
    # Common successors ("of the", "in the") make the bigram guess right now and then.
    assert 0.02 < scores["bigram_baseline_at_mask"] < 0.5
    assert scores["accuracy_at_mask"] == pytest.approx(logged, abs=1e-6)


def test_held_out_batches_are_built_as_the_training_batches(small_config):
    """The evaluation examples come from the held-out documents only, built as the training
    examples are: here sentence pairs for next-sentence prediction, both labels drawn."""
    config = PretrainingConfig(**{**small_config, "held_out_documents": 3, "eval_steps": 2})
    _, evaluation = build_datasets(config)
    batches = list(evaluation)
    assert len(batches) == 2
    _, held_out, vocabulary = tokenized_documents(config)
    held_out_tokens = {int(token) for document in held_out for s in document for token in s}
    special = {vocabulary.index(token) for token in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")}
    for inputs, labels, weights in batches:
        words = inputs["input_word_ids"].numpy()
        assert words.shape == (8, 32)
        # The positions the masking left alone show the documents' own tokens.
        shown = inputs["input_mask"].numpy().astype(bool)
        for row, positions in enumerate(inputs["masked_lm_positions"].numpy()):
            shown[row, positions[weights["masked_lm"].numpy()[row] > 0]] = False
        assert set(words[shown].tolist()) - special <= held_out_tokens
        masked = labels["masked_lm"].numpy()[weights["masked_lm"].numpy() > 0]
        assert set(masked.tolist()) <= held_out_tokens
        assert (inputs["input_type_ids"].numpy() == 1).any(axis=1).all()
    next_sentence = np.concatenate([labels["next_sentence"].numpy() for _, labels, _ in batches])
    assert set(next_sentence.tolist()) == {0, 1}


def test_spanbert_objectives_train_and_save_the_span_boundary_head(small_config, tmp_path):
    data = {
        "seq_length": 32,
        "next_sentence_prediction": False,
        "masking": {"max_predictions_per_seq": 8, "span_masking": True},
    }
    config = PretrainingConfig(
        **{**small_config, "data": data, "span_boundary_objective": True, "total_steps": 20}
    )
    run_pretraining(config)
    header = (tmp_path / "run" / "metrics.csv").read_text().splitlines()[0].split(",")
    assert "span_boundary_loss" in header
    model = keras.saving.load_model(tmp_path / "run" / "pretrainer.keras")
    assert model.span_boundary_head.token_embedding is model.encoder.token_embedding
