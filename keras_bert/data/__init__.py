"""tf.data pipelines for pretraining: documents, sentence pairs, masking, TFRecord shards."""

from keras_bert.data.document_stream import document_stream
from keras_bert.data.documents import (
    documents_from_texts,
    load_tfds_documents,
    read_text_documents,
    split_sentences,
)
from keras_bert.data.masking import MaskingConfig, TokenMasker
from keras_bert.data.pretraining import (
    FEATURE_NAMES,
    PretrainingDataConfig,
    split_features,
    split_replaced_token_features,
)
from keras_bert.data.streaming import (
    StreamingConfig,
    pretraining_dataset,
    streaming_pretraining_dataset,
)
from keras_bert.data.tfrecords import (
    create_pretraining_tfrecords,
    read_pretraining_tfrecords,
    write_pretraining_tfrecords,
)
from keras_bert.data.tokenized_documents import tokenize_documents

__all__ = [
    "FEATURE_NAMES",
    "MaskingConfig",
    "PretrainingDataConfig",
    "StreamingConfig",
    "TokenMasker",
    "create_pretraining_tfrecords",
    "document_stream",
    "documents_from_texts",
    "load_tfds_documents",
    "pretraining_dataset",
    "read_pretraining_tfrecords",
    "read_text_documents",
    "split_features",
    "split_replaced_token_features",
    "split_sentences",
    "streaming_pretraining_dataset",
    "tokenize_documents",
    "write_pretraining_tfrecords",
]
