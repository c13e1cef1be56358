"""WordPiece vocabularies: reading and checking `vocab.txt`, inferring casing, learning new ones."""

import collections
import os
from collections.abc import Iterable, Sequence

import tensorflow as tf

from keras_bert.errors import DataError
from keras_bert.text.normalization import split_words
from keras_bert.text.special_tokens import REQUIRED_TOKENS, SPECIAL_TOKENS


def load_vocabulary(path: str | os.PathLike) -> list[str]:
    """Reads a BERT `vocab.txt` (one token per line, the line number is the id) and checks it.

    Args:
        path: the vocabulary file.

    Returns:
        The tokens, in id order.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: the file is not a UTF-8 text file, or it lacks [PAD], [UNK], [CLS] or [SEP].
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"WordPiece vocabulary file not found: {path!r}")
    with open(path, "rb") as file:
        data = file.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path!r} is not a BERT vocab.txt: not UTF-8 text ({error})") from None
    if "\x00" in text:
        raise ValueError(f"{path!r} is not a BERT vocab.txt: it contains NUL bytes (binary file?)")
    # Split on "\n" only, as TensorFlow's TextFileInitializer does (str.splitlines would also
    # split on U+2028 and U+0085, which are legitimate characters of a token).
    vocabulary = [line.removesuffix("\r") for line in text.split("\n")]
    if vocabulary and vocabulary[-1] == "":
        vocabulary.pop()
    check_vocabulary(vocabulary, source=repr(path))
    return vocabulary


def check_vocabulary(vocabulary: Sequence[str], source: str = "vocabulary") -> None:
    """Raises `ValueError` unless `vocabulary` is a usable BERT WordPiece vocabulary."""
    missing = [token for token in REQUIRED_TOKENS if token not in vocabulary]
    if missing:
        raise ValueError(f"{source} is not a BERT WordPiece vocabulary: it lacks {missing}")
    if len(set(vocabulary)) != len(vocabulary):
        raise ValueError(f"{source} is not a BERT WordPiece vocabulary: it repeats tokens")
    if any("\n" in token for token in vocabulary):
        raise ValueError(f"{source} is not a BERT WordPiece vocabulary: a token contains '\\n'")


def infer_lowercase(vocabulary: Iterable[str]) -> bool:
    """Whether a vocabulary is uncased: no token other than bracketed specials has uppercase."""
    return not any(
        token != token.lower()
        for token in vocabulary
        if not (token.startswith("[") and token.endswith("]"))
    )


def save_vocabulary(vocabulary: Sequence[str], path: str | os.PathLike) -> None:
    """Writes `vocabulary` as a `vocab.txt`: one token per line, "\\n"-terminated (creating
    missing parent directories)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        file.writelines(token + "\n" for token in vocabulary)


def build_vocabulary(
    texts: tf.data.Dataset,
    vocab_size: int,
    lowercase: bool = True,
    learn_params: dict | None = None,
) -> list[str]:
    """Learns a WordPiece vocabulary from raw texts with tensorflow-text's learner.

    Words are split and normalised exactly as `WordPieceTokenizer` will split them, counted,
    and tensorflow-text's `wordpiece_tokenizer_learner_lib` learns the pieces from the counts
    (tensorflow-text's own BERT normaliser is bypassed: it case-folds with NFKC).

    Args:
        texts: dataset of string scalars or batches (e.g. lines of a corpus).
        vocab_size: the maximum size of the vocabulary, special tokens included.
        lowercase: learn an uncased vocabulary (for `lowercase=True` tokenizers).
        learn_params: further arguments of tensorflow-text's `learn` (e.g. `lower_thresh`,
            the minimum count of a word).

    Returns:
        The tokens: [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0..4), then the learned pieces.

    Raises:
        DataError: the texts hold no words (empty files, only whitespace).
    """
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    def words_of(text: tf.Tensor) -> tf.Tensor:
        return split_words(tf.reshape(text, [-1]), lowercase)[0].flat_values

    raw_counts = collections.Counter()  # of UTF-8 bytes: decoded once a word, below
    for words in texts.map(words_of, num_parallel_calls=tf.data.AUTOTUNE).as_numpy_iterator():
        raw_counts.update(words)
    counts = {word.decode("utf-8"): count for word, count in raw_counts.items()}
    if not counts:
        raise DataError("The texts hold no words: there is no vocabulary to learn from them.")
    return learner.learn(counts, vocab_size, list(SPECIAL_TOKENS), **(learn_params or {}))
