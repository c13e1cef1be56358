"""AdamW whose dense updates (clipping, decay, Adam) run as one XLA-compiled pass each."""

import keras
import tensorflow as tf


def global_norm(gradients: list[tf.Tensor | tf.IndexedSlices | None]) -> tf.Tensor:
    """The L2 norm of all gradients together, as float32, by `l2_loss` (no squared copies).

    As Keras and the original BERT compute it, an `IndexedSlices` counts its rows as given:
    a row repeated in it is not summed first.

    Example:
    >>> sparse = tf.IndexedSlices(tf.constant([[4.0], [1.0]]), tf.constant([0, 0]))
    >>> float(global_norm([tf.constant([2.0, 2.0]), sparse, None]))
    5.0
    """
    squares = [
        2.0 * tf.nn.l2_loss(tf.cast(getattr(gradient, "values", gradient), tf.float32))
        for gradient in gradients
        if gradient is not None
    ]
    return tf.sqrt(tf.add_n(squares))


@tf.function(jit_compile=True, autograph=False, reduce_retracing=True)
def adamw_update(
    variable: tf.Tensor,
    momentum: tf.Tensor,
    velocity: tf.Tensor,
    gradient: tf.Tensor,
    gradient_scale: tf.Tensor,
    learning_rate: tf.Tensor,
    decay_rate: tf.Tensor,
    beta_1: tf.Tensor,
    beta_2: tf.Tensor,
    epsilon: tf.Tensor,
    step: tf.Tensor,
) -> None:
    """One AdamW update of `variable`, compiled by XLA into a single loop over its elements.

    The arithmetic and its order are Keras': clipping (`gradient * gradient_scale`), decoupled
    decay (`w -= w * decay_rate`, where `decay_rate` is weight decay times learning rate), then
    Adam with bias correction folded into the step size. As separate kernels, each of the three
    would read and write the whole variable; here every tensor is read once and written once.
    The variable and its moments are passed as resource handles (`variable.handle`), so none is
    kept alive by the function's cache, and the trace is generalized to any shape after the
    second (`reduce_retracing`): a training step traces two instead of one per shape (ten
    for a BERT classifier), and XLA still compiles each shape it runs.

    Example:
    >>> variable, m, v = tf.Variable([1.0]), tf.Variable([0.0]), tf.Variable([0.0])
    >>> scalars = [tf.constant(x) for x in (0.5, 0.1, 0.0, 0.9, 0.999, 1e-6, 1.0)]
    >>> adamw_update(variable.handle, m.handle, v.handle, tf.constant([4.0]), *scalars)
    >>> round(float(variable[0]), 4), round(float(m[0]), 4)
    (0.9, 0.2)
    """
    weights, old_momentum, old_velocity = (
        tf.raw_ops.ReadVariableOp(resource=handle, dtype=gradient.dtype)
        for handle in (variable, momentum, velocity)
    )
    gradient = gradient * gradient_scale
    weights = weights - weights * decay_rate
    step_size = learning_rate * tf.sqrt(1 - beta_2**step) / (1 - beta_1**step)
    new_momentum = old_momentum + (gradient - old_momentum) * (1 - beta_1)
    new_velocity = old_velocity + (tf.square(gradient) - old_velocity) * (1 - beta_2)
    tf.raw_ops.AssignVariableOp(resource=momentum, value=new_momentum)
    tf.raw_ops.AssignVariableOp(resource=velocity, value=new_velocity)
    update = step_size * new_momentum / (tf.sqrt(new_velocity) + epsilon)
    tf.raw_ops.AssignVariableOp(resource=variable, value=weights - update)


