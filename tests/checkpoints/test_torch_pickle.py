"""`pytorch_model.bin` without torch: both formats, every dtype, views, and hostile files."""

import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from keras_bert.checkpoints.torch_pickle import read_torch_state_dict
from keras_bert.errors import CheckpointError

FIXTURES = Path(__file__).parent / "fixtures"
FORMATS = ("torch_zip.bin", "torch_legacy.bin")


@pytest.fixture(scope="module")
def expected() -> dict[str, np.ndarray]:
    with np.load(FIXTURES / "torch_expected.npz") as arrays:
        return dict(arrays)


@pytest.mark.parametrize("file_name", FORMATS)
def test_reads_what_torch_wrote(file_name, expected):
    state = read_torch_state_dict(FIXTURES / file_name)

    assert list(state) == list(expected)
    for name, array in expected.items():
        assert state[name].shape == array.shape, name
        np.testing.assert_array_equal(state[name].astype(array.dtype), array, err_msg=name)
    assert state["float16"].dtype == np.float16
    assert state["bfloat16"].dtype == np.float32  # widened: bfloat16 is float32's upper bits
    assert state["position_ids"].dtype == np.int64


@pytest.mark.parametrize("file_name", FORMATS)
def test_views_share_the_mapped_storage_without_copies(file_name):
    state = read_torch_state_dict(FIXTURES / file_name)

    base, view, transposed = state["shared.base"], state["shared.view"], state["shared.transposed"]
    assert np.shares_memory(base, view) and np.shares_memory(base, transposed)
    assert transposed.strides == (base.itemsize, 3 * base.itemsize)
    assert not base.flags.writeable


@pytest.mark.peer
@pytest.mark.parametrize("file_name", [*FORMATS, "tinybert/pytorch_model.bin"])
def test_agrees_with_torch_load(file_name):
    torch = pytest.importorskip("torch")

    ours = read_torch_state_dict(FIXTURES / file_name)
    theirs = torch.load(FIXTURES / file_name, weights_only=True)

    assert list(ours) == list(theirs)
    for name, tensor in theirs.items():
        reference = tensor.float().numpy() if tensor.is_floating_point() else tensor.numpy()
        np.testing.assert_array_equal(ours[name].astype(reference.dtype), reference)


class _RunsCommand:
    """What an attacker pickles: unpickling it runs a shell command."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def _hostile_files(directory: Path, payload: bytes) -> list[Path]:
    legacy = directory / "legacy.bin"
    legacy.write_bytes(payload)
    archive = directory / "zip.bin"
    with zipfile.ZipFile(archive, "w") as file:
        file.writestr("archive/data.pkl", payload)
    return [legacy, archive]


def test_a_pickle_that_runs_code_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"weight": _RunsCommand(f"touch {marker}")}, protocol=2)

    for path in _hostile_files(tmp_path, payload):
        with pytest.raises(CheckpointError, match=r"asks to run posix\.system.*refused"):
            read_torch_state_dict(path)
    assert not marker.exists()


@pytest.mark.parametrize("global_name", ["builtins.eval", "subprocess.Popen", "torch.load"])
def test_any_other_global_is_refused_by_name(tmp_path, global_name):
    module, name = global_name.rsplit(".", 1)
    payload = b"\x80\x02c" + f"{module}\n{name}\n".encode() + b"q\x00."

    for path in _hostile_files(tmp_path, payload):
        with pytest.raises(CheckpointError, match=rf"asks to run {global_name}"):
            read_torch_state_dict(path)


@pytest.mark.parametrize("file_name", FORMATS)
@pytest.mark.parametrize("fraction", [0.1, 0.6, 0.97])
def test_truncated_files_are_checkpoint_errors(tmp_path, file_name, fraction):
    data = (FIXTURES / file_name).read_bytes()
    truncated = tmp_path / "pytorch_model.bin"
    truncated.write_bytes(data[: int(len(data) * fraction)])

    with pytest.raises(CheckpointError, match="pytorch_model.bin"):
        read_torch_state_dict(truncated)


@pytest.mark.parametrize("file_name", FORMATS)
def test_corrupted_pickle_is_a_checkpoint_error(tmp_path, file_name):
    data = bytearray((FIXTURES / file_name).read_bytes())
    start = data.find(b"\x80\x02") if file_name == "torch_legacy.bin" else data.find(b"data.pkl")
    data[start + 40 : start + 80] = bytes(range(40))
    corrupted = tmp_path / "pytorch_model.bin"
    corrupted.write_bytes(bytes(data))

    with pytest.raises(CheckpointError):
        read_torch_state_dict(corrupted)


@pytest.mark.parametrize("content", [b"", b"not a torch file at all", pickle.dumps([1, 2])])
def test_files_that_are_not_state_dicts_are_checkpoint_errors(tmp_path, content):
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(content)

    with pytest.raises(CheckpointError, match="pytorch_model.bin"):
        read_torch_state_dict(path)
