"""The TF Serving layout: integer versions, atomic appearance, no overwrite."""

import pytest

from keras_bert.export.layout import (
    TEMPORARY_PREFIX,
    VersionExistsError,
    existing_versions,
    next_version,
    write_version,
)


def _write_file(directory):
    (directory / "saved_model.pb").write_bytes(b"model")


def test_versions_count_up_from_one(tmp_path):
    model_dir = tmp_path / "base" / "classifier"
    assert next_version(model_dir) == 1
    assert write_version(model_dir, _write_file) == model_dir / "1"
    assert write_version(model_dir, _write_file) == model_dir / "2"
    assert write_version(model_dir, _write_file, version=10) == model_dir / "10"
    (model_dir / "notes").mkdir()  # not a version: the server ignores non-integer names
    assert existing_versions(model_dir) == [1, 2, 10]
    assert next_version(model_dir) == 11
    assert (model_dir / "2" / "saved_model.pb").read_bytes() == b"model"


def test_a_version_appears_complete_or_not_at_all(tmp_path):
    model_dir = tmp_path / "encoder"
    seen_while_writing = []

    def write(directory):
        assert directory.parent == model_dir
        assert directory.name.startswith(TEMPORARY_PREFIX)
        (directory / "saved_model.pb").write_bytes(b"half")
        seen_while_writing.append(existing_versions(model_dir))

    write_version(model_dir, write)
    assert seen_while_writing == [[]]
    assert existing_versions(model_dir) == [1]
    assert [path.name for path in model_dir.iterdir()] == ["1"]


def test_existing_version_is_never_overwritten(tmp_path):
    model_dir = tmp_path / "encoder"
    write_version(model_dir, _write_file, version=3)
    with pytest.raises(
        VersionExistsError, match="Version 3 .* already exists.*next free version: 4"
    ):
        write_version(model_dir, lambda directory: None, version=3)
    assert (model_dir / "3" / "saved_model.pb").read_bytes() == b"model"


def test_failed_write_leaves_nothing(tmp_path):
    model_dir = tmp_path / "encoder"

    def failing_write(directory):
        _write_file(directory)
        raise RuntimeError("export failed")

    with pytest.raises(RuntimeError, match="export failed"):
        write_version(model_dir, failing_write)
    assert list(model_dir.iterdir()) == []


@pytest.mark.parametrize("version", [-1, True, "2", 1.0])
def test_bad_versions_are_rejected(tmp_path, version):
    with pytest.raises(ValueError, match="non-negative integer"):
        write_version(tmp_path, _write_file, version=version)
