"""The canonical checkpoint name of every encoder variable, and restoring them with checks."""

from __future__ import annotations

import keras
import numpy as np

from keras_bert.checkpoints.checkpoint import Checkpoint
from keras_bert.errors import CheckpointError

ENCODER_SCOPE = "bert/"
_MAX_LISTED = 12


def _dense(prefix: str, layer: keras.layers.Dense) -> dict[str, keras.Variable]:
    """A dense layer's kernel, and its bias if it has one."""
    variables = {f"{prefix}/kernel": layer.kernel}
    if layer.bias is not None:
        variables[f"{prefix}/bias"] = layer.bias
    return variables


def head_dense_variables(module: str, layer: keras.layers.Dense) -> dict[str, keras.Variable]:
    """The canonical names of a task head's dense layer that transformers calls `module`
    (`keras_bert.checkpoints.task_heads`): its module path.

    Example:
    >>> layer = keras.layers.Dense(2)
    >>> layer.build((None, 4))
    >>> sorted(head_dense_variables("classifier.out_proj", layer))
    ['classifier/out_proj/bias', 'classifier/out_proj/kernel']
    """
    return _dense(module.replace(".", "/"), layer)


def layer_norm_variables(
    prefix: str, layer: keras.layers.LayerNormalization
) -> dict[str, keras.Variable]:
    """A LayerNorm's scale, and its bias if it has one, under `prefix` (`.../LayerNorm`).

    Example:
    >>> layer = keras.layers.LayerNormalization(center=False)
    >>> layer.build((None, 4))
    >>> sorted(layer_norm_variables("cls/predictions/transform/LayerNorm", layer))
    ['cls/predictions/transform/LayerNorm/gamma']
    """
    variables = {f"{prefix}/gamma": layer.gamma}
    if layer.beta is not None:
        variables[f"{prefix}/beta"] = layer.beta
    return variables


def _block_variables(prefix: str, block) -> dict[str, keras.Variable]:
    attention = block.attention
    variables = {}
    for projection in ("query", "key", "value", "pos_key_proj", "pos_query_proj"):
        layer = getattr(attention, projection, None)  # DeBERTa's own position projections
        if layer is not None:
            variables |= _dense(f"{prefix}/attention/self/{projection}", layer)
    if getattr(attention, "relative_attention_buckets", 0):
        variables[f"{prefix}/attention/self/relative_attention_bias"] = (
            attention.relative_attention_bias
        )
    variables |= _dense(f"{prefix}/attention/output/dense", attention.output_dense)
    if block.attention_layer_norm is not None:  # ModernBERT's first block has none
        variables |= layer_norm_variables(
            f"{prefix}/attention/output/LayerNorm", block.attention_layer_norm
        )
    variables |= _dense(f"{prefix}/intermediate/dense", block.intermediate_dense)
    variables |= _dense(f"{prefix}/output/dense", block.output_dense)
    variables |= layer_norm_variables(f"{prefix}/output/LayerNorm", block.output_layer_norm)
    return variables


def encoder_variables(encoder) -> dict[str, keras.Variable]:
    """Canonical (Google TF1) name → variable, for every weight of a `BertEncoder`."""
    embeddings = encoder.embeddings
    variables = {
        "bert/embeddings/word_embeddings": embeddings.token_embedding.embeddings,
        **layer_norm_variables("bert/embeddings/LayerNorm", embeddings.layer_norm),
    }
    if embeddings.position_embedding is not None:
        position_table = embeddings.position_embedding.embeddings
        variables["bert/embeddings/position_embeddings"] = position_table
    if embeddings.segment_embedding is not None:
        segment_table = embeddings.segment_embedding.embeddings
        variables["bert/embeddings/token_type_embeddings"] = segment_table
    relative_embeddings = encoder.relative_embeddings
    if relative_embeddings is not None:
        variables["bert/encoder/rel_embeddings"] = relative_embeddings.embeddings
        if relative_embeddings.layer_norm is not None:
            variables |= layer_norm_variables(
                "bert/encoder/LayerNorm", relative_embeddings.layer_norm
            )
    if encoder.embedding_projection is not None:
        variables |= _dense(
            "bert/encoder/embedding_hidden_mapping_in", encoder.embedding_projection
        )
    shared = encoder.bert_config.num_layer_groups is not None
    for group, blocks in enumerate(encoder.block_groups):
        for inner, block in enumerate(blocks):
            prefix = (
                f"bert/encoder/group_{group}/inner_{inner}"
                if shared
                else f"bert/encoder/layer_{group}"
            )
            variables |= _block_variables(prefix, block)
    if encoder.final_layer_norm is not None:
        variables |= layer_norm_variables("bert/encoder/final_layer_norm", encoder.final_layer_norm)
    if encoder.pooler is not None:
        variables |= _dense("bert/pooler/dense", encoder.pooler.dense)
    return variables


