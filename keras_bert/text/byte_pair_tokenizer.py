"""`BytePairTokenizer`: raw strings to byte-level BPE ids (RoBERTa, GPT-2) inside the graph."""

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import keras
import tensorflow as tf

from keras_bert.errors import ConfigError
from keras_bert.text import byte_level_unicode_tables as tables
from keras_bert.text.normalization import char_class, replace_invalid_utf8
from keras_bert.text.offsets import lay_end_to_end, round_to_characters
from keras_bert.text.ragged_rows import row_ids
from keras_bert.text.special_token_split import MARKER as _MARKER
from keras_bert.text.special_token_split import SpecialTokens
from keras_bert.text.text_ops import tf_text

ROBERTA_SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
_SPACE_SYMBOL = "\u0120"  # "Ġ", the byte-level symbol of a space

_SPACE = char_class(tables.WHITESPACE_CHARS)
_LETTER = char_class(tables.LETTER_CHARS)
_NUMBER = char_class(tables.NUMBER_CHARS)
# GPT-2's pattern without its `\s+(?!\S)` (RE2 has no look-ahead): `_LAST_SPACE` first cuts
# each text before the last space of a run that precedes a non-space, where `\s+(?!\S)` stops.
_WORD_PATTERN = (
    rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{_LETTER}]+| ?[{_NUMBER}]+| ?[^{_SPACE}{_LETTER}{_NUMBER}]+"
    rf"|[{_SPACE}]+"
)
_LAST_SPACE_PATTERN = f"[{_SPACE}][^{_SPACE}]"
_LEADING_SPACE_PATTERN = f"^[{_SPACE}]+"


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map of the 256 byte values to printable characters (the base vocabulary)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    others = [byte for byte in range(256) if byte not in printable]
    mapping = {byte: chr(byte) for byte in printable}
    mapping.update({byte: chr(256 + index) for index, byte in enumerate(others)})
    return mapping


def _require_file(path: str | os.PathLike) -> None:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Byte-level BPE file not found: {os.fspath(path)!r}")


def _read_json(path: str | os.PathLike, kind: str) -> Any:
    """The JSON value of a tokenizer file; a `ConfigError` naming `kind` if it is none."""
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f"{os.fspath(path)!r} is not a {kind}: {error}") from None


def load_byte_pair_files(
    vocabulary: str | os.PathLike, merges: str | os.PathLike
) -> tuple[dict[str, int], list[str]]:
    """Reads a `vocab.json` (token → id) and a `merges.txt` ("a b" per line, by rank).

    Raises:
        FileNotFoundError: a file does not exist.
        ConfigError: a file is not what it should be.
    """
    for path in (vocabulary, merges):
        _require_file(path)
    tokens = _read_json(vocabulary, "BPE vocab.json")
    with open(merges, encoding="utf-8", errors="strict") as file:
        lines = file.read().split("\n")
    merge_lines = [line for line in lines if line and not line.startswith("#version")]
    return tokens, merge_lines


TOKENIZER_JSON = "tokenizer.json"
# The normalizers of a `tokenizer.json` that `BytePairTokenizer` runs: ours → tensorflow-text's.
NORMALIZERS = {None: None, "nfc": "NFC"}
# The added-token flags of `tokenizer.json` that `SpecialTokens` follows, with their defaults.
ADDED_TOKEN_FLAGS = {"lstrip": False, "rstrip": False, "normalized": False, "special": True}


