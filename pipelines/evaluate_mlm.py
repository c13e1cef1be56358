"""Scores a pretrained masked LM on held-out text: accuracy at `[MASK]`, which copying cannot
hide, beside overall accuracy and loss. Prints one JSON line.

    python -m pipelines.evaluate_mlm --model runs/tiny \\
        --input-files held_out.txt [--seq-length 128 --seed 0] [--baseline-files train.txt]

`--model` is the output directory of a `pipelines.pretrain` run (its `pretrainer.keras`, whose
masked LM is ELECTRA's generator in a replaced-token run, and `checkpoint/vocab.txt`) or a
checkpoint directory (Hugging Face or Google; heads it lacks are
random, which scores a checkpoint before masked-LM training). Every model is scored alike:
each document's sentences packed as single segments of `--seq-length`, BERT's masking (15%,
80/10/10) under `--seed`, whatever the run trained with.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from keras_bert.errors import CheckpointError, DataError, check_positive
from pipelines.common import (
    expand_files,
    parse_job,
    resolve_installed,
    run_job,
)


@dataclasses.dataclass
class MaskedLMEvaluationJob:
    """What to score, on what.

    Args:
        model: a `pipelines.pretrain` output directory or a checkpoint directory (`minilm`:
            the installed MiniLM-L6, whose masked-LM head is then random).
        input_files: BERT-format text files (one sentence per line, blank line between
            documents) the model has not trained on; globs and comma-separated lists work.
        seq_length: packed sequence length.
        seed: the seed of the masks.
        batch_size: sequences per batch.
        lowercase: uncased tokenization (default: the run's setting, else the vocabulary's).
        baseline_files: the text the model trained on: adds `bigram_baseline_at_mask`, the
            score of guessing each masked token from its left neighbour with successor counts
            from these files (see `bigram_baseline`).
    """

    model: str
    input_files: list[str]
    seq_length: int = 128
    seed: int = 0
    batch_size: int = 64
    lowercase: bool | None = None
    baseline_files: list[str] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        check_positive(seq_length=self.seq_length, batch_size=self.batch_size)


def load_masked_lm(directory: Path):
    """The model, vocabulary file and lower-casing of a run directory or a checkpoint."""
    import keras

    from keras_bert.metrics.masked_lm import masked_lm_of
    from keras_bert.models.pretrainer import BertPretrainer
    from keras_bert.text import infer_lowercase, load_vocabulary

    run_model = directory / "pretrainer.keras"
    if run_model.is_file():
        vocabulary_file = directory / "checkpoint" / "vocab.txt"
        if not vocabulary_file.is_file():
            raise CheckpointError(f"{directory}: the run saved no checkpoint/vocab.txt.")
        run_config = json.loads((directory / "config.json").read_text("utf-8"))
        model = masked_lm_of(keras.saving.load_model(run_model))
        return model, vocabulary_file, run_config.get("lowercase", True)
    from keras_bert.checkpoints import checkpoint_vocabulary_file

    vocabulary_file = checkpoint_vocabulary_file(directory)
    lowercase = infer_lowercase(load_vocabulary(vocabulary_file))
    return BertPretrainer.from_checkpoint(directory), vocabulary_file, lowercase


def _tokenized_documents(files: list[str], tokenizer, flag: str) -> list:
    """The tokenized documents of `files` (the job's `flag`); files without a word are a
    `DataError`, not a score of nothing."""
    from keras_bert.data import read_text_documents, tokenize_documents

    documents = tokenize_documents(read_text_documents(files), tokenizer)
    if not documents:
        raise DataError(f"{flag} {' '.join(files)}: no sentence with a word in it to read.")
    return documents


def evaluate(job: MaskedLMEvaluationJob) -> dict:
    """`evaluate_masked_lm`'s scores of `job.model` on `job.input_files`."""
    from keras_bert.metrics.masked_lm import (
        bigram_baseline,
        evaluate_masked_lm,
        masked_lm_evaluation_dataset,
    )
    from keras_bert.text import WordPieceTokenizer, load_vocabulary

    model, vocabulary_file, lowercase = load_masked_lm(Path(resolve_installed(job.model)))
    model.encoder.bert_config.check_seq_length(job.seq_length)
    if job.lowercase is not None:
        lowercase = job.lowercase
    tokenizer = WordPieceTokenizer(str(vocabulary_file), lowercase=lowercase)
    documents = _tokenized_documents(expand_files(job.input_files), tokenizer, "--input-files")
    vocabulary = load_vocabulary(vocabulary_file)
    dataset = masked_lm_evaluation_dataset(
        documents, vocabulary, job.seq_length, job.seed, job.batch_size
    )
    # Read before the evaluation, so that unusable baseline files fail before it runs.
    training = (
        _tokenized_documents(expand_files(job.baseline_files), tokenizer, "--baseline-files")
        if job.baseline_files
        else None
    )
    scores = evaluate_masked_lm(model, dataset, vocabulary)
    if training is not None:
        scores["bigram_baseline_at_mask"] = bigram_baseline(training, dataset, vocabulary)
    return scores


def main(argv: list[str] | None = None) -> dict:
    scores = evaluate(
        parse_job(__doc__, MaskedLMEvaluationJob, argv, required=("model", "input_files"))
    )
    print(json.dumps(scores))
    return scores


if __name__ == "__main__":
    run_job(main)
