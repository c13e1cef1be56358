import keras
import numpy as np
import tensorflow as tf

from keras_bert.training import create_optimizer


def test_adamw_first_step_is_pytorch_adamw_step_for_small_gradients():
    # PyTorch's AdamW (Hugging Face's fine-tuning) moves a weight by lr * g / (|g| + 1e-8) at
    # step 1. Keras' epsilon placement with BERT's 1e-6 moved a weight with a gradient of 1e-6
    # by 3% of that: after clipping to norm 1, most of BERT's gradients are this small.
    optimizer = create_optimizer(1e-3, weight_decay=0.0, clip_global_norm=None)
    variable = keras.Variable([1.0, 1.0, 1.0])
    gradient = np.array([1e-6, -1e-4, 1e-2], "float32")
    optimizer.apply([tf.constant(gradient)], [variable])
    expected = 1.0 - 1e-3 * gradient / (np.abs(gradient) + 1e-8)
    np.testing.assert_allclose(variable.numpy(), expected, rtol=0, atol=1e-7)
