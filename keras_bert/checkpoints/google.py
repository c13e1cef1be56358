"""Google's original TF1 BERT checkpoints: `bert_config.json` + `bert_model.ckpt.*`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.config import BertConfig
from keras_bert.errors import CheckpointError

CONFIG_FILE = "bert_config.json"
CHECKPOINT_PREFIX = "bert_model.ckpt"

# Optimizer state and counters saved next to the weights by the original training code.
_TRAINING_STATE_SUFFIXES = ("/adam_m", "/adam_v")
_TRAINING_STATE_NAMES = {
    "global_step",
    "good_steps",
    "bad_steps",
    "loss_scale",
    "current_loss_scale",
}


def find_checkpoint_prefix(directory: Path) -> Path | None:
    """The checkpoint prefix in a directory: `bert_model.ckpt`, else the only `*.index`."""
    preferred = directory / CHECKPOINT_PREFIX
    if Path(f"{preferred}.index").is_file():
        return preferred
    indexes = sorted(directory.glob("*.index"))
    if len(indexes) == 1:
        return indexes[0].with_suffix("")
    return None


def _is_training_state(name: str) -> bool:
    return name in _TRAINING_STATE_NAMES or name.endswith(_TRAINING_STATE_SUFFIXES)


def read_google_checkpoint(prefix: Path, config: BertConfig) -> Checkpoint:
    """Reads the variables of a TF1 checkpoint, under its config (its `bert_config.json`)."""
    import tensorflow as tf

    try:
        reader = tf.train.load_checkpoint(str(prefix))
        names = [
            name for name in reader.get_variable_to_shape_map() if not _is_training_state(name)
        ]
        tensors = {name: np.asarray(reader.get_tensor(name), np.float32) for name in names}
    except (tf.errors.OpError, ValueError, IndexError) as error:
        message = getattr(error, "message", str(error)).splitlines()[0]
        raise CheckpointError(
            f"Cannot read the TF checkpoint {prefix}: {message}. Its .index or .data files are "
            "truncated or missing."
        ) from None
    return Checkpoint(config, tensors, prefix.parent, source=str(prefix))


def save_google_checkpoint(
    tensors: dict[str, np.ndarray],
    config: BertConfig,
    directory: str | Path,
    vocabulary_file: str | Path | None = None,
) -> Path:
    """Writes canonical tensors as an original-format BERT checkpoint; returns its prefix.

    The result (`bert_config.json`, `bert_model.ckpt.index/.data-*`, optionally `vocab.txt`) is
    what Google's BERT code and `BertEncoder.from_checkpoint` read.

    Example:
    >>> from keras_bert import BertConfig, BertEncoder
    >>> from keras_bert.checkpoints import encoder_variables
    >>> import tempfile
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100))
    >>> tensors = {n: v.numpy() for n, v in encoder_variables(encoder).items()}
    >>> prefix = save_google_checkpoint(tensors, encoder.bert_config, tempfile.mkdtemp())
    >>> prefix.name
    'bert_model.ckpt'
    """
    import tensorflow as tf

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    names = sorted(tensors)
    prefix = directory / CHECKPOINT_PREFIX
    tf.raw_ops.SaveV2(
        prefix=str(prefix),
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(tensors[name]) for name in names],
    )
    config_values = config.to_original_dict()
    (directory / CONFIG_FILE).write_text(json.dumps(config_values, indent=2) + "\n", "utf-8")
    if vocabulary_file is not None:
        shutil.copyfile(vocabulary_file, directory / "vocab.txt")
    return prefix
