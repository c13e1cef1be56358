"""PyTorch's `pytorch_model.bin` read with numpy, without torch and without running its code.

A `.bin` file is a pickle, and a pickle can call any Python function it names: loading one with
the standard `pickle` module runs whatever the file says. The reader here unpickles with a
`find_class` that allows only what a state dict needs (`collections.OrderedDict`, torch's
storage types and its tensor rebuild functions) and refuses any other global by name, so no
code from the file ever runs. Storages are memory-mapped from the file; each tensor is a view of
its storage (offset, sizes and strides as torch stores them), so reading adds no copy of the
weights until the caller converts them.

Both of torch's formats are read: the zip archive of torch >= 1.6 (`<archive>/data.pkl` and one
member `<archive>/data/<key>` per storage) and the legacy format of older checkpoints such as
the original `bert-base-uncased` (magic number, protocol and system-info pickles, the object
pickle, the storage keys, then each storage as its element count and raw bytes).
"""

from __future__ import annotations

import collections
import dataclasses
import mmap
import pickle
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from keras_bert.errors import CheckpointError

_LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL_VERSION = 1001
_LOCAL_FILE_HEADER = struct.Struct("<4s22xHH")  # signature ... file name and extra lengths
# torch's storage types by name, as the pickles name them (`torch.FloatStorage`), and the numpy
# type of their elements; bfloat16 is read as its 16 bits and widened to float32.
_STORAGE_DTYPES = {
    "FloatStorage": np.dtype("<f4"),
    "HalfStorage": np.dtype("<f2"),
    "BFloat16Storage": np.dtype("<u2"),
    "DoubleStorage": np.dtype("<f8"),
    "LongStorage": np.dtype("<i8"),
    "IntStorage": np.dtype("<i4"),
    "ShortStorage": np.dtype("<i2"),
    "CharStorage": np.dtype("i1"),
    "ByteStorage": np.dtype("u1"),
    "BoolStorage": np.dtype("?"),
}


@dataclasses.dataclass
class _Storage:
    """A storage named by the pickle; its elements are attached once the file is mapped."""

    type_name: str
    numel: int
    elements: np.ndarray | None = None


@dataclasses.dataclass
class _TensorView:
    """A tensor as torch's `_rebuild_tensor_v2` describes it: a strided view of a storage."""

    storage: _Storage
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor(storage, storage_offset, size, stride, *unused) -> _TensorView:
    return _TensorView(storage, int(storage_offset), tuple(size), tuple(stride))


def _rebuild_parameter(data, requires_grad, backward_hooks, *unused):
    return data


_ALLOWED_GLOBALS = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    **{("torch", name): name for name in _STORAGE_DTYPES},
}


class _StateDictUnpickler(pickle.Unpickler):
    """Unpickles a state dict; every global outside `_ALLOWED_GLOBALS` is refused by name."""

    def __init__(self, file, source: Path, storages: dict[str, _Storage]):
        super().__init__(file)
        self.source = source
        self.storages = storages

    def find_class(self, module: str, name: str) -> Any:
        allowed = _ALLOWED_GLOBALS.get((module, name))
        if allowed is None:
            raise CheckpointError(
                f"{self.source} asks to run {module}.{name}, which a weights file never needs; "
                "refused (only tensors, ordered dicts and torch's storages are read)."
            )
        return allowed

    def persistent_load(self, persistent_id: Any) -> _Storage:
        # ('storage', storage type, key, location, element count[, legacy view metadata])
        if not (isinstance(persistent_id, tuple) and persistent_id[:1] == ("storage",)):
            raise CheckpointError(f"{self.source}: unknown persistent id {persistent_id!r}.")
        type_name, key, numel = persistent_id[1], str(persistent_id[2]), int(persistent_id[4])
        if type_name not in _STORAGE_DTYPES:
            raise CheckpointError(f"{self.source}: unsupported storage type {type_name!r}.")
        if len(persistent_id) > 5 and persistent_id[5] is not None:
            raise CheckpointError(f"{self.source}: storage views of torch < 0.4 are not supported.")
        return self.storages.setdefault(key, _Storage(type_name, numel))


def _unpickle(file, source: Path, storages: dict[str, _Storage]) -> Any:
    return _StateDictUnpickler(file, source, storages).load()


def _mapped(path: Path) -> mmap.mmap:
    with open(path, "rb") as file:
        if file.seek(0, 2) == 0:
            raise CheckpointError(f"{path} is empty; download it again.")
        return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)


def _elements(buffer: mmap.mmap, offset: int, storage: _Storage, source: Path) -> np.ndarray:
    dtype = _STORAGE_DTYPES[storage.type_name]
    if offset + storage.numel * dtype.itemsize > len(buffer):
        raise CheckpointError(f"{source} is truncated: a storage runs past the end of the file.")
    return np.frombuffer(buffer, dtype=dtype, count=storage.numel, offset=offset)


