"""Moved to `keras_bert.cpu`, below training, whose `--precision auto` reads the CPU's
features too."""

from keras_bert.deprecation import moved_names

__getattr__ = moved_names(
    dict.fromkeys(("cpu_model", "cpu_features", "cpu_summary"), "keras_bert.cpu"), __name__
)
