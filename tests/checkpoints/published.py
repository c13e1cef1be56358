"""The seeds' published checkpoints as Hub repos for the loopback server: each with its real
`config.json` (published values; only the sizes shrunk to those of its tiny random weights), its
real file names and tokenizer layout, and its real weights format (safetensors where the repo
has it, else `pytorch_model.bin` written by torch, see fixtures/write_torch_fixtures.py).

The table of docs/checkpoints_by_name.md lists the same names; `test_docs_by_name.py` checks
that both agree.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save

from keras_bert.checkpoints.torch_pickle import read_torch_state_dict

FIXTURES = Path(__file__).parent / "fixtures"
VARIANTS = Path(__file__).parents[2] / ".." / "shared" / "reference" / "variants"
# Large files in formats keras_bert never reads, as bert-base-uncased's repo holds them.
OTHER_FORMATS = (
    "tf_model.h5",
    "flax_model.msgpack",
    "rust_model.ot",
    "onnx/model.onnx",
    "coreml/fill-mask/float32_model.mlpackage/Data/com.apple.CoreML/model.mlmodel",
)
OTHER_FORMAT_SIZE = 1 << 20
# The fields that fix the weights' shapes: taken from the tiny weights' own config.
_SIZE_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
    "embedding_size",
    "num_hidden_groups",
    "inner_group_num",
    "position_buckets",
    "max_relative_positions",
    "pad_token_id",
    "dim",
    "n_layers",
    "n_heads",
    "hidden_dim",
)
_TINY_BERT_SIZES = {
    "vocab_size": 3000,
    "hidden_size": 8,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 16,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
}
_BERT_BASE = {
    "architectures": ["BertForMaskedLM"],
    "attention_probs_dropout_prob": 0.1,
    "gradient_checkpointing": False,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512,
    "model_type": "bert",
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
    "transformers_version": "4.6.0.dev0",
    "type_vocab_size": 2,
    "use_cache": True,
    "vocab_size": 30522,
}
_BERT_LARGE = {
    **_BERT_BASE,
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
}
# The 2019 releases: Google's bert_config.json fields, no model_type.
_GOOGLE_FIELDS = (
    "attention_probs_dropout_prob", "hidden_act", "hidden_dropout_prob", "hidden_size",
    "initializer_range", "intermediate_size", "max_position_embeddings", "num_attention_heads",
    "num_hidden_layers", "type_vocab_size",
)  # fmt: skip
_ORIGINAL_BERT_BASE = {**{name: _BERT_BASE[name] for name in _GOOGLE_FIELDS}, "vocab_size": 28996}
_ROBERTA_BASE = {
    **_ORIGINAL_BERT_BASE,
    "architectures": ["RobertaForMaskedLM"],
    "bos_token_id": 0,
    "eos_token_id": 2,
    "layer_norm_eps": 1e-05,
    "max_position_embeddings": 514,
    "model_type": "roberta",
    "pad_token_id": 1,
    "type_vocab_size": 1,
    "vocab_size": 50265,
}
_DEBERTA_V3_BASE = {
    **_ORIGINAL_BERT_BASE,
    "model_type": "deberta-v2",
    "max_position_embeddings": 512,
    "relative_attention": True,
    "position_buckets": 256,
    "norm_rel_ebd": "layer_norm",
    "share_att_key": True,
    "pos_att_type": "p2c|c2p",
    "layer_norm_eps": 1e-7,
    "max_relative_positions": -1,
    "position_biased_input": False,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "type_vocab_size": 0,
    "vocab_size": 128100,
}


# answerdotai/ModernBERT-base's config.json (transformers 4.47's format: flat rotary bases and
# the interval of the global layers).
_MODERNBERT_BASE = {
    "architectures": ["ModernBertForMaskedLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 50281,
    "classifier_activation": "gelu",
    "classifier_bias": False,
    "classifier_dropout": 0.0,
    "classifier_pooling": "mean",
    "cls_token_id": 50281,
    "decoder_bias": True,
    "deterministic_flash_attn": False,
    "embedding_dropout": 0.0,
    "eos_token_id": 50282,
    "global_attn_every_n_layers": 3,
    "global_rope_theta": 160000.0,
    "gradient_checkpointing": False,
    "hidden_activation": "gelu",
    "hidden_size": 768,
    "initializer_cutoff_factor": 2.0,
    "initializer_range": 0.02,
    "intermediate_size": 1152,
    "layer_norm_eps": 1e-05,
    "local_attention": 128,
    "local_rope_theta": 10000.0,
    "max_position_embeddings": 8192,
    "mlp_bias": False,
    "mlp_dropout": 0.0,
    "model_type": "modernbert",
    "norm_bias": False,
    "norm_eps": 1e-05,
    "num_attention_heads": 12,
    "num_hidden_layers": 22,
    "pad_token_id": 50283,
    "position_embedding_type": "absolute",
    "reference_compile": True,
    "sep_token_id": 50282,
    "sparse_pred_ignore_index": -100,
    "sparse_prediction": False,
    "torch_dtype": "float32",
    "transformers_version": "4.47.0.dev0",
    "vocab_size": 50368,
}
_MODERNBERT_FILES = ("tokenizer.json", "tokenizer_config.json")


_XLM_ROBERTA_BASE = {
    **_ROBERTA_BASE,
    "architectures": ["XLMRobertaForMaskedLM"],
    "model_type": "xlm-roberta",
    "output_past": True,
    "vocab_size": 250002,
}
_XLM_ROBERTA_LARGE = {
    **_XLM_ROBERTA_BASE,
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
}
_XLM_ROBERTA_FILES = ("sentencepiece.bpe.model", "tokenizer.json")


def _xlm_roberta(published: dict) -> dict[str, bytes]:
    """An XLM-R repo: safetensors and, beside them, the same weights in `pytorch_model.bin`."""
    files = _family_repo("xlm_roberta", published, _XLM_ROBERTA_FILES)
    return files | {"pytorch_model.bin": (FIXTURES / "xlm_roberta.bin").read_bytes()}


# google/electra-small-discriminator's config.json (its generator's names ElectraForMaskedLM).
_ELECTRA_SMALL = {
    "architectures": ["ElectraForPreTraining"],
    "attention_probs_dropout_prob": 0.1,
    "embedding_size": 128,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 256,
    "initializer_range": 0.02,
    "intermediate_size": 1024,
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512,
    "model_type": "electra",
    "num_attention_heads": 4,
    "num_hidden_layers": 12,
    "pad_token_id": 0,
    "type_vocab_size": 2,
    "vocab_size": 30522,
}


def _bert_tensors() -> dict[str, np.ndarray]:
    state = read_torch_state_dict(FIXTURES / "bert_pretraining_legacy.bin")
    return {name: np.ascontiguousarray(value) for name, value in state.items()}


def _variant(family: str, name: str) -> bytes:
    return (VARIANTS / family / name).read_bytes()


def _config(published: dict, sizes: dict) -> bytes:
    shrunk = {**published, **{name: sizes[name] for name in _SIZE_FIELDS if name in sizes}}
    return json.dumps(shrunk, indent=2).encode()


def _bert_repo(published: dict, weights: str, lowercase: bool | None, vocabulary: bool = True):
    files = {"config.json": _config(published, _TINY_BERT_SIZES)}
    if weights == "safetensors":
        files["model.safetensors"] = save(_bert_tensors())
    else:
        files["pytorch_model.bin"] = (FIXTURES / weights).read_bytes()
    if vocabulary:
        files["vocab.txt"] = _variant("distilbert", "vocab.txt")
    if lowercase is not None:
        files["tokenizer_config.json"] = json.dumps({"do_lower_case": lowercase}).encode()
    return files


def _family_repo(family: str, published: dict, tokenizer_files: tuple[str, ...], weights=None):
    sizes = json.loads(_variant(family, "config.json"))
    files = {"config.json": _config(published, sizes)}
    if weights is None:
        files["model.safetensors"] = _variant(family, "model.safetensors")
    else:
        files["pytorch_model.bin"] = (FIXTURES / weights).read_bytes()
    return files | {name: _variant(family, name) for name in tokenizer_files}


def _deberta_v3(hidden: int, layers: int, heads: int) -> dict[str, bytes]:
    published = {
        **_DEBERTA_V3_BASE,
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": 4 * hidden,
    }
    return _family_repo(
        "deberta_v3", published, ("spm.model", "tokenizer_config.json"), "deberta_v3_fp16.bin"
    )


def published_repos() -> dict[str, dict[str, bytes]]:
    """Hub id -> files, for every checkpoint of docs/checkpoints_by_name.md (legacy short ids
    and the organisations' ids both)."""
    uncased = _bert_repo(_BERT_BASE, "safetensors", lowercase=True)
    uncased["pytorch_model.bin"] = (FIXTURES / "bert_pretraining_legacy.bin").read_bytes()
    uncased |= {name: bytes(OTHER_FORMAT_SIZE) for name in OTHER_FORMATS}
    roberta_files = ("vocab.json", "merges.txt", "tokenizer.json")
    electra_files = ("vocab.txt", "tokenizer.json", "tokenizer_config.json")
    repos = {
        "google-bert/bert-base-uncased": uncased,
        "google-bert/bert-large-uncased": _bert_repo(_BERT_LARGE, "safetensors", lowercase=True),
        "google-bert/bert-base-cased": _bert_repo(
            {**_BERT_BASE, "vocab_size": 28996}, "safetensors", lowercase=False
        ),
        "google-bert/bert-large-cased": _bert_repo(
            {**_BERT_LARGE, "vocab_size": 28996}, "safetensors", lowercase=False
        ),
        "FacebookAI/roberta-base": _family_repo("roberta", _ROBERTA_BASE, roberta_files),
        "FacebookAI/roberta-large": _family_repo(
            "roberta",
            {
                **_ROBERTA_BASE,
                "hidden_size": 1024,
                "intermediate_size": 4096,
                "num_attention_heads": 16,
                "num_hidden_layers": 24,
            },
            roberta_files,
        ),
        "distilbert/distilbert-base-uncased": _family_repo(
            "distilbert",
            {
                "activation": "gelu",
                "architectures": ["DistilBertForMaskedLM"],
                "attention_dropout": 0.1,
                "dim": 768,
                "dropout": 0.1,
                "hidden_dim": 3072,
                "initializer_range": 0.02,
                "max_position_embeddings": 512,
                "model_type": "distilbert",
                "n_heads": 12,
                "n_layers": 6,
                "pad_token_id": 0,
                "qa_dropout": 0.1,
                "seq_classif_dropout": 0.2,
                "sinusoidal_pos_embds": False,
                "tie_weights_": True,
                "vocab_size": 30522,
            },
            ("vocab.txt", "tokenizer.json", "tokenizer_config.json"),
        ),
        "albert/albert-base-v2": _family_repo(
            "albert",
            {
                "architectures": ["AlbertForMaskedLM"],
                "attention_probs_dropout_prob": 0,
                "bos_token_id": 2,
                "classifier_dropout_prob": 0.1,
                "down_scale_factor": 1,
                "embedding_size": 128,
                "eos_token_id": 3,
                "gap_size": 0,
                "hidden_act": "gelu_new",
                "hidden_dropout_prob": 0,
                "hidden_size": 768,
                "initializer_range": 0.02,
                "inner_group_num": 1,
                "intermediate_size": 3072,
                "layer_norm_eps": 1e-12,
                "max_position_embeddings": 512,
                "model_type": "albert",
                "net_structure_type": 0,
                "num_attention_heads": 12,
                "num_hidden_groups": 1,
                "num_hidden_layers": 12,
                "num_memory_blocks": 0,
                "pad_token_id": 0,
                "type_vocab_size": 2,
                "vocab_size": 30000,
            },
            ("spiece.model", "tokenizer.json"),
        ),
        "FacebookAI/xlm-roberta-base": _xlm_roberta(_XLM_ROBERTA_BASE),
        "FacebookAI/xlm-roberta-large": _xlm_roberta(_XLM_ROBERTA_LARGE),
        "microsoft/deberta-v3-xsmall": _deberta_v3(384, 12, 6),
        "microsoft/deberta-v3-small": _deberta_v3(768, 6, 12),
        "microsoft/deberta-v3-base": _deberta_v3(768, 12, 12),
        "answerdotai/ModernBERT-base": _family_repo(
            "modernbert", _MODERNBERT_BASE, _MODERNBERT_FILES
        ),
        "answerdotai/ModernBERT-large": _family_repo(
            "modernbert",
            {
                **_MODERNBERT_BASE,
                "hidden_size": 1024,
                "intermediate_size": 2624,
                "num_attention_heads": 16,
                "num_hidden_layers": 28,
            },
            _MODERNBERT_FILES,
        ),
        # SpanBERT's repos hold no vocabulary: it is bert-base-cased's.
        "SpanBERT/spanbert-base-cased": _bert_repo(
            _ORIGINAL_BERT_BASE, "bert_pretraining_legacy.bin", None, vocabulary=False
        ),
        "SpanBERT/spanbert-large-cased": _bert_repo(
            {
                **_ORIGINAL_BERT_BASE,
                "hidden_size": 1024,
                "intermediate_size": 4096,
                "num_attention_heads": 16,
                "num_hidden_layers": 24,
            },
            "bert_pretraining_legacy.bin",
            None,
            vocabulary=False,
        ),
        "allenai/scibert_scivocab_uncased": _bert_repo(
            {**_ORIGINAL_BERT_BASE, "vocab_size": 31090}, "bert_pretraining_legacy.bin", None
        ),
        "dmis-lab/biobert-base-cased-v1.2": _bert_repo(
            {**_ORIGINAL_BERT_BASE, "architectures": ["BertForMaskedLM"], "model_type": "bert"},
            "bert_pretraining_legacy.bin",
            lowercase=False,
        ),
        "google/electra-small-discriminator": _family_repo(
            "electra/discriminator", _ELECTRA_SMALL, electra_files
        ),
        "google/electra-small-generator": _family_repo(
            "electra/generator",
            {**_ELECTRA_SMALL, "architectures": ["ElectraForMaskedLM"]},
            electra_files,
        ),
        # Written whole by fixtures/write_torch_fixtures.py.
        "huawei-noah/TinyBERT_General_4L_312D": {
            path.name: path.read_bytes() for path in (FIXTURES / "tinybert").iterdir()
        },
    }
    # The short ids the Hub still redirects (bert-base-uncased, roberta-base, ...).
    for repo_id in list(repos):
        organisation, _, name = repo_id.partition("/")
        if organisation in ("google-bert", "FacebookAI", "distilbert", "albert"):
            repos[name] = repos[repo_id]
    return repos
