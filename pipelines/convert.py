"""Converts a checkpoint (Hub id or directory; safetensors or `pytorch_model.bin`) into a
directory every loader reads: `model.safetensors`, `config.json` and the tokenizer files. For
air-gapped machines: convert on a connected one, copy the directory over.

    .venv/bin/python -m pipelines.convert microsoft/deberta-v3-base --output deberta-v3-base
    .venv/bin/python -m pipelines.convert bert-base-uncased --revision main --output bert
"""

from __future__ import annotations

from pipelines.common import JobParser, run_job


def main(argv: list[str] | None = None):
    from keras_bert.checkpoints.conversion import convert_checkpoint

    parser = JobParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="a Hub id (org/name or name) or a local directory")
    parser.add_argument("--output", required=True, help="the directory to write")
    parser.add_argument("--revision", help="the Hub branch, tag or commit (default: main)")
    args = parser.parse_args(argv)
    conversion = convert_checkpoint(args.checkpoint, args.output, revision=args.revision)
    print(f"read: {', '.join(conversion.read)}")
    print(f"ignored ({len(conversion.ignored)} tensors no model reads): ", end="")
    print(", ".join(conversion.ignored) or "none")
    print(f"wrote {conversion.tensors} tensors to {args.output}: {', '.join(conversion.written)}")
    return conversion


if __name__ == "__main__":
    run_job(main)
