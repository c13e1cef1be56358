"""BertQuestionAnswerer: extractive QA, start and end logits over `[CLS] question [SEP] passage`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras

from keras_bert.checkpoints.task_heads import QUESTION_ANSWERING
from keras_bert.checkpoints.variables import head_dense_variables
from keras_bert.decoding.answers import question_context_packer, text_answers
from keras_bert.families import family
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.task import (
    BertTask,
    head_dense,
    token_transform,
    token_transform_variables,
)
from keras_bert.models.text_inputs import DEFAULT_BATCH_SIZE, in_batches


@keras.saving.register_keras_serializable(package="keras_bert")
class BertQuestionAnswerer(BertTask):
    """Scores every token as the start and as the end of the answer span.

    Outputs `{"start_logits", "end_logits"}`, each `[batch, sequence]`, float32. Training labels
    are `{"start_positions", "end_positions"}` token indices; position 0 (`[CLS]`) means that the
    window holds no answer (SQuAD v2, and windows of long passages that miss the answer).
    `keras_bert.decoding.answers` turns logits into answer text. A family whose prediction
    head every task shares (ModernBERT's) puts it on every token first, as transformers does.

    Args:
        encoder: the `BertEncoder` to fine-tune.

    Example:
    >>> import numpy as np
    >>> from keras_bert import BertConfig, BertEncoder
    >>> encoder = BertEncoder(BertConfig.preset("tiny", vocab_size=100))
    >>> reader = BertQuestionAnswerer(encoder)
    >>> inputs = {
    ...     "input_word_ids": np.array([[2, 7, 3, 9, 8, 3]]),
    ...     "input_mask": np.ones((1, 6), "int32"),
    ...     "input_type_ids": np.array([[0, 0, 0, 1, 1, 1]]),
    ... }
    >>> tuple(reader(inputs)["start_logits"].shape)
    (1, 6)
    """

    uses_pooled_output = False
    architecture_task = QUESTION_ANSWERING

    def __init__(self, encoder: BertEncoder, **kwargs):
        # Layers
        head = head_dense(encoder, 2, name="span_logits")
        transform = token_transform(encoder)

        # Functional model
        sequence_output = encoder(encoder.input)["sequence_output"]
        if transform is not None:
            sequence_output = transform(sequence_output)
        span_logits = head(sequence_output)
        start_logits, end_logits = keras.ops.unstack(span_logits, num=2, axis=-1)
        outputs = {"start_logits": start_logits, "end_logits": end_logits}
        super().__init__(encoder, outputs, **kwargs)

    def answer(
        self,
        questions: Sequence[str],
        contexts: Sequence[str],
        max_answer_length: int = 30,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> list[dict[str, Any]]:
        """The answer of every question in its context, decoded in the graph as the export
        decodes it (`keras_bert.decoding.answers.text_answers`: one window of the
        preprocessor's `seq_length`): dicts of `text`, `start` and `end` (character offsets into
        the context, `[start, end)`; -1 without an answer) and `score` (`p_start * p_end`).
        Needs the preprocessor.
        """
        preprocessor = self.require_preprocessor("answer")
        packer = question_context_packer(preprocessor)

        def decode(question, context):
            return text_answers(
                question,
                context,
                preprocessor.tokenizer,
                packer,
                self,
                max_answer_length=max_answer_length,
            )

        outputs = in_batches(decode, [questions, contexts], batch_size)
        return [
            {
                "text": text.decode(),
                "start": int(start),
                "end": int(end),
                "score": float(score),
            }
            for text, start, end, score in zip(
                outputs["answer_text"],
                outputs["answer_start"],
                outputs["answer_end"],
                outputs["answer_score"],
                strict=True,
            )
        ]

    def head_variables(self) -> dict[str, keras.Variable]:
        # transformers' `qa_outputs` (ModernBERT's `classifier`) gives the start logits first,
        # as `span_logits` does.
        module = family(self.encoder.bert_config.model_type).question_answering_module
        variables = head_dense_variables(module, self.get_layer("span_logits"))
        return variables | token_transform_variables(self)

    def default_loss(self):
        return {
            "start_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "end_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        }

    def default_metrics(self):
        return {
            "start_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
            "end_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }
