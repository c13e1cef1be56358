"""An embedding table whose lookup reads the rows it gathers, never the whole table."""

import keras
import tensorflow as tf
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class GatherEmbedding(keras.layers.Embedding):
    """`keras.layers.Embedding` (same arguments, weights and config) that gathers its rows
    from the variable itself (TensorFlow's `ResourceGather`).

    Keras' lookup (`ops.take`) reads the table as a tensor, then gathers. Once rows of a
    variable are updated in place (`FusedAdamW`'s sparse row updates: `ResourceGather` and
    `ResourceScatterUpdate`), TensorFlow keeps it in copy-on-read mode, where every read of the
    whole variable is a copy of it: for XLM-R's 250,002 x 768 token table, 768 MB copied at
    the start of every training step (the read alone 0.09-0.10 s; the base model's step 8%
    slower, paired step by step, on the Xeon with AMX, 2026-12-06). Gathering from the
    variable copies the batch's rows alone; the gradient is the same `IndexedSlices`. A LoRA
    or quantized table takes Keras' lookup.

    Example:
    >>> import numpy as np
    >>> table = GatherEmbedding(10, 4)
    >>> ids = np.array([[1, 2, 9]])
    >>> bool(np.allclose(table(ids), table.embeddings.numpy()[ids]))
    True
    """

    def call(self, inputs):
        if self.lora_enabled or self.quantization_mode:
            return super().call(inputs)
        if inputs.dtype not in ("int32", "int64"):
            inputs = ops.cast(inputs, "int32")
        # A variable (outside a stateless scope): `tf.gather` reads its rows in place.
        outputs = tf.gather(self.embeddings.value, inputs)
        return ops.cast(outputs, dtype=self.compute_dtype)