def load_tokenizer_json(
    path: str | os.PathLike,
) -> tuple[dict[str, int], list[str], list[dict], str | None]:
    """Reads the byte-level BPE of a `tokenizers` `tokenizer.json` (ModernBERT's): its
    vocabulary (token → id), its merges ("a b", by rank), its added tokens (`content`, `id`
    and `ADDED_TOKEN_FLAGS`) and its normalizer ("nfc" or None).

    Raises:
        FileNotFoundError: the file does not exist.
        ConfigError: it is not JSON, or holds a tokenizer other than the byte-level BPE that
            `BytePairTokenizer` runs (GPT-2's pre-tokenizer, no normalizer, whole merges).

    Example:
    >>> vocabulary, merges, added, normalizer = load_tokenizer_json(
    ...     "../shared/reference/variants/modernbert/tokenizer.json")
    >>> len(vocabulary), merges[0], added[4]["content"], added[4]["lstrip"], normalizer
    (3000, 'Ġ t', '[MASK]', False, None)
    """
    _require_file(path)
    values = _read_json(path, TOKENIZER_JSON)
    model = values.get("model") or {}
    pre_tokenizer = values.get("pre_tokenizer") or {}
    differences = {
        "model": (model.get("type"), "BPE"),
        "pre_tokenizer": (pre_tokenizer.get("type"), "ByteLevel"),
        "add_prefix_space": (pre_tokenizer.get("add_prefix_space"), False),
        "use_regex": (pre_tokenizer.get("use_regex", True), True),
        "normalizer": (values.get("normalizer") in (None, {"type": "NFC"}), True),
        "byte_fallback": (model.get("byte_fallback", False), False),
        "ignore_merges": (model.get("ignore_merges", False), False),
        "continuing_subword_prefix": (model.get("continuing_subword_prefix"), None),
        "end_of_word_suffix": (model.get("end_of_word_suffix"), None),
    }
    unsupported = [f"{name} {found!r}" for name, (found, expected) in differences.items()
                   if found != expected]  # fmt: skip
    if unsupported:
        raise ConfigError(
            f"{os.fspath(path)!r}: BytePairTokenizer runs GPT-2's byte-level BPE, after NFC or no "
            f"normalizer; this tokenizer.json has {', '.join(unsupported)}."
        )
    merges = [merge if isinstance(merge, str) else " ".join(merge) for merge in model["merges"]]
    if any(merge.count(" ") != 1 for merge in merges):
        raise ConfigError(f"{os.fspath(path)!r}: a merge of tokens with spaces is not supported.")
    added = []
    for token in values.get("added_tokens") or []:
        if token.get("single_word"):
            raise ConfigError(
                f"{os.fspath(path)!r}: the single_word added token {token['content']!r} is not "
                "supported."
            )
        flags = {
            name: bool(token.get(name, default)) for name, default in ADDED_TOKEN_FLAGS.items()
        }
        added.append({"content": token["content"], "id": int(token["id"]), **flags})
    normalizer = "nfc" if values.get("normalizer") else None
    return dict(model["vocab"]), merges, added, normalizer


