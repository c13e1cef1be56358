"""The pretraining campaign's table (`bench.bench_pretraining_usefulness table`) is its results
file's: means over the seeds both models have, leads over the random model and the masked LM;
the scores of a discriminator's replaced-token detection; the sentiment snippets as
pretraining text."""

import json

import numpy as np
import pytest

from bench.bench_pretraining_usefulness import (
    DATA_DIR,
    detection_scores,
    pretraining_seed_table,
    sentiment_text,
    set_aside_finished_run,
    table,
)
from keras_bert.data import read_text_documents

DEFAULTS = {"learning_rate": 5e-5, "pooling": "first_token", "embedding_rms": None,
            "seq_length": 128, "precision": "float32", "dropout_rate": 0.1}  # fmt: skip


def _record(variant: str, model: str, seed: int, accuracy: float, **settings) -> dict:
    return {
        "variant": variant,
        "model": model,
        "seed": seed,
        "epochs": 3.0,
        "settings": {**DEFAULTS, **settings},
        "dev_accuracy": accuracy,
    }


def _fine_tuned(variant: str, *accuracies: float) -> list[dict]:
    """A run's pretrained model fine-tuned under seeds 0, 1, ... to `accuracies`."""
    return [_record(variant, "pretrained", seed, a) for seed, a in enumerate(accuracies)]


def test_table_rows_are_the_results_files_means_and_leads():
    records = [
        _record("mlm", "pretrained", 0, 0.50),
        _record("mlm", "pretrained", 1, 0.60),
        _record("mlm", "random", 0, 0.52),
        _record("mlm", "random", 1, 0.54),
        _record("electra", "pretrained", 0, 0.70),
        _record("electra", "pretrained", 1, 0.56),
        _record("electra", "random", 0, 0.61),
        _record("electra", "random", 1, 0.61),
        _record("electra", "pretrained_blocks", 0, 0.64),
        _record("electra", "random", 0, 0.65, learning_rate=5e-4),
        _record("electra", "pretrained", 0, 0.75, learning_rate=5e-4),
    ]
    rows = [[cell.strip() for cell in row.split("|")[1:-1]] for row in table(records).splitlines()]
    assert rows[2:] == [
        ["learning_rate 0.0005", "3", "electra", "0: 75.00", "**75.00**", "65.00", "+10.00", ""],
        ["the job's defaults", "3", "electra", "0: 70.00, 1: 56.00", "**63.00**", "61.00",
         "+2.00", "+8.00"],
        # A run's blocks on random embeddings, against the random model of the seeds it has.
        ["the job's defaults", "3", "electra, its blocks on random embeddings", "0: 64.00",
         "**64.00**", "61.00", "+3.00", ""],
        ["the job's defaults", "3", "mlm", "0: 50.00, 1: 60.00", "**55.00**", "53.00", "+2.00",
         ""],
    ]  # fmt: skip
    # --min-seeds 2: the rows of one seed go; --models pretrained: the run's halves.
    assert len(table(records, min_seeds=2).splitlines()) == 2 + 2
    assert len(table(records, models=("pretrained",)).splitlines()) == 2 + 3
    only_the_rate = table(records, settings=("learning_rate 0.0005",)).splitlines()
    assert [row.split("|")[1].strip() for row in only_the_rate[2:]] == ["learning_rate 0.0005"]
    only_mlm = table(records, variants=("mlm",)).splitlines()
    assert [row.split("|")[3].strip() for row in only_mlm[2:]] == ["mlm"]


def test_a_run_on_other_text_leads_the_masked_lm_on_the_same_text():
    records = [
        _record("mlm", "pretrained", 0, 0.60),
        _record("mlm_in_domain", "pretrained", 0, 0.50),
        _record("electra_in_domain", "pretrained", 0, 0.58),
        _record("electra", "pretrained", 0, 0.55),
    ]
    leads = {row.split("|")[3].strip(): row.split("|")[8].strip()
             for row in table(records).splitlines()[2:]}  # fmt: skip
    # electra_in_domain against mlm_in_domain (not mlm); neither masked LM against another.
    assert leads == {"electra": "-5.00", "electra_in_domain": "+8.00", "mlm": "",
                     "mlm_in_domain": ""}  # fmt: skip


