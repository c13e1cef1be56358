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
    with pytest.raises(ValueError, match="ONNX exports are float32, bfloat16, int8, auto"):
        export.main([*arguments, "--format", "onnx", "--precision", "float16"])


@pytest.mark.parametrize(
    ("flags", "refused"),
    [
        (["--precision", "int8"], "pass --agreement-data, a JSONL of at least 300"),
        (["--precision", "bfloat16"], "bfloat16 is checked against float32 on held-out inputs"),
        (["--int8-mode", "float16"], "Unknown --int8-mode 'float16'"),
    ],
)
def test_onnx_int8_flags_are_checked_before_the_model_loads(flags, refused, capsys):
    arguments = ["--task", "classifier", "--name", "x", "--model", "missing.keras"]
    with pytest.raises(SystemExit) as exited:
        export.run_job(export.main, [*arguments, "--format", "onnx", *flags])
    assert exited.value.code == 2
    printed = capsys.readouterr().err
    assert printed.startswith("error: ") and refused in printed and printed.count("\n") == 1
