"""`OnnxModel`: a keras_bert ONNX export served with ONNX Runtime and `tokenizers`, no
TensorFlow.

An ONNX export (`python -m pipelines.export --format onnx`) is a version directory with
`model.onnx` (ids in, the `serving_ids` outputs), `tokenizer.json` and `keras_bert.json` (the
task, labels, packing and the meaning of each output). `OnnxModel` tokenizes with
`tokenizers` (Rust), packs the ids as keras_bert's preprocessor does, pads each batch to its
longest sequence, runs ONNX Runtime (rows of a batch in groups of similar length,
`keras_bert.serving.length_groups`) and decodes as the SavedModel's `serving_default` does
(`keras_bert.serving.onnx_decoding`): the same output names and values. The graph runs in ONNX
Runtime, or in OpenVINO (`keras_bert.serving.graph_runtimes`), as the export chose
(`keras_bert.json`'s `runtime`) or as asked.

Text comes as `str` or UTF-8 `bytes` (invalid sequences become U+FFFD, as in the SavedModel);
character offsets count code points of that text. What is not text is refused before it reaches
`tokenizers` or ONNX Runtime, with an error that names it: an item that is not text
(`TypeError`, with its position), pairs for a model of single texts or the reverse, ids beyond
the vocabulary or longer rows than the model's positions (`ValueError`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from keras_bert.serving.graph_runtimes import SEQUENCE, graph_session, one_row_lengths
from keras_bert.serving.length_groups import CALL_COST_TOKENS, length_groups
from keras_bert.serving.onnx_decoding import (
    best_answer_span,
    bio_entities,
    softmax,
    truncated_lengths,
)

logger = logging.getLogger(__name__)

ONNX_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
METADATA_FILE = "keras_bert.json"
# The inputs of every export's graph, int32 `[batch, sequence]` (token types where the family
# has them; `keras_bert.json` lists the graph's own).
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")

Text = str | bytes
# Values that pass as a (text, text_pair) pair.
PAIR_TYPES = (tuple, list, np.ndarray)


def as_text(text: Text) -> str:
    """`text` as `str`: UTF-8 bytes decoded with invalid sequences replaced by U+FFFD (lone
    surrogates in a `str` too), as the SavedModel's `sanitize_utf8` does."""
    if isinstance(text, bytes):
        return text.decode("utf-8", errors="replace")
    return text.encode("utf-8", errors="surrogatepass").decode("utf-8", errors="replace")


