"""Settings no run can train with are one-line `ConfigError`s when a job's config is made, before
a checkpoint is read or a step taken (a zero batch size, no epochs, a negative learning rate)."""

import pytest

from keras_bert.distillation.task_distillation import StudentConfig
from keras_bert.errors import ConfigError, DataError
from keras_bert.finetuning.recipe import FinetuningConfig
from keras_bert.pretraining.config import PretrainingConfig
from pipelines.build_vocab import VocabularyJob
from pipelines.create_pretraining_data import StaticExamplesJob
from pipelines.evaluate_mlm import MaskedLMEvaluationJob


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"epochs": 0}, "epochs must be positive, got 0"),
        ({"batch_size": -2}, "batch_size must be positive, got -2"),
        ({"max_train_examples": 0}, "max_train_examples must be positive"),
        ({"dropout_rate": 1.0}, r"dropout_rate must be in \[0, 1\), got 1.0"),
        ({"run": {"learning_rate": -5e-5}}, "learning_rate must not be negative, got -5e-05"),
        ({"run": {"warmup_fraction": 1.5}}, r"warmup_fraction must be in \[0, 1\]"),
        ({"run": {"weight_decay": -0.01}}, "weight_decay must not be negative"),
        ({"run": {"steps_per_execution": 0}}, "steps_per_execution must be positive"),
    ],
)
def test_finetuning_settings_no_run_trains_with(settings, message):
    with pytest.raises(ConfigError, match=message):
        FinetuningConfig("minilm", "runs/x", **settings)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"global_batch_size": 0}, "global_batch_size must be positive, got 0"),
        ({"steps_per_checkpoint": 0}, "steps_per_checkpoint must be positive, got 0"),
        ({"total_steps": -100}, "total_steps must be positive"),
        ({"eval_steps": -1}, "eval_steps must not be negative"),
        ({"run": {"learning_rate": -1e-4}}, "learning_rate must not be negative"),
    ],
)
def test_pretraining_settings_no_run_trains_with(settings, message):
    with pytest.raises(ConfigError, match=message):
        PretrainingConfig("runs/x", "vocab.txt", input_files=["corpus.txt"], **settings)


def test_unset_and_disabled_settings_stay_allowed():
    config = FinetuningConfig("minilm", "runs/x", run={"clip_global_norm": None})
    assert config.run.clip_global_norm is None and config.max_train_examples is None
    assert PretrainingConfig("runs/x", "vocab.txt", input_files=["c.txt"]).eval_steps == 0


@pytest.mark.parametrize(
    ("job", "settings", "message"),
    [
        (MaskedLMEvaluationJob, {"batch_size": 0}, "batch_size must be positive, got 0"),
        (MaskedLMEvaluationJob, {"seq_length": -1}, "seq_length must be positive"),
        (VocabularyJob, {"vocab_size": 0}, "vocab_size must be positive, got 0"),
        (StaticExamplesJob, {"dupe_factor": 0}, "dupe_factor must be positive, got 0"),
        (StaticExamplesJob, {"num_shards": 0}, "num_shards must be positive, got 0"),
        (StudentConfig, {"num_layers": 0}, "num_layers must be positive, got 0"),
        (StudentConfig, {"hidden_size": 0}, "hidden_size must be positive, got 0"),
    ],
)
def test_the_other_jobs_refuse_sizes_of_nothing(job, settings, message):
    """Before: evaluate_mlm's batch size 0 was a TF traceback, build_vocab's vocab_size 0
    wrote a vocabulary anyway, create_pretraining_data's dupe_factor 0 wrote no examples, a
    student of hidden size 0 took the teacher's."""
    arguments = {
        MaskedLMEvaluationJob: {"model": "minilm", "input_files": ["held_out.txt"]},
        VocabularyJob: {"input_files": ["corpus.txt"], "output": "vocab.txt"},
        StaticExamplesJob: {"output_dir": "out", "vocabulary_file": "minilm", "input_files": ["c"]},
        StudentConfig: {"teacher": "runs/teacher/model.keras", "num_layers": 3},
    }[job]
    with pytest.raises(ConfigError, match=message):
        job(**{**arguments, **settings})


def test_create_pretraining_data_reads_the_installed_vocabulary_as_pretrain_does():
    job = StaticExamplesJob("out", vocabulary_file="minilm", input_files=["corpus.txt"])
    assert job.vocabulary_file.endswith("model/vocab.txt")


@pytest.mark.parametrize("flag", ["--input-files", "--baseline-files"])
def test_evaluate_mlm_refuses_files_without_a_word_before_it_scores(tmp_path, data_dir, flag):
    """Before: an empty --input-files said "No text to pretrain on", and empty
    --baseline-files failed after the whole evaluation had run."""
    from pipelines import evaluate_mlm

    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n\n", encoding="utf-8")
    held_out = str(data_dir / "pretraining" / "wikipedia_sample.txt")
    files = {"--input-files": held_out, "--baseline-files": held_out, flag: str(blank)}
    argv = ["--model", "minilm", *(item for pair in files.items() for item in pair)]
    with pytest.raises(DataError, match=f"{flag} {blank}: no sentence with a word in it"):
        evaluate_mlm.main(argv)
