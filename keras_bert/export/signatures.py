"""Serving signatures: raw strings in, task answers out, all in one TensorFlow graph.

Each `*Serving` module holds a trained model and its preprocessor (`BertPreprocessor`, or the
`TextPreprocessor` of another family's checkpoint) and has two signatures:

- `serving_default` takes `tf.string` tensors of shape `[batch]`, tokenizes them in the graph
  and returns the task's answer (probabilities and labels, entities, answer spans,
  embeddings, mask fillers). Every output has the batch as its first dimension, so TensorFlow
  Serving's REST "instances" (row) format works for all of them.
- `serving_ids` takes `input_word_ids`, `input_mask`, `input_type_ids` (int32
  `[batch, sequence]`) for clients that tokenize themselves and returns the model's outputs.

Character offsets in outputs count Unicode code points (what `str` indexing in Python or
JavaScript code points give), `[start, end)`, into the input after invalid UTF-8 byte sequences
are replaced by U+FFFD (valid UTF-8 input is unchanged). The tokenizer's byte offsets are
converted in the graph.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import keras
import tensorflow as tf

from keras_bert.config import ConfigError
from keras_bert.decoding.answers import (
    MASKED_LOGIT,
    kept_question_length,
    question_context_packer,
    question_tokens,
    text_answers,
)
from keras_bert.decoding.buckets import (
    bucket_length,
    length_buckets,
    pad_columns,
    split_by_length,
    trim_to_bucket,
)
from keras_bert.decoding.entities import BioTagTable, text_entities
from keras_bert.decoding.mask_fillers import mask_fillers, mask_token_of
from keras_bert.errors import check_positive
from keras_bert.export.serving_copy import layer_normalization_form, serving_copy
from keras_bert.families import family
from keras_bert.layers.layer_normalization import (
    FUSED_KERNEL_MIN_VALUES,
    element_wise_layer_normalization,
    fused_layer_normalization,
)
from keras_bert.layers.padding_skip import real_tokens_only
from keras_bert.models.encoder import INPUT_NAMES
from keras_bert.models.input_checks import check_preprocessor
from keras_bert.text.preprocessor import TextPreprocessor

DEFAULT_SIGNATURE = "serving_default"
IDS_SIGNATURE = "serving_ids"

_IDS_SPEC = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}
# What one more model call costs a batch in tokens of padded work (`length_groups`).
CALL_COST_TOKENS = 64
_TEXT_SPEC = tf.TensorSpec([None], tf.string)


def _as_float32(outputs):
    """`outputs` (a tensor or a dict of them) with floating tensors cast to float32."""
    return tf.nest.map_structure(
        lambda tensor: tf.cast(tensor, tf.float32) if tensor.dtype.is_floating else tensor,
        outputs,
    )


def _model_function(
    model: keras.Model,
    normalize: Callable,
    jit_compile: bool,
    on_real_tokens: bool,
    compiled_attention: bool = False,
) -> tf.types.experimental.PolymorphicFunction:
    """`model`'s call (inference, floats out in float32) as a `tf.function` whose traces apply
    `normalize` in every layer norm (`layer_normalization_form`); its encoder blocks compute
    the real tokens alone if `on_real_tokens` (`real_tokens_only`, its attention compiled if
    `compiled_attention`; not under XLA)."""

    def model_call(inputs):
        skip = real_tokens_only(compiled_attention) if on_real_tokens else contextlib.nullcontext()
        with layer_normalization_form(model, normalize), skip:
            return _as_float32(model(inputs, training=False))

    return tf.function(
        model_call, jit_compile=jit_compile or None, autograph=False, reduce_retracing=True
    )


def _large_batch_function(
    model: keras.Model, precision: str, jit_compile: bool, on_real_tokens: bool
) -> tf.types.experimental.PolymorphicFunction | None:
    """The model function for batches of `FUSED_KERNEL_MIN_VALUES` values or more (about 32
    sentences), where it differs from a request's (`_whole_batch_branches`), else None:

    - XLA, for a model that reads real tokens alone: the real tokens alone (outside XLA, whose
      shapes are fixed), each attention XLA-compiled; the whole model compiled stays the
      fastest for one request, whose rows hold no padding to skip.
    - bfloat16 without XLA: oneDNN's fused layer norms.
    """
    if jit_compile and on_real_tokens:
        return _model_function(
            model, element_wise_layer_normalization, False, True, compiled_attention=True
        )
    if precision == "bfloat16" and not jit_compile:
        return _model_function(model, fused_layer_normalization, False, on_real_tokens)
    return None


def mask_batching_padding(inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """`inputs` with `input_mask` 0 wherever TensorFlow Serving's batching padded a request.

    With `pad_variable_length_inputs` (`server_config.batching_parameters`), `serving_ids`
    requests of different widths share a batch: TF Serving pads each to the widest with the
    tensor's first element, the start token (`[CLS]`, `<s>`) in `input_word_ids` and 1 in
    `input_mask`, so its padding would read as text. A packed sequence holds the start token
    only first: every later position that holds the row's first id is masked (a client that
    turns "[CLS]" written in a text into that id loses it there too).

    Example:
    >>> ids = tf.constant([[101, 7592, 102, 0, 101, 101]])
    >>> inputs = {"input_word_ids": ids, "input_mask": tf.constant([[1, 1, 1, 0, 1, 1]])}
    >>> mask_batching_padding(inputs)["input_mask"].numpy().tolist()
    [[1, 1, 1, 0, 0, 0]]
    """
    ids = inputs["input_word_ids"]
    later = tf.range(tf.shape(ids)[1]) > 0
    padding = tf.logical_and(tf.equal(ids, ids[:, :1]), later)
    mask = inputs["input_mask"]
    return {**inputs, "input_mask": tf.where(padding, tf.zeros_like(mask), mask)}


def _rows(inputs: dict[str, tf.Tensor], start, stop) -> dict[str, tf.Tensor]:
    return {name: tensor[start:stop] for name, tensor in inputs.items()}


def _run_branch(index: tf.Tensor, branches: Sequence[Callable[[], Any]]):
    """The outputs of `branches[index]`: the only branch called directly, else a `Case`."""
    if len(branches) == 1:
        return branches[0]()
    return tf.switch_case(index, list(branches))


def _concat_rows(first, second, width: tf.Tensor, position_values: dict[str, float]):
    """Two groups' outputs (a tensor or a dict of them) as one batch: outputs with a value per
    position (a dimension 1 of unknown size: the batch's columns) padded to `width` with their
    `position_values` value (0 if unnamed)."""

    def joined(name: str | None, first_value: tf.Tensor, second_value: tf.Tensor) -> tf.Tensor:
        if first_value.shape.rank >= 2 and first_value.shape[1] is None:
            first_value = pad_columns(first_value, width, position_values.get(name, 0.0))
        return tf.concat([first_value, second_value], axis=0)

    if isinstance(first, dict):
        return {name: joined(name, value, second[name]) for name, value in first.items()}
    return joined(None, first, second)


@dataclasses.dataclass(frozen=True)
class _Untracked:
    """Holds a Keras model and its `tf.function` where a `tf.Module` does not track them (see
    `_Serving`)."""

    model: keras.Model
    call: tf.types.experimental.PolymorphicFunction
    # The call for batches of `FUSED_KERNEL_MIN_VALUES` values or more, where it differs
    # (`_large_batch_function`), else None.
    large_batch_call: tf.types.experimental.PolymorphicFunction | None


class _Serving(tf.Module):
    """A model and its preprocessor with the `serving_ids` signature; subclasses add text.

    `serving_ids` takes int32 `input_word_ids`, `input_mask` and `input_type_ids`
    `[batch, width]`, padded to any width (TF Serving's batching padding included:
    `mask_batching_padding`), and computes, as `serving_default` does, on the
    columns up to the last real token rounded up to a bucket: a client that pads every request
    to 128 ids, as ONNX Runtime's users do, pays for its text's length. Outputs with a value per
    position (`POSITION_OUTPUTS`) come back at the request's width, the columns past the bucket
    filled with 0 (start and end logits: -1e9, so that they never win).

    Options every serving module takes (keyword arguments after its own):

    - `buckets`: the lengths that `serving_default` pads a batch to: its longest packed
      sequence rounded up to the next bucket (`keras_bert.decoding.buckets`); default
      `length_buckets(seq_length)` (8, 16, 24, ... 64, 80, ... `seq_length`); `(seq_length,)`
      pads every batch to `seq_length`.
    - `jit_compile`: run the model (not the tokenizer) in an XLA-compiled function
      (`tf.function(jit_compile=True)`). TensorFlow Serving runs it only when started with
      `--xla_cpu_compilation_enabled=true`; without the flag the first request that reaches it
      (a warm-up record) fails, and so does loading the version. A classifier's large batches
      run on their real tokens instead, each attention compiled (`_large_batch_function`).
    - `precision`: "float32", or "bfloat16" for the model's compute in bfloat16 (weights stored
      and computed in bfloat16, outputs float32; for CPUs with AVX512_BF16 or AMX, and GPUs;
      large batches with oneDNN's fused layer norms, `_whole_batch_branches`).
      `export_for_serving` checks a bfloat16 module against its float32 twin.
    - `length_groups`: a batch's rows run as two groups of similar length, each padded to its
      own bucket, where that saves more padded work than the second model call costs
      (`split_by_length`, `CALL_COST_TOKENS`); the answers are the same, each row's computed
      on fewer columns. False runs every batch whole.
    - `feed_forward_shards`: the encoder's feed-forward weights stored as this many independent
      blocks (`serving_copy`), which TensorFlow computes in parallel: 2 for CPU servers started
      with one thread per op (`--tensorflow_intra_op_parallelism=1`), where it serves long
      requests and batches faster (BENCHMARKS.md, section Serving); 1 (default) keeps the
      model's layout.

    What the SavedModel saves are the TensorFlow variables the model computes with
    (`serving_variables`), not the Keras model. A Keras variable is saved as a second
    TensorFlow variable beside the one it wraps, and a graph loader (TensorFlow Serving's
    `LoadSavedModel`, `saved_model_cli`, `tf.compat.v1` sessions) restores only that second
    one: every request then fails with "Could not find variable" (keras-team/keras#19274).
    Keras objects left out, a compiled model's optimizer state is left out too.
    """

    # `serving_ids` outputs with a value per input position, and the value past the bucket.
    POSITION_OUTPUTS: dict[str, float] = {}
    # Whether the outputs read no padded position's hidden state: then the encoder computes the
    # real tokens alone (`real_tokens_only`).
    READS_REAL_TOKENS_ONLY = False

    def __init__(
        self,
        model: keras.Model,
        preprocessor: TextPreprocessor,
        buckets: Sequence[int] | None = None,
        jit_compile: bool = False,
        precision: str = "float32",
        feed_forward_shards: int = 1,
        length_groups: bool = True,
    ):
        super().__init__(name=type(self).__name__)
        self.buckets = tuple(buckets or length_buckets(preprocessor.seq_length))
        if list(self.buckets) != sorted(set(self.buckets)) or (
            self.buckets[-1] != preprocessor.seq_length
        ):
            raise ConfigError(
                f"buckets must ascend and end at seq_length {preprocessor.seq_length}, "
                f"got {self.buckets}."
            )
        self.precision = precision
        self.length_groups = length_groups
        self.bert_config = getattr(model, "encoder", model).bert_config
        check_preprocessor(preprocessor, self.bert_config)
        copy = serving_copy(model, precision, feed_forward_shards)
        # One function of the model for every call of it (both signatures; the batch whole or
        # each group): the SavedModel's graph holds the encoder once, not once a call (traced
        # once, not once a signature); TensorFlow inlines it where it runs a signature.
        # Some have a second one for large batches (`_large_batch_function`).
        self._untracked = _Untracked(
            copy,
            _model_function(
                copy, element_wise_layer_normalization, jit_compile, self.READS_REAL_TOKENS_ONLY
            ),
            _large_batch_function(copy, precision, jit_compile, self.READS_REAL_TOKENS_ONLY),
        )
        self.serving_variables = [variable.value for variable in self.model.variables]
        self.preprocessor = preprocessor

    @property
    def model(self) -> keras.Model:
        """The model the signatures run (`serving_copy` of the one given)."""
        return self._untracked.model

    @property
    def tokenizer(self):
        return self.preprocessor.tokenizer

    def signatures(self) -> dict[str, tf.types.experimental.PolymorphicFunction]:
        """The signatures to export, by name: functions with an input signature, which
        `tf.saved_model.save` traces itself.

        Not their concrete functions: the save traces every function of the module that has
        an input signature anew (its trace key holds the save's options), so a concrete
        function traced before it was a second copy of the model's graph in `saved_model.pb`
        and a second trace of each signature (the RoBERTa token classifier: 188 functions
        and 2.1 MB, traced and saved in 4.5 s, against 99, 1.2 MB and 3.5 s; MiniLM-L6's
        classifier: 3.0 against 2.3 MB, 4.0 against 2.3-2.8 s; Zen 5).
        """
        return {DEFAULT_SIGNATURE: self.text_signature(), IDS_SIGNATURE: self.serve_ids}

    def text_signature(self) -> tf.types.experimental.PolymorphicFunction:
        """`serving_default`: the module's function of strings, with its input signature."""
        return self.serve_text

    def example_inputs(self) -> dict[str, list]:
        """A small `serving_default` request, used for warm-up records."""
        return {"text": ["BERT is served by TensorFlow Serving.", "Another example."]}

    def pack_texts(self, *texts: tf.Tensor) -> dict[str, tf.Tensor]:
        """The packed model inputs `[batch, seq_length]` of `serving_default`'s inputs."""
        return self.preprocessor(texts if len(texts) > 1 else texts[0])

    def _run_model(self, inputs: dict[str, tf.Tensor]):
        """The model's outputs on `inputs` (packed, trimmed to their bucket), XLA-compiled if
        `jit_compile`, floats in float32; in two groups of rows by length if `length_groups`
        (outputs with a value per position then hold their `POSITION_OUTPUTS` value past a
        shorter group's columns, where the whole batch computed padding).

        The whole batch's model functions and the two groups are branches of one `Case`: a
        request crosses one branch point, not one per choice. In a served graph each branch
        point passes every weight through a switch node of its own (TensorFlow lowers it to
        switch and merge nodes): a MiniLM-L6 bfloat16 request crossing two ran 1,346 nodes,
        crossing one 1,127, 5-6% sooner (Zen 4, `bench/bench_request_ops.py`)."""
        index, branches = self._whole_batch_branches(inputs)
        if not self.length_groups:
            return _run_branch(index, branches)
        order, first_rows = split_by_length(inputs["input_mask"], self.buckets, CALL_COST_TOKENS)
        width = tf.shape(inputs["input_mask"])[1]

        def in_two_groups():
            ordered = {name: tf.gather(tensor, order) for name, tensor in inputs.items()}
            first = _rows(ordered, 0, first_rows)
            first_width = bucket_length(first["input_mask"], self.buckets)
            # The encoder's inputs are cut, not the masked LM's positions (within each row).
            first = {
                name: tensor[:, :first_width] if name in INPUT_NAMES else tensor
                for name, tensor in first.items()
            }
            first = _run_branch(*self._whole_batch_branches(first))
            second = _run_branch(*self._whole_batch_branches(_rows(ordered, first_rows, None)))
            joined = _concat_rows(first, second, width, self.POSITION_OUTPUTS)
            inverse = tf.math.invert_permutation(order)
            return tf.nest.map_structure(lambda tensor: tf.gather(tensor, inverse), joined)

        in_groups = first_rows < tf.shape(order)[0]
        return _run_branch(tf.where(in_groups, len(branches), index), [*branches, in_two_groups])

    def _whole_batch_branches(
        self, inputs: dict[str, tf.Tensor]
    ) -> tuple[tf.Tensor, list[Callable[[], Any]]]:
        """The model functions that may compute `inputs` as one batch, and the index of the
        one that does: the request's, and where the module has one the large batches'
        (`_large_batch_function`) for `FUSED_KERNEL_MIN_VALUES` values or more (a batch of
        about 32 sentences)."""
        untracked = self._untracked
        branches = [lambda: untracked.call(inputs)]
        if untracked.large_batch_call is None:
            return tf.constant(0), branches
        fused_min_tokens = -(-FUSED_KERNEL_MIN_VALUES // self.bert_config.hidden_size)
        large = tf.size(inputs["input_word_ids"]) >= fused_min_tokens
        return tf.cast(large, tf.int32), [*branches, lambda: untracked.large_batch_call(inputs)]

    def _trim(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        return trim_to_bucket(inputs, self.buckets)

    def _outputs_from_ids(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        outputs = self._run_model(inputs)
        if not isinstance(outputs, dict):
            outputs = {"logits": outputs}
        return dict(outputs)

    def _checked_ids(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """`serving_ids`' inputs (cut to their bucket), failing the request with a one-line
        message where its real tokens run past the model's positions (where they are columns:
        `BertConfig.positions_are_columns`), or where it holds token types for a family that
        refuses them (`Family.refuses_token_types`)."""
        config = self.bert_config
        checks = []
        if config.positions_are_columns:
            checks.append(
                tf.debugging.assert_less_equal(
                    tf.shape(inputs["input_word_ids"])[1],
                    config.longest_input,
                    message=f"input_word_ids holds more real ids per row than the "
                    f"{config.longest_input} this {config.model_type} model reads: cut the rows.",
                )
            )
        if family(config.model_type).refuses_token_types:
            checks.append(
                tf.debugging.assert_equal(
                    tf.reduce_any(inputs["input_type_ids"] != 0),
                    False,
                    message=f"This {config.model_type} model has no token types: send "
                    "input_type_ids of zeros.",
                )
            )
        with tf.control_dependencies(checks):
            return {name: tf.identity(tensor) for name, tensor in inputs.items()}

    @tf.function(input_signature=[_IDS_SPEC])
    def serve_ids(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        outputs = self._outputs_from_ids(
            self._checked_ids(self._trim(mask_batching_padding(inputs)))
        )
        width = tf.shape(inputs["input_mask"])[1]
        return {
            name: pad_columns(value, width, self.POSITION_OUTPUTS[name])
            if name in self.POSITION_OUTPUTS
            else value
            for name, value in outputs.items()
        }


class ClassifierServing(_Serving):
    """`BertClassifier` serving: text (or text pairs) → probabilities and labels.

    `serving_default` inputs: `text` (and `text_pair` if `text_pairs`), string `[batch]`.
    Outputs: `probabilities` float32 `[batch, classes]`, `label_names` string
    `[batch, classes]` (the same names on every row), `label` string `[batch]` and `label_id`
    int32 `[batch]` of the most probable class, `logits`. A regressor (`num_classes == 1`)
    returns `score` float32 `[batch]` instead.

    Args:
        model: the `BertClassifier`.
        preprocessor: its preprocessor.
        text_pairs: whether the model classifies pairs of texts.
        **options: `buckets`, `jit_compile`, `precision` (see `_Serving`).
    """

    READS_REAL_TOKENS_ONLY = True  # one vector a row: the first token's, or the masked mean

    def __init__(self, model, preprocessor: TextPreprocessor, text_pairs: bool = False, **options):
        super().__init__(model, preprocessor, **options)
        self.text_pairs = text_pairs
        self.num_classes = model.num_classes
        self.label_names = tf.constant(
            model.label_names or [str(index) for index in range(model.num_classes)]
        )
        # Only the function the module serves gets an input signature: both carry the whole
        # model, and `tf.saved_model.save` traces (and saves) every function that has one.
        # Made once: every caller of `signatures()` shares its trace.
        serve, specs = (
            (self.serve_text_pairs, [_TEXT_SPEC, _TEXT_SPEC])
            if text_pairs
            else (self.serve_text, [_TEXT_SPEC])
        )
        self._serve_strings = tf.function(serve.python_function, input_signature=specs)

    def text_signature(self):
        return self._serve_strings

    def example_inputs(self):
        texts = ["A gripping, beautifully acted film.", "Dull and far too long."]
        if self.text_pairs:
            return {"text": texts, "text_pair": ["I loved it.", "It bored me."]}
        return {"text": texts}

    def _classify(self, logits: tf.Tensor) -> dict[str, tf.Tensor]:
        if self.num_classes == 1:
            return {"score": logits[:, 0], "logits": logits}
        label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        batch_size = tf.shape(logits)[0]
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_names": tf.tile(self.label_names[tf.newaxis], [batch_size, 1]),
            "label": tf.gather(self.label_names, label_ids),
            "label_id": label_ids,
            "logits": logits,
        }

    @tf.function(reduce_retracing=True)
    def serve_text(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        return self._classify(self._run_model(self._trim(self.preprocessor(text))))

    @tf.function(reduce_retracing=True)
    def serve_text_pairs(self, text: tf.Tensor, text_pair: tf.Tensor) -> dict[str, tf.Tensor]:
        inputs = self._trim(self.preprocessor((text, text_pair)))
        return self._classify(self._run_model(inputs))


class EncoderServing(_Serving):
    """`BertEncoder` serving: text → sentence embeddings for semantic search.

    `serving_default` input: `text`, string `[batch]`. Outputs, float32 `[batch, hidden]`:
    `pooled_output` (the pooler's tanh layer on [CLS]), `cls_embedding` (the last layer at
    [CLS]) and `mean_embedding` (the last layer averaged over the real tokens, [CLS] and [SEP]
    included, as sentence-transformers' mean pooling).
    """

    POSITION_OUTPUTS = {"sequence_output": 0.0}

    @staticmethod
    def _embeddings(inputs, outputs) -> dict[str, tf.Tensor]:
        sequence_output = outputs["sequence_output"]
        mask = tf.cast(inputs["input_mask"], sequence_output.dtype)[:, :, tf.newaxis]
        token_count = tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
        embeddings = {
            "cls_embedding": sequence_output[:, 0],
            "mean_embedding": tf.reduce_sum(sequence_output * mask, axis=1) / token_count,
        }
        if "pooled_output" in outputs:  # the family's encoders without a pooler have none
            embeddings["pooled_output"] = outputs["pooled_output"]
        return embeddings

    def _outputs_from_ids(self, inputs):
        outputs = self._run_model(inputs)
        return {
            "sequence_output": outputs["sequence_output"],
            **self._embeddings(inputs, outputs),
        }

    @tf.function(input_signature=[_TEXT_SPEC])
    def serve_text(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        inputs = self._trim(self.preprocessor(text))
        return self._embeddings(inputs, self._run_model(inputs))


class TokenClassifierServing(_Serving):
    """`BertTokenClassifier` serving: text → entities with character offsets.

    Words are the tokenizer's (`tokenize_words_with_offsets`: WordPiece splits on whitespace,
    punctuation and CJK characters, byte-level BPE on GPT-2's pre-tokens, SentencePiece on
    whitespace); each word takes the label predicted at its first word piece, and the BIO labels
    are read as the CoNLL script reads them (`keras_bert.decoding.bio_tags.bio_spans`).
    Words beyond the first `seq_length - 2` word pieces, and words without text (BPE's runs of
    whitespace), get no label.

    `serving_default` input: `text`, string `[batch]`. Outputs, padded to `max_entities` per row
    in text order: `entity_labels` and `entity_texts` string (padding ""), `entity_starts` and
    `entity_ends` int32 character offsets `[start, end)` (padding -1), `entity_scores` float32
    (mean probability of the words' predicted labels; padding 0), and `num_entities` int32
    `[batch]`, the number of entities returned (at most `max_entities`; more are dropped).

    Args:
        model: the `BertTokenClassifier`, with BIO `label_names` ("O", "B-x", "I-x").
        preprocessor: its preprocessor.
        max_entities: the number of entity slots per text.
        **options: `buckets`, `jit_compile`, `precision` (see `_Serving`).
    """

    POSITION_OUTPUTS = {"logits": 0.0}

    def __init__(self, model, preprocessor: TextPreprocessor, max_entities: int = 32, **options):
        check_positive(max_entities=max_entities)
        super().__init__(model, preprocessor, **options)
        self.max_entities = max_entities
        self.tag_table = BioTagTable(model.label_names)

    def example_inputs(self):
        return {"text": ["Barack Obama visited Paris in June.", "no entities here"]}

    @tf.function(input_signature=[_TEXT_SPEC])
    def serve_text(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        return text_entities(
            text,
            self.preprocessor,
            self._run_model,
            self.tag_table,
            self.max_entities,
            self.buckets,
        )


class QuestionAnswererServing(_Serving):
    """`BertQuestionAnswerer` serving: question + context → answer text, score and offsets.

    One window: `[CLS] question [SEP] context [SEP]` (in the family's layout: RoBERTa's
    `<s> question </s></s> context </s>`) of the preprocessor's `seq_length`, the question cut
    to `max_question_length` word pieces and the context to what is left; an answer beyond
    that is not found (split long documents into passages client-side). The answer
    is the context span of at most `max_answer_length` word pieces that maximises
    `p_start * p_end`, both softmaxes over the context tokens (no "no answer" option).

    `serving_default` inputs: `question`, `context`, string `[batch]`. Outputs `[batch]`:
    `answer_text` string, `answer_score` float32 (`p_start * p_end`), `answer_start` and
    `answer_end` int32 character offsets `[start, end)` into the context. A context without
    tokens (empty, or entirely cut off) gives "", 0 and -1, -1.

    Args:
        model: the `BertQuestionAnswerer`.
        preprocessor: its preprocessor (tokenizer, packing and `seq_length`).
        max_question_length: word pieces of the question that are kept
            (`keras_bert.decoding.answers.kept_question_length`: by default 64, or half a
            window where that is fewer).
        max_answer_length: the longest answer, in word pieces.
        **options: `buckets`, `jit_compile`, `precision` (see `_Serving`).
    """

    POSITION_OUTPUTS = {"start_logits": MASKED_LOGIT, "end_logits": MASKED_LOGIT}

    def __init__(
        self,
        model,
        preprocessor: TextPreprocessor,
        max_question_length: int | None = None,
        max_answer_length: int = 30,
        **options,
    ):
        check_positive(max_question_length=max_question_length, max_answer_length=max_answer_length)
        super().__init__(model, preprocessor, **options)
        self.packer = question_context_packer(preprocessor)
        self.max_question_length = kept_question_length(self.packer, max_question_length)
        self.max_answer_length = max_answer_length

    def example_inputs(self):
        return {
            "question": ["Where does TensorFlow Serving look for models?"],
            "context": ["TensorFlow Serving loads every integer version under the base path."],
        }

    def pack(self, question: tf.Tensor, context_tokens: tf.RaggedTensor) -> dict[str, tf.Tensor]:
        """Packs questions and tokenized contexts as `serving_default` does."""
        kept_question = question_tokens(self.tokenizer, question, self.max_question_length)
        return self.packer((kept_question, context_tokens))

    def pack_texts(self, question: tf.Tensor, context: tf.Tensor) -> dict[str, tf.Tensor]:
        return self.pack(question, self.tokenizer(context))

    @tf.function(input_signature=[_TEXT_SPEC, _TEXT_SPEC])
    def serve_text(self, question: tf.Tensor, context: tf.Tensor) -> dict[str, tf.Tensor]:
        return text_answers(
            question,
            context,
            self.tokenizer,
            self.packer,
            self._run_model,
            self.max_question_length,
            self.max_answer_length,
            self.buckets,
        )


class MaskedLMServing(_Serving):
    """Masked-LM serving: text with `[MASK]` → the `top_k` most likely tokens at each mask.

    `serving_default` input: `text`, string `[batch]`; write the mask token (`[MASK]`,
    RoBERTa's `<mask>`: `mask_token`) where a token is missing.
    Outputs, for the first `max_masks` masks of each text (in the first `seq_length - 2` word
    pieces): `top_tokens` string and `top_ids` int32 `[batch, max_masks, top_k]` (padding "" and
    -1), `top_probabilities` float32 (padding 0), `num_masks` int32 `[batch]`.
    `serving_ids` returns the same outputs for the `[MASK]` ids in `input_word_ids`.

    Args:
        model: a `BertMaskedLM` or `BertPretrainer`, or any model that takes the encoder inputs plus
            `masked_lm_positions` `[batch, predictions]` and returns `{"masked_lm": logits}`.
        preprocessor: the preprocessor (its vocabulary must hold `[MASK]` or `<mask>`).
        top_k: fillers per mask.
        max_masks: mask slots per text.
        **options: `buckets`, `jit_compile`, `precision` (see `_Serving`).
    """

    def __init__(
        self,
        model: keras.Model,
        preprocessor: TextPreprocessor,
        top_k: int = 5,
        max_masks: int = 4,
        **options,
    ):
        check_positive(top_k=top_k, max_masks=max_masks)
        super().__init__(model, preprocessor, **options)
        if top_k > self.bert_config.vocab_size:
            raise ConfigError(
                f"top_k {top_k} is more than the {self.bert_config.vocab_size} tokens this "
                "model predicts."
            )
        self.mask_token = mask_token_of(preprocessor.tokenizer)
        self.mask_id = preprocessor.tokenizer.token_to_id(self.mask_token)
        self.top_k = top_k
        self.max_masks = max_masks

    def example_inputs(self):
        mask = self.mask_token
        return {"text": [f"The capital of France is {mask}.", f"I {mask} you {mask} much."]}

    def _outputs_from_ids(self, inputs):
        return mask_fillers(
            inputs, self._run_model, self.tokenizer, self.mask_id, self.top_k, self.max_masks
        )

    @tf.function(input_signature=[_TEXT_SPEC])
    def serve_text(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        return self._outputs_from_ids(self._trim(self.preprocessor(text)))


def serving_module(
    model: keras.Model, preprocessor: TextPreprocessor | None = None, **options
) -> _Serving:
    """The serving module of a task model (`options` go to its constructor).

    `BertClassifier`, `BertTokenClassifier`, `BertQuestionAnswerer`, `BertEncoder`,
    `BertMaskedLM` and `BertPretrainer` (masked LM) are recognised. `preprocessor` defaults to
    the one the model carries (`BertTask.preprocessor`).
    """
    if preprocessor is None:
        preprocessor = getattr(model, "preprocessor", None)
    if preprocessor is None:
        raise ConfigError(f"The {type(model).__name__} carries no preprocessor: pass one.")
    from keras_bert.models import (
        BertClassifier,
        BertEncoder,
        BertMaskedLM,
        BertQuestionAnswerer,
        BertTokenClassifier,
    )
    from keras_bert.models.pretrainer import BertPretrainer

    serving_classes: Sequence[tuple[type, type]] = (
        (BertClassifier, ClassifierServing),
        (BertTokenClassifier, TokenClassifierServing),
        (BertQuestionAnswerer, QuestionAnswererServing),
        (BertEncoder, EncoderServing),
        (BertPretrainer, MaskedLMServing),
        (BertMaskedLM, MaskedLMServing),
    )
    for model_class, serving_class in serving_classes:
        if isinstance(model, model_class):
            return serving_class(model, preprocessor, **options)
    raise TypeError(f"No serving signatures for a {type(model).__name__}.")