class OnnxModel:
    """A keras_bert ONNX export, strings in, the SavedModel's answers out.

    Args:
        path: the export's version directory (`saved_models/<name>/<version>`).
        intra_op_threads: ONNX Runtime's threads inside one operator (0: one per core).
        inter_op_threads: threads running independent operators (0: ONNX Runtime's choice).
        spinning: whether idle threads spin-wait for work (ONNX Runtime's; see
            `session_options`).
        runtime: "onnxruntime" or "openvino" (`keras_bert.serving.graph_runtimes`); None: the
            export's choice (`keras_bert.json`'s `runtime`, which `--precision auto` measured),
            else ONNX Runtime.
        inference_precision: OpenVINO's: "float32" or "bfloat16"; None: the export's choice,
            else float32.
        call_cost_tokens: what one more ONNX Runtime call costs in tokens: `run` splits a
            batch into groups of similar length where that saves more padding
            (`keras_bert.serving.length_groups`); None runs each batch whole.
        one_row_graphs: on OpenVINO, compile graphs of fixed widths for one-row requests
            (`keras_bert.serving.graph_runtimes.one_row_lengths`): faster batch-1 answers for
            a few more compiled graphs' memory.

    `predict(texts)` (or `predict(pairs)` of `(text, text_pair)`, and for a question answerer
    `(question, context)`) returns a dict of NumPy arrays with the outputs of the SavedModel's
    `serving_default` (docs/serving.md): `probabilities`, `label_names`, `label`, `label_id`,
    `logits` (a regressor's `score`); `entity_*` and `num_entities`; `answer_text`,
    `answer_score`, `answer_start`, `answer_end`; `pooled_output`, `cls_embedding`,
    `mean_embedding`; `top_tokens`, `top_ids`, `top_probabilities`, `num_masks`.

    Example (an export written by `pipelines.export --format onnx`):

        model = OnnxModel("saved_models/sentiment/1", intra_op_threads=2)
        model.predict(["A gripping film."])["label"]   # array(['positive'], dtype=object)
    """

    def __init__(
        self,
        path: str | os.PathLike,
        intra_op_threads: int = 0,
        inter_op_threads: int = 0,
        spinning: bool = True,
        runtime: str | None = None,
        inference_precision: str | None = None,
        call_cost_tokens: int | None = CALL_COST_TOKENS,
        one_row_graphs: bool = True,
    ):
        from tokenizers import Tokenizer

        self.path = Path(path)
        if not (self.path / METADATA_FILE).is_file():
            held = (
                "a SavedModel (load it as TF Serving does: pipelines.query_export)"
                if (self.path / "saved_model.pb").is_file()
                else "no keras_bert ONNX export"
            )
            raise FileNotFoundError(
                f"{self.path} holds {held}: no {METADATA_FILE} beside a model.onnx. Export one "
                "with python -m pipelines.export --format onnx."
            )
        self.metadata: dict[str, Any] = json.loads((self.path / METADATA_FILE).read_text("utf-8"))
        self.task: str = self.metadata["task"]
        self.seq_length: int = self.metadata["seq_length"]
        self.packing: dict[str, Any] = self.metadata["packing"]
        # The longest row the graph reads (older exports: seq_length).
        self.longest_input: int = self.metadata.get("longest_input", self.seq_length)
        if self.seq_length > self.longest_input:
            raise ValueError(
                f"{self.path / METADATA_FILE}: seq_length {self.seq_length} is longer than the "
                f"{self.longest_input} ids the model reads."
            )
        self.tokenizer = Tokenizer.from_file(str(self.path / TOKENIZER_FILE))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        chosen = self.metadata.get("runtime", {})
        self.runtime: str = runtime or chosen.get("name", "onnxruntime")
        if inference_precision is None and self.runtime == chosen.get("name"):
            inference_precision = chosen.get("inference_precision")
        self.session = graph_session(
            self.path / ONNX_FILE,
            self.runtime,
            intra_op_threads,
            inter_op_threads,
            spinning,
            inference_precision or "float32",
            self.metadata.get("output_axes"),
            one_row_lengths(self.seq_length, self.longest_input) if one_row_graphs else (),
        )
        self.input_names = [graph_input.name for graph_input in self.session.get_inputs()]
        self.call_cost_tokens = call_cost_tokens
        # Each output's axes of positions (token classifier logits, span logits, sequences).
        self.sequence_axes = {
            output.name: [axis for axis, dim in enumerate(output.shape) if dim == SEQUENCE]
            for output in self.session.get_outputs()
        }
        # Each input's ids (older exports: unchecked).
        self.id_limits = {
            name: limit
            for name, limit in (
                ("input_word_ids", self.metadata.get("vocab_size")),
                ("input_type_ids", self.metadata.get("type_vocab_size")),
                ("input_mask", 2),
            )
            if limit is not None
        }
        self._removed_chars: dict[str, bool] = {}
        # Special tokens written in the text ("[MASK]") are words of their own, never widened.
        self.special_ids = {
            index
            for index, token in self.tokenizer.get_added_tokens_decoder().items()
            if token.special
        }

    def _removed_by_normalizer(self, char: str) -> bool:
        """Whether the tokenizer's normalizer deletes `char` (control characters, U+FFFD),
        which keras_bert's words keep in their span."""
        if char not in self._removed_chars:
            normalizer = self.tokenizer.normalizer
            removed = normalizer is not None and not normalizer.normalize_str(char).strip()
            self._removed_chars[char] = removed and not char.isspace()
        return self._removed_chars[char]

    @property
    def label_names(self) -> list[str]:
        return self.metadata.get("label_names") or []

    # Tokenizing and packing ---------------------------------------------------------------

    def encode(self, texts: Sequence[str]):
        """`tokenizers` encodings of `texts` (no special tokens, no truncation)."""
        return self.tokenizer.encode_batch(list(texts), add_special_tokens=False)

    def pack(
        self,
        first: Sequence[list[int]],
        second: Sequence[list[int]] | None = None,
        truncation: str | None = None,
    ) -> dict[str, np.ndarray]:
        """Packed int32 inputs of token ids (one or two segments per row) as keras_bert's
        `BertPacker` lays them out, padded to the longest row."""
        packing = self.packing
        truncation = truncation or packing["truncation"]
        budget = self.seq_length - 2 - (packing["pair_separators"] if second is not None else 0)
        lengths = [
            len(ids_a) + (0 if second is None else len(second[index]))
            for index, ids_a in enumerate(first)
        ]
        cut = sum(length > budget for length in lengths)
        if cut:
            logger.warning(
                "%d of %d texts have more tokens than seq_length %d holds and are cut to it: "
                "split longer texts to read all of them.",
                cut,
                len(lengths),
                self.seq_length,
            )
        rows, types = [], []
        for index, ids_a in enumerate(first):
            if second is None:
                row = [packing["cls_id"], *ids_a[:budget], packing["sep_id"]]
                type_row = [0] * len(row)
            else:
                ids_b = second[index]
                kept_a, kept_b = truncated_lengths(len(ids_a), len(ids_b), budget, truncation)
                head = [packing["cls_id"], *ids_a[:kept_a]] + [packing["sep_id"]] * packing[
                    "pair_separators"
                ]
                tail = [*ids_b[:kept_b], packing["sep_id"]]
                row = head + tail
                type_row = [0] * len(head) + [packing["second_type_id"]] * len(tail)
            rows.append(row)
            types.append(type_row)
        width = max((len(row) for row in rows), default=0)
        word_ids = np.full((len(rows), width), packing["pad_id"], np.int32)
        mask = np.zeros((len(rows), width), np.int32)
        type_ids = np.zeros((len(rows), width), np.int32)
        for index, (row, type_row) in enumerate(zip(rows, types, strict=True)):
            word_ids[index, : len(row)] = row
            mask[index, : len(row)] = 1
            type_ids[index, : len(row)] = type_row
        return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The ONNX model's outputs (`serving_ids`'s) on packed inputs, the rows run in groups
        of similar length (`call_cost_tokens`) where their masks are prefixes: outputs with a
        position axis keep the batch's width, and hold zeros past a group's longest row.

        Raises:
            ValueError: inputs that are not `[batch, sequence]` integers, rows longer than
                `longest_input`, ids outside their table (`id_limits`), or token types for a
                family that refuses them (ModernBERT's).
        """
        type_ids = np.asarray(inputs.get("input_type_ids", 0))
        if self.metadata.get("refuses_token_types") and np.any(type_ids != 0):
            raise ValueError(
                f"This {self.metadata['family']} export has no token types: send "
                "input_type_ids of zeros or leave them out."
            )
        feeds = {name: np.asarray(inputs[name]) for name in self.input_names}
        for name, ids in feeds.items():
            if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
                raise ValueError(
                    f"{name} must be [batch, sequence] integers, got {ids.dtype} {ids.shape}."
                )
            if ids.shape[1] > self.longest_input:
                raise ValueError(
                    f"{name} has {ids.shape[1]} ids per row; the model reads at most "
                    f"{self.longest_input}."
                )
            limit = self.id_limits.get(name)
            if limit is not None and ids.size and (ids.min() < 0 or ids.max() >= limit):
                raise ValueError(f"{name} holds ids outside 0 ... {limit - 1}.")
        feeds = {name: ids.astype(np.int32) for name, ids in feeds.items()}
        names = list(self.sequence_axes)
        rows, width = feeds[self.input_names[0]].shape
        mask = feeds.get("input_mask")
        lengths = None if mask is None else mask.sum(1)
        prefixes = mask is not None and bool((mask == (np.arange(width) < lengths[:, None])).all())
        if self.call_cost_tokens is None or rows < 2 or not prefixes:
            return dict(zip(names, self.session.run(names, feeds), strict=True))
        lengths = np.maximum(lengths, 1)
        outputs = {}
        for group in length_groups(lengths, self.call_cost_tokens):
            group_width = int(lengths[group].max())
            group_feeds = {name: ids[group, :group_width] for name, ids in feeds.items()}
            for name, values in zip(names, self.session.run(names, group_feeds), strict=True):
                if name not in outputs:
                    shape = [
                        width if axis in self.sequence_axes[name] else size
                        for axis, size in enumerate(values.shape)
                    ]
                    outputs[name] = np.zeros([rows, *shape[1:]], values.dtype)
                slices = tuple(
                    slice(0, group_width) if axis in self.sequence_axes[name] else slice(None)
                    for axis in range(1, values.ndim)
                )
                outputs[name][(group, *slices)] = values
        return outputs

    # Predictions --------------------------------------------------------------------------

    def predict(
        self,
        inputs: Sequence[Text] | Sequence[tuple[Text, Text]],
        second: Sequence[Text] | None = None,
    ) -> dict[str, np.ndarray]:
        """The task's answers for a batch of texts or pairs (see the class); a bare string is
        one text.

        Raises:
            TypeError: an item that is not text (`str` or UTF-8 `bytes`), or among pairs one
                that is not a pair of texts, naming its position.
            ValueError: pairs for a model of single texts, single texts for a model of pairs
                (a question answerer, a classifier exported with `text_pairs`), or not as many
                second texts as first ones.
        """
        first, second = _split_pairs(inputs, second)
        takes_pairs = self.task == "question_answerer" or bool(self.metadata.get("text_pairs"))
        if takes_pairs and second is None:
            if first:
                pairs = (
                    "(question, context)"
                    if self.task == "question_answerer"
                    else "(text, text_pair)"
                )
                raise ValueError(f"This {self.task} export takes {pairs} pairs, not single texts.")
            second = []
        if second is not None and not takes_pairs:
            raise ValueError(f"This {self.task} export takes single texts, not pairs.")
        if self.task == "question_answerer":
            return self._answers(first, second)
        if self.task == "classifier":
            return self._classify(first, second)
        if self.task == "token_classifier":
            return self._entities(first)
        if self.task == "encoder":
            return self._embeddings(first)
        return self._mask_fills(first)

    def _packed_texts(self, first: list[str], second: list[str] | None) -> dict[str, np.ndarray]:
        ids_a = [encoding.ids for encoding in self.encode(first)]
        ids_b = None if second is None else [encoding.ids for encoding in self.encode(second)]
        return self.pack(ids_a, ids_b)

    def _run_texts(
        self, first: list[str], second: list[str] | None = None
    ) -> dict[str, np.ndarray] | None:
        if not first:
            return None
        return self.run(self._packed_texts(first, second))

    def _classify(self, first: list[str], second: list[str] | None) -> dict[str, np.ndarray]:
        classes = self.metadata["num_classes"]
        outputs = self._run_texts(first, second)
        logits = outputs["logits"] if outputs else np.zeros((0, classes), np.float32)
        if classes == 1:
            return {"score": logits[:, 0], "logits": logits}
        label_ids = logits.argmax(-1).astype(np.int32)
        names = np.array(self.label_names, dtype=object)
        return {
            "probabilities": softmax(logits),
            "label_names": np.tile(names, (len(first), 1)),
            "label": names[label_ids],
            "label_id": label_ids,
            "logits": logits,
        }

    def _embeddings(self, texts: list[str]) -> dict[str, np.ndarray]:
        outputs = self._run_texts(texts)
        names = [
            name
            for name in ("pooled_output", "cls_embedding", "mean_embedding")
            if name in self.metadata["outputs"]
        ]
        hidden = self.metadata["hidden_size"]
        return {
            name: outputs[name] if outputs else np.zeros((0, hidden), np.float32) for name in names
        }

    def _mask_fills(self, texts: list[str]) -> dict[str, np.ndarray]:
        top_k, max_masks = self.metadata["top_k"], self.metadata["max_masks"]
        outputs = self._run_texts(texts)
        if outputs is None:
            shape = (0, max_masks, top_k)
            outputs = {
                "top_ids": np.zeros(shape, np.int32),
                "top_probabilities": np.zeros(shape, np.float32),
                "num_masks": np.zeros(0, np.int32),
            }
        ids = outputs["top_ids"]
        tokens = np.array(
            [self.tokenizer.id_to_token(int(index)) if index >= 0 else "" for index in ids.flat],
            dtype=object,
        ).reshape(ids.shape)
        return {"top_tokens": tokens, **outputs}

    def _entities(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Entities as `TokenClassifierServing`: each word labelled at its first piece, words
        past the first `seq_length - 2` pieces and words without text unlabelled."""
        max_entities = self.metadata["max_entities"]
        tag_names = self.label_names
        encodings = self.encode(texts)
        outputs = self.run(self.pack([encoding.ids for encoding in encodings])) if texts else None
        rows = len(texts)
        result = {
            "entity_labels": np.full((rows, max_entities), "", dtype=object),
            "entity_texts": np.full((rows, max_entities), "", dtype=object),
            "entity_starts": np.full((rows, max_entities), -1, np.int32),
            "entity_ends": np.full((rows, max_entities), -1, np.int32),
            "entity_scores": np.zeros((rows, max_entities), np.float32),
            "num_entities": np.zeros(rows, np.int32),
        }
        for row, (text, encoding) in enumerate(zip(texts, encodings, strict=True)):
            logits = outputs["logits"][row]
            tags, scores = logits.argmax(-1), softmax(logits).max(-1)
            words = _words(
                text, encoding, self.seq_length - 2, self._removed_by_normalizer, self.special_ids
            )
            found = bio_entities(
                [tags[piece + 1] for piece, _, _ in words],
                [scores[piece + 1] for piece, _, _ in words],
                tag_names,
            )
            result["num_entities"][row] = min(len(found), max_entities)
            for slot, (first_word, last_word, type_name, score) in enumerate(found[:max_entities]):
                start, end = words[first_word][1], words[last_word][2]
                result["entity_labels"][row, slot] = type_name
                result["entity_texts"][row, slot] = text[start:end]
                result["entity_starts"][row, slot] = start
                result["entity_ends"][row, slot] = end
                result["entity_scores"][row, slot] = score
        return result

    def _answers(self, questions: list[str], contexts: list[str]) -> dict[str, np.ndarray]:
        """Answers as `QuestionAnswererServing`: one window, the question cut to
        `max_question_length` pieces, the context to what is left."""
        max_question_length = self.metadata["max_question_length"]
        question_ids = [encoding.ids[:max_question_length] for encoding in self.encode(questions)]
        context_encodings = self.encode(contexts)
        context_ids = [encoding.ids for encoding in context_encodings]
        rows = len(questions)
        result = {
            "answer_text": np.full(rows, "", dtype=object),
            "answer_score": np.zeros(rows, np.float32),
            "answer_start": np.full(rows, -1, np.int32),
            "answer_end": np.full(rows, -1, np.int32),
        }
        if not rows:
            return result
        packed = self.pack(question_ids, context_ids, truncation="waterfall")
        outputs = self.run(packed)
        separators = self.packing["pair_separators"]
        budget = self.seq_length - 2 - separators
        for row in range(rows):
            kept_question, kept_context = truncated_lengths(
                len(question_ids[row]), len(context_ids[row]), budget, "waterfall"
            )
            offset = 1 + kept_question + separators
            width = packed["input_mask"].shape[1]
            is_context = (np.arange(width) >= offset) & (np.arange(width) < offset + kept_context)
            first, last, score = best_answer_span(
                outputs["start_logits"][row],
                outputs["end_logits"][row],
                is_context,
                self.metadata["max_answer_length"],
            )
            if not kept_context:
                continue
            offsets = _trimmed_offsets(contexts[row], context_encodings[row].offsets)
            start, end = offsets[first - offset][0], offsets[last - offset][1]
            result["answer_text"][row] = contexts[row][start:end]
            result["answer_score"][row] = score
            result["answer_start"][row] = start
            result["answer_end"][row] = end
        return result


def _split_pairs(inputs, second) -> tuple[list[str], list[str] | None]:
    """(first texts, second texts or None) of `predict`'s arguments: a bare string is one
    text; pairs are `PAIR_TYPES` of two texts.

    Example:
    >>> _split_pairs("one text", None)
    (['one text'], None)
    >>> _split_pairs([("a", b"b")], None)
    (['a'], ['b'])
    >>> _split_pairs(["a", None], None)
    Traceback (most recent call last):
    TypeError: item 1 is a NoneType (None), not a text (str or UTF-8 bytes).
    """
    if second is not None:
        first, second = _texts(inputs), _texts(second)
        if len(second) != len(first):
            raise ValueError(f"{len(first)} texts and {len(second)} second texts.")
        return first, second
    if isinstance(inputs, (str, bytes)):
        return [as_text(inputs)], None
    items = _items(inputs)
    if not (items and isinstance(items[0], PAIR_TYPES)):
        return _texts(items), None
    for position, pair in enumerate(items):
        if not isinstance(pair, PAIR_TYPES) or len(pair) != 2:
            raise TypeError(
                f"item {position} is {_described(pair)}, not a (text, text_pair) pair like item 0."
            )
    return _texts([pair[0] for pair in items], "pair"), _texts([pair[1] for pair in items], "pair")


def _items(values) -> list:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"Texts come as a list (or one string), not {_described(values)}.")
    return list(values)


