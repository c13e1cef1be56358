"""Hugging Face BERT checkpoints: `config.json` + `model.safetensors` (or `pytorch_model.bin`),
read without torch; and the names transformers gives canonical tensors, to write them."""

from __future__ import annotations

import json
import logging
import mmap
import re
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.checkpoints.layouts import is_read_by_models, with_model_prefix
from keras_bert.checkpoints.torch_pickle import read_torch_state_dict
from keras_bert.config import BertConfig
from keras_bert.errors import CheckpointError
from keras_bert.families import family

logger = logging.getLogger(__name__)

WEIGHTS_FILE = "model.safetensors"
SHARDED_INDEX_FILE = "model.safetensors.index.json"
TORCH_WEIGHTS_FILE = "pytorch_model.bin"
TORCH_SHARDED_INDEX_FILE = "pytorch_model.bin.index.json"
# The weights a directory may hold, in the order they are preferred: (single file, index).
WEIGHTS_FORMATS = (
    (WEIGHTS_FILE, SHARDED_INDEX_FILE),
    (TORCH_WEIGHTS_FILE, TORCH_SHARDED_INDEX_FILE),
)

# Buffers and tied copies that carry no weights of their own.
_SKIPPED = re.compile(r"(^|\.)position_ids$|^cls\.predictions\.decoder\.(weight|bias)$")
# Names whose canonical form does not follow the module path.
_RENAMED = {
    "cls.predictions.bias": "cls/predictions/output_bias",
    "cls.seq_relationship.weight": "cls/seq_relationship/output_weights",
    "cls.seq_relationship.bias": "cls/seq_relationship/output_bias",
}
_LAYER_NORM_PARAMETERS = {"weight": "gamma", "gamma": "gamma", "bias": "beta", "beta": "beta"}
# The modules whose parameters are a LayerNorm's (`final_layer_norm`: ModernBERT's final norm).
_LAYER_NORM_MODULES = ("LayerNorm", "final_layer_norm")
# What the name rules of `keras_bert.families` are made of: `^`, `$`, escaped characters,
# groups (alternatives or `\d+`), and literal characters.
_RULE_PARTS = re.compile(r"(?P<anchor>[\^$])|\\(?P<escaped>.)|(?P<group>\([^()]*\))|(?P<literal>.)")
_BACK_REFERENCE = re.compile(r"\\(\d)")


def is_huggingface_directory(directory: Path) -> bool:
    return any((directory / name).is_file() for names in WEIGHTS_FORMATS for name in names)


def canonical_name(name: str, model_type: str = "bert") -> tuple[str, bool] | None:
    """The canonical name of a Hugging Face tensor and whether it must be transposed.

    `None` for tensors that carry no weights (buffers, the decoder tied to the embeddings).
    Linear weights are stored `[out, in]` by PyTorch and need a transpose; the NSP output
    weights are `[2, hidden]` in both layouts. The family's names (`tensor_names` of its record
    in `keras_bert.families`) are read as the BERT names of the same weights; a bare model's
    names (`AutoModel.save_pretrained`: `embeddings.`, `encoder.`, ...) as those under the
    family's prefix. Task heads keep their module paths (`classifier/kernel`); tensors of
    modules no model reads (TinyBERT's `fit_denses`) keep a name outside every model's scope.

    Example:
    >>> canonical_name("distilbert.transformer.layer.1.attention.q_lin.weight", "distilbert")
    ('bert/encoder/layer_1/attention/self/query/kernel', True)
    """
    name = with_model_prefix(name, model_type)
    record = family(model_type)
    for pattern, replacement in (*record.other_tensor_names, *record.tensor_names):
        name = re.sub(pattern, replacement, name)
    if _SKIPPED.search(name):
        return None
    if name in _RENAMED:
        return _RENAMED[name], False
    path = re.sub(r"encoder\.layer\.(\d+)", r"encoder.layer_\1", name)
    module, _, parameter = path.rpartition(".")
    module = module.replace(".", "/")
    if module.endswith(_LAYER_NORM_MODULES):
        return f"{module}/{_LAYER_NORM_PARAMETERS.get(parameter, parameter)}", False
    if parameter == "weight" and module.endswith("_embeddings"):
        return module, False
    if parameter == "weight":
        return f"{module}/kernel", True
    return f"{module}/{parameter}", False