@keras.saving.register_keras_serializable(package="keras_bert")
class BytePairTokenizer(keras.layers.Layer):
    """Tokenizes raw strings into byte-level BPE ids, exactly as Hugging Face `tokenizers` does.

    The checkpoint's special tokens written in the text ("<mask>") are tokens of their own;
    the rest is split with GPT-2's pre-tokenization regex (character classes of
    `byte_level_unicode_tables`, its `\\s+(?!\\S)` emulated), each word's UTF-8 bytes become
    the base symbols and merges apply by rank until none applies, as `tokenizers`' BPE does.
    The merges run vectorized over the distinct words of the batch in one `tf.while_loop`
    (one iteration per merge step of the longest word), with integer hash-table lookups.
    Only core TensorFlow ops, so SavedModels with it run in TensorFlow Serving.
    Invalid UTF-8 is first replaced by U+FFFD, as `bytes.decode("utf-8", errors="replace")`.

    Offsets (`tokenize_with_offsets`) are byte offsets into the (sanitised) input, exact: a
    token's bytes laid end to end in its word, without a leading space ("Ġsat" spans "sat"),
    widened to whole characters when the token holds part of one, as `tokenizers`' offsets
    (`trim_offsets=True`) are. Words (`tokenize_words_with_offsets`) are the pre-tokenizer's.

    Args:
        vocabulary: path of a `vocab.json`, or its dict token → id.
        merges: path of a `merges.txt`, or its lines ("a b", by rank).
        special_tokens: the tokens matched as written in the text (those in the vocabulary).
        added_tokens: instead of `special_tokens`, the added tokens of a `tokenizer.json`
            (`load_tokenizer_json`), each matched as `tokenizers` matches it: with its
            `lstrip`, `rstrip` and `normalized` flags (`SpecialTokens`), special or not.
        normalizer: "nfc" to normalize the text between the added tokens that are not
            `normalized` to Unicode's NFC first (GPT-NeoX's and its descendants'
            `tokenizer.json`), offsets still into the text as given; None for none.
        **kwargs: `keras.layers.Layer` arguments.

    `BytePairTokenizer.from_tokenizer_json` reads the three from a `tokenizer.json`.

    Example:
    >>> from keras_bert.text import BytePairTokenizer
    >>> tokenizer = BytePairTokenizer(
    ...     "../shared/reference/variants/roberta/vocab.json",
    ...     "../shared/reference/variants/roberta/merges.txt",
    ... )
    >>> ids = tokenizer(["The cat sat.", "a <mask>"])
    >>> ids.to_list()
    [[356, 279, 273, 1020, 18], [69, 225, 4]]
    >>> tokenizer.id_to_token(ids).to_list()[0]
    [b'The', b'\\xc4\\xa0c', b'at', b'\\xc4\\xa0sat', b'.']
    >>> _, starts, ends = tokenizer.tokenize_with_offsets(["The cat sat."])
    >>> starts.to_list(), ends.to_list()
    ([[0, 4, 5, 8, 11]], [[3, 5, 7, 11, 12]])
    """

    def __init__(
        self,
        vocabulary: str | os.PathLike | dict[str, int],
        merges: str | os.PathLike | Sequence[str],
        special_tokens: Sequence[str] = ROBERTA_SPECIAL_TOKENS,
        added_tokens: Sequence[Mapping[str, Any]] | None = None,
        normalizer: str | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if normalizer not in NORMALIZERS:
            raise ConfigError(
                f"Unknown BPE normalizer {normalizer!r}; expected one of {list(NORMALIZERS)}."
            )
        self.normalizer = normalizer
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary, merges = load_byte_pair_files(vocabulary, merges)
        self.vocabulary = dict(vocabulary)
        self.merges = list(merges)
        self.added_tokens = None if added_tokens is None else [dict(t) for t in added_tokens]
        matched = self.added_tokens or [
            {"content": token, "id": self.vocabulary[token], **ADDED_TOKEN_FLAGS}
            for token in special_tokens
            if token in self.vocabulary
        ]
        # Added tokens outside the vocabulary are tokens too (their ids, their surfaces).
        self.vocabulary |= {
            token["content"]: token["id"]
            for token in matched
            if token["content"] not in self.vocabulary
        }
        self.special_tokens = [token["content"] for token in matched if token["special"]]
        size = max(self.vocabulary.values()) + 1
        self._size = size
        byte_tokens = bytes_to_unicode()
        missing = [token for token in byte_tokens.values() if token not in self.vocabulary]
        if missing:
            raise ConfigError(f"The BPE vocabulary lacks byte tokens {missing[:10]}")
        self._byte_ids = tf.constant(
            [self.vocabulary[byte_tokens[byte]] for byte in range(256)], tf.int64
        )
        keys, values = [], []
        for rank, line in enumerate(self.merges):
            pair = line.split(" ")
            merged = "".join(pair)
            if len(pair) != 2 or not all(token in self.vocabulary for token in (*pair, merged)):
                raise ConfigError(f"BPE merge {rank} ({line!r}) is not 'a b' of known tokens")
            keys.append(self.vocabulary[pair[0]] * size + self.vocabulary[pair[1]])
            values.append(rank * size + self.vocabulary[merged])
        self._merge_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(keys, tf.int64), tf.constant(values, tf.int64)
            ),
            default_value=-1,
        )
        tokens = [""] * size  # ids need not be contiguous
        for token, index in self.vocabulary.items():
            tokens[index] = token
        self._tokens = tf.constant(tokens)
        # Per id: the bytes a token stands for, and its leading spaces (not in its span); an
        # added token's span is its part of the text (with the whitespace it strips).
        byte_lengths = [len(token) for token in tokens]
        leading_spaces = [len(token) - len(token.lstrip(_SPACE_SYMBOL)) for token in tokens]
        for token in matched:
            leading_spaces[token["id"]] = 0
        self._byte_lengths = tf.constant(byte_lengths, tf.int64)
        self._leading_spaces = tf.constant(leading_spaces, tf.int64)
        self._special = SpecialTokens(
            {token["content"]: token["id"] for token in matched},
            **{
                flag: {token["content"] for token in matched if token[flag]}
                for flag in ("lstrip", "rstrip", "normalized")
            },
        )
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike, **kwargs) -> "BytePairTokenizer":
        """The tokenizer of a `tokenizer.json` (`load_tokenizer_json`: ModernBERT's files).

        Example:
        >>> tokenizer = BytePairTokenizer.from_tokenizer_json(
        ...     "../shared/reference/variants/modernbert/tokenizer.json")
        >>> tokenizer(["The cat sat on the [MASK]."]).to_list()
        [[356, 279, 273, 1020, 336, 268, 225, 4, 18]]
        """
        vocabulary, merges, added_tokens, normalizer = load_tokenizer_json(path)
        return cls(vocabulary, merges, added_tokens=added_tokens, normalizer=normalizer, **kwargs)

    def token_to_id(self, token: str) -> int:
        """The id of `token` (`ValueError` if absent)."""
        if token not in self.vocabulary:
            raise ValueError(f"{token!r} is not in the BPE vocabulary")
        return self.vocabulary[token]

    @property
    def vocabulary_size(self) -> int:
        return self._size

    def pre_tokenize(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """The words `[batch, (words)]` of sanitised texts: special tokens (the text between
        the added tokens that are not `normalized` normalized first), then GPT-2's split."""
        _, words = self._parts_and_words(texts)
        return words.merge_dims(1, 2)

    def _parts_and_words(self, texts: tf.Tensor) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
        """The parts of the text that the added tokens matched as written cut it into,
        `[batch, (parts)]`, as written; and each part's words, `[batch, (parts), (words)]`,
        normalized: its own added tokens, or the `normalized` ones and GPT-2's split."""
        parts = self._special.split_pass(tf.RaggedTensor.from_tensor(texts[:, tf.newaxis]), 0)
        flat = parts.flat_values
        is_token = self._special_ids(flat) >= 0
        if self.normalizer is not None:
            flat = tf.where(is_token, flat, self._normalize(flat))
        pieces = self._special.split_pass(tf.RaggedTensor.from_tensor(flat[:, tf.newaxis]), 1)
        is_special = self._special_ids(pieces.flat_values) >= 0
        cut = tf.strings.regex_replace(pieces.flat_values, _LAST_SPACE_PATTERN, _MARKER + b"\\0")
        segments = tf.strings.split(tf.where(is_special, pieces.flat_values, cut), _MARKER)
        segment_is_special = tf.gather(is_special, row_ids(segments.row_splits))
        marked = tf.strings.regex_replace(segments.flat_values, _WORD_PATTERN, _MARKER + b"\\0")
        marked = tf.where(segment_is_special, segments.flat_values, marked)
        words = pieces.with_flat_values(
            segments.with_flat_values(tf.strings.split(marked, _MARKER))
        )
        words = parts.with_flat_values(words.merge_dims(1, 3))
        return parts, tf.ragged.boolean_mask(words, tf.strings.length(words) > 0)

    def _normalize(self, texts: tf.Tensor) -> tf.Tensor:
        return tf_text().normalize_utf8(texts, NORMALIZERS[self.normalizer])

    def _special_ids(self, words: tf.Tensor) -> tf.Tensor:
        """The id of each word that is a special token, -1 for the others."""
        return self._special.ids(words)

    def _initial_symbols(self, words: tf.Tensor) -> tf.RaggedTensor:
        """Each word's base symbols: the ids of its bytes, or its id if a special token."""
        byte_values = tf.strings.unicode_decode(words, "ISO-8859-1")  # one code point per byte
        symbols = byte_values.with_flat_values(
            tf.gather(self._byte_ids, tf.cast(byte_values.flat_values, tf.int64))
        )
        return self._special.with_special_ids(words, symbols)

    def _merge(self, symbols: tf.RaggedTensor) -> tf.RaggedTensor:
        """Applies the merges by rank to every word of `symbols` `[words, (symbols)]`."""
        size = tf.constant(self._size, tf.int64)
        num_words = symbols.nrows()

        def step(values: tf.Tensor, rows: tf.Tensor, _: tf.Tensor):
            found = self._merge_table.lookup(values[:-1] * size + values[1:])
            valid = (rows[:-1] == rows[1:]) & (found >= 0)
            rank = tf.where(valid, found // size, tf.int64.max)
            best_rank = tf.math.unsorted_segment_min(rank, rows[:-1], num_words)
            best = valid & (rank == tf.gather(best_rank, rows[:-1]))
            # A pair (x, x) can repeat ("a a a"): merge the 1st, 3rd, ... of each run, as
            # merging left to right does.
            positions = tf.range(tf.size(best, out_type=tf.int64))
            run_starts = best & ~tf.concat([[False], best[:-1]], axis=0)
            start_positions = tf.concat([[0], tf.boolean_mask(positions, run_starts)], axis=0)
            run_index = tf.cumsum(tf.cast(run_starts, tf.int64))
            offsets = positions - tf.gather(start_positions, run_index)
            merge = best & (offsets % 2 == 0)
            merged = tf.where(merge, found % size, values[:-1])
            values = tf.concat([merged, values[-1:]], axis=0)
            kept = ~tf.concat([[False], merge], axis=0)
            return tf.boolean_mask(values, kept), tf.boolean_mask(rows, kept), tf.reduce_any(merge)

        values, rows = symbols.flat_values, row_ids(symbols.row_splits)
        values, rows, _ = tf.while_loop(
            lambda values, rows, merged: merged,
            step,
            (values, rows, tf.size(values) > 1),
            shape_invariants=(tf.TensorShape([None]), tf.TensorShape([None]), tf.TensorShape([])),
        )
        return tf.RaggedTensor.from_value_rowids(values, rows, nrows=num_words, validate=False)

    def _word_pieces(
        self, texts: tf.Tensor
    ) -> tuple[tf.Tensor, tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """`(sanitised texts, their parts [batch, (parts)] (`_parts_and_words`), their words
        [batch, (parts), (words)], int64 ids [words, (pieces)])`."""
        texts = replace_invalid_utf8(tf.convert_to_tensor(texts, dtype=tf.string))
        parts, words = self._parts_and_words(texts)
        distinct_words, word_index = tf.unique(words.flat_values)
        ids = self._merge(self._initial_symbols(distinct_words))
        return texts, parts, words, tf.gather(ids, word_index)

    def call(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """Ragged int32 ids `[batch, (tokens)]` (int64 row splits) of a `[batch]` string tensor."""
        _, _, words, ids = self._word_pieces(texts)
        return words.with_flat_values(tf.cast(ids, tf.int32)).merge_dims(1, 3)

    def _words_with_offsets(self, texts: tf.Tensor) -> tuple:
        """`(sanitised texts, int32 ids [batch, (words), (pieces)], piece starts and ends
        like the ids, word starts and ends [batch, (words)], the words [batch, (words)], the
        part of each word [words])`, untrimmed; offsets into each part as its words spell it
        (`_in_text` makes them offsets into the text)."""
        texts, parts, words, ids = self._word_pieces(texts)
        word_lengths = tf.strings.length(words.values)  # [parts, (words)]
        word_starts, word_ends = lay_end_to_end(
            tf.zeros([word_lengths.nrows()], tf.int64), word_lengths
        )
        # An added token spans its word (which holds the whitespace it strips).
        piece_words = row_ids(ids.row_splits)
        is_added = tf.gather(self._special_ids(words.flat_values) >= 0, piece_words)
        piece_lengths = ids.with_flat_values(
            tf.where(
                is_added,
                tf.gather(tf.cast(word_lengths.flat_values, tf.int64), piece_words),
                tf.gather(self._byte_lengths, ids.flat_values),
            )
        )
        piece_starts, piece_ends = lay_end_to_end(word_starts.flat_values, piece_lengths)
        in_rows = lambda values: words.with_flat_values(values).merge_dims(1, 2)  # noqa: E731
        pieces = in_rows(ids.with_flat_values(tf.cast(ids.flat_values, tf.int32)))
        word_parts = row_ids(words.values.row_splits)
        return (
            texts,
            parts,
            pieces,
            in_rows(piece_starts),
            in_rows(piece_ends),
            in_rows(word_starts.flat_values),
            in_rows(word_ends.flat_values),
            in_rows(words.flat_values),
            word_parts,
        )

    def _in_text(
        self, parts: tf.RaggedTensor, item_parts: tf.Tensor, *offsets: tf.RaggedTensor
    ) -> tuple[tf.RaggedTensor, ...]:
        """Byte offsets `[batch, (items)]` into the (normalized) parts of a text, each item's
        part in `item_parts` (in order), as offsets into the sanitised text: mapped back through
        the normalizer part by part, as `tokenizers` normalizes, then moved to the part."""
        part_starts, _ = lay_end_to_end(
            tf.zeros([parts.nrows()], tf.int64), tf.strings.length(parts)
        )
        item_starts = tf.gather(part_starts.flat_values, item_parts)
        results = []
        for value in offsets:
            values = value.flat_values
            if self.normalizer is not None:
                _, maps = tf_text().normalize_utf8_with_offsets_map(
                    parts.flat_values, NORMALIZERS[self.normalizer]
                )
                by_part = tf.RaggedTensor.from_value_rowids(
                    values,
                    item_parts,
                    nrows=tf.size(parts.flat_values, out_type=tf.int64),
                    validate=False,
                )
                # Each part led by a 0, cut off after: tensorflow-text's op fails on an empty row.
                first = tf.RaggedTensor.from_tensor(tf.zeros([by_part.nrows(), 1], tf.int64))
                by_part = tf.concat([first, by_part], axis=1)
                values = tf_text().find_source_offsets(maps, by_part)[:, 1:].flat_values
            results.append(value.with_flat_values(values + item_starts))
        return tuple(results)

    def tokenize_with_offsets(
        self, texts: tf.Tensor
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """Tokenizes a `[batch]` string tensor.

        Returns:
            `(ids, starts, ends)`: int32 ids (those of `call`) and int64 byte offsets
            `[start, end)` into each (sanitised) input, all ragged `[batch, (tokens)]`. A
            token that is only spaces has an empty span at its end.
        """
        texts, parts, pieces, starts, ends, _, _, _, word_parts = self._words_with_offsets(texts)
        piece_parts = tf.gather(word_parts, row_ids(pieces.values.row_splits))
        pieces, starts, ends = (values.merge_dims(1, 2) for values in (pieces, starts, ends))
        leading = tf.gather(self._leading_spaces, pieces.flat_values)
        starts = starts.with_flat_values(tf.minimum(starts.flat_values + leading, ends.flat_values))
        starts, ends = self._in_text(parts, piece_parts, starts, ends)
        return (pieces, *round_to_characters(texts, starts, ends))

    def tokenize_words_with_offsets(
        self, texts: tf.Tensor
    ) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
        """Tokenizes a `[batch]` string tensor, keeping the pre-tokenized words.

        Words are GPT-2's pre-tokens (a word with its leading space, a run of whitespace,
        ...); a word's span leaves its leading whitespace out (a word of whitespace has an
        empty span).
        `ids.merge_dims(1, 2)` equals `call`.

        Returns:
            `(ids, word_starts, word_ends)`: int32 ids ragged `[batch, (words), (pieces)]`, and
            each word's int64 byte span `[start, end)` in the (sanitised) input, ragged
            `[batch, (words)]`.
        """
        _, parts, pieces, _, _, word_starts, word_ends, words, word_parts = (
            self._words_with_offsets(texts)
        )
        unspaced = tf.strings.regex_replace(words.flat_values, _LEADING_SPACE_PATTERN, "")
        unspaced = tf.cast(tf.strings.length(unspaced), tf.int64)
        word_starts = word_starts.with_flat_values(word_ends.flat_values - unspaced)
        return (pieces, *self._in_text(parts, word_parts, word_starts, word_ends))

    def tokenize_split_words(self, words: tf.RaggedTensor) -> tf.RaggedTensor:
        """Ids of pre-split words `[batch, (words)]` → int32 `[batch, (words), (pieces)]`.

        Each word is tokenized alone, the words after the first with a leading space as in
        the text they were split from (as Hugging Face's `is_split_into_words=True` with
        `add_prefix_space=True` does, except that its first word gets a space too).
        """
        not_first = tf.ragged.range(words.row_lengths()).flat_values > 0
        flat = tf.where(not_first, tf.strings.join([" ", words.flat_values]), words.flat_values)
        _, _, pre_tokens, ids = self._word_pieces(flat)
        ids = pre_tokens.with_flat_values(tf.cast(ids, tf.int32)).merge_dims(1, 3)
        return words.with_flat_values(ids)

    def id_to_token(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """Maps ids (dense or ragged, any int dtype) to their tokens (byte-level strings)."""
        return tf.ragged.map_flat_values(lambda values: tf.gather(self._tokens, values), ids)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "vocabulary": self.vocabulary,
                "merges": self.merges,
                "special_tokens": self.special_tokens,
                "added_tokens": self.added_tokens,
                "normalizer": self.normalizer,
            }
        )
        return config
