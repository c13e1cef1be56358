"""`pipelines.export --format onnx`: the versioned layout, and `both` in one version."""

from __future__ import annotations

import pytest

from pipelines import export


@pytest.mark.slow
def test_onnx_and_both_formats(tiny_checkpoint_dir, tmp_path):
    arguments = ["--task", "encoder", "--name", "tiny", "--checkpoint", str(tiny_checkpoint_dir)]
    arguments += ["--seq-length", "16", "--base-dir", str(tmp_path)]
    first = export.main([*arguments, "--format", "onnx"])
    assert first == tmp_path / "tiny" / "1"
    assert (first / "model.onnx").is_file() and not (first / "saved_model.pb").exists()
    both = export.main([*arguments, "--format", "both"])
    assert both == tmp_path / "tiny" / "2"  # a new version, never over the first
    assert (both / "model.onnx").is_file() and (both / "saved_model.pb").is_file()
    with pytest.raises(ValueError, match="ONNX exports are float32, int8 or auto"):
        export.main([*arguments, "--format", "onnx", "--precision", "bfloat16"])
