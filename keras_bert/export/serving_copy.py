"""The model a serving module runs: a copy of the trained model rebuilt for serving, in
float32, bfloat16 or int8 and/or with its feed-forward weights in independent blocks."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import keras

from keras_bert.config import ConfigError
from keras_bert.export.precision import PRECISIONS
from keras_bert.layers.activations import gelu, inference_gelu
from keras_bert.layers.layer_normalization import FastLayerNormalization


def serving_copy(
    model: keras.Model, precision: str = "float32", feed_forward_shards: int = 1
) -> keras.Model:
    """A copy of `model` built for serving, with the same weights.

    Every copy computes exact GELU as `inference_gelu`, the form that TensorFlow's CPU graph
    optimizer fuses with the matmul and bias before it into one oneDNN kernel. It moves
    outputs at padded positions only (by up to 1.5e-4, `keras_bert.layers.activations.gelu`):
    a fine-tuned MiniLM-L6 classifier's logits moved by 3.9e-6, and its float32 export served
    batch 1 in 0.93x the time and batch 32 at 1.14x the rate (BENCHMARKS.md, section Serving).

    - `precision="bfloat16"`: built under Keras' `bfloat16` policy, its weights rounded to it.
      Layers keep their weights in bfloat16 and compute in it; layer-norm statistics are
      computed in float32, GELU on the float32 accumulator of the matmul it is fused with
      (`inference_gelu`), and task heads compute in float32. Stored rather than cast per call
      (`mixed_bfloat16`), the weights are read at half the bytes and without a cast each
      request, faster than float32 on CPUs with AVX512_BF16 or AMX (BENCHMARKS.md, section
      Serving). Its serving module runs large batches with oneDNN's fused layer norm
      (`layer_normalization_form`).
    - `precision="int8"`: the encoder's dense layers (attention projections, feed-forward,
      pooler) quantized by Keras (`Dense.quantize("int8")`): int8 kernels with one scale per
      output channel, the inputs quantized per row at every call (dynamic quantization) and
      multiplied as int8 x int8 -> int32 (`tf.linalg.matmul(..., output_type=tf.int32)`).
      Embeddings, layer norms, attention's softmax and the task heads stay float32. Keras'
      quantization is the one TensorFlow's CPU runtime (and TF Serving) runs without custom
      ops; on a CPU without VNNI its int8 matmul is slower than oneDNN's float32 one
      (BENCHMARKS.md, section Serving: `--precision auto` measures which is faster).
    - `feed_forward_shards=N`: every encoder's blocks store their feed-forward weights as N
      independent blocks (`keras_bert.layers.ColumnShardedDense`), the same values computed
      as N matmul chains that TensorFlow runs in parallel.

    A float32 copy of one feed-forward block shares `model`'s variables (`_sharing_copy`);
    the others take the weights through Keras' weights file (each layer's saved form), so they
    may store them in another layout than `model`.

    Example:
    >>> from keras_bert import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100))
    >>> copy = serving_copy(encoder, precision="bfloat16", feed_forward_shards=2)
    >>> tuple(copy.blocks[0].intermediate_dense.kernels[0].shape), copy.blocks[0].compute_dtype
    ((128, 256), 'bfloat16')
    >>> float32 = serving_copy(encoder)
    >>> float32 is encoder, float32.blocks[0].intermediate_dense.activation.__name__
    (False, 'inference_gelu')
    >>> serving_copy(encoder, precision="int8").blocks[0].output_dense.quantization_mode
    'int8'
    """
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {PRECISIONS}, got {precision!r}.")
    if precision == "int8" and feed_forward_shards != 1:
        raise ConfigError(
            f"feed_forward_shards={feed_forward_shards} with precision int8: int8 exports keep "
            "the feed-forward weights in one block (feed_forward_shards=1)."
        )
    # The dtype policy the copy is built under: int8 quantizes a float32 copy.
    build_dtype = "bfloat16" if precision == "bfloat16" else "float32"

    def serving_options(registered_name: str, values: dict[str, Any]) -> dict[str, Any]:
        if build_dtype != "float32":
            values = {**values, "dtype": build_dtype}
        if registered_name == "keras_bert>BertEncoder" and feed_forward_shards != 1:
            values = {**values, "feed_forward_shards": feed_forward_shards}
        return values

    config = _with_keras_bert_config(keras.saving.serialize_keras_object(model), serving_options)
    # Layers built without a saved policy (the heads' float32 ones excepted) follow the global one.
    policy = keras.config.dtype_policy()
    if build_dtype != "float32":
        keras.config.set_dtype_policy(build_dtype)
    if precision == "float32" and feed_forward_shards == 1:
        copy = _sharing_copy(model, config)
    else:
        try:
            copy = keras.saving.deserialize_keras_object(config)
        finally:
            keras.config.set_dtype_policy(policy)
        with tempfile.TemporaryDirectory() as directory:
            weights_file = Path(directory) / "model.weights.h5"
            model.save_weights(weights_file)
            copy.load_weights(weights_file)
    _use_inference_gelu(copy)
    if precision == "int8":
        _quantize_encoder_dense_layers(copy)
    return copy


def _sharing_copy(model: keras.Model, config: Any) -> keras.Model:
    """A copy of `model` (its serialized `config`) whose variables are `model`'s TensorFlow
    variables themselves: the float32 copy's layout is the model's, so it holds no second
    copy of the weights (XLM-R's table is 768 MB) and draws none at random.

    The copy is built in a `keras.StatelessScope` that leaves its variables undrawn, then each
    takes the model's variable as its own (Keras' TensorFlow variables accept a
    `tf.Variable` as their value, which Keras does not otherwise expose), and Keras' list of
    variables still to draw forgets them.
    """
    from keras.src.backend.common import global_state

    # Compiled, a model would build its optimizer's variables too: a serving copy needs none.
    with keras.StatelessScope(initialize_variables=False):
        copy = keras.saving.deserialize_keras_object({**config, "compile_config": None})
    for ours, theirs in zip(copy.weights, model.weights, strict=True):
        if tuple(ours.shape) != tuple(theirs.shape):
            raise ConfigError(f"serving copy: {ours.path} is {ours.shape}, not {theirs.shape}.")
        ours._initialize(theirs.value)
    pending = global_state.get_global_attribute("uninitialized_variables", [])
    shared = {id(variable) for variable in copy.weights}
    global_state.set_global_attribute(
        "uninitialized_variables", [v for v in pending if id(v) not in shared]
    )
    return copy


def _use_inference_gelu(model: keras.Model) -> None:
    """Swaps `gelu` for `inference_gelu` in every layer of `model` that applies it."""
    for layer in model._flatten_layers():
        if getattr(layer, "activation", None) is gelu:
            layer.activation = inference_gelu


@contextlib.contextmanager
def layer_normalization_form(model: keras.Model, normalize: Callable) -> Iterator[None]:
    """Within the block, every `FastLayerNormalization` of `model` applies `normalize`; after it,
    what it applied before. A serving module traces its copy in it with
    `element_wise_layer_normalization` (`layer_normalization`'s ops, no custom gradient to
    warn about on loading), and a bfloat16 copy also with `fused_layer_normalization`, which runs
    oneDNN's fused kernel and spares the casts and element-wise passes where a batch holds
    `FUSED_KERNEL_MIN_VALUES` values or more (batch 32 at 1.09-1.11x the rate, MiniLM-L6, Zen 5;
    docs/serving.md). Float32 copies gained nothing from it.

    Example:
    >>> from keras_bert import BertConfig, BertEncoder
    >>> from keras_bert.layers.layer_normalization import fused_layer_normalization
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100))
    >>> with layer_normalization_form(encoder, fused_layer_normalization):
    ...     encoder.embeddings.layer_norm.normalize.__name__
    'fused_layer_normalization'
    >>> encoder.embeddings.layer_norm.normalize.__name__
    'layer_normalization'
    """
    layers = [
        layer for layer in model._flatten_layers() if isinstance(layer, FastLayerNormalization)
    ]
    before = [layer.normalize for layer in layers]
    for layer in layers:
        layer.normalize = normalize
    try:
        yield
    finally:
        for layer, previous in zip(layers, before, strict=True):
            layer.normalize = previous


def _quantize_encoder_dense_layers(model: keras.Model) -> None:
    """Quantizes every `keras.layers.Dense` of the model's encoder (itself, for an encoder) to
    int8 in place; `SequenceDense` is a `Dense` whose call Keras' int8 call serves as is."""
    encoder = getattr(model, "encoder", model)
    for layer in encoder._flatten_layers():
        if isinstance(layer, keras.layers.Dense):
            # Keras refuses subclasses by default, for those that change `call`'s math.
            layer.quantize("int8", type_check=False)


def _with_keras_bert_config(
    config: Any, change: Callable[[str, dict[str, Any]], dict[str, Any]]
) -> Any:
    """A serialized model with `change(registered_name, config)` applied to the config of every
    keras_bert object that saves a dtype policy (keras_bert models do; the layers they build,
    heads in float32 included, follow them)."""
    if isinstance(config, list):
        return [_with_keras_bert_config(item, change) for item in config]
    if not isinstance(config, dict):
        return config
    config = {key: _with_keras_bert_config(value, change) for key, value in config.items()}
    registered = str(config.get("registered_name") or "")
    if registered.startswith("keras_bert>") and "dtype" in config.get("config", {}):
        config["config"] = change(registered, config["config"])
    return config
