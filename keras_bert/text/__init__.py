"""In-graph text processing: WordPiece tokenization, packing into BERT inputs, vocabularies."""

from keras_bert.text.packing import BertPacker, truncated_lengths
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.tokenizer import WordPieceTokenizer
from keras_bert.text.vocabulary import infer_lowercase, load_vocabulary

__all__ = [
    "BertPacker",
    "BertPreprocessor",
    "WordPieceTokenizer",
    "infer_lowercase",
    "load_vocabulary",
    "truncated_lengths",
]
