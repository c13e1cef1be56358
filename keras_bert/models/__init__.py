"""Functional BERT models: the encoder and the models built on it."""

from keras_bert.models.encoder import BertEncoder

__all__ = ["BertEncoder"]
