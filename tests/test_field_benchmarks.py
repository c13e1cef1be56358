"""The benchmark campaign: recorded runs are skipped, tables come from the results lines."""

import json
from pathlib import Path

from bench import field_benchmarks
from bench.benchmarks_page import marked_text, write_between_markers
from bench.field_benchmarks import (
    HEADLINE_MARKERS,
    SECTION,
    bfloat16_table,
    job_recipe,
    quality_table,
    run_campaign,
    run_work_dir,
    runs_to_go,
    speed_table,
)
from bench.results_lines import read_records


def record(
    task: str, seed: int, evaluation: dict, recipe: dict | None = None, precision: str = ""
) -> dict:
    return {
        **({"precision": {"policy": precision, "requested": precision}} if precision else {}),
        "task": task,
        "seed": seed,
        "recipe": job_recipe(task) if recipe is None else recipe,
        "evaluation": {task: evaluation},
        "sequences_per_second": 20.0 + seed,
        "revision": "abc1234",
        "cpu": "AMD EPYC, 2 cores; has: avx2, fma; lacks: avx512f",
        "load_average_15min": 1.9,
        "finished": f"2026-11-27T00:00:0{seed}",
    }


def anchors() -> dict:
    return json.loads(field_benchmarks.ANCHORS.read_text("utf-8"))


def test_recorded_runs_are_not_run_again(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps(record("rte", 0, {"accuracy": 0.56})) + "\n")
    run_campaign(["rte"], [0], results, tmp_path)  # a missing run would start fine-tuning
    assert "0 runs to go" in capsys.readouterr().out


def test_a_run_in_bfloat16_is_not_the_run_in_float32(tmp_path):
    float32 = [record("rte", 0, {"accuracy": 0.56})]
    assert runs_to_go(["rte"], [0], float32, "float32") == []
    assert runs_to_go(["rte"], [0], float32, "mixed_bfloat16") == [("rte", 0)]
    bfloat16 = record("rte", 0, {"accuracy": 0.56}, precision="mixed_bfloat16")
    assert runs_to_go(["rte"], [0], [*float32, bfloat16], "mixed_bfloat16") == []
    assert run_work_dir(tmp_path, "rte", 0) != run_work_dir(tmp_path, "rte", 0, "mixed_bfloat16")


def test_again_runs_anew_only_what_other_code_recorded(tmp_path):
    recorded = [record("rte", 0, {"accuracy": 0.56}), record("mrpc", 0, {"accuracy": 0.8})]
    recorded[1]["revision"] = "def5678"
    assert runs_to_go(["rte", "mrpc"], [0], recorded, "float32") == []
    assert runs_to_go(["rte", "mrpc"], [0], recorded, "float32", "def5678") == [("rte", 0)]
    # A run of other code does not resume in the directory of this one.
    assert run_work_dir(tmp_path, "rte", 0, "float32", "def5678") != run_work_dir(
        tmp_path, "rte", 0, "float32", "abc1234"
    )


def test_a_stopped_run_finds_its_directory_again_until_the_recipe_changes(tmp_path, monkeypatch):
    from keras_bert.training import recipes

    directory = run_work_dir(tmp_path, "squad", 0)
    assert run_work_dir(tmp_path, "squad", 0) == directory
    assert (
        len({directory, run_work_dir(tmp_path, "squad", 1), run_work_dir(tmp_path, "rte", 0)}) == 3
    )
    monkeypatch.setitem(recipes.QA_RECIPE, "batch_size", 16)
    assert run_work_dir(tmp_path, "squad", 0) != directory


def test_the_table_sets_each_mean_beside_the_peers():
    records = [
        record("rte", seed, {"accuracy": value}) for seed, value in enumerate((0.6, 0.58, 0.62))
    ]
    # A run under another recipe is not today's default: it does not count.
    records.append(record("rte", 0, {"accuracy": 0.9}, recipe={"epochs": 1}))
    table = quality_table(records, anchors())
    rte = next(line for line in table.splitlines() if line.startswith("| RTE"))
    # Ours: 60.00 (58.00-62.00); the anchors' RTE: 58.48, 54.51, 56.32 -> 56.44.
    assert "**60.00** (58.00-62.00)" in rte and "**56.44** (54.51-58.48)" in rte
    assert "| +3.56 |" in rte
    assert "GLUE average (rte; all seeds) | | **60.00** | 56.44 | +3.56 |" in table
    assert "| CoLA (Matthews) | not run |" in table


