"""What a converted encoder folder says about itself, and the CPU precision choice.

A leaf module (it imports nothing of the project): ``retriever`` and ``reader`` use it.

A folder written by ``xqa convert e5`` carries ``xqa_encoder.json`` next to the Hugging Face
files: how a text becomes one vector (mean pooling, L2 normalisation), the prefixes the model
was trained with ("query: " / "passage: ", as the multilingual-e5 model card says), the
precision it runs in, and where the weights came from. Models built on it (the bi-encoder,
Λ, the span reader) copy these settings into their own artifact config, so no call site
hard-codes a prefix or a pooling.
"""
from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

INFO_NAME = "xqa_encoder.json"
PRECISIONS = ("auto", "bf16", "fp32", "int8")


@dataclass
class EncoderInfo:
    pooling: str = "mean"            # cls | mean
    normalize: bool = True           # L2-normalise the pooled vector
    query_prefix: str = "query: "
    passage_prefix: str = "passage: "
    precision: str = "auto"          # auto: as its check chose (xqa.encoders.runtime.choose)
    source: dict[str, Any] = field(default_factory=dict)
    runtime: dict[str, Any] = field(default_factory=dict)   # the int8 file, its check, the CPU's choice

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EncoderInfo":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def save(self, folder: str | Path) -> None:
        """Write ``xqa_encoder.json`` (through a temporary name: never half-written)."""
        path = Path(folder) / INFO_NAME
        tmp = path.with_name(f".{INFO_NAME}.tmp")
        tmp.write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)


def read_info(folder: str | Path) -> EncoderInfo | None:
    """The folder's ``xqa_encoder.json``, or None for a plain Hugging Face folder or hub name."""
    path = Path(folder) / INFO_NAME
    if not path.is_file():
        return None
    with open(path, encoding="utf-8") as f:
        return EncoderInfo.from_dict(json.load(f))


def bf16_supported() -> bool:
    """True when this CPU runs bf16 matmuls natively (AVX512-BF16 or AMX), where bf16 autocast
    is about 3x faster than fp32 for multilingual-e5-small; elsewhere bf16 is emulated and slow."""
    import torch

    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def use_bf16(precision: str, device) -> bool:
    """Resolve a precision setting for a device: ``bf16`` and ``fp32`` are taken as said;
    ``auto`` is bf16 on CUDA and on CPUs with native bf16, fp32 elsewhere."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose from {', '.join(PRECISIONS)}")
    if precision != "auto":
        return precision == "bf16"
    return getattr(device, "type", str(device)) == "cuda" or bf16_supported()


def autocast(device, precision: str = "fp32"):
    """A bf16 autocast context for ``device`` when :func:`use_bf16` says so, else a no-op."""
    import torch

    if not use_bf16(precision, device):
        return contextlib.nullcontext()
    kind = getattr(device, "type", str(device))
    return torch.autocast("cuda" if kind == "cuda" else "cpu", dtype=torch.bfloat16)
