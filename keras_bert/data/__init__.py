"""tf.data pipelines for pretraining: documents, sentence pairs, masking, TFRecord shards."""

from keras_bert.data.document_stream import document_stream
from keras_bert.data.documents import (
    documents_from_texts,
    load_tfds_documents,
    read_text_documents,
    split_sentences,
)
from keras_bert.data.instances import Instance, create_instances, tokenize_documents
from keras_bert.data.masking import MaskingConfig, TokenMasker
from keras_bert.data.pretraining import (
    FEATURE_NAMES,
    PretrainingDataConfig,
    pretraining_dataset,
    split_features,
)
from keras_bert.data.streaming import StreamingConfig, streaming_pretraining_dataset
from keras_bert.data.tfrecords import (
    create_pretraining_tfrecords,
    read_pretraining_tfrecords,
    write_pretraining_tfrecords,
)

__all__ = [
    "FEATURE_NAMES",
    "Instance",
    "MaskingConfig",
    "PretrainingDataConfig",
    "StreamingConfig",
    "TokenMasker",
    "create_instances",
    "create_pretraining_tfrecords",
    "document_stream",
    "documents_from_texts",
    "load_tfds_documents",
    "pretraining_dataset",
    "read_pretraining_tfrecords",
    "read_text_documents",
    "split_features",
    "split_sentences",
    "streaming_pretraining_dataset",
    "tokenize_documents",
    "write_pretraining_tfrecords",
]
