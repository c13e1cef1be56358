"""pipelines.distill end to end on real text: a teacher on a tiny checkpoint distilled (with
unlabeled sentences) into a student that exports like any other model. (Teachers are not
fine-tuned here: that is the fine-tuning pipelines' test; these check the distillation job.)"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertEncoder
from keras_bert.config import ConfigError
from keras_bert.data import read_text_documents, tokenize_documents
from keras_bert.data.token_classification import tag_names_of
from keras_bert.errors import DataError
from keras_bert.export import export_for_serving, serving_module
from keras_bert.models import BertClassifier, BertTokenClassifier
from keras_bert.models.pretrainer import BertPretrainer
from keras_bert.pretraining.trainer import write_documents
from keras_bert.text import BertPreprocessor, WordPieceTokenizer
from pipelines import distill
from pipelines.finetune_ner import read_sentences
from tests.data.reference_instances import create_instances
from tests.export.fresh_process import run_signatures
from tests.pipelines.test_finetuning_jobs import common_flags

pytestmark = pytest.mark.slow


def unlabeled_file(tmp_path, data_dir):
    """Real in-domain sentences without their labels: the first dev snippets."""
    path = data_dir / "sentiment" / "movie_snippets.dev.jsonl"
    texts = [json.loads(line)["text"] for line in path.read_text().splitlines()[:8]]
    unlabeled = tmp_path / "unlabeled.txt"
    unlabeled.write_text("\n".join(texts) + "\n\n")
    return unlabeled


def data_flags(tmp_path, directory, name: str) -> list[str]:
    """The real training file and the first 32 records of the dev file."""
    evaluation = tmp_path / f"{name}.dev.jsonl"
    lines = (directory / f"{name}.dev.jsonl").read_text().splitlines()[:32]
    evaluation.write_text("\n".join(lines) + "\n")
    return ["--train", str(directory / f"{name}.train.jsonl"), "--eval", str(evaluation)]


def save_teacher(task_class, checkpoint, path, **arguments) -> str:
    keras.utils.set_random_seed(0)
    task_class(BertEncoder.from_checkpoint(checkpoint), **arguments).save(path)
    return str(path)


def test_distill_classifier_job_writes_an_exportable_student(
    tiny_checkpoint_dir, data_dir, tmp_path
):
    labels = {"num_classes": 2, "label_names": ["neg", "pos"]}
    teacher = save_teacher(
        BertClassifier, tiny_checkpoint_dir, tmp_path / "teacher.keras", **labels
    )
    student_flags = ["--num-layers", "1", "--hidden-mse", "1", "--attention-scores", "0.1"]
    summary = distill.main(
        ["--teacher", teacher, "--seq-length", "32", "--max-train-examples", "16"]
        + data_flags(tmp_path, data_dir / "sentiment", "movie_snippets")
        + ["--unlabeled", str(unlabeled_file(tmp_path, data_dir)), *student_flags]
        + common_flags(tiny_checkpoint_dir, tmp_path / "student")
    )
    # 16 labelled + 8 unlabeled snippets, batch 8, batched by length: an epoch is every
    # length bucket's batches, 4 (3 random batches).
    assert summary["train_steps"] == 4
    assert summary["student_parameters"] < summary["teacher_parameters"]
    assert set(summary["evaluation"]) == set(summary["teacher_evaluation"])
    history = summary["history"]
    assert {"soft_targets", "hard_targets", "hidden_mse", "attention_scores"} <= set(history)
    student = keras.saving.load_model(tmp_path / "student" / "model.keras")
    assert type(student) is BertClassifier and student.encoder.bert_config.num_layers == 1
    settings = json.loads((tmp_path / "student" / "distillation.json").read_text())
    assert settings["num_layers"] == 1 and settings["losses"]["hidden_mse"] == 1.0

    preprocessor = BertPreprocessor.from_checkpoint(tiny_checkpoint_dir, seq_length=32)
    export_dir = export_for_serving(
        serving_module(student, preprocessor), tmp_path / "saved_models", "student"
    )
    texts = ["A sharp, funny film.", "Dull and far too long."]
    call = {"export_dir": export_dir, "signature": "serving_default"}
    [served] = run_signatures([{**call, "inputs": {"text": texts}}])
    expected = keras.ops.softmax(student(preprocessor(tf.constant(texts))))
    np.testing.assert_allclose(served["probabilities"], expected, atol=1e-5)


def test_distill_token_classifier_job(tiny_checkpoint_dir, data_dir, tmp_path):
    tags = tag_names_of(read_sentences(str(data_dir / "ner" / "wnut16.train.jsonl")))
    teacher = save_teacher(
        BertTokenClassifier, tiny_checkpoint_dir, tmp_path / "teacher.keras", label_names=tags
    )
    student_flags = ["--num-layers", "1", "--hidden-size", "64", "--hidden-cosine", "1"]
    summary = distill.main(
        ["--teacher", teacher, "--task", "token_classifier", "--seq-length", "48"]
        + ["--max-train-examples", "16", *data_flags(tmp_path, data_dir / "ner", "wnut16")]
        + ["--unlabeled", str(unlabeled_file(tmp_path, data_dir)), *student_flags]
        + common_flags(tiny_checkpoint_dir, tmp_path / "student")
    )
    # 16 labelled + 8 unlabeled sentences, batch 8, batched by length: 5 (3 random batches).
    assert summary["train_steps"] == 5
    assert "f1" in summary["evaluation"] and "f1" in summary["teacher_evaluation"]
    student = keras.saving.load_model(tmp_path / "student" / "model.keras")
    assert type(student) is BertTokenClassifier
    assert student.encoder.bert_config.hidden_size == 64


def test_a_progressive_student_starts_from_the_deeper_student(
    tiny_checkpoint_dir, data_dir, tmp_path
):
    """`--initial-student`: the 1-layer student starts from a 2-layer student's embeddings,
    head and last block (spread_layers(2, 1)), not the teacher's (learning rate 0 keeps them)."""
    labels = {"num_classes": 2, "label_names": ["neg", "pos"]}
    teacher = save_teacher(
        BertClassifier, tiny_checkpoint_dir, tmp_path / "teacher.keras", **labels
    )
    keras.utils.set_random_seed(1)
    deeper = BertClassifier(BertEncoder.from_checkpoint(tiny_checkpoint_dir), **labels)
    for variable in deeper.trainable_variables:  # unlike the teacher's everywhere
        variable.assign(variable + 0.01)
    deeper.save(tmp_path / "deeper.keras")
    distill.main(
        ["--teacher", teacher, "--initial-student", str(tmp_path / "deeper.keras")]
        + ["--num-layers", "1", "--seq-length", "32", "--max-train-examples", "8"]
        + [
            "--learning-rate",
            "0",
            "--train",
            str(data_dir / "sentiment" / "movie_snippets.train.jsonl"),
        ]
        + common_flags(tiny_checkpoint_dir, tmp_path / "student")
    )
    student = keras.saving.load_model(tmp_path / "student" / "model.keras")
    pairs = [(student.encoder.blocks[0], deeper.encoder.blocks[1])]
    pairs += [(student.get_layer(layer.name), layer) for layer in deeper.layers[-1:]]
    pairs += [(student.encoder.get_layer("embeddings"), deeper.encoder.get_layer("embeddings"))]
    for got, want in pairs:
        for got_weight, want_weight in zip(got.get_weights(), want.get_weights(), strict=True):
            np.testing.assert_array_equal(got_weight, want_weight)