def test_the_speed_column_takes_the_runs_on_the_latest_runs_cpu():
    records = [record("conll2003", seed, {"f1": 0.9}) for seed in range(3)]
    for later in records[1:]:
        later["cpu"] = "AMD EPYC, 2 cores; has: avx2, fma, avx512f"
    # seeds/s 20, 21, 22: the median of seeds 1 and 2 only, the AVX2 run's 20 left out.
    conll = next(line for line in quality_table(records, anchors()).splitlines() if "CoNLL" in line)
    assert conll.endswith("| 21.5 (seeds 1, 2) |")
    records[0]["cpu"] = records[1]["cpu"]
    conll = next(line for line in quality_table(records, anchors()).splitlines() if "CoNLL" in line)
    assert conll.endswith("| 21.0 |")


def test_bfloat16_runs_get_their_own_table_beside_float32s_range():
    scores = {"float32": (0.56, 0.58, 0.60), "mixed_bfloat16": (0.57, 0.59, 0.58)}
    records = [
        record("rte", seed, {"accuracy": value}, precision=precision)
        for precision, values in scores.items()
        for seed, value in enumerate(values)
    ]
    records.append(record("cola", 0, {"mcc": 0.1}, precision="mixed_bfloat16"))
    records.append(record("cola", 0, {"mcc": 0.3}))
    # The float32 table holds float32's runs only.
    assert "**58.00** (56.00-60.00)" in quality_table(records, anchors())
    rte, cola = bfloat16_table(records).splitlines()[2:]  # no average before every seed
    assert "| **58.00** (57.00-59.00) | **58.00** (56.00-60.00) | +0.00; within |" in rte
    assert cola.endswith("| **10.00** | **30.00** | -20.00; below |")


def test_the_bfloat16_table_averages_glue_once_both_precisions_hold_every_seed():
    records = [
        record(task, seed, evaluation, precision=precision)
        for task, evaluation in (
            ("rte", {"accuracy": 0.6}),
            ("mrpc", {"f1": 0.9, "accuracy": 0.8}),
            ("stsb", {"pearson": 0.8, "spearman": 0.8}),
            ("cola", {"mcc": 0.3}),
        )
        for seed in range(3)
        for precision in ("float32", "mixed_bfloat16")
    ]
    records.append(record("cola", 2, {"mcc": 0.34}, precision="mixed_bfloat16"))
    average = bfloat16_table(records).splitlines()[-1]
    # float32 (60 + 85 + 80 + 30) / 4 = 63.75; bfloat16's CoLA 31.33 adds 0.33.
    assert (
        average
        == "| GLUE average (rte, mrpc, stsb, cola; all seeds) | | **64.08** | **63.75** | +0.33 |"
    )


def test_a_pair_of_metrics_is_scored_by_their_mean():
    records = [record("mrpc", 0, {"f1": 0.88, "accuracy": 0.82})]
    mrpc = next(line for line in quality_table(records, anchors()).splitlines() if "MRPC" in line)
    assert "**85.00** = 88.00 / 82.00" in mrpc
    # One seed of three: no GLUE average yet.
    assert "GLUE average" not in quality_table(records, anchors())


def speed_record(
    side: str,
    epochs: int,
    epoch_seconds: list[float],
    padding: str = "",
    precision: str = "",
    revision: str = "abc1234",
) -> dict:
    settings = {"max_train_examples": 1000, "epochs": epochs}
    settings.update({"glue_padding": padding} if padding else {})
    settings.update({"precision": precision} if precision else {})
    return {
        **({"precision": {"policy": precision}} if precision else {}),
        "task": "mrpc",
        "side": side,
        "settings": settings,
        "train_sequences": 1000 * epochs,
        "sequences_per_second": round(1000 * epochs / sum(epoch_seconds), 2),
        "epoch_seconds": epoch_seconds,
        "revision": revision,
        "cpu": "AMD EPYC, 2 cores; has: avx2, fma",
        "finished": "2026-11-29T10:00:00",
    }


def test_the_speed_table_compares_runs_of_one_protocol_after_their_first_epoch():
    records = [
        # An earlier protocol's peer run: not compared with a run of two epochs.
        speed_record("hugging_face", 1, [5.0], "longest"),
        speed_record("keras_bert", 2, [30.0, 10.0]),
        speed_record("hugging_face", 2, [40.0, 40.0], "max_length"),
        speed_record("hugging_face", 2, [20.0, 20.0], "longest"),
    ]
    mrpc = next(line for line in speed_table(records).splitlines() if line.startswith("| mrpc"))
    # Whole runs: ours 2000 / 40 s = 50.0 against the peer's faster 2000 / 40 s; after the
    # first epoch 100.0 against 50.0.
    assert mrpc.startswith("| mrpc, 1,000 × 2 | 50.0; 100.0 |  | 25.0; 25.0 | 50.0; 50.0 |")
    assert "| **1.00×**; **2.00×** |  |" in mrpc


