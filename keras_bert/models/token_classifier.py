"""BertTokenClassifier: a label for every token (named-entity recognition)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_bert.checkpoints.task_heads import (
    TOKEN_CLASSIFICATION,
    TOKEN_CLASSIFIER_MODULE,
    label_config,
    label_names,
)
from keras_bert.checkpoints.variables import head_dense_variables
from keras_bert.data.token_classification import (
    IGNORED_LABEL,
    TaggedSentences,
    encode_tags,
    token_classification_dataset,
)
from keras_bert.decoding.entities import BioTagTable, text_entities
from keras_bert.errors import DataError, check_ids
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.task import (
    BertTask,
    head_dense,
    token_transform,
    token_transform_variables,
)
from keras_bert.models.text_inputs import DEFAULT_BATCH_SIZE, in_batches


def holds_words(inputs) -> bool:
    """Whether `inputs` are sentences given as lists of words (`[["EU", "rejects"], ...]`).

    Example:
    >>> holds_words([["EU", "rejects"], ["Peter"]]), holds_words(["EU rejects"])
    (True, False)
    """
    return (
        isinstance(inputs, list)
        and len(inputs) > 0
        and isinstance(inputs[0], list | tuple)
        and len(inputs[0]) > 0
        and isinstance(inputs[0][0], str)
    )


def _labelled_words(preprocessor, words: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """Per sentence, which words carry a label: those with pieces that fit in the sequence."""
    # Each word tokenized as the training data tokenizes it (RoBERTa: with a leading space
    # after the first word).
    pieces = preprocessor.tokenizer.tokenize_split_words(tf.ragged.constant(words, dtype=tf.string))
    budget = preprocessor.seq_length - 2
    labelled = []
    for counts in pieces.row_lengths(axis=2):
        counts = np.asarray(counts)
        first_piece = np.cumsum(counts) - counts
        labelled.append((counts > 0) & (first_piece < budget))
    return labelled


def word_tags(
    model: BertTokenClassifier,
    preprocessor,
    words: Sequence[Sequence[str]],
    batch_size: int = 64,
) -> list[list[str]]:
    """A tag for every word of sentences given as words, read at its first piece; words
    without a piece inside the sequence get "O". Batches run through Keras' compiled predict
    function (`predict_on_batch`), as they are cut to their longest sentence."""
    words = [list(sentence) for sentence in words]
    # Any valid tag works as a placeholder: only the positions of first pieces are used.
    sentences = TaggedSentences(words, [["O"] * len(sentence) for sentence in words])
    placeholder_ids = [[0] * len(sentence) for sentence in words]
    dataset = token_classification_dataset(sentences, preprocessor, placeholder_ids, batch_size)
    predicted_ids = []
    for inputs, labels in dataset:
        logits = model.predict_on_batch(inputs)
        labels = np.asarray(labels)
        for sentence_logits, sentence_labels in zip(logits, labels, strict=True):
            first_pieces = sentence_labels != IGNORED_LABEL
            predicted_ids.append(sentence_logits[first_pieces].argmax(-1))
    tags = []
    for labelled, word_ids in zip(_labelled_words(preprocessor, words), predicted_ids, strict=True):
        sentence_tags = np.full(len(labelled), "O", dtype=object)
        sentence_tags[labelled] = [model.label_names[index] for index in word_ids]
        tags.append(sentence_tags.tolist())
    return tags


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(BertTask):
    """Predicts a label for every token from the sequence output (BIO tagging for NER).

    Outputs logits `[batch, sequence, num_labels]`. Words are labelled through their first word
    piece; training labels hold `IGNORED_LABEL` (-100) everywhere else, and the default loss and
    accuracy skip those positions. A family whose prediction head every task shares
    (ModernBERT's dense → GELU → LayerNorm) puts it on every token first, as transformers does.

    Args:
        encoder: the `BertEncoder` to fine-tune.
        label_names: the tags, e.g. `["O", "B-person", "I-person", ...]`.
        dropout_rate: dropout on the sequence output.

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100))
    >>> tagger = BertTokenClassifier(encoder, label_names=["O", "B-loc", "I-loc"])
    >>> inputs = {
    ...     "input_word_ids": np.array([[2, 7, 9, 3]]),
    ...     "input_mask": np.ones((1, 4), "int32"),
    ...     "input_type_ids": np.zeros((1, 4), "int32"),
    ... }
    >>> tuple(tagger(inputs).shape)
    (1, 4, 3)
    """

    uses_pooled_output = False
    architecture_task = TOKEN_CLASSIFICATION

    def __init__(
        self,
        encoder: BertEncoder,
        label_names: Sequence[str],
        dropout_rate: float = 0.1,
        **kwargs,
    ):
        if len(label_names) < 2:
            raise ValueError(f"Need at least two labels, got {list(label_names)}.")
        # Layers
        dropout = keras.layers.Dropout(dropout_rate, name="token_dropout")
        head = head_dense(encoder, len(label_names), name="token_logits")
        transform = token_transform(encoder)

        # Functional model
        sequence_output = encoder(encoder.input)["sequence_output"]
        if transform is not None:
            sequence_output = transform(sequence_output)
        logits = head(dropout(sequence_output))
        super().__init__(encoder, logits, **kwargs)

        # Config
        self.label_names = list(label_names)
        self.dropout_rate = dropout_rate

    def fit(self, x=None, y=None, batch_size=None, *args, **kwargs):
        """Keras' `fit`; also on sentences as lists of words with a tag a word (names of
        `label_names` or their ids), as CoNLL gives them: batched as `pipelines.finetune_ner`
        batches them (`token_classification_dataset`, sentences of similar length together),
        each tag on its word's first piece. `validation_data` may be such a pair too."""
        validation_data = kwargs.get("validation_data")
        if isinstance(validation_data, tuple) and holds_words(validation_data[0]):
            if len(validation_data) != 2:
                raise DataError(
                    "validation_data of words is a pair (words, tags), without sample weights; "
                    f"got {len(validation_data)} items."
                )
            kwargs["validation_data"] = self.tagged_batches(*validation_data, batch_size)
        if holds_words(x):
            shuffle = kwargs.get("shuffle", True)
            x, y = self.tagged_batches(x, y, batch_size, shuffle), None
            batch_size, kwargs["shuffle"] = None, False  # shuffled in the dataset
        return super().fit(x, y, batch_size, *args, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", **kwargs):
        """Keras' `evaluate`; also on lists of words and their tags, as `fit` takes them."""
        if holds_words(x):
            x, y = self.tagged_batches(x, y, batch_size), None
            batch_size = None
        return super().evaluate(x, y, batch_size, verbose, **kwargs)

    def tagged_batches(
        self,
        words: Sequence[Sequence[str]],
        tags: Sequence[Sequence[str | int]],
        batch_size: int | None = None,
        shuffle: bool = False,
    ) -> tf.data.Dataset:
        """Batches of `(inputs, labels)` of sentences given as words and a tag a word (names of
        `label_names` or their ids), packed by the carried preprocessor, the tags on first
        pieces; shuffled under Keras' global seed.

        Raises:
            DataError: a sentence with another number of tags than words, a tag name not in
                `label_names`, a tag id outside them.
        """
        if tags is None or len(tags) != len(words):
            raise DataError(
                f"{len(words)} sentences of words need as many lists of tags, got "
                f"{'none' if tags is None else len(tags)}."
            )
        for index, (sentence, sentence_tags) in enumerate(zip(words, tags, strict=True)):
            if len(sentence) != len(sentence_tags):
                raise DataError(
                    f"Sentence {index} has {len(sentence)} words and {len(sentence_tags)} tags."
                )
        if not all(isinstance(tag, str) for sentence_tags in tags for tag in sentence_tags):
            count = len(self.label_names)
            tag_ids = [int(tag) for row in tags for tag in row]
            check_ids(tag_ids, count, "Tag id", f"this tagger's {count} tags")
            tags = [[self.label_names[int(tag)] for tag in row] for row in tags]
        sentences = TaggedSentences([list(row) for row in words], [list(row) for row in tags])
        return token_classification_dataset(
            sentences,
            self.require_preprocessor("words"),
            encode_tags(sentences, self.label_names),
            batch_size or DEFAULT_BATCH_SIZE,
            shuffle=shuffle,
            seed=None,
            length_bucketing=True,
        )

    def checked_labels(self, y):
        """Labels of texts in memory as given, one per packed token, `[texts, seq_length]`
        (`IGNORED_LABEL` where none).

        Raises:
            DataError: labels of another shape, such as one tag a word: those go through
                `keras_bert.data.token_classification.token_classification_dataset`, which
                puts them on the words' first pieces (what `pipelines.finetune_ner` trains on).
        """
        seq_length = self.require_preprocessor("text input").seq_length
        try:
            shape = np.shape(y)
        except ValueError:  # rows of different lengths
            shape = None
        if shape is None or len(shape) != 2 or shape[1] != seq_length:
            got = "rows of different lengths" if shape is None else f"shape {shape}"
            raise DataError(
                f"A token classifier's labels on texts are one per packed token, [texts, "
                f"{seq_length}] ({IGNORED_LABEL} where none); got {got}. For a tag a word, batch "
                "them with keras_bert.data.token_classification.token_classification_dataset."
            )
        return y

    def predict(self, x=None, batch_size=None, **kwargs):
        """Keras' `predict`: logits for every packed token of texts (or packed ids). Sentences
        given as lists of words are a `DataError` that names `predict_tags`."""
        if holds_words(x):
            raise DataError(
                "predict takes texts (logits for every packed token); for a tag a word of "
                "sentences given as words, call predict_tags(words)."
            )
        return super().predict(x, batch_size=batch_size, **kwargs)

    def predict_tags(self, words: Sequence[Sequence[str]], batch_size: int = 64) -> list[list[str]]:
        """A tag (of `label_names`) for every word of sentences given as lists of words, as
        `fit` takes them and CoNLL gives them: read at each word's first piece, as
        `pipelines.finetune_ner` scores them; words past the sequence get "O". Needs the
        preprocessor.

        Raises:
            DataError: a text, or a sentence that is not a list of strings.

        Example:
        >>> import numpy as np
        >>> from keras_bert import load_encoder, load_preprocessor
        >>> path = "../shared/reference/variants/distilbert"
        >>> tagger = BertTokenClassifier(load_encoder(path), ["O", "B-PER", "I-PER"],
        ...                              preprocessor=load_preprocessor(path, seq_length=16))
        >>> tags = tagger.predict_tags([["Barack", "Obama", "spoke"], ["Hi"]])
        >>> [len(sentence) for sentence in tags], set(np.concatenate(tags)) <= {"O", "B-PER",
        ...                                                                    "I-PER"}
        ([3, 1], True)
        """
        if isinstance(words, str | bytes):
            raise DataError(
                f"One text ({words[:40]!r}) where sentences of words go: predict_tags takes "
                "[['EU', 'rejects', ...], ...]; predict_entities takes texts."
            )
        if not len(words):
            return []
        for index, sentence in enumerate(words):
            if isinstance(sentence, str | bytes) or not all(
                isinstance(word, str) for word in sentence
            ):
                raise DataError(
                    f"Sentence {index} is {sentence!r}, not a list of words (strings): "
                    "predict_tags takes [['EU', 'rejects', ...], ...]; predict_entities takes "
                    "texts."
                )
        return word_tags(self, self.require_preprocessor("predict_tags"), words, batch_size)

    def predict_entities(
        self, texts: Sequence[str], max_entities: int = 32, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> list[list[dict[str, Any]]]:
        """The entities of every text, decoded in the graph as the export decodes them
        (`keras_bert.decoding.entities.text_entities`): per text, in text order, dicts of
        `label`, `text`, `start` and `end` (character offsets, `[start, end)`) and `score`.
        Needs the preprocessor.
        """
        preprocessor = self.require_preprocessor("predict_entities")
        tag_table = BioTagTable(self.label_names)

        def decode(text):
            return text_entities(text, preprocessor, self, tag_table, max_entities)

        outputs = in_batches(decode, [texts], batch_size)
        return [
            [
                {
                    "label": outputs["entity_labels"][row, index].decode(),
                    "text": outputs["entity_texts"][row, index].decode(),
                    "start": int(outputs["entity_starts"][row, index]),
                    "end": int(outputs["entity_ends"][row, index]),
                    "score": float(outputs["entity_scores"][row, index]),
                }
                for index in range(outputs["num_entities"][row])
            ]
            for row in range(len(texts))
        ]

    @classmethod
    def head_arguments(cls, config_values: Mapping[str, Any]) -> dict[str, Any]:
        """`label_names`: the tags of a `config.json`'s `id2label`."""
        names = label_names(config_values)
        return {} if names is None else {"label_names": names}

    def head_config(self) -> dict[str, Any]:
        """`id2label` and `label2id` of transformers' token classifier of these tags."""
        return label_config(self.label_names)

    def head_variables(self) -> dict[str, keras.Variable]:
        variables = head_dense_variables(TOKEN_CLASSIFIER_MODULE, self.get_layer("token_logits"))
        return variables | token_transform_variables(self)

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, ignore_class=IGNORED_LABEL
        )

    def default_metrics(self):
        return [MaskedTokenAccuracy(name="accuracy")]

    def get_config(self) -> dict[str, Any]:
        return {
            **super().get_config(),
            "label_names": self.label_names,
            "dropout_rate": self.dropout_rate,
        }


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedTokenAccuracy(keras.metrics.Mean):
    """Token accuracy over positions whose label is not `IGNORED_LABEL`."""

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = keras.ops.cast(y_true, "int32")
        counted = keras.ops.cast(keras.ops.not_equal(y_true, IGNORED_LABEL), "float32")
        if sample_weight is not None:
            counted = counted * keras.ops.cast(sample_weight, "float32")
        predicted = keras.ops.cast(keras.ops.argmax(y_pred, axis=-1), "int32")
        correct = keras.ops.cast(keras.ops.equal(predicted, y_true), "float32")
        return super().update_state(correct, sample_weight=counted)