def _texts(values, item: str = "item") -> list[str]:
    """`values` (a bare string: one) as `str`; a `TypeError` names the first that is not
    text."""
    if isinstance(values, (str, bytes)):
        return [as_text(values)]
    texts = []
    for position, value in enumerate(_items(values)):
        if not isinstance(value, (str, bytes)):
            raise TypeError(
                f"{item} {position} is {_described(value)}, not a text (str or UTF-8 bytes)."
            )
        texts.append(as_text(value))
    return texts


def _described(value) -> str:
    """`a <type> (<value, cut to 40 characters>)`."""
    shown = repr(value)
    return f"a {type(value).__name__} ({shown[:40]}{'...' if len(shown) > 40 else ''})"


def _trimmed_offsets(text: str, offsets: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Token spans without the whitespace that byte-level BPE ("Ġ") and SentencePiece ("▁")
    tokens carry in front: each token's text, as keras_bert's tokenizers give their offsets."""
    trimmed = []
    for start, end in offsets:
        while start < end and text[start].isspace():
            start += 1
        trimmed.append((start, end))
    return trimmed


def _words(
    text: str,
    encoding,
    kept_pieces: int,
    removed: Callable[[str], bool],
    special_ids: set[int],
) -> list[tuple[int, int, int]]:
    """(first piece, start, end) of each word of `encoding` (the pre-tokenizer's words) whose
    first piece is among the first `kept_pieces` and whose span holds text. A word's span
    takes in the characters next to it that the normalizer removed (`removed`), as keras_bert
    cuts words from the raw text before normalizing them."""
    offsets = _trimmed_offsets(text, encoding.offsets)
    words: dict[int, list[int]] = {}
    for piece, (word, token_id) in enumerate(zip(encoding.word_ids, encoding.ids, strict=True)):
        if word is None or token_id in special_ids:
            word = -1 - piece  # a special token written in the text: a word of its own
        start, end = offsets[piece]
        if word not in words:
            words[word] = [piece, start, end]
        else:
            words[word][2] = max(words[word][2], end)
    spans = []
    for word, (piece, start, end) in words.items():
        if piece >= kept_pieces or end <= start:
            continue
        while word >= 0 and start > 0 and removed(text[start - 1]):
            start -= 1
        while word >= 0 and end < len(text) and removed(text[end]):
            end += 1
        spans.append((piece, start, end))
    return spans
