"""keras_bert: BERT for TensorFlow and Keras 3 — pretrain, fine-tune, serve with TF Serving."""

from keras_bert.config import BertConfig, ConfigError
from keras_bert.models import BertEncoder

__all__ = ["BertConfig", "BertEncoder", "ConfigError"]
__version__ = "0.1.0"
