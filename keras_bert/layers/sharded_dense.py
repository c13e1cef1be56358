"""Dense layers whose weights are stored as independent blocks, so that a CPU runs the blocks'
matmuls in parallel: a feed-forward network split into `shards` halves (or thirds ...).

`ColumnShardedDense` stores its kernel `[in, units]` as `shards` column blocks and returns one
output per block; `RowShardedDense` stores its kernel as row blocks and sums one product per
input block. Chained, they compute the function of `Dense(Activation(Dense(x)))` (the activation
acts element-wise, so it can act on each block; only the order of the sums changes) as `shards`
independent matmul chains.

Why: TensorFlow's oneDNN matmul splits one matmul over the intra-op threads (waking them for
every op) unless its operands fit in L2, where it runs on one thread. A MiniLM-L6 feed-forward
layer at 32-128 tokens is just over that size; its halves are under it, run single-threaded,
and TensorFlow's executor runs the two independent halves at once on two cores. With one thread
per op (TF Serving's `--tensorflow_intra_op_parallelism=1`) that makes a bfloat16 MiniLM-L6
classifier faster at 128 tokens (BENCHMARKS.md, section Serving). Both layers save and load
their weights as a single `kernel` and `bias`, as `keras.layers.Dense` does, so their weights
files are interchangeable with those of `SequenceDense`.
"""

import keras
import numpy as np
from keras import ops

from keras_bert.errors import ConfigError


def _check_shards(size: int, shards: int, what: str) -> None:
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise ConfigError(f"shards must be a positive integer, got {shards!r}.")
    if size % shards:
        raise ConfigError(f"{what} ({size}) is not divisible by shards ({shards}).")


def _as_matrix(inputs):
    """`[..., features]` as `[rows, features]`, and the leading shape to restore."""
    return ops.reshape(inputs, (-1, inputs.shape[-1])), ops.shape(inputs)[:-1]


class _ShardedDense(keras.layers.Layer):
    """The weights and their saved form shared by both sharded layers: `shards` kernels and
    biases that save and load as one concatenated `kernel` ("0") and `bias` ("1")."""

    # The axis of the full kernel along which the blocks are cut.
    SHARD_AXIS = 0

    def __init__(
        self,
        units: int,
        shards: int,
        activation=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = units
        self.shards = shards
        self.activation = keras.activations.get(activation)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def _add_kernels(self, shape: tuple[int, int]) -> list:
        return [
            self.add_weight(shape=shape, initializer=self.kernel_initializer, name=f"kernel_{i}")
            for i in range(self.shards)
        ]

    def _add_biases(self, count: int, units: int) -> list:
        return [
            self.add_weight(shape=(units,), initializer=self.bias_initializer, name=f"bias_{i}")
            for i in range(count)
        ]

    def save_own_variables(self, store):
        store["0"] = np.concatenate(
            [ops.convert_to_numpy(kernel) for kernel in self.kernels], axis=self.SHARD_AXIS
        )
        store["1"] = np.concatenate([ops.convert_to_numpy(bias) for bias in self.biases])

    def load_own_variables(self, store):
        kernel, bias = np.asarray(store["0"]), np.asarray(store["1"])
        for variable, block in zip(
            self.kernels, np.split(kernel, self.shards, axis=self.SHARD_AXIS), strict=True
        ):
            variable.assign(block)
        for variable, block in zip(self.biases, np.split(bias, len(self.biases)), strict=True):
            variable.assign(block)

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "shards": self.shards,
            "activation": keras.activations.serialize(self.activation),
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
        }


@keras.saving.register_keras_serializable(package="keras_bert")
class ColumnShardedDense(_ShardedDense):
    """A dense layer over `[..., features]` whose `units` outputs are computed in `shards`
    independent blocks: it returns the list of blocks `[..., units / shards]`, each
    `activation(x @ kernel_i + bias_i)`; their concatenation is `Dense`'s output.

    Args:
        units: output features; divisible by `shards`.
        shards: number of column blocks.
        activation: applied to each block (an element-wise activation).
        kernel_initializer, bias_initializer: as in `keras.layers.Dense`.

    Example:
    >>> import numpy as np
    >>> layer = ColumnShardedDense(4, shards=2, kernel_initializer="ones")
    >>> [tuple(block.shape) for block in layer(np.ones((1, 3, 5)))]
    [(1, 3, 2), (1, 3, 2)]
    """

    SHARD_AXIS = 1

    def build(self, input_shape):
        _check_shards(self.units, self.shards, "units")
        self.kernels = self._add_kernels((input_shape[-1], self.units // self.shards))
        self.biases = self._add_biases(self.shards, self.units // self.shards)
        self.built = True

    def call(self, inputs):
        matrix, leading_shape = _as_matrix(inputs)
        return [
            ops.reshape(
                self.activation(ops.add(ops.matmul(matrix, kernel), bias)),
                (*leading_shape, self.units // self.shards),
            )
            for kernel, bias in zip(self.kernels, self.biases, strict=True)
        ]

    def compute_output_spec(self, inputs):
        shape = (*inputs.shape[:-1], self.units // self.shards)
        return [keras.KerasTensor(shape, dtype=self.compute_dtype) for _ in range(self.shards)]


@keras.saving.register_keras_serializable(package="keras_bert")
class RowShardedDense(_ShardedDense):
    """A dense layer that takes its input features as `shards` blocks (a `ColumnShardedDense`'s
    output) and returns `sum_i(block_i @ kernel_i) + bias`, `Dense`'s output on their
    concatenation.

    Args:
        units: output features.
        shards: number of input blocks (of equal width).
        activation: applied to the sum.
        kernel_initializer, bias_initializer: as in `keras.layers.Dense`.

    Example:
    >>> import numpy as np
    >>> layer = RowShardedDense(3, shards=2, kernel_initializer="ones")
    >>> layer([np.ones((1, 2, 4)), np.ones((1, 2, 4))]).numpy().tolist()
    [[[8.0, 8.0, 8.0], [8.0, 8.0, 8.0]]]
    """

    def build(self, input_shapes):
        features = sum(shape[-1] for shape in input_shapes)
        _check_shards(features, self.shards, "input features")
        if len(input_shapes) != self.shards:
            raise ConfigError(f"expected {self.shards} input blocks, got {len(input_shapes)}.")
        self.kernels = self._add_kernels((features // self.shards, self.units))
        self.biases = self._add_biases(1, self.units)
        self.built = True

    def call(self, inputs):
        matrices = [_as_matrix(block)[0] for block in inputs]
        leading_shape = ops.shape(inputs[0])[:-1]
        # The bias rides on the first product, where TensorFlow fuses it into the matmul.
        outputs = ops.add(ops.matmul(matrices[0], self.kernels[0]), self.biases[0])
        for matrix, kernel in zip(matrices[1:], self.kernels[1:], strict=True):
            outputs = ops.add(outputs, ops.matmul(matrix, kernel))
        return ops.reshape(self.activation(outputs), (*leading_shape, self.units))

    def compute_output_spec(self, inputs):
        return keras.KerasTensor((*inputs[0].shape[:-1], self.units), dtype=self.compute_dtype)
