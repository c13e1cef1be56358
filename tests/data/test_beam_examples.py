"""Static examples from the Apache Beam pipeline: Google's format, the writer's masking, and a
pretrainer trains on them."""

import shutil

import apache_beam as beam
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import (
    MaskingConfig,
    PretrainingDataConfig,
    create_pretraining_tfrecords,
    read_pretraining_tfrecords,
    read_text_documents,
    tokenize_documents,
)
from keras_bert.data.beam_examples import build_pipeline
from keras_bert.pretraining import PretrainingConfig, run_pretraining
from keras_bert.text import WordPieceTokenizer, load_vocabulary
from pipelines import create_pretraining_data

DATA = PretrainingDataConfig(seq_length=64, masking=MaskingConfig(max_predictions_per_seq=10))


@pytest.fixture(scope="module")
def shards(tmp_path_factory, data_dir):
    """40 Wikipedia articles in four BERT-format shards."""
    folder = tmp_path_factory.mktemp("beam_input")
    documents = read_text_documents(data_dir / "pretraining" / "wikipedia_sample.txt")[:40]
    paths = []
    for index in range(4):
        path = folder / f"shard-{index}.txt"
        part = documents[index::4]
        path.write_text("\n\n".join("\n".join(document) for document in part) + "\n", "utf-8")
        paths.append(str(path))
    return paths


def _write_beam_records(shards, vocabulary_file, output, num_shards=0):
    with beam.Pipeline(runner="DirectRunner") as pipeline:
        build_pipeline(
            pipeline,
            shards,
            str(vocabulary_file),
            str(output / "pretraining"),
            DATA,
            dupe_factor=2,
            num_shards=num_shards,
            random_sample_size=40,
        )
    return sorted(output.glob("pretraining-*.tfrecord"))


@pytest.fixture(scope="module")
def beam_records(shards, vocabulary_file, tmp_path_factory):
    """The shards' examples, written in this process to a fixed number of files (3)."""
    output = tmp_path_factory.mktemp("beam_output")
    return _write_beam_records(shards, vocabulary_file, output, num_shards=3)


def _examples(paths):
    """The examples in `paths` as sorted tuples of their features' values (a process may
    serialize a proto's map of features in another order: compare values, not bytes)."""
    examples = []
    for record in tf.data.TFRecordDataset([str(path) for path in paths]):
        features = tf.train.Example.FromString(record.numpy()).features.feature
        examples.append(
            tuple(
                (name, *features[name].int64_list.value, *features[name].float_list.value)
                for name in sorted(features)
            )
        )
    return sorted(examples)


def test_a_fixed_file_count_is_the_number_of_files_written(beam_records):
    assert len(beam_records) == 3


@pytest.mark.slow
def test_the_job_on_two_worker_processes_writes_the_same_examples_from_another_folder(
    beam_records, shards, vocabulary_file, tmp_path
):
    """`create_pretraining_data --beam true` on the local runner's worker processes, from the
    same shards under another folder (a different temporary directory each run): each bundle
    writes its own file, and together they hold the examples of the in-process run into three
    files. The random B segments and masks are seeded by relative names, and `num_shards` only
    decides the files (through a shuffle)."""
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    for shard in shards:
        shutil.copy(shard, moved)
    moved_shards = sorted(str(path) for path in moved.iterdir())
    arguments = ["--beam", "true", "--input-files", *moved_shards, "--vocabulary-file"]
    arguments += [str(vocabulary_file), "--output-dir", str(tmp_path / "out"), "--dupe-factor"]
    arguments += ["2", "--seq-length", "64", "--max-predictions-per-seq", "10"]
    arguments += ["--runner", "FnApiRunner", "--direct-num-workers", "2"]
    arguments += ["--direct-running-mode", "multi_processing"]
    paths = create_pretraining_data.main(arguments)
    assert paths and all(path.endswith(".tfrecord") for path in paths)
    assert _examples(paths) == _examples(beam_records)


def _statistics(pattern, vocabulary):
    batches = read_pretraining_tfrecords(pattern, 64, 64, 10, shuffle=False, num_epochs=1)
    features = {name: [] for name in ("ids", "mask", "positions", "weights", "labels", "masked")}
    for batch in batches.as_numpy_iterator():
        features["ids"].append(batch["masked_lm_ids"])
        features["weights"].append(batch["masked_lm_weights"])
        features["labels"].append(batch["next_sentence_labels"])
        features["mask"].append(batch["input_mask"])
        seen = np.take_along_axis(batch["input_word_ids"], batch["masked_lm_positions"], 1)
        features["masked"].append(seen)
    ids, weights = np.concatenate(features["ids"]), np.concatenate(features["weights"])
    seen = np.concatenate(features["masked"])
    predicted = weights > 0
    return {
        "sequences": len(weights),
        # The masking rate; per sequence it would also vary with the drawn lengths (short_seq_prob).
        "predictions per token": predicted.sum() / np.concatenate(features["mask"]).sum(),
        "[MASK] share": (seen[predicted] == vocabulary.index("[MASK]")).mean(),
        "unchanged share": (seen[predicted] == ids[predicted]).mean(),
        "random B share": np.concatenate(features["labels"]).mean(),
        "tokens per sequence": np.concatenate(features["mask"]).sum(1).mean(),
    }


def test_beam_examples_have_the_writers_masking_statistics(
    beam_records, shards, vocabulary, vocabulary_file, tmp_path
):
    documents = tokenize_documents(
        read_text_documents(shards), WordPieceTokenizer(str(vocabulary_file))
    )
    create_pretraining_tfrecords(documents, vocabulary, tmp_path, DATA, dupe_factor=2)
    got = _statistics(str(beam_records[0].parent / "*.tfrecord"), vocabulary)
    want = _statistics(str(tmp_path / "*.tfrecord"), vocabulary)
    print(f"\nBeam / writer: {got} / {want}")
    assert abs(got["sequences"] / want["sequences"] - 1) < 0.05
    assert abs(got["predictions per token"] / want["predictions per token"] - 1) < 0.01
    assert abs(got["[MASK] share"] - want["[MASK] share"]) < 0.03
    assert abs(got["unchanged share"] - want["unchanged share"]) < 0.03
    assert abs(got["random B share"] - want["random B share"]) < 0.05
    assert abs(got["tokens per sequence"] / want["tokens per sequence"] - 1) < 0.03


@pytest.mark.slow
def test_the_pretrainer_trains_on_beam_examples(beam_records, vocabulary_file, tmp_path):
    model = {
        "vocab_size": len(load_vocabulary(vocabulary_file)),
        "hidden_size": 32,
        "num_layers": 1,
        "num_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 64,
    }
    config = PretrainingConfig(
        output_dir=str(tmp_path / "run"),
        tfrecord_pattern=str(beam_records[0].parent / "*.tfrecord"),
        model_config=model,
        data=DATA,
        global_batch_size=8,
        total_steps=4,
        steps_per_checkpoint=2,
        run={"verbose": 0},
    )
    history = run_pretraining(config)
    assert int(history.model.optimizer.iterations.numpy()) == 4
    assert np.isfinite(history.history["loss"]).all()
