"""Every job speaks the same command line: kebab-case flags that also take underscores,
booleans parsed one way, defaults in `--help`, and user errors as one line with status 2."""

import dataclasses
import importlib
import re

import pytest

from keras_bert.errors import DataError
from keras_bert.finetuning.recipe import FINETUNING_RUN
from pipelines import distill, finetune_classifier, pretrain
from pipelines.common import (
    JobParser,
    add_bool_argument,
    add_finetuning_arguments,
    expand_files,
    finetuning_config,
    parse_bool,
    run_job,
)

JOBS = (
    "build_vocab",
    "create_pretraining_data",
    "demo",
    "distill",
    "evaluate_mlm",
    "export",
    "finetune_classifier",
    "finetune_ner",
    "finetune_qa",
    "glue",
    "pretrain",
)


@pytest.mark.parametrize("job", JOBS)
def test_help_lists_kebab_case_flags_with_defaults(job, capsys):
    with pytest.raises(SystemExit) as exit_info:
        importlib.import_module(f"pipelines.{job}").main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "--debug" in text and "(default: " in text
    # An unset option shows no default, and no help states its default twice.
    one_line = " ".join(text.split())
    assert "(default: None)" not in one_line
    assert not re.search(r"\(default: [^)]*\) \(default:", one_line)
    # TensorFlow's own log lines come back with --verbose (a flag of every job).
    assert re.search(r"^ {2}--verbose\b", text, re.M)
    # The option lines (not the descriptions, which may quote other programs' flags).
    options = re.findall(r"^ {2}(-.*?)(?: {2,}|$)", text, re.M)
    assert options and not [option for option in options if "_" in option.split()[0]]
    if job not in ("build_vocab", "evaluate_mlm", "export"):
        assert "--output-dir" in text


def test_underscore_spellings_and_google_names_parse_alike(tmp_path):
    config_file = tmp_path / "run.json"
    config_file.write_text('{"vocabulary_file": "v.txt", "input_files": ["a.txt"]}')
    base = ["--config", str(config_file)]
    kebab = pretrain.pretraining_config(
        [*base, "--output-dir", "o", "--seq-length", "64", "--total-steps", "500"]
    )
    snake = pretrain.pretraining_config(
        [*base, "--output_dir", "o", "--seq_length", "64", "--total_steps", "500"]
    )
    google = pretrain.pretraining_config(
        [*base, "--output_dir", "o", "--max_seq_length", "64", "--num_train_steps", "500"]
    )
    assert kebab == snake == google
    assert kebab.data.seq_length == 64 and kebab.total_steps == 500


def test_every_pretraining_field_is_a_flag():
    flags = pretrain.pretraining_config(
        ["--output-dir", "o", "--tfrecord-pattern", "x*", "--weight-decay", "0.05",
         "--model-config", '{"dropout_rate": 0.0}', "--whole-word-masking",
         "--next-sentence-prediction", "false", "--random-token-rate", "0.0"]
    )  # fmt: skip
    assert flags.run.weight_decay == 0.05 and flags.model_config["dropout_rate"] == 0.0
    assert flags.data.masking.whole_word_masking is True
    assert flags.data.next_sentence_prediction is False
    assert flags.data.masking.random_token_rate == 0.0


def test_fine_tuning_takes_every_run_setting_over_its_own_defaults():
    parser = JobParser()
    add_finetuning_arguments(parser, defaults={"learning_rate": 3e-5})
    flags = ["--output-dir", "o", "--optimizer", "lamb", "--clip-global-norm", "0.5"]
    config = finetuning_config(parser.parse_args([*flags, "--verbose", "2"]))
    assert (config.run.optimizer, config.run.clip_global_norm) == ("lamb", 0.5)
    assert (config.run.learning_rate, config.run.warmup_fraction) == (3e-5, 0.1)
    assert config.run.verbose == 2 and config.run == dataclasses.replace(
        FINETUNING_RUN, learning_rate=3e-5, optimizer="lamb", clip_global_norm=0.5, verbose=2
    )


