"""The package's structure: no import circles, and a client that stays light."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "keras_bert"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports() -> dict[str, set[str]]:
    """Each keras_bert module → the keras_bert modules it imports, wherever the import stands
    (inside functions and `TYPE_CHECKING` blocks too: an import that runs late still says
    which module stands on which)."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    imported.add(submodule if submodule in modules else node.module)
        graph[name] = {module for module in imported if module in modules and module != name}
    return graph


# The package's layers from the ground up, as docs/development.md draws them: a module imports
# modules of its own layer and of the layers below, never of a layer above.
LAYERS = (
    # The clients and the ONNX runtime stand on nothing of keras_bert, so the export can use
    # them (a warm-up file's requests; the ONNX export's checks).
    (
        "keras_bert.errors",
        "keras_bert.cpu",
        "keras_bert.timing",
        "keras_bert.serving",
    ),
    ("keras_bert.families",),
    ("keras_bert.config",),
    ("keras_bert.training", "keras_bert.layers", "keras_bert.checkpoints"),
    ("keras_bert.text",),
    ("keras_bert.decoding",),
    ("keras_bert.data",),
    ("keras_bert.models", "keras_bert.metrics"),
    ("keras_bert.export", "keras_bert.keras_hub_conversion", "keras_bert.publishing"),
    ("keras_bert.finetuning", "keras_bert.pretraining"),
    ("keras_bert.distillation",),
    ("keras_bert.loading", "keras_bert"),
)


def layer_of(module: str) -> int:
    """The index in `LAYERS` of the (longest) entry that `module` is or lies under."""
    entries = [
        (len(entry), index)
        for index, entries in enumerate(LAYERS)
        for entry in entries
        if module == entry or module.startswith(f"{entry}.")
    ]
    return max(entries)[1]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for successor in sorted(graph[node]):
            if state.get(successor) == "open":
                return path[path.index(successor) :] + [successor] if successor in path else [node]
            if successor not in state:
                cycle = visit(successor, [*path, successor])
                if cycle:
                    return cycle
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node, [node])
            if cycle:
                return cycle
    return None


def test_no_import_circles():
    graph = module_imports()
    assert len(graph) > 50
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_imports_only_look_down_the_layers():
    upward = sorted(
        f"{module} -> {imported}"
        for module, imports in module_imports().items()
        for imported in imports
        if layer_of(imported) > layer_of(module)
    )
    assert upward == []


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize(
    "statement",
    [
        "import keras_bert.serving",
        "from keras_bert.serving import RestClient, row_request; RestClient('m').url",
        "import keras_bert, keras_bert.errors; keras_bert.BertConfig.preset('tiny')",
        # A scorer of GLUE, CoNLL or SQuAD predictions needs no TensorFlow.
        "from keras_bert.metrics import entity_scores, squad_scores; "
        "squad_scores({'q': 'Paris'}, {'q': ['Paris']}); entity_scores([['B-x']], [['B-x']])",
        "from keras_bert.metrics.glue import glue_average; glue_average({'rte': {'accuracy': 1}})",
    ],
)
def test_client_config_and_scorers_import_without_tensorflow_or_keras(statement):
    check = "import sys; assert not {'tensorflow', 'keras'} & set(sys.modules), sorted(sys.modules)"
    subprocess.run([sys.executable, "-c", f"{statement}; {check}"], check=True, timeout=120)


def test_a_saved_compiled_model_loads_after_import_keras_and_keras_bert(tmp_path):
    from keras_bert import BertClassifier, BertConfig, BertEncoder
    from keras_bert.training import create_optimizer

    path = tmp_path / "classifier.keras"
    classifier = BertClassifier(BertEncoder(BertConfig.preset("tiny", vocab_size=50)), 2)
    classifier.compile(optimizer=create_optimizer(1e-4, total_steps=10))  # saved with it
    classifier.save(path)
    load = f"import keras, keras_bert; keras.saving.load_model({str(path)!r})"
    subprocess.run([sys.executable, "-c", load], check=True, timeout=120)


def test_top_level_names_load_on_first_use():
    import keras_bert

    assert "BertEncoder" in dir(keras_bert) and keras_bert.BertEncoder.__name__ == "BertEncoder"
    with pytest.raises(AttributeError, match="no attribute 'Missing'"):
        keras_bert.Missing  # noqa: B018


def test_encoders_load_without_tensorflow_text_and_tokenizers_import_it():
    # Its op libraries are about 110 MB of resident memory that an encoder does not use.
    checkpoint = "../shared/reference/variants/modernbert"
    script = (
        "import sys, keras_bert; "
        f"keras_bert.load_encoder({checkpoint!r}); "
        "assert 'tensorflow_text' not in sys.modules; "
        "keras_bert.BertPreprocessor(['[PAD]', '[UNK]', '[CLS]', '[SEP]', 'a'])(['a']); "
        "assert 'tensorflow_text' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
