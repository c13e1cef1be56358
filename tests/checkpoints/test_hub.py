"""Checkpoints by Hub id, over the loopback Hub: what is downloaded, revisions, the cache, offline
use and the one-line errors."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import save

from keras_bert import (
    BertClassifier,
    BertMaskedLM,
    load_encoder,
    load_masked_lm,
    load_preprocessor,
    load_replaced_token_detector,
)
from keras_bert.checkpoints import checkpoint_vocabulary_file, load_checkpoint, location
from keras_bert.checkpoints.hub import resolve_checkpoint
from keras_bert.data.classification import read_classification_file
from keras_bert.errors import CheckpointError
from keras_bert.finetuning.classification import finetune_classifier
from keras_bert.finetuning.recipe import FinetuningConfig
from pipelines import convert
from pipelines.common import run_job
from tests.checkpoints.hub_server import LoopbackHub, use_hub
from tests.checkpoints.published import FIXTURES, OTHER_FORMAT_SIZE, OTHER_FORMATS
from tests.conftest import reference_outputs


def _cache_size(home) -> int:
    """Bytes in the cache; snapshots are links to its blobs, counted once."""
    files = [path for path in home.rglob("*") if path.is_file() and not path.is_symlink()]
    return sum(path.stat().st_size for path in files)


def test_downloads_only_what_the_loader_reads(hub_env, fake_hub):
    load_encoder("bert-base-uncased")

    downloaded = sorted(path.rsplit("/", 1)[1] for path in fake_hub.downloaded())
    assert downloaded == ["config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"]
    read_files = fake_hub.repos["bert-base-uncased"]["main"]
    read_size = sum(len(read_files[name]) for name in downloaded)
    assert len(OTHER_FORMATS) * OTHER_FORMAT_SIZE > 4 * read_size
    assert read_size <= _cache_size(hub_env) < read_size + 64 * 1024  # plus the Hub's metadata


def test_a_preprocessor_downloads_no_weights(hub_env, fake_hub):
    preprocessor = load_preprocessor("roberta-base", seq_length=8)

    assert preprocessor(["The cat"])["input_word_ids"].shape == (1, 8)
    downloaded = sorted(path.rsplit("/", 1)[1] for path in fake_hub.downloaded())
    assert downloaded == ["config.json", "merges.txt", "vocab.json"]


@pytest.fixture
def resolved(monkeypatch) -> list[str]:
    """The checkpoints given to the resolver (path or Hub id → directory), call by call."""
    calls = []
    resolve = location.resolve_checkpoint

    def counted(name_or_path, *args, **kwargs):
        calls.append(str(name_or_path))
        return resolve(name_or_path, *args, **kwargs)

    monkeypatch.setattr(location, "resolve_checkpoint", counted)
    return calls


@pytest.mark.parametrize(
    "load",
    [
        lambda name: load_encoder(name),
        lambda name: load_masked_lm(name),
        lambda name: load_preprocessor(name),
        lambda name: BertClassifier.from_checkpoint(name, num_classes=2, seq_length=8),
        lambda name: BertMaskedLM.from_checkpoint(name, seq_length=8),
    ],
    ids=["load_encoder", "load_masked_lm", "load_preprocessor", "classifier", "masked_lm"],
)
def test_a_hub_id_is_resolved_once_per_load(hub_env, fake_hub, resolved, load):
    load("roberta-base")

    assert resolved == ["roberta-base"]
    assert len([path for path in fake_hub.downloaded() if path.endswith("/config.json")]) == 1


def test_electra_loads_by_name_with_its_heads(hub_env, resolved, reference_dir):
    """The discriminator with its replaced-token head, the generator with its masked-LM head:
    the published weights (here the reference variants') under their Hub names."""
    variants = reference_dir / "variants" / "electra"
    preprocessor = load_preprocessor("google/electra-small-discriminator", seq_length=16)
    texts = ["The cat sat on the mat.", "Proteins fold."]
    inputs = {name: np.asarray(value) for name, value in preprocessor(texts).items()}
    detector = load_replaced_token_detector("google/electra-small-discriminator")
    local = load_replaced_token_detector(variants / "discriminator")
    np.testing.assert_array_equal(detector(inputs), local(inputs))
    positions = np.array([[1, 2], [1, 2]], "int32")
    generator = load_masked_lm("google/electra-small-generator")
    logits = generator({**inputs, "masked_lm_positions": positions})["masked_lm"]
    assert logits.shape == (2, 2, generator.encoder.bert_config.vocab_size)
    # Each load found its checkpoint once: the preprocessor, the detector, the local copy and
    # the generator.
    discriminator = "google/electra-small-discriminator"
    local_directory = str(variants / "discriminator")
    generator_name = "google/electra-small-generator"
    assert resolved == [discriminator, discriminator, local_directory, generator_name]


def test_a_finetuning_job_resolves_its_checkpoint_once(hub_env, resolved, tmp_path):
    train = read_classification_file("../shared/data/sentiment/movie_snippets.dev.jsonl")
    config = FinetuningConfig(
        "bert-base-cased", str(tmp_path), seq_length=16, epochs=1, max_train_examples=8
    )

    finetune_classifier(config, train)

    assert resolved == ["bert-base-cased"]


def test_pytorch_model_bin_is_read_where_there_is_no_safetensors(hub_env, fake_hub):
    checkpoint = load_checkpoint("allenai/scibert_scivocab_uncased")

    assert checkpoint.source.endswith("pytorch_model.bin")
    assert checkpoint.config.hidden_size == 8
    assert "bert/encoder/layer_1/output/dense/kernel" in checkpoint.tensors


@pytest.fixture
def revised_repo(fake_hub):
    """A repo whose tag `v2` holds other weights than `main`."""
    main = dict(fake_hub.repos["google-bert/bert-base-cased"]["main"])
    state = load_checkpoint_tensors(main)
    v2 = {**main, "model.safetensors": save({name: value + 1 for name, value in state.items()})}
    fake_hub.add("test/revised", main)
    fake_hub.add("test/revised", v2, revision="v2")
    yield "test/revised"
    del fake_hub.repos["test/revised"]


def load_checkpoint_tensors(files: dict[str, bytes]) -> dict[str, np.ndarray]:
    from safetensors.numpy import load

    return load(files["model.safetensors"])


def test_revision_picks_a_tag_and_a_commit(hub_env, fake_hub, revised_repo):
    name = "bert/embeddings/word_embeddings"
    main = load_checkpoint(revised_repo).tensors[name]
    tagged = load_checkpoint(revised_repo, revision="v2").tensors[name]
    by_commit = load_checkpoint(revised_repo, fake_hub.head(revised_repo, "v2")).tensors[name]

    np.testing.assert_allclose(tagged, main + 1, rtol=1e-6)
    np.testing.assert_array_equal(by_commit, tagged)
    with pytest.raises(CheckpointError, match="test/revised has no revision 'v3'"):
        load_checkpoint(revised_repo, revision="v3")


def test_a_local_directory_wins_over_a_hub_id(hub_env, fake_hub, tmp_path, monkeypatch):
    local = tmp_path / "work" / "bert-base-uncased"
    shutil.copytree("../shared/reference/variants/distilbert", local)
    monkeypatch.chdir(local.parent)

    encoder = load_encoder("bert-base-uncased")

    assert encoder.bert_config.model_type == "distilbert"
    assert fake_hub.requests == []
    with pytest.raises(CheckpointError, match="is a local path"):
        load_encoder("bert-base-uncased", revision="main")


@pytest.fixture
def broken_repos(fake_hub):
    config = json.loads(fake_hub.repos["bert-base-uncased"]["main"]["config.json"])
    weights = fake_hub.repos["bert-base-uncased"]["main"]["model.safetensors"]
    repos = {
        "test/no-weights": {"config.json": json.dumps(config).encode(), "vocab.txt": b"[PAD]\n"},
        "test/gpt2": {
            "config.json": json.dumps({**config, "model_type": "gpt2"}).encode(),
            "model.safetensors": weights,
        },
        "test/no-config": {"model.safetensors": weights},
    }
    for repo_id, files in repos.items():
        fake_hub.add(repo_id, files)
    yield
    for repo_id in repos:
        del fake_hub.repos[repo_id]


@pytest.mark.parametrize(
    "name, message",
    [
        ("test/no-such-repo", r"^No Hub repo test/no-such-repo \(and no local directory"),
        ("test/no-weights", r"^The Hub repo test/no-weights has no weights keras_bert reads"),
        ("test/gpt2", r"^test/gpt2: Unknown model_type 'gpt2'; expected one of bert, roberta, "),
        ("test/no-config", r"^The Hub repo test/no-config has no config.json"),
    ],
)
def test_one_line_errors(hub_env, fake_hub, broken_repos, name, message):
    with pytest.raises(CheckpointError, match=message) as error:
        load_encoder(name)

    assert "\n" not in str(error.value)
    assert not any(path.endswith(".safetensors") for path in fake_hub.downloaded())


def test_pipelines_end_with_status_2_and_one_line(hub_env, broken_repos, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_job(convert.main, ["test/gpt2", "--output", str(tmp_path / "out")])

    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("error: test/gpt2: Unknown model_type 'gpt2'")


@pytest.mark.parametrize(
    "job, arguments",
    [
        ("export", ["--task", "encoder", "--name", "by_name"]),
        ("finetune_classifier", ["--train", "../shared/data/sentiment/movie_snippets.dev.jsonl"]),
    ],
)
def test_pipelines_take_checkpoint_and_revision(hub_env, tmp_path, capsys, job, arguments):
    import importlib

    main = importlib.import_module(f"pipelines.{job}").main
    output = ["--output-dir", str(tmp_path)] if job.startswith("finetune") else []
    flags = ["--checkpoint", "bert-base-cased", "--revision", "v9", *output]

    with pytest.raises(SystemExit) as exit_info:
        run_job(main, [*arguments, *flags])

    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: The Hub repo bert-base-cased has no revision 'v9'."
    )


def test_offline_after_one_download_loads_from_the_cache(monkeypatch, tmp_path, fake_hub):
    from huggingface_hub import constants

    server = LoopbackHub(fake_hub)
    use_hub(monkeypatch, server.url, tmp_path / "hf_home")
    online = load_encoder("microsoft/deberta-v3-small")
    vocabulary = checkpoint_vocabulary_file("bert-base-cased")
    multilingual = load_preprocessor("FacebookAI/xlm-roberta-base")(["Grüß Gott, 世界"])
    server.stop()

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    offline = load_encoder("microsoft/deberta-v3-small")
    offline_multilingual = load_preprocessor("FacebookAI/xlm-roberta-base")(["Grüß Gott, 世界"])
    np.testing.assert_array_equal(
        offline_multilingual["input_word_ids"], multilingual["input_word_ids"]
    )

    for ours, theirs in zip(online.weights, offline.weights, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert checkpoint_vocabulary_file("bert-base-cased") == vocabulary
    with pytest.raises(CheckpointError, match="^roberta-base is not in the Hugging Face cache"):
        load_encoder("roberta-base")


@pytest.mark.slow  # ~25 s: huggingface_hub retries an unreachable Hub 5 times, with backoff
def test_an_unreachable_hub_falls_back_to_the_cache(monkeypatch, tmp_path, fake_hub):
    server = LoopbackHub(fake_hub)
    use_hub(monkeypatch, server.url, tmp_path / "hf_home")
    directory = resolve_checkpoint("albert-base-v2")
    server.stop()

    assert resolve_checkpoint("albert-base-v2") == directory


def test_convert_writes_a_directory_every_loader_reads(hub_env, tmp_path, capsys):
    output = tmp_path / "tinybert"

    convert.main(["huawei-noah/TinyBERT_General_4L_312D", "--output", str(output)])

    printed = capsys.readouterr().out
    assert "read: config.json, pytorch_model.bin, vocab.txt" in printed
    assert "ignored (6 tensors no model reads): fit_denses.0.weight" in printed
    assert sorted(path.name for path in output.iterdir()) == [
        "config.json", "model.safetensors", "vocab.txt"
    ]  # fmt: skip
    converted = load_encoder(output)
    original = load_encoder("huawei-noah/TinyBERT_General_4L_312D")
    for ours, theirs in zip(converted.weights, original.weights, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin"])
def test_xlm_roberta_by_name_gives_transformers_outputs_from_either_format(
    hub_env, fake_hub, reference_dir, weights
):
    """FacebookAI/xlm-roberta-base's repo holds both formats (safetensors are read); a copy with
    only `pytorch_model.bin` (written by torch, its decoder sharing the embeddings' storage)
    loads the same encoder."""
    files = dict(fake_hub.repos["FacebookAI/xlm-roberta-base"]["main"])
    other = {"model.safetensors": "pytorch_model.bin", "pytorch_model.bin": "model.safetensors"}
    fake_hub.add("test/xlm-roberta", {k: v for k, v in files.items() if k != other[weights]})
    try:
        checkpoint = load_checkpoint("test/xlm-roberta")
        masked_lm = load_masked_lm("test/xlm-roberta")
        preprocessor = load_preprocessor("test/xlm-roberta", seq_length=64)
    finally:
        del fake_hub.repos["test/xlm-roberta"]
    assert checkpoint.source.endswith(weights)
    archive = reference_outputs(reference_dir, "xlm_roberta")
    texts = json.loads(str(archive["texts_json"]))["multilingual"]
    inputs = preprocessor(texts)
    np.testing.assert_array_equal(inputs["input_word_ids"], archive["multilingual_input_ids"])
    positions = tf.tile(tf.constant([[1, 2, 3]]), [len(texts), 1])
    logits = masked_lm({**inputs, "masked_lm_positions": positions})["masked_lm"]
    expected = archive["multilingual_mlm_logits_at_1_2_3"]
    assert np.abs(np.asarray(logits) - expected).max() <= 1e-4


@pytest.fixture
def modernbert_bin_repo(fake_hub):
    """ModernBERT-base's repo with its weights as `pytorch_model.bin` (float16, torch's zip
    format, the decoder's weight the embeddings' storage) instead of safetensors."""
    files = dict(fake_hub.repos["answerdotai/ModernBERT-base"]["main"])
    del files["model.safetensors"]
    files["pytorch_model.bin"] = (FIXTURES / "modernbert_fp16.bin").read_bytes()
    fake_hub.add("test/modernbert-bin", files)
    yield "test/modernbert-bin"
    del fake_hub.repos["test/modernbert-bin"]


def test_modernbert_by_name_reads_safetensors_and_pytorch_model_bin_alike(
    hub_env, modernbert_bin_repo
):
    from_safetensors = load_checkpoint("answerdotai/ModernBERT-base")
    from_bin = load_checkpoint(modernbert_bin_repo)

    assert from_bin.source.endswith("pytorch_model.bin")
    assert sorted(from_bin.tensors) == sorted(from_safetensors.tensors)
    for name, value in from_safetensors.tensors.items():
        expected = value.astype(np.float16).astype(np.float32)
        np.testing.assert_array_equal(from_bin.tensors[name], expected, err_msg=name)
    # Its published config: the global layer first, then two of window 128, rotary bases
    # 160,000 and 10,000, mean pooling for a new classifier.
    config = from_safetensors.config
    assert config.attention_windows == [0, 64, 64]
    assert config.rotary_bases == [160_000.0, 10_000.0, 10_000.0]
    assert BertClassifier.from_checkpoint("answerdotai/ModernBERT-base", num_classes=2).pooling == (
        "mean"
    )


def test_modernbert_loads_offline_from_the_cache(monkeypatch, tmp_path, fake_hub):
    from huggingface_hub import constants

    server = LoopbackHub(fake_hub)
    use_hub(monkeypatch, server.url, tmp_path / "hf_home")
    online = load_masked_lm("answerdotai/ModernBERT-base")
    server.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)

    offline = load_masked_lm("answerdotai/ModernBERT-base")
    preprocessor = load_preprocessor("answerdotai/ModernBERT-base", seq_length=16)
    inputs = {name: np.asarray(value) for name, value in preprocessor(["A [MASK]."]).items()}
    inputs["masked_lm_positions"] = np.argmax(inputs["input_word_ids"] == 4, axis=1)[:, None]
    np.testing.assert_array_equal(offline(inputs)["masked_lm"], online(inputs)["masked_lm"])