_WORD_EMBEDDINGS = "bert/embeddings/word_embeddings"


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_LISTED])
    more = len(names) - _MAX_LISTED
    return f"{shown}, and {more} more" if more > 0 else shown


def _check_variables(
    variables: dict[str, keras.Variable], checkpoint: Checkpoint, scope: str | tuple[str, ...]
) -> None:
    """Raises a `CheckpointError` unless the variables and the tensors under `scope` match one
    to one, shape for shape (see `restore_variables`)."""
    tensors = checkpoint.tensors
    missing = sorted(set(variables) - set(tensors))
    unexpected = sorted(
        name for name in tensors if name.startswith(scope) and name not in variables
    )
    wrong_shapes = [
        f"{name} (checkpoint {tuple(tensors[name].shape)}, model {tuple(variable.shape)})"
        for name, variable in sorted(variables.items())
        if name in tensors and tuple(tensors[name].shape) != tuple(variable.shape)
    ]
    problems = [
        f"{label} ({len(names)}): {_listed(names)}"
        for label, names in (
            ("missing tensors", missing),
            ("unexpected tensors", unexpected),
            ("tensors of the wrong shape", wrong_shapes),
        )
        if names
    ]
    if problems:
        config = checkpoint.config
        table = tensors.get(_WORD_EMBEDDINGS)
        rows = None if table is None else table.shape[0]
        # The table's rows are the ids the model reads: a config saying otherwise is wrong.
        hint = (
            f" Its word embedding table has {rows} rows: set vocab_size to {rows} in its config."
            if rows is not None and rows != config.vocab_size
            else ""
        )
        raise CheckpointError(
            f"The checkpoint {checkpoint.source} does not fit the model (config: "
            f"L{config.num_layers}/H{config.hidden_size}/A{config.num_heads}, vocabulary "
            f"{config.vocab_size}). " + "; ".join(problems) + "." + hint
        )


def restore_variables(
    variables: dict[str, keras.Variable], checkpoint: Checkpoint, scope: str | tuple[str, ...]
) -> None:
    """Assigns checkpoint tensors to variables, after checking that they match one to one.

    Every variable needs a tensor of its shape, and every checkpoint tensor under `scope` (a
    prefix, or several) needs a variable; the error names what is missing, unexpected or of the
    wrong shape. Tensors outside `scope` (other heads) are left for other models to restore.
    """
    _check_variables(variables, checkpoint, scope)
    for name, variable in variables.items():
        variable.assign(np.asarray(checkpoint.tensors[name], dtype=variable.dtype))


def initialize_variables(
    variables: dict[str, keras.Variable], checkpoint: Checkpoint, scope: str | tuple[str, ...]
) -> None:
    """Makes checkpoint tensors the initial values of variables created in a
    `keras.StatelessScope` and not drawn yet, after the checks of `restore_variables`.

    Leaving the scope then creates each variable from its tensor, once: its random draw is
    never made, and no second copy of a table is assigned over it (XLM-R base's embeddings
    are 768 MB). Keras draws a variable at its first use from its initializer, which is
    otherwise private to it.
    """
    _check_variables(variables, checkpoint, scope)
    for name, variable in variables.items():
        variable._initializer = lambda shape, dtype, value=checkpoint.tensors[name]: value


def restore_encoder_weights(encoder, checkpoint: Checkpoint) -> None:
    """Loads the `bert/...` tensors of a checkpoint into a `BertEncoder`."""
    restore_variables(encoder_variables(encoder), checkpoint, scope=ENCODER_SCOPE)


def initialize_encoder_weights(encoder, checkpoint: Checkpoint) -> None:
    """Makes the `bert/...` tensors of a checkpoint the initial values of a `BertEncoder`
    built in a `keras.StatelessScope` (`initialize_variables`)."""
    initialize_variables(encoder_variables(encoder), checkpoint, scope=ENCODER_SCOPE)
