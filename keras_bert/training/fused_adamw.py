"""AdamW whose dense updates run as TensorFlow's fused `ResourceApplyAdam` kernel."""

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


@keras.saving.register_keras_serializable(package="keras_bert")
class FusedAdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with the same arguments, state and arithmetic, updated in one
    pass per variable.

    Keras' Adam updates a variable with about ten element-wise ops, each a full pass over the
    variable, its moments and the gradient, and adds three more for weight decay and two for
    global-norm clipping: for BERT-Base's 110M parameters on CPU that is a third of a
    mixed-precision training step. Here a dense gradient goes to TensorFlow's fused
    `ResourceApplyAdam` kernel (also compiled by XLA), which reads and writes each tensor once;
    decoupled weight decay is one `ResourceApplyGradientDescent` pass (`w -= lr * decay * w`),
    and `global_norm` sums `l2_loss`es instead of materialising squared gradients.
    Accumulation and loss scaling stay Keras' own; sparse gradients and `amsgrad=True` take
    Keras' Adam update.

    Example:
    >>> optimizer = FusedAdamW(learning_rate=0.1, weight_decay=0.0)
    >>> variable = keras.Variable([1.0, -1.0])
    >>> optimizer.apply([tf.constant([0.5, -2.0])], [variable])
    >>> [round(float(value), 4) for value in variable.numpy()]
    [0.9, -0.9]
    """

    def _apply_weight_decay(self, variables):
        """Weight decay is applied by `update_step`, just before each variable's update."""

    def _clip_gradients(self, gradients):
        if not self.global_clipnorm or self.clipnorm:
            return super()._clip_gradients(gradients)
        norm = global_norm(gradients)
        # As Keras: no-op below the threshold, NaN scale (and gradients) for a non-finite norm.
        scale = self.global_clipnorm * tf.minimum(1.0 / norm, 1.0 / self.global_clipnorm)
        scale += norm - norm
        return [
            None if gradient is None else gradient * tf.cast(scale, gradient.dtype)
            for gradient in gradients
        ]

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        if self.weight_decay and self._use_weight_decay(variable):
            tf.raw_ops.ResourceApplyGradientDescent(
                var=variable.handle,
                alpha=tf.cast(learning_rate, dtype) * tf.cast(self.weight_decay, dtype),
                delta=tf.convert_to_tensor(variable),
            )
        if isinstance(gradient, tf.IndexedSlices) or self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        index = self._get_variable_index(variable)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].handle,
            v=self._velocities[index].handle,
            beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
        )
