"""This machine's CPU: its model name and the features that decide a precision's speed.

bfloat16 matmuls are fast only with AVX512_BF16 or AMX; int8 instructions (VNNI: AVX512_VNNI or
AVX-VNNI; AMX) are what an int8 matmul needs to beat float32. On a CPU with AVX2 and FMA only,
float32 is the fastest of the three, in serving (BENCHMARKS.md, section Serving) as in
training. Linux reports the features in `/proc/cpuinfo`.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from pathlib import Path

# The features that decide a precision's speed, by their `/proc/cpuinfo` flag.
CPU_FEATURES = (
    "avx2",
    "fma",
    "avx512f",
    "avx512_bf16",
    "avx512_vnni",
    "avx_vnni",
    "amx_bf16",
    "amx_int8",
)
CPUINFO = Path("/proc/cpuinfo")
# The environment variable TensorFlow reads as it starts to turn its oneDNN kernels on (1) or
# off (0); unset, it decides by the CPU (`tensorflow_leaves_faster_onednn_off`).
ONEDNN_SWITCH = "TF_ENABLE_ONEDNN_OPTS"


def _cpuinfo_field(name: str) -> str | None:
    if not CPUINFO.is_file():
        return None
    for line in CPUINFO.read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return None


def cpu_model() -> str:
    """The CPU's model name (e.g. "AMD EPYC"), or the platform's processor string off Linux.

    Example:
    >>> isinstance(cpu_model(), str)
    True
    """
    return _cpuinfo_field("model name") or platform.processor() or "unknown CPU"


def cpu_features() -> dict[str, bool]:
    """Which of `CPU_FEATURES` this CPU has (all False where `/proc/cpuinfo` is missing).

    Example:
    >>> sorted(cpu_features()) == sorted(CPU_FEATURES)
    True
    """
    flags = set((_cpuinfo_field("flags") or "").split())
    return {feature: feature in flags for feature in CPU_FEATURES}


def has_bfloat16_units(features: Mapping[str, bool] | None = None) -> bool:
    """Whether a CPU with `features` (default: this one's, `cpu_features()`) multiplies
    bfloat16 in hardware (AVX512_BF16 or AMX); elsewhere bfloat16 is emulated, slower than
    float32.

    Example:
    >>> has_bfloat16_units({"avx2": True, "fma": True, "avx512_bf16": False, "amx_bf16": False})
    False
    >>> has_bfloat16_units({"avx512_bf16": False, "amx_bf16": True})
    True
    """
    if features is None:
        features = cpu_features()
    return bool(features.get("avx512_bf16") or features.get("amx_bf16"))


def tensorflow_leaves_faster_onednn_off(features: Mapping[str, bool] | None = None) -> bool:
    """Whether TensorFlow leaves its oneDNN kernels off on a CPU with `features` (default:
    this one's) although they train faster there: an x86 CPU with AVX2 and FMA but without
    AVX-512.

    TensorFlow turns oneDNN on by itself only where the CPU has AVX-512 VNNI, AVX512_BF16,
    AVX-VNNI or AMX; `TF_ENABLE_ONEDNN_OPTS=1` turns it on elsewhere. On the AMD EPYC with AVX2
    only, that fine-tuned MiniLM-L6 1.10-1.14x faster (MRPC, CoLA, CoNLL-2003) and stepped the
    pretraining recipes 1.65-1.77x faster (docs/pipelines.md).
    AVX-512 CPUs without VNNI or BF16 were not measured, so they keep TensorFlow's choice.

    Example:
    >>> tensorflow_leaves_faster_onednn_off({"avx2": True, "fma": True, "avx512f": False})
    True
    >>> tensorflow_leaves_faster_onednn_off({"avx2": True, "fma": True, "avx512f": True})
    False
    """
    if features is None:
        features = cpu_features()
    return bool(features.get("avx2") and features.get("fma") and not features.get("avx512f"))


def cpu_summary() -> str:
    """One line naming the CPU, its core count and the features of `CPU_FEATURES` it has and
    lacks.

    Example:
    >>> "avx512_bf16" in cpu_summary()
    True
    """
    features = cpu_features()
    has = ", ".join(name for name, present in features.items() if present) or "none"
    lacks = ", ".join(name for name, present in features.items() if not present) or "none"
    return f"{cpu_model()}, {os.cpu_count()} cores; has: {has}; lacks: {lacks}"
