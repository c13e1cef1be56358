"""`BertPreprocessor`: raw strings (or pairs of them) to packed BERT inputs, in the graph."""

import json
import os
from collections.abc import Sequence

import keras
import tensorflow as tf

from keras_bert.text.packing import BertPacker
from keras_bert.text.special_tokens import CLS_TOKEN, PAD_TOKEN, SEP_TOKEN
from keras_bert.text.text_preprocessor import tokenize_and_pack
from keras_bert.text.tokenizer import WordPieceTokenizer
from keras_bert.text.vocabulary import infer_lowercase, load_vocabulary


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(keras.layers.Layer):
    """Turns raw strings into BERT inputs: WordPiece tokenization, then packing.

    Ids are exactly those of Hugging Face `tokenizers` with the checkpoint's `tokenizer.json`
    (see `WordPieceTokenizer`); pairs are truncated as by original BERT, or as by `tokenizers` with
    `truncation="longest_first_hf"` (they differ by one token in rare cases, see
    `truncated_lengths`). The
    layer is TensorFlow ops only, so it works eagerly, in `tf.data` (`dataset.map`), inside a
    functional Keras model fed `keras.Input(shape=(), dtype="string")`, and in SavedModels fed
    raw strings by TensorFlow Serving.

    Args:
        vocabulary: path of a `vocab.txt`, or the list of tokens.
        lowercase: uncased normalisation (uncased checkpoints).
        seq_length: length of the packed inputs, at least 3 (5 for pairs).
        truncation: "longest_first" (original BERT), "longest_first_hf" (Hugging Face),
            "round_robin" or "waterfall" (see `truncated_lengths`).
        **kwargs: `keras.layers.Layer` arguments.

    Call arguments:
        inputs: a string tensor `[batch]` (or a scalar, or a list of Python strings), or a
            tuple/list of two such tensors (or lists) for sentence pairs.

    Returns:
        A dict of int32 tensors `[batch, seq_length]`: `input_word_ids`, `input_mask`,
        `input_type_ids`.

    Example:
    >>> from keras_bert.text import BertPreprocessor
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "."]
    >>> preprocessor = BertPreprocessor(vocabulary, seq_length=8)
    >>> inputs = preprocessor(["The cat sat."])
    >>> inputs["input_word_ids"].numpy().tolist()
    [[2, 5, 6, 7, 8, 3, 0, 0]]
    >>> inputs = preprocessor((["The cat"], ["sat."]))
    >>> inputs["input_word_ids"].numpy().tolist(), inputs["input_type_ids"].numpy().tolist()
    ([[2, 5, 6, 3, 7, 8, 3, 0]], [[0, 0, 0, 0, 1, 1, 1, 0]])
    """

    def __init__(
        self,
        vocabulary: str | os.PathLike | Sequence[str],
        lowercase: bool = True,
        seq_length: int = 128,
        truncation: str = "longest_first",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.tokenizer = WordPieceTokenizer(vocabulary, lowercase=lowercase, name="tokenizer")
        self.packer = BertPacker(
            seq_length=seq_length,
            cls_id=self.tokenizer.token_to_id(CLS_TOKEN),
            sep_id=self.tokenizer.token_to_id(SEP_TOKEN),
            pad_id=self.tokenizer.token_to_id(PAD_TOKEN),
            truncation=truncation,
            name="packer",
        )
        self.seq_length = seq_length
        self.truncation = truncation
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    @classmethod
    def from_checkpoint(
        cls,
        path: str | os.PathLike,
        seq_length: int = 128,
        revision: str | None = None,
        **kwargs,
    ) -> "BertPreprocessor":
        """Creates the preprocessor of a checkpoint directory holding a `vocab.txt`.

        Works for Hugging Face directories, original Google BERT directories and Hub ids (at
        `revision`; only the config and tokenizer files are downloaded). The casing is
        `do_lower_case` of `tokenizer_config.json` when present; otherwise a vocabulary with
        uppercase word pieces is cased and any other is uncased.

        Args:
            path: the checkpoint directory or Hub id.
            seq_length: length of the packed inputs.
            revision: the Hub branch, tag or commit of a Hub id.
            **kwargs: further `BertPreprocessor` arguments (`truncation`, `name`).
        """
        from keras_bert.checkpoints.loading import checkpoint_directory

        path = os.fspath(checkpoint_directory(path, revision))
        vocabulary_path = os.path.join(path, "vocab.txt")
        if not os.path.isfile(vocabulary_path):
            raise FileNotFoundError(f"No vocab.txt in checkpoint directory {path!r}")
        config_path = os.path.join(path, "tokenizer_config.json")
        lowercase = None
        if os.path.isfile(config_path):
            with open(config_path, encoding="utf-8") as file:
                lowercase = json.load(file).get("do_lower_case")
        if lowercase is None:
            lowercase = infer_lowercase(load_vocabulary(vocabulary_path))
        return cls(vocabulary_path, lowercase=lowercase, seq_length=seq_length, **kwargs)

    @property
    def lowercase(self) -> bool:
        return self.tokenizer.lowercase

    def call(self, inputs: tf.Tensor | Sequence[tf.Tensor]) -> dict[str, tf.Tensor]:
        return tokenize_and_pack(inputs, self.tokenizer, self.packer)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "vocabulary": self.tokenizer.vocabulary,
                "lowercase": self.lowercase,
                "seq_length": self.seq_length,
                "truncation": self.truncation,
            }
        )
        return config
