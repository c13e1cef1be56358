"""The main job on its embedded default: real checkpoint → fine-tune → export → serve-style query.

1. Loads the real MiniLM-L6 BERT checkpoint and prints [CLS] embeddings and sentence
   similarities for a few sentences.
2. Fine-tunes it for sentiment on real movie-review snippets (a sample, one epoch: a minute or
   two on two cores) and reports dev accuracy.
3. Exports the classifier and the encoder for TensorFlow Serving under `saved_models/`.
4. Loads both exports in a fresh Python process that imports only tensorflow and
   tensorflow_text, as TF Serving would, and prints its predictions on raw text.

    python -m pipelines.demo [--train-examples 1200] [--base-dir saved_models]
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from keras_bert import BertEncoder
from keras_bert.checkpoints.hub import resolve_checkpoint
from keras_bert.data.classification import read_classification_file
from keras_bert.export import export_for_serving, serving_module, write_server_config
from keras_bert.finetuning.classification import finetune_classifier
from keras_bert.finetuning.recipe import FinetuningConfig
from keras_bert.text import BertPreprocessor
from pipelines.common import job_checkpoint, parse_job, run_job

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "sentiment"
SENTENCES = [
    "The cat sat on the mat.",
    "A kitten was sitting on the rug.",
    "Stock markets fell sharply on Monday.",
    "An unforgettable film, funny and moving.",
    "Two hours of my life I will never get back.",
]
QUERY_SCRIPT = Path(__file__).with_name("query_export.py")


def show_embeddings(checkpoint: str) -> None:
    encoder = BertEncoder.from_checkpoint(checkpoint)
    preprocessor = BertPreprocessor.from_checkpoint(checkpoint, seq_length=32)
    inputs = preprocessor(SENTENCES)
    outputs = encoder(inputs)
    cls_embeddings = np.asarray(outputs["sequence_output"])[:, 0]
    mask = np.asarray(inputs["input_mask"])[..., None]
    mean_embeddings = (np.asarray(outputs["sequence_output"]) * mask).sum(1) / mask.sum(1)
    print("\n[CLS] embeddings (first 6 of 384 dimensions):")
    for sentence, vector in zip(SENTENCES, cls_embeddings, strict=True):
        print(f"  {np.array2string(vector[:6], precision=3):>50}  {sentence}")
    unit = mean_embeddings / np.linalg.norm(mean_embeddings, axis=1, keepdims=True)
    print("\nCosine similarity of mean-pooled embeddings (how MiniLM was trained):")
    for row, sentence in zip(unit @ unit.T, SENTENCES, strict=True):
        print("  " + " ".join(f"{value:5.2f}" for value in row) + f"  {sentence[:40]}")


@dataclasses.dataclass
class DemoJob:
    """The demo's settings.

    Args:
        checkpoint: the checkpoint directory or Hub id (default: the installed MiniLM-L6).
        revision: the Hub branch, tag or commit when `checkpoint` is a Hub id.
        train_examples: movie-review snippets to fine-tune on.
        base_dir: TF Serving's model base path, where the exports go.
        output_dir: where the fine-tuning run writes its model and logs.
    """

    checkpoint: str | None = None
    revision: str | None = None
    train_examples: int = 1600
    base_dir: str = "saved_models"
    output_dir: str = "runs/demo"


def main(argv: list[str] | None = None) -> None:
    args = parse_job(__doc__, DemoJob, argv)
    # A Hub id is downloaded once; every step below reads the directory.
    checkpoint = str(resolve_checkpoint(job_checkpoint(args.checkpoint), args.revision))

    print(f"1. Encoding with the checkpoint at {checkpoint}")
    show_embeddings(checkpoint)

    print(f"\n2. Fine-tuning for sentiment on {args.train_examples} real movie-review snippets")
    train = read_classification_file(DATA_DIR / "movie_snippets.train.jsonl")
    dev = read_classification_file(DATA_DIR / "movie_snippets.dev.jsonl").sample(400, seed=1)
    config = FinetuningConfig(
        checkpoint,
        args.output_dir,
        seq_length=64,
        batch_size=16,
        epochs=1,
        run={"learning_rate": 1e-4},
        max_train_examples=args.train_examples,
    )
    classifier, summary = finetune_classifier(config, train, dev)
    print(f"   dev accuracy on 400 held-out snippets: {summary['evaluation']['accuracy']:.3f}")

    print(f"\n3. Exporting for TensorFlow Serving under {args.base_dir}/")
    preprocessor = BertPreprocessor.from_checkpoint(checkpoint, seq_length=128)
    exports = {
        "sentiment": export_for_serving(
            serving_module(classifier, preprocessor), args.base_dir, "sentiment"
        ),
        "minilm_encoder": export_for_serving(
            serving_module(BertEncoder.from_checkpoint(checkpoint), preprocessor),
            args.base_dir,
            "minilm_encoder",
        ),
    }
    write_server_config(args.base_dir)
    for name, path in exports.items():
        print(f"   {name}: {path}")

    print("\n4. Querying the exports in a fresh process (imports only tensorflow, tensorflow_text)")
    texts = [SENTENCES[3], SENTENCES[4], "Not bad at all, I enjoyed it."]
    result = subprocess.run(
        [sys.executable, str(QUERY_SCRIPT), str(exports["sentiment"]), *texts],
        check=True,
        capture_output=True,
        text=True,
    )
    for row in json.loads(result.stdout.strip().splitlines()[-1]):
        probability = max(row["probabilities"])
        print(f"   {row['label']:>4} ({probability:.2f})  {row['text']}")


if __name__ == "__main__":
    run_job(main)
