"""Token classification (NER) data: CoNLL/JSONL/tfds readers and the `tf.data` pipeline.

Words are labelled through their first word piece; the other pieces, `[CLS]`, `[SEP]` and
padding get `IGNORED_LABEL` and take no part in the loss. Any tokenizer of BERT's family works:
each word is tokenized as its `tokenize_split_words` does (RoBERTa's words after the first with
the space they had in the text).
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
from pathlib import Path

import numpy as np
import tensorflow as tf

from keras_bert.data.batching import batch_by_length
from keras_bert.data.document_windows import IGNORED_LABEL, TaggingWindows, document_windows
from keras_bert.data.prefetching import prefetched
from keras_bert.data.utf8_files import read_utf8
from keras_bert.errors import DataError

_DOCUMENT_START = "-DOCSTART-"


@dataclasses.dataclass
class TaggedSentences:
    """Sentences as lists of words, each word with its BIO tag; `documents` gives each
    sentence's document (its number in a CoNLL file, split by `-DOCSTART-`), where known."""

    words: list[list[str]]
    tags: list[list[str]]
    documents: list[int] | None = None

    def __len__(self) -> int:
        return len(self.words)

    def sample(self, count: int, seed: int = 0) -> TaggedSentences:
        """`count` sentences drawn at random without replacement (all of them if fewer)."""
        chosen = self._drawn(count, seed)
        documents = None if self.documents is None else [self.documents[i] for i in chosen]
        return TaggedSentences(
            [self.words[i] for i in chosen], [self.tags[i] for i in chosen], documents
        )

    def drawn_flags(self, count: int, seed: int = 0) -> list[bool]:
        """Which sentences `sample(count, seed)` draws, in the order of the data (to train on
        a sample while the rest of their documents stays context)."""
        flags = [False] * len(self)
        for index in self._drawn(count, seed):
            flags[index] = True
        return flags

    def _drawn(self, count: int, seed: int) -> np.ndarray:
        return np.random.default_rng(seed).permutation(len(self))[:count]


def iob2_tags(tags: list[str]) -> list[str]:
    """Tags in IOB2, where every entity starts with `B-`: an `I-X` that starts an entity (IOB1's
    way, as in CoNLL-2003's files) becomes `B-X`. IOB2 tags and tags outside the scheme (POS
    tags) stay as they are, so the conversion is safe on any column.

    Example:
    >>> iob2_tags(["I-ORG", "O", "I-MISC", "I-MISC", "B-MISC", "I-PER", "NNP"])
    ['B-ORG', 'O', 'B-MISC', 'I-MISC', 'B-MISC', 'B-PER', 'NNP']
    """
    converted, previous_type = [], None
    for tag in tags:
        prefix, _, type_name = tag.partition("-")
        if prefix == "I" and type_name and type_name != previous_type:
            tag = f"B-{type_name}"
        converted.append(tag)
        previous_type = type_name if prefix in ("B", "I") and type_name else None
    return converted


def read_conll(path: str | Path, tag_column: int = -1, iob2: bool = True) -> TaggedSentences:
    """Reads a CoNLL column file: one `word ... tag` line per word, blank lines between
    sentences, `-DOCSTART-` lines between documents (CoNLL-2003: word, POS, chunk, NER tag).

    Args:
        path: the file.
        tag_column: the column of the tags (-1: the last, CoNLL-2003's entity tags; 1 its POS
            tags, 2 its chunk tags).
        iob2: convert the tags to IOB2 (`iob2_tags`): CoNLL-2003's files are IOB1, where an
            entity starts with `I-` and `B-` only separates two entities of one type, so a
            tagger trained on a sample of them would rarely see `B-`. Entity scores are the
            same on either scheme (conlleval reads both).

    A line without a word and a tag is an error that names its line number.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "train.conll"
    >>> _ = path.write_text("-DOCSTART- -X- O O\\n\\nEU NNP I-NP I-ORG\\nrejects VBZ I-VP O\\n"
    ...                     "\\n-DOCSTART- -X- O O\\n\\nPeter NNP I-NP I-PER\\n")
    >>> sentences = read_conll(path)
    >>> sentences.tags, sentences.documents
    ([['B-ORG', 'O'], ['B-PER']], [0, 1])
    >>> read_conll(path, tag_column=2, iob2=False).tags
    [['I-NP', 'I-VP'], ['I-NP']]
    """
    path = Path(path)
    sentences = TaggedSentences([], [], [])
    words: list[str] = []
    tags: list[str] = []
    document = -1
    lines = read_utf8(path).splitlines()
    for line_number, line in enumerate([*lines, ""], start=1):
        columns = line.split()
        if columns and columns[0] == _DOCUMENT_START:
            document += 1
            continue
        if not columns:
            if words:
                sentences.words.append(words)
                sentences.tags.append(iob2_tags(tags) if iob2 else tags)
                sentences.documents.append(max(document, 0))
            words, tags = [], []
            continue
        if len(columns) < 2:
            raise DataError(
                f"{path}:{line_number}: expected a word and a tag separated by whitespace, "
                f"got {line!r}."
            )
        try:
            tags.append(columns[tag_column])
        except IndexError:
            raise DataError(f"{path}:{line_number}: no column {tag_column} in {line!r}.") from None
        words.append(columns[0])
    if not sentences.words:
        raise DataError(f"{path}: the file holds no tagged sentences.")
    return sentences