@keras.saving.register_keras_serializable(package="keras_bert")
class FusedAdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with the same arguments, state and arithmetic, updated in one
    pass per variable.

    Keras' Adam updates a variable with about ten element-wise ops, each a full pass over the
    variable, its moments and the gradient, and adds three more for weight decay and two for
    global-norm clipping: for BERT-Base's 110M parameters on CPU that is a third of a
    mixed-precision training step. Here a dense gradient is clipped, decayed and applied by
    `adamw_update`, one XLA-compiled pass that reads each tensor once and writes it once, and
    `global_norm` sums `l2_loss`es instead of materialising squared gradients. On one replica
    the clipping scale is handed to `adamw_update` instead of multiplying every gradient first;
    across replicas gradients are clipped before they are summed, as Keras does. Accumulation
    and loss scaling stay Keras' own; unclipped sparse gradients and `amsgrad=True` take
    Keras' update.

    A sparse gradient (`tf.IndexedSlices`: an embedding table's, whose rows are the batch's
    ids) is applied as its dense form would be by default: every row decays and moves by its
    momentum, as in transformers' AdamW; clipped, without a dense copy of the gradient (one
    pass over the table as if its gradient were 0, then the batch's rows from their values
    before it). With `sparse_updates=True` only the batch's rows are updated
    (their gradients summed per row, then decay, clipping and Adam on those rows alone), as
    TensorFlow's LazyAdam does: a row the batch missed keeps its weights and moments until an
    id reads it. At XLM-R's 250,002 tokens that spares a pass over 3 x 192M floats a step; it
    is not AdamW's arithmetic for the rows left out (`bench/bench_xlmr_finetuning.py`).

    Args:
        sparse_updates: update only the rows of sparse gradients (see above).
        epsilon_after_bias_correction: add `epsilon` to the bias-corrected root of the second
            moment, `sqrt(v / (1 - beta_2**t))`, as PyTorch's `AdamW` and Algorithm 1 of the
            Adam paper do, instead of to `sqrt(v)` as Keras does (the paper's "epsilon hat").
            Keras' epsilon is then `epsilon * sqrt(1 - beta_2**t)`: 1e-6 acts as 3e-5 at step
            1 and still 2e-6 at step 340, which damps the steps of every weight whose gradient
            is that small (most of BERT's, once gradients are clipped to norm 1).
        **kwargs: `keras.optimizers.AdamW`'s arguments.

    Example:
    >>> optimizer = FusedAdamW(learning_rate=0.1, weight_decay=0.0)
    >>> variable = keras.Variable([1.0, -1.0])
    >>> optimizer.apply([tf.constant([0.5, -2.0])], [variable])
    >>> [round(float(value), 4) for value in variable.numpy()]
    [0.9, -0.9]
    """

    # The clipping scale `update_step` still has to apply: set by `_clip_gradients`, which Keras
    # calls just before the update steps of the same `apply`.
    _pending_gradient_scale = None
    # `_scalars` of the step being built, by dtype: set for the span of `_backend_update_step`.
    _shared_scalars = None

    def __init__(
        self,
        epsilon_after_bias_correction: bool = False,
        sparse_updates: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if (epsilon_after_bias_correction or sparse_updates) and self.amsgrad:
            raise ValueError(
                "epsilon_after_bias_correction and sparse_updates do not support amsgrad=True."
            )
        self.epsilon_after_bias_correction = epsilon_after_bias_correction
        self.sparse_updates = sparse_updates

    def _apply_weight_decay(self, variables):
        """Weight decay is applied by `update_step`, just before each variable's update."""

    def _clip_gradients(self, gradients):
        self._pending_gradient_scale = None
        if not self.global_clipnorm or self.clipnorm:
            return super()._clip_gradients(gradients)
        norm = global_norm(gradients)
        # As Keras: no-op below the threshold, NaN scale (and gradients) for a non-finite norm.
        scale = self.global_clipnorm * tf.minimum(1.0 / norm, 1.0 / self.global_clipnorm)
        scale += norm - norm
        if tf.distribute.get_strategy().num_replicas_in_sync == 1:
            self._pending_gradient_scale = scale
            return gradients
        return [
            None if gradient is None else gradient * tf.cast(scale, gradient.dtype)
            for gradient in gradients
        ]

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        # The scalars every dense update shares, built once per step instead of once per
        # variable: fewer ops to trace, optimize and run.
        self._shared_scalars = {}
        super()._backend_update_step(grads, trainable_variables, learning_rate)
        self._shared_scalars = None

    def _scalars(self, dtype, learning_rate) -> dict[str, tf.Tensor]:
        """`adamw_update`'s scalar arguments in `dtype` (decay_rate: without and with decay)."""
        if self._shared_scalars is not None and dtype in self._shared_scalars:
            return self._shared_scalars[dtype]
        scale = self._pending_gradient_scale
        step = tf.cast(self.iterations + 1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        epsilon = tf.cast(self.epsilon, dtype)
        if self.epsilon_after_bias_correction:
            # lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)
            #   = lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps * sqrt(1 - b2^t))
            epsilon = epsilon * tf.sqrt(1 - beta_2**step)
        learning_rate = tf.cast(learning_rate, dtype)
        scalars = {
            "gradient_scale": tf.constant(1.0, dtype) if scale is None else tf.cast(scale, dtype),
            "learning_rate": learning_rate,
            "decay_rates": (tf.zeros([], dtype), learning_rate * self.weight_decay),
            "beta_1": tf.cast(self.beta_1, dtype),
            "beta_2": beta_2,
            "epsilon": epsilon,
            "step": step,
        }
        if self._shared_scalars is not None:
            self._shared_scalars[dtype] = scalars
        return scalars

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        scale = self._pending_gradient_scale
        decayed = bool(self.weight_decay) and self._use_weight_decay(variable)
        scalars = self._scalars(dtype, learning_rate)
        sparse = isinstance(gradient, tf.IndexedSlices)
        if sparse and self.sparse_updates:
            return self._scatter_rows(*self._row_updates(gradient, variable, scalars, decayed))
        if (
            sparse
            and not self.amsgrad
            and (scale is not None or self.epsilon_after_bias_correction)
        ):
            # Clipped (Keras would make the gradient dense) or with the bias-corrected epsilon
            # (Keras' sparse update has none): every row as if its gradient were 0 in one pass,
            # then the gradient's rows from their values before it. The same as the dense
            # gradient's update, without a dense copy of it (XLM-R's table: 768 MB).
            rows = self._row_updates(gradient, variable, scalars, decayed)
            self._dense_update(tf.zeros([], dtype), variable, scalars, decayed)
            return self._scatter_rows(*rows)
        if sparse or self.amsgrad:
            if decayed:
                variable.assign_sub(variable * scalars["decay_rates"][decayed])
            if scale is not None:
                gradient = gradient * tf.cast(scale, gradient.dtype)
            return super().update_step(gradient, variable, learning_rate)
        self._dense_update(tf.cast(gradient, dtype), variable, scalars, decayed)

    def _dense_update(self, gradient: tf.Tensor, variable, scalars: dict, decayed: bool) -> None:
        """`adamw_update` of the variable and its moments (`gradient` may be a scalar 0)."""
        index = self._get_variable_index(variable)
        adamw_update(
            variable.handle,
            self._momentums[index].value.handle,
            self._velocities[index].value.handle,
            gradient,
            scalars["gradient_scale"],
            scalars["learning_rate"],
            scalars["decay_rates"][decayed],
            scalars["beta_1"],
            scalars["beta_2"],
            scalars["epsilon"],
            scalars["step"],
        )

    def _row_updates(
        self, gradient: tf.IndexedSlices, variable, scalars: dict, decayed: bool
    ) -> tuple[list[tf.Variable], tf.Tensor, tuple[tf.Tensor, ...]]:
        """`(tables, rows, values)`: the variable and its moments, the rows a sparse gradient
        has (its repeated rows summed) and their values after AdamW, `adamw_update`'s
        arithmetic on those rows alone."""
        rows, positions = tf.unique(gradient.indices)
        values = tf.math.unsorted_segment_sum(gradient.values, positions, tf.size(rows))
        values = tf.cast(values, variable.dtype) * scalars["gradient_scale"]
        index = self._get_variable_index(variable)
        tables = [
            table if isinstance(table, tf.Variable) else table.value  # Keras' or its own
            for table in (variable, self._momentums[index], self._velocities[index])
        ]
        weights, momentum, velocity = (tf.gather(table, rows) for table in tables)
        weights = weights - weights * scalars["decay_rates"][decayed]
        beta_1, beta_2, step = scalars["beta_1"], scalars["beta_2"], scalars["step"]
        step_size = scalars["learning_rate"] * tf.sqrt(1 - beta_2**step) / (1 - beta_1**step)
        momentum = momentum + (values - momentum) * (1 - beta_1)
        velocity = velocity + (tf.square(values) - velocity) * (1 - beta_2)
        weights = weights - step_size * momentum / (tf.sqrt(velocity) + scalars["epsilon"])
        return tables, rows, (weights, momentum, velocity)

    @staticmethod
    def _scatter_rows(tables: list[tf.Variable], rows: tf.Tensor, values: tuple) -> None:
        for table, updated in zip(tables, values, strict=True):
            table.scatter_update(tf.IndexedSlices(updated, rows))

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "epsilon_after_bias_correction": self.epsilon_after_bias_correction,
            "sparse_updates": self.sparse_updates,
        }
