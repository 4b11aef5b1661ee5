"""How a FiD reader reads on a CPU: the precision a setting resolves to, and int8 linear layers.

``precision`` is ``fp32``, ``bf16`` (autocast), ``int8`` (PyTorch's dynamic quantisation of every
linear layer) or ``auto``: the choice :mod:`reader.fid.runtime` measured and recorded in the reader's
``runtime.json`` on a CPU with the same features, else bf16 where the CPU has native bf16, else fp32.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch

import xqa.encoders.runtime as rt
from xqa.encoders.info import bf16_supported

RECORD = rt.READER_RECORD


def quantized(model: torch.nn.Module, inplace: bool = False) -> torch.nn.Module:
    """``model`` with every ``nn.Linear`` replaced by a dynamically quantised int8 one."""
    import warnings

    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch's notice that its quantised tensors are to move elsewhere
        return quantize_dynamic(model if inplace else copy.deepcopy(model), {torch.nn.Linear},
                                dtype=torch.qint8, inplace=inplace)


def resolve(folder: str | Path | None, precision: str) -> str:
    """What a CPU reads in: an explicit ``fp32``/``bf16``/``int8`` as given; ``auto``: the record's
    choice where it was measured on a CPU with these features, else bf16 where the CPU has native
    bf16, else fp32 (int8 only as measured: it changes answers on some machines more than others)."""
    if precision not in ("auto", "fp32", "bf16", "int8"):
        raise ValueError(f"unknown precision {precision!r}; choose from auto, fp32, bf16, int8")
    if precision != "auto":
        return precision
    record = read_record(folder)
    choice = rt.recorded_choice(record) if record and record.get("cpu") == rt.cpu_features() else None
    return choice or ("bf16" if bf16_supported() else "fp32")


def read_record(folder: str | Path | None) -> dict[str, Any] | None:
    import json

    if folder is None or not (Path(folder) / RECORD).is_file():
        return None
    return json.loads((Path(folder) / RECORD).read_text(encoding="utf-8"))
