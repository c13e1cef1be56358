"""keras_bert: BERT for TensorFlow and Keras 3 — pretrain, fine-tune, serve with TF Serving."""

from keras_bert.config import BertConfig, ConfigError
from keras_bert.keras_hub_conversion import from_keras_hub
from keras_bert.models import (
    BertClassifier,
    BertEncoder,
    BertMaskedLM,
    BertPretrainer,
    BertQuestionAnswerer,
    BertTokenClassifier,
)
from keras_bert.text import BertPreprocessor, WordPieceTokenizer

__all__ = [
    "BertClassifier",
    "BertConfig",
    "BertEncoder",
    "BertMaskedLM",
    "BertPreprocessor",
    "BertPretrainer",
    "BertQuestionAnswerer",
    "BertTokenClassifier",
    "ConfigError",
    "WordPieceTokenizer",
    "from_keras_hub",
]
__version__ = "0.1.0"
