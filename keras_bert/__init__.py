"""keras_bert: BERT for TensorFlow and Keras 3 — pretrain, fine-tune, serve with TF Serving.

The top-level names are loaded on first use, so `import keras_bert.serving` (the REST client)
does not import TensorFlow or Keras. `keras.saving.load_model` needs keras_bert's Keras classes
registered: they are when Keras was imported before keras_bert (`import keras` then `import
keras_bert`, the usual order), or once any model class or `keras_bert.models` is imported.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

_LAZY_NAMES = {
    "BertClassifier": "keras_bert.models",
    "BertConfig": "keras_bert.config",
    "BertEncoder": "keras_bert.models",
    "BertMaskedLM": "keras_bert.models",
    "BertPreprocessor": "keras_bert.text",
    "BertPretrainer": "keras_bert.models",
    "BertQuestionAnswerer": "keras_bert.models",
    "BertReplacedTokenDetector": "keras_bert.models",
    "BertTokenClassifier": "keras_bert.models",
    "BytePairTokenizer": "keras_bert.text",
    "CheckpointError": "keras_bert.errors",
    "ConfigError": "keras_bert.errors",
    "DataError": "keras_bert.errors",
    "PublishError": "keras_bert.errors",
    "SentencePieceTokenizer": "keras_bert.text",
    "TextPreprocessor": "keras_bert.text",
    "WordPieceTokenizer": "keras_bert.text",
    "from_keras_hub": "keras_bert.keras_hub_conversion",
    "load_encoder": "keras_bert.loading",
    "load_masked_lm": "keras_bert.loading",
    "load_preprocessor": "keras_bert.loading",
    "load_replaced_token_detector": "keras_bert.loading",
    "push_to_hub": "keras_bert.publishing",
    "save_checkpoint": "keras_bert.publishing",
}

__all__ = sorted(_LAZY_NAMES)
__version__ = "0.1.0"

if "keras" in sys.modules:
    # Keras (and so TensorFlow) is loaded already: register the classes `load_model` needs.
    importlib.import_module("keras_bert.models")


def __getattr__(name: str) -> Any:
    if name not in _LAZY_NAMES:
        raise AttributeError(f"module 'keras_bert' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY_NAMES])
