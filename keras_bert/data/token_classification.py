"""Token classification (NER) data: CoNLL/JSONL/tfds readers and the `tf.data` pipeline.

Words are labelled through their first word piece; the other pieces, `[CLS]`, `[SEP]` and
padding get `IGNORED_LABEL` and take no part in the loss. Any tokenizer of BERT's family works:
each word is tokenized as its `tokenize_split_words` does (RoBERTa's words after the first with
the space they had in the text).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import tensorflow as tf

from keras_bert.errors import DataError

# Label id of positions that take no part in the loss: special tokens, padding and word pieces
# after the first of each word.
IGNORED_LABEL = -100
_DOCUMENT_START = "-DOCSTART-"


@dataclasses.dataclass
class TaggedSentences:
    """Sentences as lists of words, each word with its BIO tag."""

    words: list[list[str]]
    tags: list[list[str]]

    def __len__(self) -> int:
        return len(self.words)

    def sample(self, count: int, seed: int = 0) -> TaggedSentences:
        """`count` sentences drawn at random without replacement (all of them if fewer)."""
        chosen = np.random.default_rng(seed).permutation(len(self))[:count]
        return TaggedSentences([self.words[i] for i in chosen], [self.tags[i] for i in chosen])


def read_conll(path: str | Path, tag_column: int = -1) -> TaggedSentences:
    """Reads a CoNLL-style file: one `word ... tag` line per word, blank lines between sentences.

    `-DOCSTART-` lines are skipped. A line without a word and a tag is an error that names its
    line number.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "train.conll"
    >>> _ = path.write_text("EU NNP B-ORG\\nrejects VBZ O\\n\\nPeter NNP B-PER\\n")
    >>> read_conll(path).tags
    [['B-ORG', 'O'], ['B-PER']]
    """
    path = Path(path)
    sentences = TaggedSentences([], [])
    words: list[str] = []
    tags: list[str] = []
    lines = path.read_text("utf-8").splitlines()
    for line_number, line in enumerate([*lines, ""], start=1):
        columns = line.split()
        if columns and columns[0] == _DOCUMENT_START:
            continue
        if not columns:
            if words:
                sentences.words.append(words)
                sentences.tags.append(tags)
            words, tags = [], []
            continue
        if len(columns) < 2:
            raise DataError(
                f"{path}:{line_number}: expected a word and a tag separated by whitespace, "
                f"got {line!r}."
            )
        words.append(columns[0])
        tags.append(columns[tag_column])
    if not sentences.words:
        raise DataError(f"{path}: the file holds no tagged sentences.")
    return sentences


def read_tagged_jsonl(
    path: str | Path, words_key: str = "tokens", tags_key: str = "tags"
) -> TaggedSentences:
    """Reads JSON lines with a list of words and a list of tags of the same length."""
    path = Path(path)
    sentences = TaggedSentences([], [])
    for line_number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataError(f"{path}:{line_number}: not a JSON object: {error}") from None
        record = record if isinstance(record, dict) else {}
        words, tags = record.get(words_key), record.get(tags_key)
        if not isinstance(words, list) or not isinstance(tags, list) or len(words) != len(tags):
            raise DataError(
                f"{path}:{line_number}: needs lists {words_key!r} and {tags_key!r} of equal length."
            )
        sentences.words.append([str(word) for word in words])
        sentences.tags.append([str(tag) for tag in tags])
    if not sentences.words:
        raise DataError(f"{path}: the file holds no tagged sentences.")
    return sentences


def load_tfds_token_classification(
    name: str,
    split: str,
    data_dir: str | Path | None = None,
    words_feature: str = "tokens",
    tags_feature: str = "ner",
    download: bool = True,
) -> tuple[TaggedSentences, list[str]]:
    """Loads a tagging dataset (e.g. "conll2003") through `tfds.load`, with its tag names."""
    import tensorflow_datasets as tfds

    dataset, info = tfds.load(
        name, split=split, data_dir=data_dir, download=download, with_info=True
    )
    tag_names = list(info.features[tags_feature].feature.names)
    sentences = TaggedSentences([], [])
    for example in tfds.as_numpy(dataset):
        sentences.words.append([word.decode("utf-8") for word in example[words_feature]])
        sentences.tags.append([tag_names[int(tag)] for tag in example[tags_feature]])
    return sentences, tag_names


def tag_names_of(sentences: TaggedSentences) -> list[str]:
    """The tags used in `sentences`: "O" first, then sorted."""
    tags = {tag for sentence_tags in sentences.tags for tag in sentence_tags}
    return ["O", *sorted(tags - {"O"})]


def encode_tags(sentences: TaggedSentences, tag_names: list[str]) -> list[list[int]]:
    index = {name: position for position, name in enumerate(tag_names)}
    unseen = sorted({tag for tags in sentences.tags for tag in tags if tag not in index})
    if unseen:
        raise DataError(f"Tags not seen in training: {', '.join(map(repr, unseen))}.")
    return [[index[tag] for tag in tags] for tags in sentences.tags]


def word_pieces_and_labels(
    tokenizer, words: tf.RaggedTensor, tag_ids: tf.RaggedTensor
) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
    """Word-piece ids `[batch, (pieces)]` and labels: the word's tag on its first piece only."""
    pieces = tokenizer.tokenize_split_words(words).values  # [words, (pieces)]
    piece_counts = pieces.row_lengths()
    is_first = tf.equal(tf.ragged.range(piece_counts).flat_values, 0)
    word_tags = tf.repeat(tag_ids.flat_values, piece_counts)
    labels = tf.where(is_first, word_tags, tf.constant(IGNORED_LABEL, word_tags.dtype))
    as_sentences = lambda values: words.with_flat_values(  # noqa: E731
        pieces.with_flat_values(values)
    ).merge_dims(1, 2)
    return as_sentences(pieces.flat_values), as_sentences(labels)