def test_each_precision_of_ours_is_compared_with_the_same_peer_runs():
    records = [
        speed_record("keras_bert", 2, [30.0, 10.0], precision="float32"),
        speed_record("keras_bert", 2, [20.0, 5.0], precision="mixed_bfloat16"),
        speed_record("hugging_face", 2, [20.0, 20.0], "longest"),
    ]
    (mrpc,) = speed_table(records).splitlines()[2:]
    assert mrpc.startswith("| mrpc, 1,000 × 2 | 50.0; 100.0 | 80.0; 200.0 |  | 50.0; 50.0 |")
    assert "| **1.00×**; **2.00×** | **1.60×**; **4.00×** |" in mrpc


def test_the_speed_table_takes_medians_of_the_runs_at_our_latest_revision():
    records = [
        # An older revision's runs, ours and the peer's: left out.
        speed_record("keras_bert", 2, [5.0, 5.0], revision="old1234"),
        speed_record("hugging_face", 2, [5.0, 5.0], "longest", revision="old1234"),
        *[
            speed_record("keras_bert", 2, [first, 10.0], revision="new5678")
            for first in (30.0, 10.0, 70.0)
        ],
        *[
            speed_record("hugging_face", 2, seconds, "longest", revision="new5678")
            for seconds in ([20.0, 20.0], [40.0, 40.0])
        ],
    ]
    (mrpc,) = speed_table(records).splitlines()[2:]
    # Ours: 2000 / (40, 20, 80) s, median 50.0; 100.0 after epoch 1 in each run. The peer's
    # median of 50.0 and 25.0.
    assert mrpc.startswith("| mrpc, 1,000 × 2 | 50.0; 100.0 |  |  | 37.5; 37.5 |")
    assert "| **1.33×**; **2.67×** |  |" in mrpc
    assert mrpc.endswith(", new5678 (3) |")


def test_each_cpu_gets_its_own_rows_compared_with_the_peer_on_that_cpu():
    zen5 = "AMD EPYC, 2 cores; has: avx2, fma, avx512f, avx512_bf16, avx512_vnni, avx_vnni"
    records = [
        speed_record("keras_bert", 2, [30.0, 10.0]),
        speed_record("hugging_face", 2, [40.0, 40.0], "longest"),
        # The same revision on a faster CPU, later: its own row, against its own peer run.
        *(
            {**speed_record(side, 2, seconds, padding), "cpu": zen5}
            for side, seconds, padding in (
                ("keras_bert", [10.0, 10.0], ""),
                ("hugging_face", [20.0, 20.0], "longest"),
            )
        ),
    ]
    avx2_row, zen5_row = speed_table(records).splitlines()[2:]
    assert "| **2.00×**; **4.00×** |" in avx2_row and "has: avx2, fma," in avx2_row
    assert "| **2.00×**; **2.00×** |" in zen5_row and "avx_vnni, abc1234 (1) |" in zen5_row
    rows = field_benchmarks.headline_rows([], anchors(), records)
    assert [row.split(" | ")[-2] for row in rows] == ["EPYC AVX2", "Zen 5"]


def test_a_cpus_older_campaign_is_not_shown_as_current():
    older = {**speed_record("keras_bert", 2, [5.0, 5.0], revision="old1234")}
    older["finished"] = "2026-11-20T10:00:00"
    records = [
        older,
        {**speed_record("hugging_face", 2, [5.0, 5.0], "longest"), "task": "cola"},
        {**speed_record("keras_bert", 2, [10.0, 10.0]), "task": "cola"},
    ]
    # The CPU's latest campaign timed CoLA only: MRPC's run of 9 days before is left out.
    (cola,) = speed_table(records).splitlines()[2:]
    assert cola.startswith("| cola, 1,000 × 2 | 100.0; 100.0 |")


def test_runs_over_the_whole_training_split_follow_the_samples_in_the_speed_table(tmp_path):
    def write(path, records):
        path.write_text("".join(json.dumps(record) + "\n" for record in records))
        return path

    quality = write(tmp_path / "quality.jsonl", [record("rte", 0, {"accuracy": 0.56})])
    sample = write(
        tmp_path / "sample.jsonl",
        [
            speed_record("keras_bert", 2, [30.0, 10.0]),
            speed_record("hugging_face", 2, [40.0, 40.0]),
        ],
    )
    whole_split = [speed_record("keras_bert", 3, [20.0, 20.0, 20.0])]
    whole_split.append(speed_record("hugging_face", 3, [30.0, 30.0, 30.0]))
    for run in whole_split:  # each side's recipe: no --epochs
        run["settings"] = {"max_train_examples": None}
    text = field_benchmarks.table(quality, sample, write(tmp_path / "whole.jsonl", whole_split))
    (speed,) = text.split("**Training speed** (`sample.jsonl`, then `whole.jsonl`):")[1:]
    sample_row, whole_split_row = speed.strip().splitlines()[2:]
    assert sample_row.startswith("| mrpc, 1,000 × 2 | 50.0; 100.0 |")
    # Ours 3000 / 60 s, the peer's 3000 / 90 s.
    assert whole_split_row.startswith("| mrpc, all × 3 | 50.0; 50.0 |")
    assert "| **1.50×**; **1.50×** |" in whole_split_row
    only_sample = field_benchmarks.table(quality, sample, tmp_path / "none")
    assert "**Training speed** (`sample.jsonl`):" in only_sample


