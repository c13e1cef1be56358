"""The feed-forward activations a BERT config can name."""

from collections.abc import Callable
from functools import partial

import keras


def activation_from_name(name: str) -> Callable:
    """The activation function for a `BertConfig.hidden_activation` name."""
    functions = {
        "gelu": partial(keras.activations.gelu, approximate=False),
        "gelu_approximate": partial(keras.activations.gelu, approximate=True),
        "relu": keras.activations.relu,
    }
    if name not in functions:
        raise ValueError(f"Unknown activation {name!r}; expected one of {', '.join(functions)}.")
    return functions[name]
