"""Why is masked-LM accuracy where it is? Checks behind BENCHMARKS.md's BERT-tiny run.

# Held-out accuracy of a finished pretraining run, split by what the model saw at each
# predicted position ([MASK], the original token, a random token).
python -m bench.masked_lm_diagnostics breakdown runs/tiny/run

# Can the model learn context at all? Counting sequences (each token is its left
# neighbour + 1), masked as in pretraining; keras_bert vs keras-hub at the same size.
python -m bench.masked_lm_diagnostics synthetic --steps 400

# Is the plateau ours? keras_bert and keras-hub at the same size, optimizer and schedule on the
# same real batches (BERT-tiny, shared/data/pretraining, 20 documents held out); held-out
# masked accuracy every --every steps. --learning_rate, --dropout_rate, --seq_length,
# --batch_size, --initializer_range and --precision vary it.
python -m bench.masked_lm_diagnostics corpus --steps 2000

# What does the nearest context alone give? Guess each held-out masked token as the most
# frequent successor of its (unmasked) left neighbour, counted over --steps training batches.
python -m bench.masked_lm_diagnostics left_neighbour --steps 2000
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

VOCABULARY_SIZE, SEQUENCE_LENGTH, BATCH_SIZE = 200, 32, 32
IMPLEMENTATIONS = ("keras_bert", "keras_hub")
CORPUS_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "pretraining"
CORPUS_FILES = ("wikipedia_sample.txt", "austen_novels.txt")


def breakdown(run_dir: Path) -> None:
    import keras
    import numpy as np

    from keras_bert.pretraining import PretrainingConfig, build_datasets
    from keras_bert.text import load_vocabulary

    values = json.loads((run_dir / "config.json").read_text("utf-8"))
    config = PretrainingConfig(**{**values, "output_dir": str(run_dir)})
    _, evaluation = build_datasets(config)
    if evaluation is None:
        raise SystemExit(f"{run_dir} was trained without held-out documents.")
    # The run's own copy: runs started from --init_checkpoint name no vocabulary_file.
    vocabulary = load_vocabulary(run_dir / "checkpoint" / "vocab.txt")
    mask_id = vocabulary.index("[MASK]")
    model = keras.saving.load_model(run_dir / "pretrainer.keras")
    counts, correct = collections.Counter(), collections.Counter()
    guesses_at_mask = collections.Counter()
    for inputs, labels, weights in evaluation:
        guesses = np.argmax(model.predict_on_batch(inputs)["masked_lm"], axis=-1)
        positions = inputs["masked_lm_positions"].numpy()
        shown = np.take_along_axis(inputs["input_word_ids"].numpy(), positions, axis=1)
        labels, real = labels["masked_lm"].numpy(), weights["masked_lm"].numpy() > 0
        kinds = np.where(
            shown == mask_id, "[MASK]", np.where(shown == labels, "unchanged", "random")
        )
        for kind in ("[MASK]", "unchanged", "random"):
            selected = real & (kinds == kind)
            counts[kind] += int(selected.sum())
            correct[kind] += int((guesses == labels)[selected].sum())
        guesses_at_mask.update(guesses[real & (kinds == "[MASK]")].tolist())
    total = sum(counts.values())
    for kind, count in counts.items():
        print(f"{kind:10s} share {count / total:.3f}  accuracy {correct[kind] / count:.3f}")
    print(f"overall accuracy {sum(correct.values()) / total:.3f} over {total} predictions")
    top = [(vocabulary[i], n) for i, n in guesses_at_mask.most_common(5)]
    print(f"{len(guesses_at_mask)} distinct guesses at [MASK]; most common: {top}")


def synthetic_batches(steps: int):
    """`(inputs, masked_ids, masked_weights)` of counting sequences, masked as in pretraining."""
    import numpy as np
    import tensorflow as tf

    from keras_bert.data.masking import MaskingConfig, TokenMasker

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocabulary = specials + [f"w{i}" for i in range(VOCABULARY_SIZE - len(specials))]
    masker = TokenMasker(vocabulary, MaskingConfig(max_predictions_per_seq=5))
    rng = np.random.default_rng(0)
    for step in range(steps):
        starts = rng.integers(len(specials), VOCABULARY_SIZE - SEQUENCE_LENGTH, BATCH_SIZE)
        counting = starts[:, None] + np.arange(SEQUENCE_LENGTH - 2)[None]
        word_ids = np.concatenate(
            [np.full((BATCH_SIZE, 1), 2), counting, np.full((BATCH_SIZE, 1), 3)], axis=1
        ).astype("int32")
        mask = np.ones_like(word_ids)
        features = masker(tf.constant(word_ids), tf.constant(mask), tf.constant([step, 0]))
        inputs = {
            "input_word_ids": features["input_word_ids"],
            "input_mask": mask,
            "input_type_ids": np.zeros_like(word_ids),
            "masked_lm_positions": features["masked_lm_positions"],
        }
        yield inputs, features["masked_lm_ids"], features["masked_lm_weights"]


def compiled_model(implementation: str, config, optimizer):
    """keras_bert's `BertPretrainer` (MLM + NSP) or keras-hub's `BertMaskedLM` (MLM), compiled
    with `optimizer`; both report masked accuracy as `masked_lm_accuracy`."""
    from bench.bench_pretraining import keras_hub_masked_lm
    from keras_bert.models.pretrainer import BertPretrainer

    if implementation == "keras_hub":
        return keras_hub_masked_lm(config, optimizer)
    model = BertPretrainer(config)
    model.compile(optimizer=optimizer)
    return model


def keras_hub_example(inputs, labels, weights):
    """A `BertPretrainer` example `(inputs, labels, weights)` as `BertMaskedLM` takes it."""
    from bench.bench_pretraining import keras_hub_inputs

    keys = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")
    return (
        keras_hub_inputs(*(inputs[key] for key in keys)),
        labels["masked_lm"],
        weights["masked_lm"],
    )


def synthetic(steps: int) -> None:
    import keras
    import numpy as np

    from keras_bert import BertConfig

    config = BertConfig.preset("tiny", vocab_size=VOCABULARY_SIZE, max_position_embeddings=64)
    for implementation in IMPLEMENTATIONS:
        keras.utils.set_random_seed(0)
        model = compiled_model(implementation, config, keras.optimizers.AdamW(1e-3))
        for step, (inputs, masked_ids, weights) in enumerate(synthetic_batches(steps + 1)):
            # Arrays, not lists: Keras reads a list as a structure of scalars.
            labels = {"masked_lm": masked_ids, "next_sentence": np.zeros(BATCH_SIZE, "int32")}
            sample_weight = {"masked_lm": weights, "next_sentence": np.ones(BATCH_SIZE, "float32")}
            if implementation == "keras_hub":
                inputs, labels, sample_weight = keras_hub_example(inputs, labels, sample_weight)
            logs = model.train_on_batch(
                inputs, labels, sample_weight=sample_weight, return_dict=True
            )
            model.reset_metrics()
            if step % 100 == 0:
                accuracy = logs["masked_lm_accuracy"]
                print(f"{implementation:10s} step {step:4d}  masked accuracy {accuracy:.3f}")


def corpus_datasets(arguments: argparse.Namespace):
    """Training and held-out datasets of the real corpus (20 documents held out)."""
    import tempfile

    from keras_bert.pretraining import PretrainingConfig, build_datasets
    from pipelines.common import default_checkpoint

    run = PretrainingConfig(
        output_dir=tempfile.mkdtemp(),
        vocabulary_file=str(Path(default_checkpoint()) / "vocab.txt"),
        input_files=[str(CORPUS_DIR / name) for name in CORPUS_FILES],
        held_out_documents=20,
        global_batch_size=arguments.batch_size,
        total_steps=arguments.steps,
        steps_per_checkpoint=arguments.every,
        eval_steps=20,
        data={
            "seq_length": arguments.seq_length,
            "masking": {"max_predictions_per_seq": round(0.15 * arguments.seq_length)},
        },
    )
    train, evaluation = build_datasets(run)
    # A streamed corpus gives a dataset function (per input pipeline): here there is one.
    return (train() if callable(train) else train), evaluation


def unmasked_ids(inputs, labels):
    """The original token ids of a batch: its masked positions filled back in."""
    import numpy as np

    ids = inputs["input_word_ids"].numpy().copy()
    np.put_along_axis(ids, inputs["masked_lm_positions"].numpy(), labels["masked_lm"].numpy(), 1)
    return ids


def left_neighbour_baseline(arguments: argparse.Namespace) -> None:
    """Held-out accuracy of guessing each masked token from its true left neighbour, with
    successor counts from --steps training batches (and of always guessing the top token)."""
    import collections

    import numpy as np

    train, evaluation = corpus_datasets(arguments)
    successors = collections.defaultdict(collections.Counter)
    frequency = collections.Counter()
    for inputs, labels, _ in train.take(arguments.steps):
        masks = inputs["input_mask"].numpy()
        for ids, mask in zip(unmasked_ids(inputs, labels), masks, strict=True):
            row = ids[mask > 0].tolist()  # no padding
            frequency.update(row[1:])
            for left, token in zip(row[:-1], row[1:], strict=True):
                successors[left][token] += 1
    most_frequent = frequency.most_common(1)[0][0]
    guess = {left: counts.most_common(1)[0][0] for left, counts in successors.items()}
    total = by_neighbour = by_frequency = 0
    for inputs, labels, weights in evaluation:
        original = unmasked_ids(inputs, labels)
        positions = inputs["masked_lm_positions"].numpy()
        lefts = np.take_along_axis(original, np.maximum(positions - 1, 0), axis=1)
        real = weights["masked_lm"].numpy() > 0
        targets = labels["masked_lm"].numpy()[real].tolist()
        for left, label in zip(lefts[real].tolist(), targets, strict=True):
            total += 1
            by_neighbour += guess.get(left, most_frequent) == label
            by_frequency += most_frequent == label
    print(
        f"left-neighbour guess {by_neighbour / total:.3f}, most frequent token "
        f"{by_frequency / total:.3f}, over {total} held-out predictions"
    )


def corpus(arguments: argparse.Namespace) -> None:
    import keras

    from keras_bert import BertConfig
    from keras_bert.training import create_optimizer

    keras.mixed_precision.set_global_policy(arguments.precision)
    config = BertConfig.preset(
        "tiny",
        dropout_rate=arguments.dropout_rate,
        attention_dropout_rate=arguments.dropout_rate,
        initializer_range=arguments.initializer_range,
    )
    for implementation in arguments.implementations:
        keras.utils.set_random_seed(0)
        train, evaluation = corpus_datasets(arguments)
        if implementation == "keras_hub":
            train, evaluation = train.map(keras_hub_example), evaluation.map(keras_hub_example)
        optimizer = create_optimizer(arguments.learning_rate, arguments.steps)
        model = compiled_model(implementation, config, optimizer)
        for epoch in range(arguments.steps // arguments.every):
            model.fit(
                train,
                initial_epoch=epoch,
                epochs=epoch + 1,
                steps_per_epoch=arguments.every,
                verbose=0,
            )
            accuracy = model.evaluate(evaluation, verbose=0, return_dict=True)
            step = (epoch + 1) * arguments.every
            print(
                f"{implementation:10s} step {step:5d}  held-out masked accuracy "
                f"{accuracy['masked_lm_accuracy']:.4f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("breakdown").add_argument("run_dir", type=Path)
    commands.add_parser("synthetic").add_argument("--steps", type=int, default=400)
    data = argparse.ArgumentParser(add_help=False)
    data.add_argument("--steps", type=int, default=2000)
    data.add_argument("--every", type=int, default=500)
    data.add_argument("--batch_size", type=int, default=32)
    data.add_argument("--seq_length", type=int, default=128)
    commands.add_parser("left_neighbour", parents=[data])
    real = commands.add_parser("corpus", parents=[data])
    real.add_argument("--implementations", nargs="+", default=IMPLEMENTATIONS)
    real.add_argument("--learning_rate", type=float, default=2e-3)
    real.add_argument("--dropout_rate", type=float, default=0.1)
    real.add_argument("--initializer_range", type=float, default=0.02)
    real.add_argument("--precision", default="mixed_bfloat16")
    arguments = parser.parse_args()
    if arguments.command == "breakdown":
        breakdown(arguments.run_dir)
    elif arguments.command == "synthetic":
        synthetic(arguments.steps)
    elif arguments.command == "left_neighbour":
        left_neighbour_baseline(arguments)
    else:
        corpus(arguments)


if __name__ == "__main__":
    main()