def _reversed_rule(pattern: str, replacement: str) -> tuple[str, str]:
    """The rule that undoes `re.sub(pattern, replacement, ...)`: its pattern matches what the
    replacement wrote (each back reference as the group it stands for), its replacement writes
    what the pattern matched.

    Example:
    >>> pattern, replacement = _reversed_rule(r"attention\\.(query|key)\\.", r"attention.self.\\1.")
    >>> re.sub(pattern, replacement, "layer.0.attention.self.key.weight")
    'layer.0.attention.key.weight'
    """
    parts = list(_RULE_PARTS.finditer(pattern))
    groups = [part["group"] for part in parts if part["group"]]
    anchors = {part["anchor"] for part in parts if part["anchor"]}
    reversed_pattern = "".join(
        groups[int(piece) - 1] if index % 2 else re.escape(piece)
        for index, piece in enumerate(_BACK_REFERENCE.split(replacement))
    )
    group_number = iter(range(1, len(groups) + 1))
    reversed_replacement = "".join(
        f"\\{next(group_number)}" if part["group"] else part["escaped"] or part["literal"] or ""
        for part in parts
    )
    return (
        ("^" if "^" in anchors else "") + reversed_pattern + ("$" if "$" in anchors else ""),
        reversed_replacement,
    )


def huggingface_name(canonical: str, model_type: str = "bert") -> tuple[str, bool]:
    """The name transformers gives a canonical tensor, under the model's prefix, and whether
    it must be transposed: `canonical_name` backwards, the family's name rules read from the
    last to the first.

    Raises:
        CheckpointError: no transformers name reads back as `canonical`.

    Example:
    >>> huggingface_name("bert/encoder/layer_1/attention/self/query/kernel", "distilbert")
    ('distilbert.transformer.layer.1.attention.q_lin.weight', True)
    >>> huggingface_name("cls/predictions/output_bias", "roberta")
    ('lm_head.bias', False)
    """
    renamed = {value: key for key, value in _RENAMED.items()}
    module, _, parameter = canonical.rpartition("/")
    if canonical in renamed:
        name = renamed[canonical]
    elif parameter.endswith("_embeddings"):
        name = f"{canonical}/weight"
    elif module.endswith(_LAYER_NORM_MODULES):
        name = f"{module}/{'weight' if parameter == 'gamma' else 'bias'}"
    else:
        name = f"{module}/{'weight' if parameter == 'kernel' else parameter}"
    name = re.sub(r"encoder/layer_(\d+)", r"encoder/layer/\1", name).replace("/", ".")
    for pattern, replacement in reversed(family(model_type).tensor_names):
        name = re.sub(*_reversed_rule(pattern, replacement), name)
    read_back = canonical_name(name, model_type)
    if read_back is None or read_back[0] != canonical:
        raise CheckpointError(f"transformers' {model_type} models have no tensor {canonical}.")
    return name, read_back[1]


def split_fused_tensors(tensors: dict[str, np.ndarray], model_type: str) -> dict[str, np.ndarray]:
    """Canonical tensors with the family's fused modules (`Family.fused_tensors`) split into
    their parts, equal slices of the last axis (a kernel's output axis, `[in, out]`).

    Example:
    >>> fused = {"bert/encoder/layer_0/attention/self/query_key_value/kernel": np.ones((2, 6))}
    >>> {name: value.shape for name, value in split_fused_tensors(fused, "modernbert").items()}
    ... # doctest: +NORMALIZE_WHITESPACE
    {'bert/encoder/layer_0/attention/self/query/kernel': (2, 2),
     'bert/encoder/layer_0/attention/self/key/kernel': (2, 2),
     'bert/encoder/layer_0/attention/self/value/kernel': (2, 2)}
    """
    split = {}
    for name, value in tensors.items():
        for module, parts in family(model_type).fused_tensors:
            if f"/{module}/" in name:
                pieces = np.split(value, len(parts), axis=-1)
                split |= {
                    name.replace(f"/{module}/", f"/{part}/"): np.ascontiguousarray(piece)
                    for part, piece in zip(parts, pieces, strict=True)
                }
                break
        else:
            split[name] = value
    return split


def join_fused_tensors(tensors: dict[str, np.ndarray], model_type: str) -> dict[str, np.ndarray]:
    """`split_fused_tensors` backwards: the parts of each fused module joined along their last
    axis under the module's name, where its first part was.

    Example:
    >>> parts = {f"bert/layer_0/attention/self/{name}/bias": np.full(2, index)
    ...          for index, name in enumerate(("query", "key", "value"))}
    >>> join_fused_tensors(parts, "modernbert")
    {'bert/layer_0/attention/self/query_key_value/bias': array([0, 0, 1, 1, 2, 2])}
    """
    joined = {}
    for name, value in tensors.items():
        for module, (first, *others) in family(model_type).fused_tensors:
            if f"/{first}/" in name:
                names = [name.replace(f"/{first}/", f"/{part}/") for part in (first, *others)]
                fused = np.concatenate([tensors[part] for part in names], axis=-1)
                joined[name.replace(f"/{first}/", f"/{module}/")] = fused
                break
            if any(f"/{part}/" in name for part in others):
                break  # joined where its first part is
        else:
            joined[name] = value
    return joined