def test_pretraining_seed_table_averages_each_objective_over_its_pretraining_seeds():
    records = [
        # The recipes' corpus: seed 0 is the recipes' own runs, `mlm` and `electra`.
        *_fine_tuned("mlm", 0.60, 0.60),
        *_fine_tuned("mlm_seed_1", 0.50, 0.50),
        *_fine_tuned("electra", 0.64, 0.64),
        *_fine_tuned("electra_seed_1", 0.50, 0.52),
        *_fine_tuned("mlm_in_domain", 0.50, 0.54),
        *_fine_tuned("mlm_in_domain_seed_1", 0.60, 0.62),
        *_fine_tuned("electra_in_domain", 0.56, 0.60),
        *_fine_tuned("electra_in_domain_seed_1", 0.58, 0.60),
        # ELECTRA's third pretraining seed has no masked LM to compare with; the lead leaves
        # it out, the mean keeps it. A random model and another setting count for neither.
        *_fine_tuned("electra_in_domain_seed_2", 0.70, 0.70),
        _record("electra_in_domain", "random", 0, 0.99),
        _record("mlm_in_domain", "pretrained", 0, 0.99, learning_rate=5e-4),
        # One fine-tuning seed: under min_seeds=2, its pretraining seed is left out.
        _record("mlm_in_domain_seed_2", "pretrained", 0, 0.10),
    ]
    rows = [[cell.strip() for cell in row.split("|")[1:-1]]
            for row in pretraining_seed_table(records, min_seeds=2).splitlines()[2:]]  # fmt: skip
    assert rows == [
        ["3", "mlm", "0: 60.00, 1: 50.00", "**55.00**", ""],
        # The mean of the per-seed leads over `mlm` and `mlm_seed_1`: (+4 + +1) / 2.
        ["3", "electra", "0: 64.00, 1: 51.00", "**57.50**", "+2.50"],
        ["3", "mlm_in_domain", "0: 52.00, 1: 61.00", "**56.50**", ""],
        ["3", "electra_in_domain", "0: 58.00, 1: 59.00, 2: 70.00", "**62.33**", "+2.00"],
    ]  # fmt: skip


def test_table_of_one_cpu_leaves_the_other_cpus_lines_out():
    zen5 = "AMD EPYC, 2 cores; has: avx2, fma, avx512f, avx512_bf16, avx_vnni; lacks: amx_bf16"
    avx2 = "AMD EPYC, 2 cores; has: avx2, fma; lacks: avx512f, avx512_bf16"
    records = [
        {**_record("electra", "pretrained", 0, 0.58), "cpu": zen5},
        {**_record("electra", "random", 0, 0.57), "cpu": zen5},
        # The same seed again, later, on another CPU: without the filter its line wins.
        {**_record("electra", "pretrained", 0, 0.55), "cpu": avx2},
    ]
    means = {cpu: table(records, cpu=cpu).splitlines()[2].split("|")[5].strip()
             for cpu in ("Zen 5", "EPYC AVX2", None)}  # fmt: skip
    assert means == {"Zen 5": "**58.00**", "EPYC AVX2": "**55.00**", None: "**55.00**"}


def test_again_sets_a_finished_run_aside_and_leaves_a_killed_one_to_resume(tmp_path):
    killed = tmp_path / "mlm"
    (killed / "backup").mkdir(parents=True)
    assert set_aside_finished_run(killed) is None and (killed / "backup").is_dir()

    finished = tmp_path / "electra"
    finished.mkdir()
    (finished / "pretrainer.keras").write_bytes(b"model")
    (tmp_path / "electra.log").write_text("log")
    moved = set_aside_finished_run(finished)
    assert not finished.exists() and moved.parent == tmp_path
    assert moved.name.startswith("electra.")
    assert (moved / "pretrainer.keras").read_bytes() == b"model"
    assert (tmp_path / f"{moved.name}.log").read_text() == "log"


def test_detection_scores_of_a_detector_that_knows_only_the_share_replaced():
    # A constant logit at the share's log-odds: its loss is the labels' entropy, its ROC area
    # 0.5, and at logit 0 it answers "original" everywhere.
    labels = np.array([1.0] * 10 + [0.0] * 90)
    scores = detection_scores(labels, np.full(100, np.log(0.1 / 0.9)))
    assert scores["loss"] == scores["label_entropy"] == pytest.approx(0.3251, abs=1e-4)
    assert scores["auc"] == 0.5
    assert scores["accuracy"] == scores["always_original_accuracy"] == 0.9
    assert scores["recall"] == scores["precision"] == 0.0


def test_detection_scores_of_a_detector_that_ranks_one_original_token_first():
    labels = np.array([1.0, 1.0, 0.0, 0.0, 0.0])
    scores = detection_scores(labels, np.array([1.0, -0.5, 2.0, -1.0, -2.0]))
    # Of the 2 × 3 (replaced, original) pairs, 4 are ranked right.
    assert scores["auc"] == pytest.approx(4 / 6, abs=1e-4)
    assert (scores["recall"], scores["precision"]) == (0.5, 0.5)


def test_sentiment_text_is_each_training_snippet_a_document_without_its_label(tmp_path):
    lines = (DATA_DIR / "movie_snippets.train.jsonl").read_text("utf-8").splitlines()
    examples = [json.loads(line) for line in lines]
    documents = read_text_documents(sentiment_text(tmp_path))
    assert documents == [[example["text"].strip()] for example in examples]
    assert len(documents) == 8421