def _read_zip(path: Path, storages: dict[str, _Storage]) -> Any:
    buffer = _mapped(path)
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: info for info in archive.infolist()}
        pickles = [name for name in members if name.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise CheckpointError(f"{path} is a zip file without a torch data.pkl.")
        prefix = pickles[0].removesuffix("data.pkl")
        with archive.open(pickles[0]) as file:
            state = _unpickle(file, path, storages)
        for key, storage in storages.items():
            info = members.get(f"{prefix}data/{key}")
            if info is None or info.compress_type != zipfile.ZIP_STORED:
                raise CheckpointError(f"{path} has no uncompressed storage {prefix}data/{key}.")
            header = buffer[info.header_offset : info.header_offset + _LOCAL_FILE_HEADER.size]
            signature, name_length, extra_length = _LOCAL_FILE_HEADER.unpack(header)
            if signature != b"PK\x03\x04":
                raise CheckpointError(f"{path} is corrupted: bad zip header for storage {key}.")
            data_offset = info.header_offset + _LOCAL_FILE_HEADER.size + name_length + extra_length
            storage.elements = _elements(buffer, data_offset, storage, path)
    return state


def _read_legacy(path: Path, storages: dict[str, _Storage]) -> Any:
    with open(path, "rb") as file:
        if _unpickle(file, path, storages) != _LEGACY_MAGIC_NUMBER:
            raise CheckpointError(f"{path} is neither a torch zip archive nor a legacy torch file.")
        if _unpickle(file, path, storages) != _LEGACY_PROTOCOL_VERSION:
            raise CheckpointError(f"{path}: unsupported legacy torch protocol version.")
        _unpickle(file, path, storages)  # system info: byte order and type sizes
        state = _unpickle(file, path, storages)
        keys = _unpickle(file, path, storages)
        offset = file.tell()
    buffer = _mapped(path)
    for key in keys:
        storage = storages[str(key)]
        # Each storage: its element count (int64), then its bytes.
        (numel,) = struct.unpack_from("<q", buffer, offset) if offset + 8 <= len(buffer) else (-1,)
        if numel != storage.numel:
            raise CheckpointError(f"{path} is truncated or corrupted at storage {key}.")
        storage.elements = _elements(buffer, offset + 8, storage, path)
        offset += 8 + storage.elements.nbytes
    return state


def _array(tensor: _TensorView, source: Path) -> np.ndarray:
    """The tensor as a read-only strided view of its storage (bfloat16: widened to float32)."""
    elements = tensor.storage.elements
    if elements is None:
        raise CheckpointError(f"{source} is truncated: a tensor's storage is missing.")
    last = tensor.offset + sum(
        (size - 1) * step for size, step in zip(tensor.shape, tensor.stride, strict=True)
    )
    if 0 not in tensor.shape and (tensor.offset < 0 or last >= len(elements)):
        raise CheckpointError(f"{source} is corrupted: a tensor lies outside its storage.")
    view = np.lib.stride_tricks.as_strided(
        elements[tensor.offset :] if 0 not in tensor.shape else elements[:0],
        shape=tensor.shape,
        strides=tuple(step * elements.itemsize for step in tensor.stride),
        writeable=False,
    )
    if tensor.storage.type_name == "BFloat16Storage":
        widened = view.astype(np.uint32)
        widened <<= 16
        return widened.view(np.float32)
    return view


def read_torch_state_dict(path: str | Path) -> dict[str, np.ndarray]:
    """The tensors of a `pytorch_model.bin`, by name, read without torch.

    float16 and float32 tensors are read-only views of the memory-mapped file (copy them to
    keep them past the file); bfloat16 ones are widened to float32.

    Args:
        path: a file written by `torch.save` (zip or legacy format) holding a state dict.

    Raises:
        CheckpointError: the file is truncated or corrupted, is not a state dict, or names a
            global other than an ordered dict, a torch storage or a tensor rebuild function.

    Example:
    >>> state = read_torch_state_dict("tests/checkpoints/fixtures/torch_zip.bin")
    >>> state["shared.view"].shape, str(state["bfloat16"].dtype)
    ((3, 2), 'float32')
    """
    path = Path(path)
    storages: dict[str, _Storage] = {}
    try:
        state = (_read_zip if zipfile.is_zipfile(path) else _read_legacy)(path, storages)
        if not isinstance(state, dict) or not all(
            isinstance(value, _TensorView) for value in state.values()
        ):
            raise CheckpointError(f"{path} does not hold a state dict of tensors.")
        return {str(name): _array(tensor, path) for name, tensor in state.items()}
    except FileNotFoundError:
        raise CheckpointError(f"Missing weights file {path}.") from None
    except (
        pickle.UnpicklingError, EOFError, zipfile.BadZipFile, ValueError, struct.error,
        TypeError, KeyError, IndexError, AttributeError,
    ) as error:  # fmt: skip
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(
            f"Cannot read {path}: {error}. The file is truncated or not a torch checkpoint; "
            "download it again."
        ) from None