# safetensors' element types and numpy's (bfloat16: its 16 bits, widened to float32 as read).
_SAFETENSORS_DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4",
    "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?",
}  # fmt: skip


def _read_safetensors(weights_file: Path) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file as read-only views of the file, memory-mapped: a
    checkpoint's weights are not copied into memory before the model's variables take them
    (bfloat16 tensors are widened to float32 copies)."""

    def unreadable(reason: str) -> CheckpointError:
        return CheckpointError(
            f"Cannot read {weights_file}: {reason}. The file is truncated or not a safetensors "
            "file; download it again."
        )

    if not weights_file.is_file():
        raise CheckpointError(f"Missing weights file {weights_file}.")
    with open(weights_file, "rb") as file:
        size = file.seek(0, 2)
        if size < 8:
            raise unreadable("it has no header")
        buffer = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    (header_size,) = struct.unpack_from("<Q", buffer)
    try:
        header = json.loads(buffer[8 : 8 + header_size])
    except (ValueError, UnicodeDecodeError):
        raise unreadable("its header is not JSON") from None
    start = 8 + header_size
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = np.dtype(_SAFETENSORS_DTYPES[entry["dtype"]])
            begin, end = entry["data_offsets"]
            shape = tuple(entry["shape"])
        except (KeyError, TypeError, ValueError):
            raise unreadable(f"tensor {name} has no readable type, offsets and shape") from None
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * dtype.itemsize or start + end > size:
            raise unreadable(f"tensor {name} runs past its bytes or the file")
        array = np.frombuffer(buffer, dtype, count, start + begin).reshape(shape)
        if entry["dtype"] == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = array
    return tensors


def weights_files(directory: Path) -> list[str]:
    """The weights files of a directory, in the first format it holds (safetensors first),
    shards listed by their index.

    Example:
    >>> weights_files(Path("../shared/reference/variants/roberta"))
    ['model.safetensors']
    """
    for single_file, index_file in WEIGHTS_FORMATS:
        if (directory / single_file).is_file():
            return [single_file]
        if (directory / index_file).is_file():
            index = json.loads((directory / index_file).read_text("utf-8"))
            return sorted(set(index["weight_map"].values()))
    expected = [name for names in WEIGHTS_FORMATS for name in names]
    raise CheckpointError(
        f"No weights in {directory}: expected {', '.join(expected[:-1])} or {expected[-1]}."
    )


def read_weights_file(weights_file: Path) -> dict[str, np.ndarray]:
    """The tensors of a safetensors or `torch.save` file, by their Hugging Face names."""
    if weights_file.suffix == ".safetensors":
        return _read_safetensors(weights_file)
    return read_torch_state_dict(weights_file)


def read_huggingface_checkpoint(
    directory: Path, weights_files: Sequence[Path], config: BertConfig, pooler_optional: bool
) -> Checkpoint:
    """Reads the weights of a directory (safetensors or `pytorch_model.bin`, one file or its
    shards, in `weights_files`) under its config. Tensors that no model reads are logged once and
    left out. Without pooler tensors the encoder has no pooler where `pooler_optional`, else
    restoring it names them as missing."""
    tensors: dict[str, np.ndarray] = {}
    ignored: list[str] = []
    for weights_file in weights_files:
        read = read_weights_file(weights_file)
        for name in list(read):  # each let go once converted: a file's worth in memory, not two
            value = read.pop(name)
            converted = canonical_name(name, config.model_type)
            if converted is None:
                continue
            canonical, transpose = converted
            if not is_read_by_models(canonical):
                ignored.append(name)
                continue
            # No copy of float32 tensors (views of the mapped file, transposed or not: a
            # variable copies each when it is created); other types are cast to float32.
            value = value.T if transpose else value
            tensors[canonical] = value if value.dtype == np.float32 else value.astype(np.float32)
    tensors = split_fused_tensors(tensors, config.model_type)
    has_pooler = any(name.startswith("bert/pooler/") for name in tensors)
    if pooler_optional and not has_pooler:
        config = config.replace(pooler=False)
    source = str(weights_files[0])
    if ignored:
        logger.warning("%s: ignored %d tensors no model reads: %s", source, len(ignored), ignored)
    return Checkpoint(config, tensors, directory, source=source, ignored=tuple(ignored))
