"""Raw strings (or pairs of them) to packed inputs of BERT's family, in the graph:
`TextPreprocessor` (any in-graph tokenizer) and `BertPreprocessor` (its WordPiece form)."""

import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import keras
import numpy as np
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.text.packing import BertPacker
from keras_bert.text.text_lists import check_segments
from keras_bert.text.wordpiece_tokenizer import WordPieceTokenizer

if TYPE_CHECKING:
    from keras_bert.checkpoints.location import CheckpointFiles

logger = logging.getLogger(__name__)


def _checked_segments(inputs: tf.Tensor | Sequence) -> list:
    """The one or two segments of `inputs` (see `tokenize_and_pack`), as given, checked
    (`check_segments`)."""
    # A list of Python strings is one batch of texts (an empty list: none); a list of lists,
    # arrays or tensors is segments. A list of other values is texts, for `check_segments` to
    # name the first that is not one.
    is_segments = (
        isinstance(inputs, tuple | list)
        and len(inputs) > 0
        and not isinstance(inputs[0], str | bytes | int | float | np.generic | type(None))
    )
    segments = list(inputs) if is_segments else [inputs]
    check_segments(segments)
    return segments


def _segments(inputs: tf.Tensor | Sequence) -> tuple[list[tf.Tensor], bool]:
    """The string tensors `[batch]` of one or two segments (see `tokenize_and_pack`), and
    whether the input was one text (a scalar)."""
    segments = _checked_segments(inputs)
    texts = [tf.convert_to_tensor(segment, dtype=tf.string) for segment in segments]
    is_scalar = texts[0].shape.rank == 0
    if is_scalar:
        texts = [segment[tf.newaxis] for segment in texts]
    return texts, is_scalar


def tokenize_and_pack(
    inputs: tf.Tensor | Sequence, tokenizer: keras.layers.Layer, packer: BertPacker
) -> dict[str, tf.Tensor]:
    """Tokenizes one or two segments of texts and packs them.

    Args:
        inputs: a string tensor `[batch]` (or a scalar, or a list of Python strings), or a
            tuple/list of two such tensors (or lists) for sentence pairs.
        tokenizer: a layer mapping a `[batch]` string tensor to ragged ids `[batch, (tokens)]`.
        packer: the `BertPacker`.

    Returns:
        `packer`'s dict of int32 tensors `[batch, seq_length]` (`[seq_length]` for a scalar).
    """
    texts, is_scalar = _segments(inputs)
    packed = packer([tokenizer(segment) for segment in texts])
    if is_scalar:
        packed = {name: tensor[0] for name, tensor in packed.items()}
    return packed