def read_tagged_jsonl(
    path: str | Path, words_key: str = "tokens", tags_key: str = "tags"
) -> TaggedSentences:
    """Reads JSON lines with a list of words and a list of tags of the same length."""
    path = Path(path)
    sentences = TaggedSentences([], [])
    for line_number, line in enumerate(read_utf8(path).splitlines(), start=1):
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
    """The tags of `sentences` completed to the BIO scheme ("O" first, then sorted): every
    entity type seen gets both `B-` and `I-`, so that a small sample still knows every tag of
    the types it holds.

    Example:
    >>> tag_names_of(TaggedSentences([["EU", "rejects"]], [["I-ORG", "O"]]))
    ['O', 'B-ORG', 'I-ORG']
    """
    tags = {tag for sentence_tags in sentences.tags for tag in sentence_tags} - {"O"}
    for tag in list(tags):
        prefix, _, type_name = tag.partition("-")
        if prefix in ("B", "I") and type_name:
            tags |= {f"B-{type_name}", f"I-{type_name}"}
    return ["O", *sorted(tags)]


def unknown_tags(sentences: TaggedSentences, tag_names: list[str]) -> dict[str, int]:
    """How many words of `sentences` carry each tag outside `tag_names`."""
    known = set(tag_names)
    return dict(
        collections.Counter(tag for tags in sentences.tags for tag in tags if tag not in known)
    )


def encode_tags(sentences: TaggedSentences, tag_names: list[str]) -> list[list[int]]:
    unseen = unknown_tags(sentences, tag_names)
    if unseen:
        raise DataError(f"Tags not seen in training: {', '.join(map(repr, sorted(unseen)))}.")
    index = {name: position for position, name in enumerate(tag_names)}
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


def packed_sentence_lengths(words: tf.RaggedTensor, preprocessor) -> np.ndarray:
    """Each sentence's packed length in tokens: `[CLS]`, its word pieces, `[SEP]`, at most the
    preprocessor's `seq_length`; `words` is `[sentences, (words)]`."""
    pieces = [
        preprocessor.tokenizer.tokenize_split_words(batch).merge_dims(1, 2).row_lengths().numpy()
        for batch in tf.data.Dataset.from_tensor_slices(words).batch(4096)
    ]
    return np.minimum(np.concatenate(pieces) + 2, preprocessor.seq_length).astype(np.int32)


