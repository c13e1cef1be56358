"""In-graph text processing: WordPiece, byte-level BPE, SentencePiece and unigram tokenization,
packing into BERT inputs, vocabularies."""

from keras_bert.text.byte_pair_tokenizer import BytePairTokenizer
from keras_bert.text.packing import BertPacker, truncated_lengths
from keras_bert.text.preprocessor import BertPreprocessor, TextPreprocessor
from keras_bert.text.sentencepiece_tokenizer import SentencePieceTokenizer
from keras_bert.text.unigram_tokenizer import UnigramTokenizer
from keras_bert.text.vocabulary import (
    build_vocabulary,
    infer_lowercase,
    load_vocabulary,
    save_vocabulary,
)
from keras_bert.text.wordpiece_tokenizer import WordPieceTokenizer

__all__ = [
    "BertPacker",
    "BertPreprocessor",
    "BytePairTokenizer",
    "SentencePieceTokenizer",
    "TextPreprocessor",
    "UnigramTokenizer",
    "WordPieceTokenizer",
    "build_vocabulary",
    "infer_lowercase",
    "load_vocabulary",
    "save_vocabulary",
    "truncated_lengths",
]
