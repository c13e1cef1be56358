"""Publishes a trained model in Hugging Face's layout, and pushes it to the Hub.

    .venv/bin/python -m pipelines.publish --model runs/sentiment/model.keras \\
        --output runs/sentiment/huggingface
    .venv/bin/python -m pipelines.publish --model runs/sentiment/model.keras \\
        --output runs/sentiment/huggingface --repo my-org/sentiment-minilm [--private] \\
        [--revision main] [--replace]
    .venv/bin/python -m pipelines.publish --model runs/domain/pretrainer.keras \\
        --checkpoint runs/domain/checkpoint --output runs/domain/huggingface [--task masked_lm]

Writes `config.json` and `model.safetensors` of the model's transformers twin
(`*ForSequenceClassification`, `*ForTokenClassification`, `*ForQuestionAnswering`,
`*ForMaskedLM`, `*ForPreTraining`, or the bare `*Model`), the tokenizer files and a model card
(`keras_bert.publishing`); `AutoModelFor*.from_pretrained` and keras_bert's `from_checkpoint`
read the directory. The card takes the run's base checkpoint (`config.json` beside the model)
and its metrics (`metrics.json` beside it) unless --base-model or --metrics name others.
`--repo` pushes the directory in one commit (without --output, from a temporary one), with the
token huggingface_hub finds (HF_TOKEN, or `hf auth login`) to HF_ENDPOINT's Hub.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from keras_bert.errors import ConfigError
from pipelines.common import parse_job, run_job

if TYPE_CHECKING:
    from keras_bert.publishing import Push


@dataclasses.dataclass
class PublishJob:
    """What to publish and where.

    Args:
        model: the `.keras` file of the trained model (a fine-tuning job's `model.keras`, the
            pretraining job's `pretrainer.keras`, or any `model.save`).
        output: the directory to write (created; never over another model).
        repo: the Hub repository to push to, `org/name`.
        private: create a missing repository as private.
        revision: the branch to push to (default main), created from main if missing.
        replace: replace the model the revision holds already (refused otherwise).
        task: publish the model's encoder alone ("encoder") or a pretrainer's masked LM alone
            ("masked_lm"); default the model with its head.
        checkpoint: a checkpoint directory or Hub id whose tokenizer the model reads (default:
            the preprocessor the model carries).
        base_model: the checkpoint it was trained from, for the model card (default: the run's).
        dataset: what it was trained on, for the model card.
        metrics: the `metrics.json` whose scores the model card lists (default: the run's).
    """

    model: str
    output: str | None = None
    repo: str | None = None
    private: bool = False
    revision: str | None = None
    replace: bool = False
    task: str | None = None
    checkpoint: str | None = None
    base_model: str | None = None
    dataset: str | None = None
    metrics: str | None = None

    def __post_init__(self):
        if self.output is None and self.repo is None:
            raise ConfigError("Give --output, --repo or both: where to publish the model.")


def publish(job: PublishJob) -> Path | Push:
    """Saves the job's model, and pushes it with `--repo`; returns the push, else the
    directory written."""
    from keras_bert import load_preprocessor
    from keras_bert.models.model_files import load_model_file
    from keras_bert.publishing import push_to_hub, save_checkpoint
    from keras_bert.publishing.hub_upload import push_token
    from keras_bert.publishing.run_files import read_run_record

    if job.repo is not None:
        push_token(job.repo)  # a malformed id or no token fails before anything is written
    model = load_model_file(job.model)
    preprocessor = load_preprocessor(job.checkpoint) if job.checkpoint else None
    record = read_run_record(job.model)
    metrics = json.loads(Path(job.metrics).read_text("utf-8")) if job.metrics else record.metrics
    with tempfile.TemporaryDirectory() as scratch:
        directory = save_checkpoint(
            model,
            job.output or Path(scratch) / "model",
            preprocessor=preprocessor,
            task=job.task,
            base_model=job.base_model or record.base_model,
            dataset=job.dataset,
            metrics=metrics,
            repo_id=job.repo,
        )
        files = sorted(path.name for path in directory.iterdir())
        print(f"wrote {directory}: {', '.join(files)}")
        if job.repo is not None:
            push = push_to_hub(directory, job.repo, job.private, job.revision, job.replace)
            replaced = f", replacing {', '.join(push.replaced)}" if push.replaced else ""
            print(f"pushed to {push.repo_id}@{push.revision}: commit {push.commit}{replaced}")
            print(f"  {push.commit_url}")
            return push
    return directory


def main(argv: list[str] | None = None) -> Path | Push:
    return publish(parse_job(__doc__, PublishJob, argv, required=("model",)))


if __name__ == "__main__":
    run_job(main)