def token_classification_dataset(
    sentences: TaggedSentences,
    preprocessor,
    tag_ids: list[list[int]],
    batch_size: int,
    shuffle: bool = False,
    seed: int = 0,
    length_bucketing: bool = False,
) -> tf.data.Dataset:
    """Batches of `(inputs, labels)` with labels `[batch, seq]` aligned to the packed tokens.

    Sentences longer than `seq_length - 2` pieces are truncated (their last words are not
    trained on); each batch is cut to its longest sequence. With `length_bucketing`
    (training), each batch holds sentences of similar length (`batch_by_length`), in shuffled
    order, and the dataset's `cardinality` is an epoch's batches.
    """
    tokenizer, seq_length = preprocessor.tokenizer, preprocessor.seq_length
    packer = preprocessor.packer
    cls_id, sep_id, pad_id = packer.cls_id, packer.sep_id, packer.pad_id
    words = tf.ragged.constant(sentences.words, dtype=tf.string)
    tags = tf.ragged.constant(tag_ids, dtype=tf.int32)
    lengths = packed_sentence_lengths(words, preprocessor) if length_bucketing else None
    dataset = tf.data.Dataset.from_tensor_slices(
        (words, tags) if lengths is None else (words, tags, lengths)
    )
    if shuffle:
        dataset = dataset.shuffle(len(sentences), seed=seed, reshuffle_each_iteration=True)
    if lengths is None:
        dataset = dataset.batch(batch_size)
    else:
        dataset = batch_by_length(
            dataset, lambda words, tags, length: length, lengths, batch_size, seq_length
        ).map(lambda words, tags, length: (words, tags))

    def encode(words, word_tag_ids):
        piece_ids, labels = word_pieces_and_labels(tokenizer, words, word_tag_ids)
        budget = seq_length - 2
        lengths = tf.cast(tf.minimum(piece_ids.row_lengths(), budget) + 2, tf.int32)

        def pack(values: tf.RaggedTensor, first, last, padding) -> tf.Tensor:
            # In dense ops, as long as the longest row: a ragged concat would transpose the
            # rows' int64 lengths, which oneDNN builds of TensorFlow log as an error.
            packed = tf.pad(
                values[:, :budget].to_tensor(padding), [[0, 0], [1, 1]], constant_values=padding
            )
            positions = tf.range(tf.shape(packed)[1])
            packed = tf.where(positions == 0, first, packed)
            return tf.where(positions == lengths[:, tf.newaxis] - 1, last, packed)

        word_ids = pack(piece_ids, cls_id, sep_id, pad_id)
        inputs = {
            "input_word_ids": word_ids,
            "input_mask": tf.sequence_mask(lengths, tf.shape(word_ids)[1], dtype=tf.int32),
            "input_type_ids": tf.zeros_like(word_ids),
        }
        return inputs, pack(labels, IGNORED_LABEL, IGNORED_LABEL, IGNORED_LABEL)

    dataset = dataset.map(encode, num_parallel_calls=tf.data.AUTOTUNE)
    return prefetched(dataset)


def tagging_windows(
    sentences: TaggedSentences,
    preprocessor,
    tag_ids: list[list[int]] | None = None,
    scored: list[bool] | None = None,
) -> TaggingWindows:
    """`document_windows` of `sentences` at the preprocessor's `seq_length`: each scored
    sentence read with its document around it (each sentence alone where `documents` is None),
    every word of it scored once."""
    word_pieces = preprocessor.tokenizer.tokenize_split_words(
        tf.ragged.constant(sentences.words, dtype=tf.string)
    )
    # Nested lists from the flat values and row splits (`to_list` slices row by row, eagerly).
    piece_ids = word_pieces.flat_values.numpy().tolist()
    word_splits = word_pieces.values.row_splits.numpy().tolist()
    sentence_splits = word_pieces.row_splits.numpy().tolist()
    words = [piece_ids[start:end] for start, end in itertools.pairwise(word_splits)]
    packer = preprocessor.packer
    return document_windows(
        [words[start:end] for start, end in itertools.pairwise(sentence_splits)],
        sentences.documents,
        preprocessor.seq_length,
        packer.cls_id,
        packer.sep_id,
        tag_ids=tag_ids,
        scored=scored,
    )


def windows_dataset(
    windows: TaggingWindows, pad_id: int, batch_size: int, shuffle: bool = False, seed: int = 0
) -> tf.data.Dataset:
    """Batches of `(inputs, labels)` of `tagging_windows`, each cut to its longest window."""
    dataset = tf.data.Dataset.from_tensor_slices(
        (
            tf.ragged.constant(windows.word_ids, dtype=tf.int32),
            tf.ragged.constant(windows.labels, dtype=tf.int32),
        )
    )
    if shuffle:
        dataset = dataset.shuffle(len(windows), seed=seed, reshuffle_each_iteration=True)

    def dense(word_ids: tf.RaggedTensor, labels: tf.RaggedTensor):
        inputs = {
            "input_word_ids": word_ids.to_tensor(default_value=pad_id),
            "input_mask": tf.ones_like(word_ids).to_tensor(),
            "input_type_ids": tf.zeros_like(word_ids).to_tensor(),
        }
        return inputs, labels.to_tensor(default_value=IGNORED_LABEL)

    dataset = dataset.batch(batch_size).map(dense, num_parallel_calls=tf.data.AUTOTUNE)
    return prefetched(dataset)