def test_general_distillation_of_a_masked_lm(tiny_checkpoint_dir, data_dir, tmp_path):
    """`--task masked_lm`: a pretrainer teacher, BERT-format text with its held-out documents
    left out of training, a student pretrainer and its checkpoint, scored like evaluate_mlm."""
    documents = read_text_documents(data_dir / "pretraining" / "wikipedia_sample.txt")[:4]
    documents = [document[:12] for document in documents]
    corpus, held_out = tmp_path / "corpus.txt", tmp_path / "held_out.txt"
    write_documents(documents, corpus)
    write_documents(documents[-1:], held_out)
    keras.utils.set_random_seed(0)
    BertPretrainer.from_checkpoint(tiny_checkpoint_dir).save(tmp_path / "teacher.keras")
    summary = distill.main(
        ["--task", "masked_lm", "--teacher", str(tmp_path / "teacher.keras")]
        + ["--train", str(corpus), "--eval", str(held_out), "--num-layers", "1"]
        + ["--seq-length", "64", "--hidden-mse", "1", "--attention-scores", "0.1"]
        + common_flags(tiny_checkpoint_dir, tmp_path / "student")
    )
    # The held-out document is left out: the three others make the instances of one pass (as
    # many as the reference packs, give or take the one sequence an order of documents can
    # change at each document's end).
    tokenizer = WordPieceTokenizer(str(tiny_checkpoint_dir / "vocab.txt"))
    separator = tokenizer.token_to_id("[SEP]")
    trained = tokenize_documents(documents[:3], tokenizer)
    instances = create_instances(trained, 64, 0, next_sentence_prediction=False,
                                 document_separator=separator)  # fmt: skip
    assert abs(summary["train_steps"] - -(-len(instances) // 8)) <= 1
    for scores in (summary["evaluation"], summary["teacher_evaluation"]):
        assert {"accuracy_at_mask", "accuracy", "loss", "predictions"} <= set(scores)
    assert summary["evaluation"]["predictions"] == summary["teacher_evaluation"]["predictions"]
    assert {"soft_targets", "hard_targets", "hidden_mse", "attention_scores"} <= set(
        summary["history"]
    )
    student = keras.saving.load_model(tmp_path / "student" / "model.keras")
    assert type(student) is BertPretrainer and student.bert_config.num_layers == 1
    restored = BertPretrainer.from_checkpoint(tmp_path / "student" / "checkpoint")
    for got, want in zip(restored.get_weights(), student.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)
    refused = ["--task", "masked_lm", "--teacher", str(tmp_path / "teacher.keras")]
    refused += ["--num-layers", "1", *common_flags(tiny_checkpoint_dir, tmp_path / "refused")]
    with pytest.raises(ConfigError, match="--unlabeled and --augment-copies"):
        distill.main([*refused, "--train", str(corpus), "--augment-copies", "1"])
    with pytest.raises(DataError, match="No training documents"):
        distill.main([*refused, "--train", str(held_out), "--eval", str(held_out)])
    small_vocabulary = tmp_path / "small_vocabulary"
    small_vocabulary.mkdir()
    vocabulary = (tiny_checkpoint_dir / "vocab.txt").read_text().splitlines()[:2000]
    (small_vocabulary / "vocab.txt").write_text("\n".join(vocabulary) + "\n")
    for path in tiny_checkpoint_dir.iterdir():
        if path.name != "vocab.txt":
            (small_vocabulary / path.name).symlink_to(path)
    with pytest.raises(DataError, match="has 2000 tokens, the teacher's vocabulary 30522"):
        distill.main([*refused, "--train", str(corpus), "--checkpoint", str(small_vocabulary)])