@pytest.mark.parametrize(
    "task, learning_rate, epochs, hidden_mse, attention_scores",
    [
        ("classifier", 1e-4, 5, 1.0, 0.05),
        ("token_classifier", 1e-4, 10, 0.0, 0.0),
        ("masked_lm", 1e-4, 1, 1.0, 0.05),
    ],
)
def test_distillation_defaults_are_the_measured_recipes(
    task, learning_rate, epochs, hidden_mse, attention_scores
):
    required = ["--teacher", "t.keras", "--num-layers", "3", "--train", "t", "--output-dir", "o"]
    _, student, finetuning = distill.distillation_job(["--task", task, *required])
    assert (finetuning.run.learning_rate, finetuning.epochs) == (learning_rate, epochs)
    assert (student.losses.hidden_mse, student.losses.attention_scores) == (
        hidden_mse,
        attention_scores,
    )
    _, student, finetuning = distill.distillation_job(
        ["--task", task, *required, "--epochs", "2", "--hidden-mse", "0.5"]
    )
    assert (finetuning.epochs, student.losses.hidden_mse) == (2, 0.5)


@pytest.mark.parametrize("job, epochs", [("finetune_classifier", 3), ("finetune_ner", 5)])
def test_fine_tuning_jobs_default_to_their_measured_epochs(job, epochs, capsys):
    with pytest.raises(SystemExit):
        importlib.import_module(f"pipelines.{job}").main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"--epochs EPOCHS passes over the training data (default: {epochs})" in help_text


def test_glue_help_shows_the_defaults_each_task_runs(capsys):
    with pytest.raises(SystemExit):
        importlib.import_module("pipelines.glue").main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert (
        "--epochs EPOCHS passes over the training data "
        "(default: each task's recipe: 6 for stsb, rte; 3 for the others)"
    ) in help_text
    assert (
        "--learning-rate LEARNING_RATE peak learning rate "
        "(default: each task's recipe: 5e-05 for qqp, mnli, qnli, wnli; 3e-05 for rte; "
        "0.0001 for the others)"
    ) in help_text
    assert (
        "--warmup-fraction WARMUP_FRACTION share of the steps spent warming up; then linear "
        "decay to 0 (default: each task's recipe: 0.06 for cola, stsb, rte; 0.1 for the others)"
    ) in help_text
    assert "--batch-size BATCH_SIZE" in help_text
    assert "(default: each task's recipe: 16 for rte; 32 for the others)" in help_text
    # bfloat16 where the CPU trains faster in it, on the tasks measured in it (3 seeds each).
    assert (
        "--precision PRECISION" in help_text
        and "(default: each task's recipe: float32 for qqp, mnli, qnli, wnli; auto for the others)"
        in help_text
    )
    assert "(default: 2)" not in help_text and "(default: 5e-05)" not in help_text


def test_booleans_are_parsed_one_way():
    parser = JobParser()
    add_bool_argument(parser, "--lowercase", default=True)
    assert [parse_bool(text) for text in ("1", "true", "Yes", "0", "FALSE", "no")] == [
        True, True, True, False, False, False,
    ]  # fmt: skip
    assert parser.parse_args(["--lowercase", "1"]).lowercase is True
    assert parser.parse_args(["--lowercase=0"]).lowercase is False
    assert parser.parse_args([]).lowercase is True
    with pytest.raises(SystemExit):
        parser.parse_args(["--lowercase", "maybe"])


def test_expand_files_reads_globs_and_google_comma_lists(tmp_path):
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("x\n")
    assert expand_files([f"{tmp_path}/*.txt"]) == [f"{tmp_path}/a.txt", f"{tmp_path}/b.txt"]
    assert expand_files([f"{tmp_path}/b.txt,{tmp_path}/a.txt"])[0].endswith("b.txt")
    with pytest.raises(FileNotFoundError, match="no file matches"):
        expand_files([f"{tmp_path}/*.json"])


def test_user_errors_end_a_job_in_one_line(tmp_path, capsys):
    empty = tmp_path / "train.jsonl"
    empty.write_text("")
    argv = ["--train", str(empty), "--output-dir", str(tmp_path / "run")]
    with pytest.raises(SystemExit) as exit_info:
        run_job(finetune_classifier.main, argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error == f"error: {empty}: the file holds no examples.\n"
    with pytest.raises(DataError):
        run_job(finetune_classifier.main, [*argv, "--debug"])


def test_export_refuses_a_file_that_is_not_a_keras_model(tmp_path, capsys):
    from pipelines import export

    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"text": "x"}\n')
    argv = ["--task", "classifier", "--model", str(notes), "--name", "x"]
    with pytest.raises(SystemExit):
        run_job(export.main, [*argv, "--base-dir", str(tmp_path / "models")])
    assert capsys.readouterr().err.startswith(f"error: {notes}: not a .keras model file")
    assert not (tmp_path / "models").exists()