def test_tables_are_written_between_the_markers(tmp_path):
    page = tmp_path / "BENCHMARKS.md"
    start, end = field_benchmarks.MARKERS
    page.write_text(f"# Title\n{start}\nold table\n{end}\nafter\n")
    write_between_markers(page, "new table", field_benchmarks.MARKERS)
    assert page.read_text() == f"# Title\n{start}\nnew table\n{end}\nafter\n"


def test_the_headline_rows_state_each_claim_from_the_records():
    records = [record("rte", seed, {"accuracy": value}) for seed, value in enumerate((0.56, 0.6))]
    records += [record("cola", seed, {"mcc": value}) for seed, value in enumerate((0.2, 0.3))]
    records.append(record("sst2", 0, {"accuracy": 0.9}))
    speed = [
        speed_record("keras_bert", 2, [30.0, 10.0], precision="float32"),
        speed_record("hugging_face", 2, [20.0, 20.0], "longest"),
    ]
    glue, sst2, speed_row = field_benchmarks.headline_rows(records, anchors(), speed)
    glue_dev = anchors()["glue_dev"]
    rte, cola = (
        100 * sum(glue_dev[task][metric]) / 3
        for task, metric in (("rte", "accuracy"), ("cola", "mcc"))
    )
    assert glue == (
        "| [GLUE dev, 2 seeds: RTE, CoLA; average](#the-fields-benchmarks) "
        f"| 58.00, 25.00; average **41.50** | {rte:.2f}, {cola:.2f}; {(rte + cola) / 2:.2f} "
        f"| {58 - rte:+.2f}, {25 - cola:+.2f}; **{41.5 - (rte + cola) / 2:+.2f}** "
        "| EPYC AVX2 | 2026-11-27 |"
    )
    sst2_peer = 100 * glue_dev["sst2"]["accuracy"][0]
    assert sst2 == (
        f"| [SST-2 (accuracy), 1 seed](#the-fields-benchmarks) | **90.00** | {sst2_peer:.2f} "
        f"| {90 - sst2_peer:+.2f} | EPYC AVX2 | 2026-11-27 |"
    )
    # Ours 2000 / 40 s against the peer's 2000 / 40 s.
    assert speed_row == (
        "| [training speed, samples of 1 task](#the-fields-benchmarks) "
        "| float32 50.0 sequences/s | 50.0 | float32 **1.00×** | EPYC AVX2 | 2026-11-29 |"
    )


def test_the_headline_rows_replace_their_old_ones_and_keep_the_others(tmp_path):
    page = tmp_path / "BENCHMARKS.md"
    start, end = field_benchmarks.HEADLINE_MARKERS
    header = "| what | ours |\n|---|---|"
    hand = "| [tokenizers](#tokenizers) | 2.44× |"
    old = [f"| [RTE](#the-fields-benchmarks) | {value} |" for value in ("57.0", "old speed")]
    page.write_text(f"# B\n{start}\n{header}\n{old[0]}\n{old[1]}\n{hand}\n{end}\nafter\n")
    new = ["| [RTE](#the-fields-benchmarks) | 58.0 |"]
    field_benchmarks.write_headline_rows(page, new)
    assert page.read_text() == f"# B\n{start}\n{header}\n{new[0]}\n{hand}\n{end}\nafter\n"


def test_benchmarks_md_has_a_headline_that_scans_with_the_results_rows_of_today():
    page = Path(field_benchmarks.__file__).resolve().parents[1] / "BENCHMARKS.md"
    assert len(page.read_text("utf-8").splitlines()) <= 400
    header, _, *rows = marked_text(page, HEADLINE_MARKERS).strip().splitlines()
    words = [len(cell.split()) for row in (header, *rows) for cell in row.strip("|").split("|")]
    assert len(rows) <= 30 and max(words) <= 30 and sum(words) <= 600
    ours = [row for row in rows if row.split("|")[1].strip().endswith(f"]({SECTION})")]
    assert ours == field_benchmarks.headline_rows(
        read_records(field_benchmarks.RESULTS),
        anchors(),
        read_records(field_benchmarks.SPEED_RESULTS),
        read_records(field_benchmarks.WHOLE_SPLIT_SPEED_RESULTS),
    ), "BENCHMARKS.md's headline is not today's: python -m bench.field_benchmarks table --write"