def token_classification_dataset(
    sentences: TaggedSentences,
    preprocessor,
    tag_ids: list[list[int]],
    batch_size: int,
    shuffle: bool = False,
    seed: int = 0,
) -> tf.data.Dataset:
    """Batches of `(inputs, labels)` with labels `[batch, seq]` aligned to the packed tokens.

    Sentences longer than `seq_length - 2` pieces are truncated (their last words are not
    trained on); each batch is cut to its longest sequence.
    """
    tokenizer, seq_length = preprocessor.tokenizer, preprocessor.seq_length
    packer = preprocessor.packer
    cls_id, sep_id, pad_id = packer.cls_id, packer.sep_id, packer.pad_id
    dataset = tf.data.Dataset.from_tensor_slices(
        (
            tf.ragged.constant(sentences.words, dtype=tf.string),
            tf.ragged.constant(tag_ids, dtype=tf.int32),
        )
    )
    if shuffle:
        dataset = dataset.shuffle(len(sentences), seed=seed, reshuffle_each_iteration=True)

    def encode(words, word_tag_ids):
        piece_ids, labels = word_pieces_and_labels(tokenizer, words, word_tag_ids)
        budget = seq_length - 2
        lengths = tf.cast(tf.minimum(piece_ids.row_lengths(), budget) + 2, tf.int32)

        def pack(values: tf.RaggedTensor, first, last, padding) -> tf.Tensor:
            edge = tf.fill([tf.shape(lengths)[0], 1], first)
            packed = tf.concat([edge, values[:, :budget], tf.fill(tf.shape(edge), last)], axis=1)
            return packed.to_tensor(default_value=padding)  # as long as the longest row

        word_ids = pack(piece_ids, cls_id, sep_id, pad_id)
        inputs = {
            "input_word_ids": word_ids,
            "input_mask": tf.sequence_mask(lengths, tf.shape(word_ids)[1], dtype=tf.int32),
            "input_type_ids": tf.zeros_like(word_ids),
        }
        return inputs, pack(labels, IGNORED_LABEL, IGNORED_LABEL, IGNORED_LABEL)

    dataset = dataset.batch(batch_size).map(encode, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)