@keras.saving.register_keras_serializable(package="keras_bert")
class TextPreprocessor(keras.layers.Layer):
    """Turns raw strings into the inputs of a family member: its tokenizer, then packing.

    The tokenizer is any in-graph tokenizer layer (`BytePairTokenizer` for RoBERTa,
    `SentencePieceTokenizer` for ALBERT and DeBERTa-v3, `WordPieceTokenizer`); the packer
    lays the ids out with the family's special tokens (see `BertPacker`). TensorFlow (and
    tensorflow-text) ops only, so it runs eagerly, in `tf.data`, in functional models and in
    SavedModels served by TensorFlow Serving. `keras_bert.load_preprocessor` builds the right
    one for a checkpoint directory.

    Args:
        tokenizer: the tokenizer layer; it has `token_to_id`.
        seq_length: length of the packed inputs.
        cls_token: the token that starts a sequence ("[CLS]", RoBERTa's "<s>").
        sep_token: the token that ends a segment ("[SEP]", RoBERTa's "</s>").
        pad_token: the padding token ("[PAD]", ALBERT's and RoBERTa's "<pad>").
        truncation: see `truncated_lengths`.
        pair_separators: separators after segment A of a pair (RoBERTa: 2).
        second_type_id: the type id of segment B (RoBERTa: 0).
        **kwargs: `keras.layers.Layer` arguments.

    It is called as `BertPreprocessor` is (texts, or a pair of texts: see
    `tokenize_and_pack`) and returns the same dict of int32 `[batch, seq_length]` tensors.

    Example:
    >>> from keras_bert.text import SentencePieceTokenizer, TextPreprocessor
    >>> tokenizer = SentencePieceTokenizer("../shared/reference/variants/deberta_v3/spm.model")
    >>> preprocessor = TextPreprocessor(tokenizer, seq_length=8)
    >>> preprocessor((["The cat"], ["sat."]))["input_word_ids"].numpy().tolist()
    [[1, 44, 134, 128, 2, 1039, 8, 2]]
    """

    def __init__(
        self,
        tokenizer: keras.layers.Layer,
        seq_length: int = 128,
        cls_token: str = "[CLS]",
        sep_token: str = "[SEP]",
        pad_token: str = "[PAD]",
        truncation: str = "longest_first",
        pair_separators: int = 1,
        second_type_id: int = 1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.tokenizer = tokenizer
        self.packer = BertPacker(
            seq_length=seq_length,
            cls_id=tokenizer.token_to_id(cls_token),
            sep_id=tokenizer.token_to_id(sep_token),
            pad_id=tokenizer.token_to_id(pad_token),
            truncation=truncation,
            pair_separators=pair_separators,
            second_type_id=second_type_id,
            name="packer",
        )
        self.seq_length = seq_length
        self.cls_token = cls_token
        self.sep_token = sep_token
        self.pad_token = pad_token
        self.truncation = truncation
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    def __call__(self, inputs: tf.Tensor | Sequence, *args, **kwargs) -> dict[str, tf.Tensor]:
        """Texts given as Python lists are checked first (`check_segments`): a text that is
        not a string is a `DataError` of its own, not one inside Keras' call report."""
        _checked_segments(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs: tf.Tensor | Sequence[tf.Tensor]) -> dict[str, tf.Tensor]:
        return tokenize_and_pack(inputs, self.tokenizer, self.packer)

    def warn_of_cut_texts(self, inputs: tf.Tensor | Sequence[tf.Tensor]) -> int:
        """Logs one warning if some of `inputs` (texts or pairs, as `call` takes them) have more
        tokens than `seq_length` holds, which `call` cuts to it; returns how many.

        Example:
        >>> from keras_bert.text import BertPreprocessor
        >>> preprocessor = BertPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"], seq_length=4)
        >>> preprocessor.warn_of_cut_texts(["a", "a a a"])
        1
        """
        segments, _ = _segments(inputs)
        lengths = sum(self.tokenizer(segment).row_lengths() for segment in segments)
        budget = self.seq_length - 2 - (self.packer.pair_separators if len(segments) > 1 else 0)
        cut = int(tf.reduce_sum(tf.cast(lengths > budget, tf.int32)))
        if cut:
            logger.warning(
                "%d of %d texts have more tokens than seq_length %d holds and are cut to it: "
                "split longer texts to read all of them.",
                cut,
                int(tf.size(lengths)),
                self.seq_length,
            )
        return cut

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
                "seq_length": self.seq_length,
                "cls_token": self.cls_token,
                "sep_token": self.sep_token,
                "pad_token": self.pad_token,
                "truncation": self.truncation,
                "pair_separators": self.packer.pair_separators,
                "second_type_id": self.packer.second_type_id,
            }
        )
        return config

    @classmethod
    def from_config(cls, config: dict) -> "TextPreprocessor":
        tokenizer = keras.saving.deserialize_keras_object(config["tokenizer"])
        return cls(**{**config, "tokenizer": tokenizer})


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(TextPreprocessor):
    """The `TextPreprocessor` of BERT's WordPiece: raw strings to BERT inputs.

    Ids are exactly those of Hugging Face `tokenizers` with the checkpoint's `tokenizer.json`
    (see `WordPieceTokenizer`); pairs are truncated as by original BERT, or as by `tokenizers` with
    `truncation="longest_first_hf"` (they differ by one token in rare cases, see
    `truncated_lengths`). The
    layer is TensorFlow ops only, so it works eagerly, in `tf.data` (`dataset.map`), inside a
    functional Keras model fed `keras.Input(shape=(), dtype="string")`, and in SavedModels fed
    raw strings by TensorFlow Serving.

    Args:
        vocabulary: path of a `vocab.txt`, or the list of tokens.
        lowercase: uncased normalisation (uncased checkpoints); None for the vocabulary's
            casing (see `WordPieceTokenizer`).
        seq_length: length of the packed inputs, at least 3 (5 for pairs).
        truncation: "longest_first" (original BERT), "longest_first_hf" (Hugging Face),
            "round_robin" or "waterfall" (see `truncated_lengths`).
        **kwargs: further `TextPreprocessor` arguments (special tokens, pair layout) and
            `keras.layers.Layer` arguments.

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
        lowercase: bool | None = True,
        seq_length: int = 128,
        truncation: str = "longest_first",
        **kwargs,
    ):
        tokenizer = WordPieceTokenizer(vocabulary, lowercase=lowercase, name="tokenizer")
        super().__init__(tokenizer, seq_length=seq_length, truncation=truncation, **kwargs)

    @classmethod
    def from_checkpoint(
        cls,
        path: "str | os.PathLike | CheckpointFiles",
        seq_length: int | None = None,
        revision: str | None = None,
        **kwargs,
    ) -> "BertPreprocessor":
        """Creates the preprocessor of a checkpoint directory holding a `vocab.txt`.

        Works for Hugging Face directories, original Google BERT directories and Hub ids (at
        `revision`; only the config and tokenizer files are downloaded). The casing is
        `do_lower_case` of `tokenizer_config.json` when present; otherwise a vocabulary with
        uppercase word pieces is cased and any other is uncased. The special tokens of packing
        are those `tokenizer_config.json` names (`cls_token`, `sep_token`, `pad_token`), as
        `keras_bert.load_preprocessor` reads them.

        Args:
            path: the checkpoint directory or Hub id, or its `CheckpointFiles`.
            seq_length: length of the packed inputs (default 128, or the most tokens the model
                reads where that is less); a longer one than the model reads is a
                `ConfigError`, longer texts are cut.
            revision: the Hub branch, tag or commit of a Hub id.
            **kwargs: further `BertPreprocessor` arguments (`truncation`, special tokens,
                `name`).

        Raises:
            ConfigError: a checkpoint of a family that does not tokenize with WordPiece
                (`keras_bert.load_preprocessor` reads every family's), or a `seq_length` past
                the model's positions.
            CheckpointError: a `vocab.txt` of more tokens than the model embeds.
        """
        from keras_bert.checkpoints.location import VOCABULARY_FILE, find_checkpoint

        checkpoint = find_checkpoint(path, revision, weights=False)
        tokenizer = checkpoint.family.tokenizer.kind
        if tokenizer != "wordpiece":
            raise ConfigError(
                f"{checkpoint.name} is a {checkpoint.family.model_type} checkpoint, whose "
                f"tokenizer is {tokenizer.replace('_', '-')}, not WordPiece: load its "
                "preprocessor with keras_bert.load_preprocessor(path)."
            )
        vocabulary_path = checkpoint.directory / VOCABULARY_FILE
        if not vocabulary_path.is_file():
            raise FileNotFoundError(
                f"No vocab.txt in checkpoint directory {os.fspath(checkpoint.directory)!r}"
            )
        lowercase = checkpoint.tokenizer_config.get("do_lower_case")
        preprocessor = cls(
            vocabulary_path,
            lowercase=lowercase,
            seq_length=checkpoint.packed_length(seq_length),
            **{**checkpoint.packing_tokens, **kwargs},
        )
        checkpoint.check_vocabulary_size(preprocessor.tokenizer.vocabulary_size)
        return preprocessor

    @property
    def lowercase(self) -> bool:
        return self.tokenizer.lowercase

    def get_config(self) -> dict:
        config = super().get_config()
        del config["tokenizer"]  # rebuilt from the vocabulary
        config.update({"vocabulary": self.tokenizer.vocabulary, "lowercase": self.lowercase})
        return config

    @classmethod
    def from_config(cls, config: dict) -> "BertPreprocessor":
        return cls(**config)
